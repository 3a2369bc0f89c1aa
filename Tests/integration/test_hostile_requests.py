"""Hostile requests against the real binary: a head of too many fields is 431, and with a low
descriptor limit the connection limit stays below it, so connections past it are answered 503 at
once instead of waiting unanswered in the listen backlog."""

from __future__ import annotations

import socket
import stat
import time

from support.transferd import Transferd


def test_too_many_header_fields_is_431(transferd):
    fields = "".join(f"X-F{i}: v\r\n" for i in range(120))
    with socket.create_connection(transferd.address, timeout=5) as s:
        s.sendall(f"GET /healthz HTTP/1.1\r\nHost: t\r\n{fields}\r\n".encode())
        head = s.recv(65536).decode("latin-1")
    assert head.startswith("HTTP/1.1 431"), head
    assert "more than 100 header fields" in head, head


def test_connections_past_the_descriptor_limit_are_answered_at_once(tmp_path, transferd_binary):
    wrapper = tmp_path / "transferd-with-256-descriptors"
    wrapper.write_text(f'#!/bin/sh\nexec prlimit --nofile=256:256 "{transferd_binary}" "$@"\n')
    wrapper.chmod(wrapper.stat().st_mode | stat.S_IXUSR)
    with Transferd("--max-connections", "10000", binary=wrapper) as td:
        lowered = td.wait_for_log(lambda r: r.get("msg") == "--max-connections lowered to stay below the descriptor limit")
        cap = int(lowered["max_connections"])
        assert cap == 192 and int(lowered["descriptor_limit"]) == 256, lowered
        held = []
        try:
            # Fill the server up to its cap with idle connections (each holds a descriptor there).
            for _ in range(cap):
                held.append(socket.create_connection(td.address, timeout=5))
            time.sleep(0.5)
            # The next ones are accepted and answered 503 at once, not left in the backlog.
            started = time.monotonic()
            for _ in range(20):
                with socket.create_connection(td.address, timeout=5) as extra:
                    extra.sendall(b"GET /healthz HTTP/1.1\r\nHost: t\r\n\r\n")
                    answer = extra.recv(4096).decode("latin-1")
                    assert answer.startswith("HTTP/1.1 503"), answer
                    assert "too_many_connections" in answer, answer
            assert time.monotonic() - started < 5
            # Once some go, the service answers again.
            for s in held[:10]:
                s.close()
            time.sleep(0.5)
            assert td.get("/healthz").status_code == 200
        finally:
            for s in held:
                s.close()

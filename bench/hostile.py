"""The hostile set against one transferd, measured from a well-behaved client (see hostile.sh).

Usage: hostile.py API TOKEN SESSION SECONDS

Phase 1, quiet: the well-behaved client GETs the session's task in a loop for SECONDS and records
each latency. Phase 2, under attack: the same, while attackers run:
  slowloris    200 connections each trickling a request head, a byte every 2 s
  slow bodies  50 connections each trickling a JSON body, a byte every 2 s
  fat heads    heads of 120 header fields and of 64 KiB (431), in a loop
  json bombs   1 MiB bodies in a loop: 60,000 members, 64-deep nesting repeated, 65 deep
               (json_too_deep), long escaped strings, 100,000 numbers
  pipelines    200 requests pipelined in one write, in a loop
Prints, for the well-behaved client, requests, p50, p99 and max in both phases, and for the JSON
shapes how long transferd took to answer each 1 MiB body (median of its answers: parse,
validation and the 4xx, over loopback)."""

from __future__ import annotations

import json
import socket
import statistics
import sys
import threading
import time
from urllib.parse import urlsplit

API, TOKEN, SESSION, SECONDS = sys.argv[1], sys.argv[2], sys.argv[3], float(sys.argv[4])
HOST, PORT = urlsplit(API).hostname, urlsplit(API).port
MiB = 1 << 20
stop = threading.Event()


def connect() -> socket.socket:
    s = socket.create_connection((HOST, PORT), timeout=10)
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return s


def read_response(s: socket.socket, buffer: bytearray) -> int:
    """Reads one response (Content-Length framed) from `s`; returns its status."""
    while b"\r\n\r\n" not in buffer:
        chunk = s.recv(65536)
        if not chunk:
            raise ConnectionError("closed")
        buffer += chunk
    head, _, rest = bytes(buffer).partition(b"\r\n\r\n")
    status = int(head.split(b" ", 2)[1])
    length = 0
    for line in head.split(b"\r\n")[1:]:
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            length = int(value)
    while len(rest) < length:
        chunk = s.recv(65536)
        if not chunk:
            raise ConnectionError("closed")
        rest += chunk
    buffer[:] = rest[length:]
    return status


def well_behaved(seconds: float) -> list[float]:
    request = (f"GET /v1/sessions/{SESSION}/tasks/t1 HTTP/1.1\r\nHost: b\r\n"
               f"Authorization: Bearer {TOKEN}\r\n\r\n").encode()
    latencies: list[float] = []
    s, buffer = connect(), bytearray()
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        started = time.perf_counter()
        try:
            s.sendall(request)
            assert read_response(s, buffer) == 200
        except (OSError, ConnectionError):
            s, buffer = connect(), bytearray()
            continue
        latencies.append(time.perf_counter() - started)
        time.sleep(0.002)
    s.close()
    return latencies


def trickle(count: int, prefix: bytes, body: bytes) -> None:
    """`count` connections each sending `prefix` then `body` a byte every 2 s, reconnecting when cut."""
    conns: list[tuple[socket.socket, int]] = []
    while not stop.is_set():
        while len(conns) < count and not stop.is_set():
            try:
                c = connect()
                c.sendall(prefix)
                conns.append((c, 0))
            except OSError:
                time.sleep(0.1)
        alive = []
        for c, sent in conns:
            try:
                c.sendall(body[sent:sent + 1])
                alive.append((c, sent + 1))
            except OSError:
                c.close()
        conns = alive
        stop.wait(2)
    for c, _ in conns:
        c.close()


def json_shapes() -> dict[str, bytes]:
    def fit(text: str) -> bytes:
        return text.encode()[:MiB] if len(text) >= MiB else text.encode()
    members = "{" + ",".join(f'"k{i}":{i}' for i in range(60_000)) + "}"
    nested = "[" + ",".join(["[" * 62 + "1" + "]" * 62] * (MiB // 130)) + "]"
    too_deep = "[" * 65 + "]" * 65
    escaped = json.dumps({"description": "\u00e9\n\t\"x" * (MiB // 12)})  # dumped as \u00e9, \n, \t, \"
    numbers = json.dumps({"priority": [i * 1.5e300 / 7 for i in range(60_000)]})
    return {"60,000 members": fit(members), "64 deep, repeated": fit(nested), "65 deep": fit(too_deep),
            "escaped strings": fit(escaped), "60,000 numbers": fit(numbers)}


def post(s: socket.socket, buffer: bytearray, body: bytes) -> int:
    s.sendall((f"POST /v1/sessions/{SESSION}/tasks HTTP/1.1\r\nHost: b\r\nAuthorization: Bearer {TOKEN}\r\n"
               f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n").encode() + body)
    return read_response(s, buffer)


def json_bombs(shapes: dict[str, bytes], timings: dict[str, list[float]]) -> None:
    s, buffer = connect(), bytearray()
    while not stop.is_set():
        for name, body in shapes.items():
            started = time.perf_counter()
            try:
                status = post(s, buffer, body)
            except (OSError, ConnectionError):
                s, buffer = connect(), bytearray()
                continue
            assert 400 <= status < 500, (name, status)
            timings.setdefault(name, []).append(time.perf_counter() - started)


def fat_heads() -> None:
    many = "".join(f"X-F{i}: v\r\n" for i in range(120))
    big = "X-Big: " + "v" * 65536 + "\r\n"
    while not stop.is_set():
        for fields in (many, big):
            try:
                with connect() as c:
                    c.sendall(f"GET /v1 HTTP/1.1\r\nHost: b\r\n{fields}\r\n".encode())
                    c.recv(4096)
            except OSError:
                pass


def pipelines() -> None:
    one = f"GET /healthz HTTP/1.1\r\nHost: b\r\n\r\n".encode()
    while not stop.is_set():
        try:
            with connect() as c:
                c.sendall(one * 200)
                buffer = bytearray()
                for _ in range(200):
                    read_response(c, buffer)
        except (OSError, ConnectionError):
            pass


def summary(label: str, latencies: list[float]) -> None:
    ms = sorted(x * 1000 for x in latencies)
    p = lambda q: ms[min(len(ms) - 1, int(q * len(ms)))]
    print(f"{label:<28} {len(ms):>7} requests   p50 {p(0.50):7.2f} ms   p99 {p(0.99):7.2f} ms   max {ms[-1]:8.2f} ms")


def main() -> None:
    shapes = json_shapes()
    quiet = well_behaved(SECONDS)
    timings: dict[str, list[float]] = {}
    attackers = [threading.Thread(target=trickle, args=(200, b"GET /v1 HTTP/1.1\r\n", b"X-Slow: " + b"a" * 10_000), daemon=True),
                 threading.Thread(target=trickle, args=(50, (f"POST /v1/sessions/{SESSION}/tasks HTTP/1.1\r\nHost: b\r\n"
                                                           f"Authorization: Bearer {TOKEN}\r\nContent-Length: 100000\r\n\r\n").encode(),
                                                        b"{" + b" " * 99_999), daemon=True),
                 threading.Thread(target=fat_heads, daemon=True),
                 threading.Thread(target=json_bombs, args=(shapes, timings), daemon=True),
                 threading.Thread(target=pipelines, daemon=True)]
    for a in attackers:
        a.start()
    time.sleep(1)
    attacked = well_behaved(SECONDS)
    stop.set()
    for a in attackers:
        a.join(timeout=5)
    print("well-behaved client, GET of a task, one request at a time:")
    summary("  quiet", quiet)
    summary("  under the hostile set", attacked)
    print("transferd's answer to each 1 MiB JSON body (4xx; median, max):")
    for name, body in shapes.items():
        t = sorted(timings.get(name, [0.0]))
        print(f"  {name:<20} {len(body) / MiB:5.2f} MiB  {statistics.median(t) * 1000:7.1f} ms  {t[-1] * 1000:7.1f} ms  ({len(t)} posts)")


main()

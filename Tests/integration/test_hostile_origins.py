"""Hostile and misbehaving origins against real sockets: each fails only its own task, with the
error code that names what went wrong, nothing at the destination, and transferd's memory
bounded. Scenarios tested elsewhere and not repeated here: a stalled body (`timed_out`,
test_tasks_limits.py), a Content-Length longer than the body (`network_connection_lost`,
test_tasks_download.py), endless redirects (`too_many_redirects`, test_tasks_download.py)."""

from __future__ import annotations

import gzip
import time
from pathlib import Path

import pytest

from support.api import (assert_success, assert_task_error, create_session, create_task, data, download,
                         run_task, task_path, wait_task)
from support.origin import Origin, SilentListener

ONE_ATTEMPT = {"retry": {"max_attempts": 1}}
MiB = 1 << 20


def peak_rss(td) -> int:
    """transferd's peak resident set (VmHWM), in bytes."""
    for line in Path(f"/proc/{td.pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) * 1024
    raise AssertionError("no VmHWM")


def nothing_written(root: Path) -> bool:
    return [p for p in root.rglob("*") if p.is_file()] == []


def run_hostile_download(td, sid, url: str, root: Path) -> dict:
    """A download of `url` to a file in `root` (which must stay empty), next to a good download."""
    destination = root / "hostile.bin"
    hostile = create_task(td, sid, download(url, download={"destination": str(destination)}))
    return wait_task(td, sid, hostile["id"], timeout=30)


@pytest.fixture
def hostile(start_transferd, api_token, tmp_path):
    """A transferd that may write under tmp_path/out, with an origin for the good work beside."""
    root = tmp_path / "out"
    root.mkdir()
    td = start_transferd("--allow-path", str(root), "--max-data-body-bytes", str(MiB), api_token=api_token)
    return td, root


@pytest.mark.parametrize("one_line", [False, True], ids=["many_fields", "one_endless_field"])
def test_an_endless_response_head_is_bad_server_response(hostile, origin, one_line):
    """curl bounds a head: 300 KiB of fields in all (Debian's CVE-2023-38039 fix) and 100 KiB for
    one field line (CURL_MAX_HTTP_HEADER). transferd fails the task as the origin's fault."""
    td, root = hostile
    sid = create_session(td, configuration=ONE_ATTEMPT)
    before = peak_rss(td)
    started = time.monotonic()
    task = run_hostile_download(td, sid, origin.url("/endless-headers" + ("?one_line=1" if one_line else "")), root)
    assert_task_error(task, "bad_server_response")
    assert time.monotonic() - started < 10
    assert task["result"] is None and nothing_written(root)
    # The origin could send 64 MiB of head; curl stopped reading long before.
    assert origin.requests[0].bytes_sent < 16 * MiB
    assert peak_rss(td) - before < 32 * MiB
    # The origin's other work is unaffected.
    assert_success(run_task(td, sid, download(origin.url("/bytes/5000"))))


def test_a_content_length_shorter_than_the_body_ends_the_body_there(hostile, origin):
    """RFC 9112 §6.3: Content-Length frames the body, so the bytes past it are not the body (curl
    drops them). The task gets exactly the declared length; what follows is never taken for the
    next response of another task, which starts on a fresh connection."""
    td, root = hostile
    sid = create_session(td, configuration=ONE_ATTEMPT)
    task = assert_success(run_task(td, sid, data(origin.url("/bytes/20000?seed=sl&wrong_length=1000"))))
    body = td.get(task_path(sid, task["id"], "/body")).content
    assert body == Origin.expected_bytes(20000, "sl")[:1000]
    time.sleep(0.2)  # the origin has closed its end
    assert_success(run_task(td, sid, data(origin.url("/bytes/10"))))


def test_an_answer_without_a_status_line_is_bad_server_response(hostile, origin):
    """curl would read it as HTTP/0.9, which is never allowed; the origin's fault, not the URL's."""
    td, root = hostile
    sid = create_session(td, configuration=ONE_ATTEMPT)
    task = run_hostile_download(td, sid, origin.url("/not-http"), root)
    assert_task_error(task, "bad_server_response")
    assert nothing_written(root)


def test_a_tls_handshake_that_never_completes_is_timed_out(hostile):
    """A listener that accepts and never answers the ClientHello: the handshake is bounded by the
    session's `timeout_request_s`."""
    td, root = hostile
    sid = create_session(td, configuration={"timeout_request_s": 1, **ONE_ATTEMPT})
    with SilentListener() as silent:
        started = time.monotonic()
        task = run_hostile_download(td, sid, silent.url("/file"), root)
        elapsed = time.monotonic() - started
        assert silent.connections_accepted == 1
    assert_task_error(task, "timed_out")
    assert 0.9 <= elapsed < 6, elapsed
    assert task["result"] is None and nothing_written(root)


def test_a_silent_plain_http_origin_is_timed_out(hostile):
    td, root = hostile
    sid = create_session(td, configuration={"timeout_request_s": 1, **ONE_ATTEMPT})
    with SilentListener() as silent:
        task = run_hostile_download(td, sid, silent.url("/file", scheme="http"), root)
    assert_task_error(task, "timed_out")
    assert nothing_written(root)


def test_a_redirect_loop_fails_only_its_own_task(hostile, origin):
    td, root = hostile
    sid = create_session(td, configuration=ONE_ATTEMPT)
    good = create_task(td, sid, download(origin.url("/bytes/300000?rate=300000")))
    task = run_hostile_download(td, sid, origin.url("/redirect-loop"), root)
    assert_task_error(task, "too_many_redirects")
    assert nothing_written(root)
    assert_success(wait_task(td, sid, good["id"], timeout=20))


# Gzip bombs. transferd never decodes content codings: it asks for none (no CURLOPT_ACCEPT_ENCODING),
# and a task that asks for one in its own headers gets the body as sent, compressed, to decode
# itself. So a bomb is only its compressed size, bounded like any body; nothing is inflated.

@pytest.mark.parametrize("no_length", [False, True], ids=["content_length", "until_close"])
def test_a_gzip_bomb_on_a_data_task_is_bounded_by_its_bytes_on_the_wire(hostile, origin, no_length):
    """10 GiB of zeros in about 10 MiB of gzip, to a data task that asked for gzip: over the
    1 MiB --max-data-body-bytes ⇒ `data_length_exceeds_maximum`, at once, memory flat."""
    td, _ = hostile
    sid = create_session(td, configuration=ONE_ATTEMPT)
    before = peak_rss(td)
    started = time.monotonic()
    url = origin.url("/gzip-bomb" + ("?no_length=1" if no_length else ""))
    task = run_task(td, sid, data(url, request={"url": url, "headers": {"Accept-Encoding": "gzip"}}), timeout=30)
    assert_task_error(task, "data_length_exceeds_maximum")
    assert time.monotonic() - started < 10
    assert task["progress"]["bytes_received"] <= MiB
    assert peak_rss(td) - before < 32 * MiB


def test_a_gzip_body_is_kept_as_sent(hostile, origin):
    """Under the limit, the body is the origin's bytes, not their decoding (64 MiB of zeros in
    about 64 KiB)."""
    td, _ = hostile
    sid = create_session(td, configuration=ONE_ATTEMPT)
    url = origin.url(f"/gzip-bomb?size={64 * MiB}")
    task = assert_success(run_task(td, sid, data(url, request={"url": url, "headers": {"Accept-Encoding": "gzip"}})))
    body = td.get(task_path(sid, task["id"], "/body")).content
    assert len(body) < MiB and task["progress"]["bytes_received"] == len(body)
    assert gzip.decompress(body) == bytes(64 * MiB)
    assert origin.requests[0].headers["Accept-Encoding"] == "gzip"

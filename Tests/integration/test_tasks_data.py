"""Data tasks: the response body kept and served at `…/body` with the origin's Content-Type,
request bodies (`text`, `base64`) and headers reaching the origin, the body size cap
(`--max-data-body-bytes` → `data_length_exceeds_maximum`), ephemeral sessions keeping bodies in
memory only, and `…/body` of a download being 409."""

from __future__ import annotations

import base64
import hashlib

import pytest

from support.api import (assert_problem, assert_success, assert_task_error, create_session,
                         create_task, data, download, run_task, task_path)
from support.origin import Origin


def body_of(td, sid, task) -> bytes:
    response = td.get(task_path(sid, task["id"], "/body"))
    assert response.status_code == 200, response.text
    return response


@pytest.mark.parametrize("mode", ["default", "background", "ephemeral"])
def test_data_body_is_kept_and_served(transferd, origin, mode):
    sid = create_session(transferd, mode=mode)
    size = 300_000
    task = assert_success(run_task(transferd, sid, data(origin.url(f"/bytes/{size}?seed=d&content_type=text/x-data"))))
    assert task["kind"] == "data"
    assert task["response"]["status"] == 200
    assert task["response"]["mime_type"] == "text/x-data"
    assert task["progress"]["bytes_received"] == size
    response = body_of(transferd, sid, task)
    assert response.content == Origin.expected_bytes(size, "d")
    assert response.headers["Content-Type"] == "text/x-data"


def test_json_body_from_origin(transferd, origin):
    sid = create_session(transferd)
    task = assert_success(run_task(transferd, sid, data(origin.url("/echo/hello?x=1"))))
    response = body_of(transferd, sid, task)
    assert response.headers["Content-Type"].startswith("application/json")
    echo = response.json()
    assert echo["path"] == "/echo/hello" and echo["query"] == {"x": "1"} and echo["method"] == "GET"


def test_text_body_is_sent(transferd, origin):
    sid = create_session(transferd)
    text = "héllo wörld\n" * 1000
    task = assert_success(run_task(transferd, sid, {
        "kind": "data",
        "request": {"url": origin.url("/echo"), "method": "POST", "body": {"text": text},
                    "headers": {"Content-Type": "text/plain; charset=utf-8", "X-Trace": "abc"}}}))
    echo = body_of(transferd, sid, task).json()
    assert echo["method"] == "POST"
    assert echo["body_length"] == len(text.encode())
    assert echo["body_sha256"] == hashlib.sha256(text.encode()).hexdigest()
    assert echo["headers"]["content-type"] == "text/plain; charset=utf-8"
    assert echo["headers"]["x-trace"] == "abc"
    assert task["progress"]["bytes_sent"] == len(text.encode())


def test_base64_body_is_sent(transferd, origin):
    sid = create_session(transferd)
    raw = bytes(range(256)) * 40 + b"\x00\r\n\x00"
    task = assert_success(run_task(transferd, sid, {
        "kind": "data",
        "request": {"url": origin.url("/echo"), "method": "PUT",
                    "body": {"base64": base64.b64encode(raw).decode()}}}))
    echo = body_of(transferd, sid, task).json()
    assert echo["method"] == "PUT"
    assert echo["body_length"] == len(raw)
    assert echo["body_sha256"] == hashlib.sha256(raw).hexdigest()
    recorded = [r for r in origin.requests if r.path == "/echo"]
    assert len(recorded) == 1 and recorded[0].bytes_received == len(raw)


def test_session_headers_are_added_and_task_headers_override(transferd, origin):
    sid = create_session(transferd, configuration={"headers": {"X-Session": "s", "X-Both": "session"}})
    task = assert_success(run_task(transferd, sid, data(origin.url("/echo"),
                                                        request={"url": origin.url("/echo"),
                                                                 "headers": {"X-Task": "t", "X-Both": "task"}})))
    headers = body_of(transferd, sid, task).json()["headers"]
    assert headers["x-session"] == "s"
    assert headers["x-task"] == "t"
    assert headers["x-both"] == "task"


def test_http_error_body_is_kept(transferd, origin):
    sid = create_session(transferd)
    task = run_task(transferd, sid, data(origin.url("/status/500?body=boom")))
    assert task["error"] is None and task["response"]["status"] == 500
    response = body_of(transferd, sid, task)
    assert response.content == b"boom"
    assert response.headers["Content-Type"].startswith("text/plain")


@pytest.mark.parametrize("mode", ["default", "ephemeral"])
def test_body_over_the_limit_is_data_length_exceeds_maximum(start_transferd, origin, api_token, mode):
    td = start_transferd("--max-data-body-bytes", "10000", api_token=api_token)
    sid = create_session(td, mode=mode)
    at_limit = assert_success(run_task(td, sid, data(origin.url("/bytes/10000"))))
    assert len(body_of(td, sid, at_limit).content) == 10000
    over = run_task(td, sid, data(origin.url("/bytes/10001")))
    assert_task_error(over, "data_length_exceeds_maximum")
    assert_problem(td.get(task_path(sid, over["id"], "/body")), 409)
    # Without a Content-Length the cap holds too, while the body streams.
    chunked = run_task(td, sid, data(origin.url("/bytes/5000000?no_length=1")))
    assert_task_error(chunked, "data_length_exceeds_maximum")
    assert origin.bytes_served("/bytes/5000000") < 5000000
    # Downloads are not capped.
    assert_success(run_task(td, sid, download(origin.url("/bytes/50000"))))


def test_ephemeral_body_never_touches_the_disk(transferd, origin):
    sid = create_session(transferd, mode="ephemeral")
    marker = "ephemeral-marker-7d1c"
    task = assert_success(run_task(transferd, sid, data(origin.url(f"/echo?m={marker}"))))
    assert body_of(transferd, sid, task).json()["query"] == {"m": marker}
    on_disk = [p for p in transferd.data_dir.rglob("*") if p.is_file()]
    assert not [p for p in on_disk if sid in str(p)], on_disk
    for path in on_disk:  # neither the session nor its task is in the database
        content = path.read_bytes()
        assert sid.encode() not in content, path
        assert task["id"].encode() not in content, path


def test_durable_body_is_a_file_in_the_data_dir(transferd, origin):
    sid = create_session(transferd, mode="default")
    task = assert_success(run_task(transferd, sid, data(origin.url("/bytes/12345?seed=disk"))))
    files = [p for p in (transferd.data_dir / "sessions" / sid).rglob("*") if p.is_file()]
    assert [p.read_bytes() for p in files] == [Origin.expected_bytes(12345, "disk")]


def test_body_of_download_is_409(transferd, origin):
    sid = create_session(transferd)
    task = assert_success(run_task(transferd, sid, download(origin.url("/bytes/10"))))
    assert_problem(transferd.get(task_path(sid, task["id"], "/body")), 409)
    pending = create_task(transferd, sid, data(origin.url("/bytes/10"), start=False))
    assert_problem(transferd.get(task_path(sid, pending["id"], "/body")), 409)

"""Upload tasks and blobs (issue 4): every uploaded body is checked at a real origin that hashes
what it receives; blobs stream to disk with flat memory; paths outside the allowed roots are
refused."""

from __future__ import annotations

import hashlib
import os
import socket
import threading
import time
from pathlib import Path

import pytest
import requests

from support.api import (assert_problem, assert_success, assert_task_error, create_session, create_task,
                         post_task, tasks_path, task_path, wait_task)
from support.origin import Origin


@pytest.fixture
def root(tmp_path) -> Path:
    """An --allow-path root with a file in it, a directory beside it and a symlink leading out."""
    allowed = tmp_path / "allowed"
    allowed.mkdir()
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.bin").write_bytes(b"secret")
    (allowed / "escape").symlink_to(outside)
    return allowed


@pytest.fixture
def td(start_transferd, api_token, root):
    return start_transferd("--allow-path", str(root), api_token=api_token)


def upload_blob(td, data: bytes | None = None, *, chunks=None) -> dict:
    response = td.post("/v1/blobs", data=data if chunks is None else chunks,
                       headers={"Content-Type": "application/octet-stream"})
    assert response.status_code == 201, response.text
    return response.json()


def upload_task(url: str, source: dict, **fields) -> dict:
    return {"kind": "upload", "request": {"url": url, **fields.pop("request", {})}, "upload": source, **fields}


def last_upload(origin: Origin):
    assert origin.uploads, "the origin received no upload"
    return origin.uploads[-1]


# MARK: blobs


def test_blob_upload_returns_size_and_sha256_and_can_be_read_and_deleted(td):
    data = os.urandom(3_000_001)
    blob = upload_blob(td, data)
    assert blob["size"] == len(data)
    assert blob["sha256"] == hashlib.sha256(data).hexdigest()
    assert td.get(f"/v1/blobs/{blob['id']}").json() == blob
    assert td.delete(f"/v1/blobs/{blob['id']}").status_code == 204
    assert_problem(td.get(f"/v1/blobs/{blob['id']}"), 404, "not_found")
    assert not (td.data_dir / "blobs" / blob["id"]).exists()


def test_blob_upload_with_chunked_encoding(td):
    pieces = [os.urandom(100_000 + i) for i in range(20)]
    blob = upload_blob(td, chunks=iter(pieces))
    whole = b"".join(pieces)
    assert (blob["size"], blob["sha256"]) == (len(whole), hashlib.sha256(whole).hexdigest())


def rss_kib(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise AssertionError("no VmRSS")


def test_a_100_mib_chunked_blob_keeps_resident_memory_flat(td):
    """The body goes to disk as it arrives: memory does not grow with it."""
    block = os.urandom(1 << 20)
    before = rss_kib(td.pid)
    peak = [before]
    done = threading.Event()

    def watch():
        while not done.is_set():
            peak[0] = max(peak[0], rss_kib(td.pid))
            time.sleep(0.02)

    watcher = threading.Thread(target=watch)
    watcher.start()
    try:
        blob = upload_blob(td, chunks=(block for _ in range(100)))
    finally:
        done.set()
        watcher.join()
    assert blob["size"] == 100 << 20
    assert blob["sha256"] == hashlib.sha256(block * 100).hexdigest()
    # A 100 MiB body held in memory would add 100,000 KiB; streaming stays within a few MiB.
    assert peak[0] - before < 16 * 1024, (before, peak[0])


def test_blob_larger_than_the_limit_is_413(start_transferd, api_token):
    td = start_transferd("--max-blob-bytes", "1000", api_token=api_token)
    assert_problem(td.post("/v1/blobs", data=b"x" * 2000), 413, "content_too_large")
    # Chunked, so the size is only known as it arrives.
    assert_problem(td.post("/v1/blobs", data=iter([b"x" * 600, b"x" * 600])), 413, "content_too_large")
    # The partial file is removed once the hasher has let go of it.
    deadline = time.monotonic() + 5
    while list((td.data_dir / "blobs").iterdir()) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert list((td.data_dir / "blobs").iterdir()) == []


def test_blob_in_use_by_an_unfinished_task_cannot_be_deleted(td, origin):
    sid = create_session(td)
    blob = upload_blob(td, b"payload")
    task = create_task(td, sid, dict(upload_task(origin.url("/upload"), {"from_blob": blob["id"]}), start=False))
    assert_problem(td.delete(f"/v1/blobs/{blob['id']}"), 409, "blob_in_use")
    td.delete(task_path(sid, task["id"]))
    assert td.delete(f"/v1/blobs/{blob['id']}").status_code == 204


def test_expired_blobs_are_swept_once_no_task_needs_them(start_transferd, api_token, origin):
    td = start_transferd("--retention", "1s", "--sweep-interval", "0.5s", api_token=api_token)
    sid = create_session(td)
    kept = upload_blob(td, b"needed")
    create_task(td, sid, dict(upload_task(origin.url("/upload"), {"from_blob": kept["id"]}), start=False))
    swept = upload_blob(td, b"not needed")
    deadline = time.monotonic() + 10
    while td.get(f"/v1/blobs/{swept['id']}").status_code != 404 and time.monotonic() < deadline:
        time.sleep(0.2)
    assert td.get(f"/v1/blobs/{swept['id']}").status_code == 404
    assert td.get(f"/v1/blobs/{kept['id']}").status_code == 200


# MARK: upload tasks


@pytest.mark.parametrize("method", ["PUT", "POST", "PATCH"])
def test_upload_from_blob_arrives_intact(td, origin, method):
    sid = create_session(td)
    data = os.urandom(5_000_000)
    blob = upload_blob(td, data)
    task = create_task(td, sid, upload_task(origin.url("/upload"), {"from_blob": blob["id"]}, request={"method": method}))
    done = assert_success(wait_task(td, sid, task["id"]))
    received = last_upload(origin)
    assert received.method == method
    assert (received.length, received.sha256) == (len(data), hashlib.sha256(data).hexdigest())
    assert done["response"]["status"] == 201
    assert done["progress"]["bytes_sent"] == len(data) == done["progress"]["bytes_expected_to_send"]
    # The origin's answer is kept as the task's body.
    body = td.get(task_path(sid, task["id"], "/body")).json()
    assert body["sha256"] == received.sha256


def test_upload_from_an_allowed_file(td, origin, root):
    sid = create_session(td)
    data = os.urandom(2_500_000)
    (root / "sub").mkdir()
    (root / "sub" / "f.bin").write_bytes(data)
    task = create_task(td, sid, upload_task(origin.url("/upload"), {"from_file": str(root / "sub" / "f.bin")}))
    assert_success(wait_task(td, sid, task["id"]))
    assert last_upload(origin).sha256 == hashlib.sha256(data).hexdigest()


def test_upload_of_a_finished_download(td, origin):
    sid = create_session(td)
    download = create_task(td, sid, {"kind": "download", "request": {"url": origin.url("/bytes/777777?seed=up")}})
    assert_success(wait_task(td, sid, download["id"]))
    task = create_task(td, sid, upload_task(origin.url("/upload"), {"from_task": download["id"]}))
    assert_success(wait_task(td, sid, task["id"]))
    assert last_upload(origin).sha256 == Origin.expected_sha256(777777, "up")


def test_inline_bodies_text_and_base64_small_and_large(td, origin):
    sid = create_session(td)
    small = "héllo"
    large = os.urandom(300_000)
    import base64
    for body, expected in [({"text": small}, small.encode()), ({"base64": base64.b64encode(large).decode()}, large)]:
        task = create_task(td, sid, {"kind": "upload", "request": {"url": origin.url("/upload"), "body": body}})
        assert_success(wait_task(td, sid, task["id"]))
        assert last_upload(origin).sha256 == hashlib.sha256(expected).hexdigest()
    # The large body was spooled to a blob of the task's own, removed once the task completed (the
    # file goes just after the completion is committed).
    deadline = time.monotonic() + 5
    while list((td.data_dir / "blobs").glob("b_*")) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert list((td.data_dir / "blobs").glob("b_*")) == []


def test_data_task_posts_json_from_a_blob(td, origin):
    sid = create_session(td)
    blob = upload_blob(td, b'{"query": "all"}')
    task = create_task(td, sid, {"kind": "data", "request": {"url": origin.url("/echo"), "method": "POST",
                                                             "headers": {"Content-Type": "application/json"},
                                                             "body": {"blob": blob["id"]}}})
    assert_success(wait_task(td, sid, task["id"]))
    echo = td.get(task_path(sid, task["id"], "/body")).json()
    assert (echo["method"], echo["body_text"], echo["headers"]["content-type"]) == ("POST", '{"query": "all"}', "application/json")


def test_multipart_body_is_well_formed(td, origin, root):
    sid = create_session(td)
    data = os.urandom(1_234_567)
    (root / "photo.jpg").write_bytes(data)
    task = create_task(td, sid, upload_task(
        origin.url("/upload"), {"from_file": str(root / "photo.jpg")}, request={"method": "POST"},
        multipart={"field": "image", "mime_type": "image/jpeg", "fields": {"album": "summer", "note": "a \"quoted\" note"}}))
    done = assert_success(wait_task(td, sid, task["id"]))
    received = last_upload(origin)
    assert received.content_type.startswith("multipart/form-data; boundary=")
    assert received.multipart_complete
    parts = {p.name: p for p in received.parts}
    assert parts["album"].value == "summer"
    assert parts["note"].value == 'a "quoted" note'
    image = parts["image"]
    assert (image.filename, image.content_type, image.size, image.sha256) == (
        "photo.jpg", "image/jpeg", len(data), hashlib.sha256(data).hexdigest())
    # Content-Length was exact: the request carried one and the body matched it.
    assert int(received.headers["content-length"]) == received.length == done["progress"]["bytes_sent"]


def test_origin_refusing_with_413_completes_with_that_status(td, origin):
    sid = create_session(td)
    blob = upload_blob(td, os.urandom(3_000_000))
    task = create_task(td, sid, upload_task(origin.url("/upload?status=413"), {"from_blob": blob["id"]}))
    done = wait_task(td, sid, task["id"])
    assert done["state"] == "completed"
    if done["error"] is None:
        assert done["response"]["status"] == 413
    else:
        # The origin may close before reading the body; then the send fails.
        assert done["error"]["code"] == "network_connection_lost", done["error"]


def test_origin_resetting_mid_body_is_network_connection_lost(td, origin):
    sid = create_session(td)
    blob = upload_blob(td, os.urandom(8_000_000))
    task = create_task(td, sid, upload_task(origin.url("/upload?reset_after=1000000"), {"from_blob": blob["id"]}))
    assert_task_error(wait_task(td, sid, task["id"]), "network_connection_lost")


# MARK: refusals


@pytest.mark.parametrize("make_path", [
    lambda root: str(root.parent / "outside" / "secret.bin"),          # another directory
    lambda root: str(root / ".." / "outside" / "secret.bin"),           # .. out of the root
    lambda root: str(root / "escape" / "secret.bin"),                   # a symlink out of the root
    lambda root: "/etc/passwd",                                         # far away
], ids=["outside", "dotdot", "symlink", "absolute"])
def test_from_file_outside_the_root_is_403(td, origin, root, make_path):
    sid = create_session(td)
    response = post_task(td, sid, upload_task(origin.url("/upload"), {"from_file": make_path(root)}))
    assert_problem(response, 403, "path_not_allowed", field="upload.from_file")
    assert not origin.uploads


def test_missing_sources_are_422(td, origin, root):
    sid = create_session(td)
    cases = [
        ({"from_file": str(root / "nope.bin")}, "file_does_not_exist", "upload.from_file"),
        ({"from_blob": "b_aaaaaaaaaaaaaaaaaaaa"}, "blob_not_found", "upload.from_blob"),
        ({"from_task": "no-such-task"}, "task_not_found", "upload.from_task"),
    ]
    for source, code, field in cases:
        assert_problem(post_task(td, sid, upload_task(origin.url("/upload"), source)), 422, code, field=field)
    assert_problem(post_task(td, sid, {"kind": "upload", "request": {"url": origin.url("/upload")}}), 422, field="upload")
    assert_problem(post_task(td, sid, upload_task(origin.url("/upload"), {"from_blob": "x", "from_file": "/y"})),
                   422, field="upload")


def test_a_source_file_removed_before_the_task_starts_fails_the_task(td, origin, root):
    sid = create_session(td)
    path = root / "gone.bin"
    path.write_bytes(b"soon gone")
    task = create_task(td, sid, dict(upload_task(origin.url("/upload"), {"from_file": str(path)}), start=False))
    path.unlink()
    td.post(task_path(sid, task["id"], "/resume"))
    assert_task_error(wait_task(td, sid, task["id"]), "file_does_not_exist")

"""`GET|HEAD …/tasks/{task}/file` as a static file server answers: a strong `ETag`, `Last-Modified`
and `Accept-Ranges`; `If-None-Match` and `If-Modified-Since` (304), `If-Range` (the range only while
the validator is current), several ranges as `multipart/byteranges`, 416 with `Content-Range:
bytes */len` when none can be served, and a bounded answer to hostile range lists."""

from __future__ import annotations

import os
import re
from email.utils import formatdate

import pytest
import requests

from support.api import assert_success, create_session, download, run_task, task_path
from support.origin import Origin

SIZE = 100_000


@pytest.fixture
def served(start_transferd, api_token, origin, tmp_path):
    """A finished download (to a destination under an allowed root): (transferd, path of …/file,
    the bytes, the file on disk)."""
    root = tmp_path / "root"
    root.mkdir()
    td = start_transferd("--allow-path", str(root), api_token=api_token)
    sid = create_session(td)
    destination = root / "served.bin"
    task = assert_success(run_task(td, sid, download(origin.url(f"/bytes/{SIZE}?seed=files&content_type=text/x-custom"),
                                                     download={"destination": str(destination)})))
    return td, task_path(sid, task["id"], "/file"), Origin.expected_bytes(SIZE, "files"), destination


def multipart_parts(response) -> list[tuple[dict[str, str], bytes]]:
    """The parts of a `multipart/byteranges` body, parsed strictly by its boundary."""
    match = re.fullmatch(r"multipart/byteranges; boundary=(\S+)", response.headers["Content-Type"])
    assert match, response.headers["Content-Type"]
    delimiter = b"--" + match[1].encode()
    body = response.content
    assert body.startswith(delimiter + b"\r\n"), body[:100]
    assert body.endswith(b"\r\n" + delimiter + b"--\r\n"), body[-100:]
    parts = []
    for chunk in body[:-len(b"\r\n" + delimiter + b"--\r\n")].split(b"\r\n" + delimiter + b"\r\n"):
        chunk = chunk.removeprefix(delimiter + b"\r\n")
        head, _, content = chunk.partition(b"\r\n\r\n")
        fields = dict(line.split(": ", 1) for line in head.decode().split("\r\n"))
        parts.append((fields, content))
    return parts


def test_validators_on_every_answer(served):
    td, path, body, destination = served
    whole = td.get(path)
    assert whole.status_code == 200
    assert whole.content == body
    etag, last_modified = whole.headers["ETag"], whole.headers["Last-Modified"]
    assert re.fullmatch(r'"[0-9a-f-]+"', etag), etag  # strong
    assert last_modified == formatdate(int(destination.stat().st_mtime), usegmt=True)
    assert whole.headers["Accept-Ranges"] == "bytes"
    head = td.head(path)
    assert (head.headers["ETag"], head.headers["Last-Modified"]) == (etag, last_modified)
    part = td.get(path, headers={"Range": "bytes=0-9"})
    assert part.status_code == 206 and part.headers["ETag"] == etag
    # The same file keeps its ETag; a changed file gets another.
    assert td.get(path).headers["ETag"] == etag
    os.utime(destination, ns=(destination.stat().st_atime_ns, destination.stat().st_mtime_ns + 1))
    assert td.get(path).headers["ETag"] != etag


def test_if_none_match_and_if_modified_since(served):
    td, path, body, destination = served
    first = td.get(path)
    etag, last_modified = first.headers["ETag"], first.headers["Last-Modified"]
    for value in (etag, f'"other", {etag}', "W/" + etag, "*"):
        cached = td.get(path, headers={"If-None-Match": value})
        assert cached.status_code == 304, value
        assert cached.content == b""
        assert cached.headers["ETag"] == etag
    assert td.head(path, headers={"If-None-Match": etag}).status_code == 304
    assert td.get(path, headers={"If-None-Match": '"other"'}).status_code == 200
    assert td.get(path, headers={"If-Modified-Since": last_modified}).status_code == 304
    later = formatdate(destination.stat().st_mtime + 3600, usegmt=True)
    assert td.get(path, headers={"If-Modified-Since": later}).status_code == 304
    earlier = formatdate(destination.stat().st_mtime - 3600, usegmt=True)
    assert td.get(path, headers={"If-Modified-Since": earlier}).content == body
    # If-None-Match decides when both are sent (RFC 9110 §13.2.2).
    both = td.get(path, headers={"If-None-Match": '"other"', "If-Modified-Since": later})
    assert both.status_code == 200
    # A date that cannot be read is ignored.
    assert td.get(path, headers={"If-Modified-Since": "yesterday"}).status_code == 200


def test_if_range(served):
    td, path, body, _ = served
    first = td.get(path)
    etag, last_modified = first.headers["ETag"], first.headers["Last-Modified"]
    for validator in (etag, last_modified):
        part = td.get(path, headers={"Range": "bytes=10-19", "If-Range": validator})
        assert part.status_code == 206, validator
        assert part.content == body[10:20]
    for stale in ('"not-the-etag"', "W/" + etag, "Sat, 01 Jan 2000 00:00:00 GMT", "garbage"):
        whole = td.get(path, headers={"Range": "bytes=10-19", "If-Range": stale})
        assert whole.status_code == 200, stale
        assert whole.content == body


def test_multiple_ranges(served):
    td, path, body, _ = served
    response = td.get(path, headers={"Range": "bytes=0-9, 50000-50009, -5"})
    assert response.status_code == 206
    assert "Content-Range" not in response.headers
    assert int(response.headers["Content-Length"]) == len(response.content)
    parts = multipart_parts(response)
    assert [(p["Content-Range"], p["Content-Type"], c) for p, c in parts] == [
        (f"bytes 0-9/{SIZE}", "text/x-custom", body[0:10]),
        (f"bytes 50000-50009/{SIZE}", "text/x-custom", body[50000:50010]),
        (f"bytes {SIZE - 5}-{SIZE - 1}/{SIZE}", "text/x-custom", body[-5:]),
    ]
    # HEAD: the same head, no body.
    head = td.head(path, headers={"Range": "bytes=0-9, 50000-50009"})
    assert head.status_code == 206 and head.content == b""
    assert head.headers["Content-Type"].startswith("multipart/byteranges; boundary=")
    # One keep-alive connection carries several multipart answers in a row: each body is framed exactly.
    with requests.Session() as client:
        client.headers["Authorization"] = f"Bearer {td.token}"
        for _ in range(3):
            again = client.get(td.url(path), headers={"Range": "bytes=1-2,4-5"}, timeout=10)
            assert [c for _, c in multipart_parts(again)] == [body[1:3], body[4:6]]


def test_overlapping_ranges_are_coalesced_and_unsatisfiable_ones_dropped(served):
    td, path, body, _ = served
    response = td.get(path, headers={"Range": "bytes=0-99, 50-149, 150-199, 999999-"})
    assert response.status_code == 206
    assert response.headers["Content-Range"] == f"bytes 0-199/{SIZE}"
    assert response.content == body[:200]
    none = td.get(path, headers={"Range": f"bytes={SIZE}-, {SIZE + 5}-{SIZE + 9}"})
    assert none.status_code == 416
    assert none.headers["Content-Range"] == f"bytes */{SIZE}"


def test_hostile_range_lists_cost_no_more_than_the_file(served):
    td, path, body, _ = served
    # Sixty one-byte ranges over the same spot: coalesced into one part, sent once.
    same = td.get(path, headers={"Range": "bytes=" + ",".join(["0-0"] * 60)})
    assert same.status_code == 206 and same.content == body[:1]
    # Past the cap, the header is ignored: the whole file once, not a part per range.
    many = ",".join(f"{i * 10}-{i * 10 + 1}" for i in range(500))
    whole = td.get(path, headers={"Range": "bytes=" + many})
    assert whole.status_code == 200
    assert whole.content == body
    # A malformed range among good ones makes the header invalid: ignored.
    assert td.get(path, headers={"Range": "bytes=0-1,x-y"}).status_code == 200

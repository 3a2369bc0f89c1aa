"""Download tasks end to end over loopback against the test origin: the sha256 of every file,
`result`, serving the file back (`GET`/`HEAD`/`Range`, the origin's Content-Type), destinations under
`--allow-path` roots, checksums, redirects (counted, limited, refused to other schemes), HTTP error
statuses, broken responses, and a large file."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from support.api import (assert_problem, assert_success, assert_task_error, create_session,
                         create_task, data, download, fetch_sha256, file_sha256, post_task,
                         run_task, task_path, wait_task)
from support.origin import Origin

MiB = 1 << 20


def assert_file(task: dict, size: int, sha256: str) -> None:
    """A completed download whose `result` and file on disk hold exactly the expected content."""
    assert_success(task)
    result = task["result"]
    assert result is not None, task
    assert result["size"] == size, result
    assert result["sha256"] == sha256, result
    path = Path(result["location"])
    assert path.is_file(), result
    assert path.stat().st_size == size
    assert file_sha256(path) == sha256
    assert task["progress"]["bytes_received"] == size, task["progress"]


# MARK: content


@pytest.mark.parametrize("size", [1, 1000, MiB - 1, MiB + 1, 5 * MiB + 12345, 50 * MiB])
def test_download_sha256(transferd, origin, size):
    sid = create_session(transferd)
    seed = f"dl-{size}"
    task = run_task(transferd, sid, download(origin.url(f"/bytes/{size}?seed={seed}")))
    expected = Origin.expected_sha256(size, seed)
    assert_file(task, size, expected)
    assert task["response"]["status"] == 200
    assert task["response"]["expected_content_length"] == size
    assert task["metrics"]["redirect_count"] == 0
    assert task["metrics"]["attempts"] >= 1
    assert task["started_at"] and task["completed_at"]
    assert str(transferd.data_dir) in task["result"]["location"]  # no destination: kept in the data dir
    response, digest, length = fetch_sha256(transferd, task_path(sid, task["id"], "/file"))
    assert response.status_code == 200
    assert (digest, length) == (expected, size)


def test_download_of_an_empty_body(transferd, origin):
    sid = create_session(transferd)
    task = run_task(transferd, sid, download(origin.url("/bytes/0")))
    assert_file(task, 0, hashlib.sha256(b"").hexdigest())


def test_download_without_content_length(transferd, origin):
    sid = create_session(transferd)
    size = 3 * MiB + 7
    task = run_task(transferd, sid, download(origin.url(f"/bytes/{size}?no_length=1&seed=chunked")))
    assert_file(task, size, Origin.expected_sha256(size, "chunked"))


def test_large_download_200_mib(transferd, origin):
    sid = create_session(transferd)
    size = 200 * MiB
    task = run_task(transferd, sid, download(origin.url(f"/bytes/{size}?seed=large")), timeout=30)
    assert_file(task, size, Origin.expected_sha256(size, "large"))


# MARK: serving the file


def test_file_get_head_and_ranges(transferd, origin):
    sid = create_session(transferd)
    size = 100_000
    body = Origin.expected_bytes(size, "ranges")
    task = run_task(transferd, sid, download(origin.url(f"/bytes/{size}?seed=ranges&content_type=text/x-custom")))
    assert_file(task, size, hashlib.sha256(body).hexdigest())
    assert task["response"]["mime_type"] == "text/x-custom"
    path = task_path(sid, task["id"], "/file")

    whole = transferd.get(path)
    assert whole.status_code == 200
    assert whole.content == body
    assert whole.headers["Content-Type"] == "text/x-custom"
    assert whole.headers["Content-Length"] == str(size)

    head = transferd.head(path)
    assert head.status_code == 200
    assert head.content == b""
    assert head.headers["Content-Length"] == str(size)
    assert head.headers["Content-Type"] == "text/x-custom"

    for header, start, end in [("bytes=10-19", 10, 19), ("bytes=99990-", 99990, size - 1),
                               ("bytes=-5", size - 5, size - 1), ("bytes=0-0", 0, 0),
                               ("bytes=99000-200000", 99000, size - 1)]:
        part = transferd.get(path, headers={"Range": header})
        assert part.status_code == 206, (header, part.status_code, part.text[:200])
        assert part.headers["Content-Range"] == f"bytes {start}-{end}/{size}", header
        assert part.content == body[start:end + 1], header
        assert part.headers["Content-Type"] == "text/x-custom"

    for header in ("bytes=100000-", f"bytes={size + 10}-{size + 20}"):
        unsatisfiable = transferd.get(path, headers={"Range": header})
        assert unsatisfiable.status_code == 416, (header, unsatisfiable.status_code)
        assert unsatisfiable.headers["Content-Range"] == f"bytes */{size}"


@pytest.mark.parametrize("kind", ["download", "data"])
def test_served_content_type_keeps_the_origins_parameters(transferd, origin, kind):
    sid = create_session(transferd)
    task = assert_success(run_task(transferd, sid, {
        "kind": kind, "request": {"url": origin.url("/bytes/100?content_type=text/plain;%20charset=ISO-8859-1")}}))
    assert task["response"]["mime_type"] == "text/plain"
    served = transferd.get(task_path(sid, task["id"], "/file" if kind == "download" else "/body"))
    assert served.status_code == 200
    content_type = served.headers["Content-Type"].lower().replace(" ", "")
    assert content_type == "text/plain;charset=iso-8859-1", served.headers["Content-Type"]


ONE_ATTEMPT = {"retry": {"max_attempts": 1}}


def test_file_of_data_task_or_unfinished_download_is_409(transferd, origin):
    sid = create_session(transferd, configuration=ONE_ATTEMPT)
    data_task = run_task(transferd, sid, data(origin.url("/bytes/10")))
    assert_problem(transferd.get(task_path(sid, data_task["id"], "/file")), 409)
    pending = create_task(transferd, sid, download(origin.url("/bytes/10"), start=False))
    assert_problem(transferd.get(task_path(sid, pending["id"], "/file")), 409)
    failed = run_task(transferd, sid, download(origin.url("/bytes/1000?wrong_length=2000")))
    assert_problem(transferd.get(task_path(sid, failed["id"], "/file")), 409)


def test_response_and_metrics_are_reported(transferd, origin):
    sid = create_session(transferd)
    task = assert_success(run_task(transferd, sid, download(
        origin.url("/bytes/2048?disposition=report.pdf&content_type=application/pdf"))))
    response = task["response"]
    assert response["status"] == 200
    assert response["mime_type"] == "application/pdf"
    assert response["expected_content_length"] == 2048
    assert response["suggested_filename"] == "report.pdf"
    assert {name.lower(): value for name, value in response["headers"].items()}["etag"] == Origin.validators(2048)[0]
    progress = task["progress"]
    assert progress["bytes_received"] == progress["bytes_expected_to_receive"] == 2048
    assert progress["fraction"] == 1
    metrics = task["metrics"]
    assert metrics["attempts"] == 1
    assert metrics["remote_address"] in (f"127.0.0.1:{origin.port}", "127.0.0.1")
    assert metrics["protocol"] in ("http/1.1", "HTTP/1.1")
    assert metrics["timings_ms"]["total"] > 0
    assert metrics["timings_ms"]["total"] >= metrics["timings_ms"]["first_byte"] >= 0
    # Without a Content-Disposition, the last path segment is suggested; non-ASCII names come through.
    utf8 = assert_success(run_task(transferd, sid, download(origin.url("/bytes/10?disposition=r%C3%A9sum%C3%A9.txt"))))
    assert utf8["response"]["suggested_filename"] == "résumé.txt"
    plain = assert_success(run_task(transferd, sid, download(origin.url("/bytes/10"))))
    assert plain["response"]["suggested_filename"] == "10"


def test_suggested_filename_never_names_the_file(transferd, origin):
    sid = create_session(transferd)
    task = run_task(transferd, sid, download(origin.url("/bytes/64?disposition=../../escape.sh")))
    assert_success(task)
    location = Path(task["result"]["location"])
    assert "escape" not in location.name
    assert location.resolve().is_relative_to(transferd.data_dir.resolve())
    assert not list(transferd.data_dir.parent.glob("escape.sh"))
    assert not list(transferd.data_dir.rglob("escape.sh"))


# MARK: destinations


@pytest.fixture
def roots(tmp_path):
    """An allowed root (with a subdirectory and a symlink pointing out of it) and a directory
    outside it."""
    root = tmp_path / "root"
    (root / "sub").mkdir(parents=True)
    outside = tmp_path / "outside"
    outside.mkdir()
    (root / "link").symlink_to(outside, target_is_directory=True)
    return root, outside


def test_destination_inside_allowed_root(start_transferd, origin, roots, api_token):
    root, _ = roots
    td = start_transferd("--allow-path", str(root), api_token=api_token)
    sid = create_session(td)
    for destination in (root / "out.bin", root / "sub" / "deeper.bin"):
        task = run_task(td, sid, download(origin.url("/bytes/70000?seed=dest"),
                                          download={"destination": str(destination)}))
        expected = Origin.expected_sha256(70000, "dest")
        assert_file(task, 70000, expected)
        assert task["result"]["location"] == str(destination)
        response, digest, _ = fetch_sha256(td, task_path(sid, task["id"], "/file"))
        assert response.status_code == 200 and digest == expected
    # No temporary files left beside the destinations.
    assert sorted(p.name for p in root.rglob("*") if p.is_file()) == ["deeper.bin", "out.bin"]


def test_destination_replaces_a_symlink_instead_of_writing_through_it(start_transferd, origin, roots, api_token):
    root, outside = roots
    victim = outside / "victim.txt"
    victim.write_text("untouched")
    (root / "trap.bin").symlink_to(victim)
    td = start_transferd("--allow-path", str(root), api_token=api_token)
    sid = create_session(td)
    response = post_task(td, sid, download(origin.url("/bytes/100"), download={"destination": str(root / "trap.bin")}))
    if response.status_code == 201:
        task = wait_task(td, sid, response.json()["id"])
        if task["error"] is None:
            assert not (root / "trap.bin").is_symlink()
    else:
        assert_problem(response, 403, "path_not_allowed")
    assert victim.read_text() == "untouched"


@pytest.mark.parametrize("where", ["outside", "dotdot", "symlink", "relative", "root-itself", "no-root"])
def test_destination_outside_allowed_roots_is_403(start_transferd, origin, roots, api_token, where):
    root, outside = roots
    destinations = {
        "outside": str(outside / "x.bin"),
        "dotdot": f"{root}/../outside/x.bin",
        "symlink": str(root / "link" / "x.bin"),
        "relative": "root/x.bin",
        "root-itself": str(root),
        "no-root": str(root / "x.bin"),
    }
    args = () if where == "no-root" else ("--allow-path", str(root))
    td = start_transferd(*args, api_token=api_token)
    sid = create_session(td)
    response = post_task(td, sid, download(origin.url("/bytes/100"), download={"destination": destinations[where]}))
    assert_problem(response, 403, "path_not_allowed")
    assert td.get(f"/v1/sessions/{sid}/tasks").json()["tasks"] == []
    assert origin.requests == []
    assert list(outside.iterdir()) == []


def test_batch_destination_outside_root_is_403_and_creates_nothing(start_transferd, origin, roots, api_token):
    root, outside = roots
    td = start_transferd("--allow-path", str(root), api_token=api_token)
    sid = create_session(td)
    bodies = [download(origin.url("/bytes/1"), download={"destination": str(root / "ok.bin")}),
              download(origin.url("/bytes/1"), download={"destination": str(outside / "no.bin")})]
    problem = assert_problem(td.post(f"/v1/sessions/{sid}/tasks:batch", json={"tasks": bodies}), 403, "path_not_allowed")
    assert problem.get("field", "tasks[1]").startswith("tasks[1]"), problem
    assert td.get(f"/v1/sessions/{sid}/tasks").json()["tasks"] == []


# MARK: checksums


def test_checksum_match_and_mismatch(start_transferd, origin, roots, api_token):
    root, _ = roots
    td = start_transferd("--allow-path", str(root), api_token=api_token)
    sid = create_session(td)
    good = Origin.expected_sha256(5000, "sum")
    task = run_task(td, sid, download(origin.url("/bytes/5000?seed=sum"), checksum={"sha256": good.upper()}))
    assert_file(task, 5000, good)

    wrong = hashlib.sha256(b"something else").hexdigest()
    destination = root / "checked.bin"
    task = run_task(td, sid, download(origin.url("/bytes/5000?seed=sum"), checksum={"sha256": wrong},
                                      download={"destination": str(destination)}))
    assert_task_error(task, "checksum_mismatch")
    assert task["result"] is None
    assert not destination.exists()
    assert [p.name for p in root.iterdir() if p.is_file()] == []  # no temporary file left either
    assert_problem(td.get(task_path(sid, task["id"], "/file")), 409)


# MARK: redirects


def test_redirects_are_followed_and_counted(transferd, origin):
    sid = create_session(transferd)
    task = run_task(transferd, sid, download(origin.url("/redirect/3?bytes=4321")))
    assert_file(task, 4321, Origin.expected_sha256(4321))
    assert task["metrics"]["redirect_count"] == 3
    assert task["current_url"] == origin.url("/redirect/0?bytes=4321")
    assert task["request"]["url"] == origin.url("/redirect/3?bytes=4321")
    relative = run_task(transferd, sid, download(origin.url("/redirect/2?bytes=10&relative=1&status=307")))
    assert_file(relative, 10, Origin.expected_sha256(10))
    assert relative["metrics"]["redirect_count"] == 2


def test_redirect_loop_is_too_many_redirects(transferd, origin):
    sid = create_session(transferd)
    task = run_task(transferd, sid, download(origin.url("/redirect-loop")))
    assert_task_error(task, "too_many_redirects")
    assert task["result"] is None
    assert len(origin.requests) == 17  # the first request and the 16 redirects of the default max


def test_redirects_max_is_honoured(transferd, origin):
    sid = create_session(transferd, configuration={"redirects": {"max": 2}})
    assert_task_error(run_task(transferd, sid, download(origin.url("/redirect/3?bytes=10"))), "too_many_redirects")
    task = run_task(transferd, sid, download(origin.url("/redirect/2?bytes=10")))
    assert_file(task, 10, Origin.expected_sha256(10))
    assert task["metrics"]["redirect_count"] == 2


def test_redirects_not_followed_when_disabled(transferd, origin):
    sid = create_session(transferd, configuration={"redirects": {"follow": False}})
    task = assert_success(run_task(transferd, sid, data(origin.url("/redirect/1?status=301"))))
    assert task["response"]["status"] == 301
    assert len(origin.requests) == 1


@pytest.mark.parametrize("target", ["file:///etc/passwd", "gopher://127.0.0.1:{port}/1", "dict://127.0.0.1:{port}/d:x",
                                    "ftp://127.0.0.1:{port}/x"])
def test_redirect_to_other_scheme_is_unsupported_url(transferd, origin, target):
    sid = create_session(transferd)
    location = target.format(port=origin.port)
    task = run_task(transferd, sid, download(origin.url(f"/redirect-to?url={location}")))
    assert_task_error(task, "unsupported_url")
    assert task["result"] is None
    assert len(origin.requests) == 1  # nothing reached the origin's port by another protocol
    assert origin.connections_opened == 1


# MARK: HTTP statuses and broken responses


@pytest.mark.parametrize("status", [404, 500, 503])
def test_http_error_status_completes_without_error(transferd, origin, status):
    sid = create_session(transferd)
    task = run_task(transferd, sid, download(origin.url(f"/status/{status}")))
    assert task["state"] == "completed"
    assert task["error"] is None, task["error"]
    assert task["response"]["status"] == status


def test_reset_mid_body_is_network_connection_lost(transferd, origin):
    sid = create_session(transferd, configuration=ONE_ATTEMPT)
    task = run_task(transferd, sid, download(origin.url("/bytes/1000000?reset_after=300000")))
    assert_task_error(task, "network_connection_lost")
    assert task["result"] is None
    assert isinstance(task["error"]["curl_code"], int) and task["error"]["message"]
    assert not list((transferd.data_dir / "sessions" / sid).rglob("*.part")), "partial file left behind"
    # What arrived is kept for the resume data the error carries.
    assert task["error"]["resume_data"]
    assert len(list((transferd.data_dir / "sessions" / sid).rglob("*.resume"))) == 1


def test_wrong_content_length_is_network_connection_lost(transferd, origin):
    sid = create_session(transferd, configuration=ONE_ATTEMPT)
    task = run_task(transferd, sid, download(origin.url("/bytes/10000?wrong_length=20000")))
    assert_task_error(task, "network_connection_lost")
    assert task["result"] is None


def test_connection_refused_is_cannot_connect_to_host(transferd, origin):
    sid = create_session(transferd)
    with Origin() as closed:
        port = closed.port
    task = run_task(transferd, sid, download(f"http://127.0.0.1:{port}/bytes/10"))
    assert_task_error(task, "cannot_connect_to_host")


# MARK: download.max_bytes


def test_max_bytes_refuses_a_declared_length_before_the_body(start_transferd, origin, tmp_path, api_token):
    td = start_transferd("--allow-path", str(tmp_path), api_token=api_token)
    sid = create_session(td)
    destination = tmp_path / "big.bin"
    task = run_task(td, sid, download(origin.url("/bytes/500000000?seed=mb"),
                                      download={"destination": str(destination), "max_bytes": 1_000_000}))
    assert_task_error(task, "data_length_exceeds_maximum")
    assert "500000000" in task["error"]["message"] and "1000000" in task["error"]["message"], task["error"]
    assert task["download"]["max_bytes"] == 1_000_000
    assert list(tmp_path.iterdir()) == [], "nothing at the destination, no temporary file"
    # Stopped at the head: the origin wrote only what the loopback socket buffers took before the
    # connection closed (a few MB), nowhere near the body.
    assert origin.bytes_served("/bytes/") < 50_000_000, "stopped at the head, not after reading the body"


def test_max_bytes_stops_a_body_of_unknown_length_once_it_passes_the_limit(start_transferd, origin, tmp_path, api_token):
    td = start_transferd("--allow-path", str(tmp_path), api_token=api_token)
    sid = create_session(td)
    destination = tmp_path / "chunked.bin"
    task = run_task(td, sid, download(origin.url("/bytes/100000000?seed=mc&no_length=1"),
                                      download={"destination": str(destination), "max_bytes": 2_000_000}))
    assert_task_error(task, "data_length_exceeds_maximum")
    assert list(tmp_path.iterdir()) == []
    assert origin.bytes_served("/bytes/") < 20_000_000, "the transfer stopped soon after the limit"


def test_max_bytes_at_the_size_or_absent_downloads_it(transferd, origin):
    sid = create_session(transferd)
    exact = run_task(transferd, sid, download(origin.url("/bytes/70000?seed=me"), download={"max_bytes": 70_000}))
    assert_success(exact)
    assert exact["result"]["size"] == 70_000
    unlimited = run_task(transferd, sid, download(origin.url("/bytes/70000?seed=me")))
    assert unlimited["download"]["max_bytes"] is None


@pytest.mark.parametrize("value", [0, -1, "big", 1.5, 1 << 63])
def test_a_bad_max_bytes_is_422_naming_the_field(transferd, origin, value):
    sid = create_session(transferd)
    problem = assert_problem(post_task(transferd, sid, download(origin.url("/bytes/1"), download={"max_bytes": value})), 422)
    assert problem.get("field") == "download.max_bytes", problem

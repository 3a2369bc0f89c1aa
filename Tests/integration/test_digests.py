"""Digests of downloads: `download.digests` computes any of sha256, sha512, sha1, md5 and crc32c over
the file (checked here against Python's hashlib and the `crc32c` package), `--default-digests` sets
what a download computes when it does not say, `checksum` takes any one of them (a mismatch is
`checksum_mismatch`, naming the algorithm and both values, with nothing at the destination), and a
download resumed after a `kill -9` still reports digests of the whole file. Digests the origin
declares (`Repr-Digest`, `Content-Digest`, `Content-MD5`, `x-goog-hash`) are verified unless the
session says `verify_origin_digests: false`; uploads send theirs with `upload.send_digest`."""

from __future__ import annotations

import base64
import hashlib
import json
import os
import re
import time

import crc32c
import pytest

from support.api import (assert_problem, assert_success, assert_task_error, create_session, create_task,
                         download, get_session, post_task, put_session, run_task, unique, wait_progress, wait_task)
from support.events import all_events, of_type
from support.origin import Origin
from support.transferd import run_transferd

MiB = 1 << 20
ALGORITHMS = ["sha256", "sha512", "sha1", "md5", "crc32c"]


def expected(content: bytes) -> dict[str, str]:
    """Every digest of `content`, computed independently of transferd (crc32c as its 4 bytes
    big-endian, in hex)."""
    return {
        "sha256": hashlib.sha256(content).hexdigest(),
        "sha512": hashlib.sha512(content).hexdigest(),
        "sha1": hashlib.sha1(content).hexdigest(),
        "md5": hashlib.md5(content).hexdigest(),
        "crc32c": f"{crc32c.crc32c(content):08x}",
    }


@pytest.mark.parametrize("size", [1, 100_000, 5 * MiB + 7])
def test_every_algorithm_matches_an_independent_implementation(transferd, origin, size):
    sid = create_session(transferd)
    task = run_task(transferd, sid, download(origin.url(f"/bytes/{size}?seed=dg"), download={"digests": ALGORITHMS}))
    assert_success(task)
    want = expected(Origin.expected_bytes(size, "dg"))
    assert task["result"]["digests"] == want
    assert list(task["result"]["digests"]) == ALGORITHMS, "in the algorithms' fixed order"
    assert task["result"]["sha256"] == want["sha256"]
    assert task["download"]["digests"] == ALGORITHMS
    finished = of_type(all_events(transferd, sid), "task.finished_downloading", task["id"])
    assert finished and finished[0]["data"]["digests"] == want


def test_the_default_is_sha256_and_none_computes_nothing(transferd, origin):
    sid = create_session(transferd)
    content = Origin.expected_bytes(4096, "df")
    default = run_task(transferd, sid, download(origin.url("/bytes/4096?seed=df")))
    assert default["download"]["digests"] == ["sha256"]
    assert default["result"]["digests"] == {"sha256": expected(content)["sha256"]}
    bare = run_task(transferd, sid, download(origin.url("/bytes/4096?seed=df"), download={"digests": []}))
    assert_success(bare)
    assert bare["result"]["digests"] == {} and "sha256" not in bare["result"], bare["result"]
    assert bare["result"]["size"] == 4096


def test_default_digests_sets_what_a_download_computes(start_transferd, origin, api_token):
    td = start_transferd("--default-digests", "crc32c,md5", api_token=api_token)
    sid = create_session(td)
    want = expected(Origin.expected_bytes(70_000, "dd"))
    task = run_task(td, sid, download(origin.url("/bytes/70000?seed=dd")))
    assert task["download"]["digests"] == ["crc32c", "md5"]
    assert task["result"]["digests"] == {"md5": want["md5"], "crc32c": want["crc32c"]}
    own = run_task(td, sid, download(origin.url("/bytes/70000?seed=dd"), download={"digests": ["sha1"]}))
    assert own["result"]["digests"] == {"sha1": want["sha1"]}, "a task's own list wins"


@pytest.mark.parametrize("value", ["sha3", "sha256,sha256", "md5,"])
def test_an_invalid_default_digests_stops_the_start(value):
    result = run_transferd(["--default-digests", value])
    assert result.returncode == 2, result
    assert "--default-digests" in result.stderr, result.stderr


@pytest.mark.parametrize("algorithm", ALGORITHMS)
def test_a_checksum_in_any_algorithm_is_verified(start_transferd, origin, tmp_path, api_token, algorithm):
    td = start_transferd("--allow-path", str(tmp_path), api_token=api_token)
    sid = create_session(td)
    want = expected(Origin.expected_bytes(30_000, "ck"))[algorithm]
    # Not among the digests asked for: the checksum's algorithm is computed anyway.
    good = run_task(td, sid, download(origin.url("/bytes/30000?seed=ck"), checksum={algorithm: want.upper()},
                                      download={"digests": []}))
    assert_success(good)

    wrong = "0" * len(want)
    destination = tmp_path / "checked.bin"
    bad = run_task(td, sid, download(origin.url("/bytes/30000?seed=ck"), checksum={algorithm: wrong},
                                     download={"destination": str(destination)}))
    assert_task_error(bad, "checksum_mismatch")
    message = bad["error"]["message"]
    assert algorithm in message and want in message and wrong in message, message
    assert bad["result"] is None
    assert not destination.exists() and list(tmp_path.iterdir()) == [], "nothing at the destination, no temporary file"


@pytest.mark.parametrize("fields, field", [
    ({"download": {"digests": ["sha3"]}}, "download.digests[0]"),
    ({"download": {"digests": ["md5", "md5"]}}, "download.digests[1]"),
    ({"download": {"digests": "sha256"}}, "download.digests"),
    ({"download": {"digests": [256]}}, "download.digests[0]"),
    ({"checksum": {"crc32c": "abc"}}, "checksum.crc32c"),
    ({"checksum": {"md5": "z" * 32}}, "checksum.md5"),
    ({"checksum": {"sha1": "0" * 40, "md5": "0" * 32}}, "checksum"),
    ({"checksum": {}}, "checksum"),
    ({"checksum": {"sha384": "0" * 96}}, "checksum.sha384"),
])
def test_bad_digest_fields_are_422_naming_the_field(transferd, origin, fields, field):
    sid = create_session(transferd)
    problem = assert_problem(post_task(transferd, sid, download(origin.url("/bytes/1"), **fields)), 422)
    assert problem.get("field") == field, problem
    assert transferd.get(f"/v1/sessions/{sid}/tasks").json()["tasks"] == []


def test_digests_are_only_for_downloads(transferd, origin):
    sid = create_session(transferd)
    body = {"kind": "data", "request": {"url": origin.url("/bytes/1")}, "download": {"digests": ["md5"]}}
    assert_problem(post_task(transferd, sid, body), 422)


def test_a_download_resumed_after_kill_9_reports_digests_of_the_whole_file(transferd, origin):
    sid = create_session(transferd, mode="background")
    size = 3 * MiB
    task = create_task(transferd, sid, download(origin.url(f"/bytes/{size}?seed=rs&rate={MiB}"),
                                                download={"digests": ["sha512", "crc32c"]}))
    wait_progress(transferd, sid, task["id"], 512 * 1024)
    transferd.kill9()
    transferd.restart()
    done = assert_success(wait_task(transferd, sid, task["id"]))
    want = expected(Origin.expected_bytes(size, "rs"))
    assert done["result"]["digests"] == {"sha512": want["sha512"], "crc32c": want["crc32c"]}
    assert len(origin.requests) >= 2 and "range" in origin.requests[-1].headers, "it continued with Range"


# MARK: digests the origin declares

DECLARED = {  # the origin's declare= name → what result.verified reports
    "repr-sha-256": ["repr-digest:sha-256"],
    "repr-sha-512": ["repr-digest:sha-512"],
    "content-sha-256": ["content-digest:sha-256"],
    "content-sha-512": ["content-digest:sha-512"],
    "content-md5": ["content-md5"],
    "goog": ["x-goog-hash:crc32c", "x-goog-hash:md5"],
}


@pytest.mark.parametrize("declare", DECLARED)
def test_a_digest_the_origin_declares_is_verified(transferd, origin, declare):
    sid = create_session(transferd)
    # Not among the digests asked for: the declared algorithm is computed anyway, not reported.
    task = run_task(transferd, sid, download(origin.url(f"/bytes/200000?seed=og&declare={declare}"), download={"digests": []}))
    assert_success(task)
    assert task["result"]["verified"] == DECLARED[declare]
    assert task["result"]["digests"] == {}
    finished = of_type(all_events(transferd, sid), "task.finished_downloading", task["id"])
    assert finished[0]["data"]["verified"] == DECLARED[declare]


@pytest.mark.parametrize("declare", DECLARED)
def test_a_wrong_declared_digest_is_a_checksum_mismatch_with_nothing_at_the_destination(start_transferd, origin, tmp_path,
                                                                                         api_token, declare):
    td = start_transferd("--allow-path", str(tmp_path), api_token=api_token)
    sid = create_session(td)
    destination = tmp_path / "declared.bin"
    url = origin.url(f"/bytes/70000?seed=ow&declare={declare}&declare_wrong=1")
    task = run_task(td, sid, download(url, download={"destination": str(destination)}))
    assert_task_error(task, "checksum_mismatch")
    message = task["error"]["message"]
    source = DECLARED[declare][0]
    algorithm = {"sha-256": "sha256", "sha-512": "sha512", "md5": "md5", "crc32c": "crc32c"}[
        "md5" if source == "content-md5" else source.split(":")[1]]
    actual = expected(Origin.expected_bytes(70_000, "ow"))[algorithm]
    assert algorithm in message and actual in message and source in message, message
    declared_hex = re.search(r"not the ([0-9a-f]+) the origin declared", message)
    assert declared_hex and declared_hex[1] != actual and len(declared_hex[1]) == len(actual), message
    assert task["result"] is None
    assert list(tmp_path.iterdir()) == [], "nothing at the destination, no temporary file"


def test_all_declared_digests_together_and_the_ones_asked_for(transferd, origin):
    sid = create_session(transferd)
    url = origin.url("/bytes/5000?seed=al&declare=" + ",".join(DECLARED))
    task = run_task(transferd, sid, download(url, download={"digests": ["sha256", "crc32c"]}))
    assert_success(task)
    assert sorted(task["result"]["verified"]) == sorted(sum(DECLARED.values(), []))
    want = expected(Origin.expected_bytes(5000, "al"))
    assert task["result"]["digests"] == {"sha256": want["sha256"], "crc32c": want["crc32c"]}


def test_a_session_may_switch_verification_off(transferd, origin):
    default = create_session(transferd)
    assert get_session(transferd, default)["configuration"]["verify_origin_digests"] is True
    sid = create_session(transferd, configuration={"verify_origin_digests": False})
    assert get_session(transferd, sid)["configuration"]["verify_origin_digests"] is False
    task = run_task(transferd, sid, download(origin.url("/bytes/9000?seed=of&declare=repr-sha-256,goog&declare_wrong=1")))
    assert_success(task)
    assert task["result"]["verified"] == []
    assert_problem(put_session(transferd, unique("v"), "default", {"verify_origin_digests": "no"}), 422)


def test_a_download_without_declared_digests_verifies_nothing(transferd, origin):
    sid = create_session(transferd)
    task = run_task(transferd, sid, download(origin.url("/bytes/1000?seed=nd")))
    assert_success(task)
    assert task["result"]["verified"] == []


def test_a_resumed_download_verifies_what_describes_the_whole_file(transferd, origin):
    """After a kill -9 the download continues with a 206: Repr-Digest and x-goog-hash describe the
    whole file and are verified; Content-Digest describes only the 206's range and is not."""
    sid = create_session(transferd, mode="background")
    size = 3 * MiB
    url = origin.url(f"/bytes/{size}?seed=rv&rate={MiB}&declare=repr-sha-512,content-sha-256,goog")
    task = create_task(transferd, sid, download(url, download={"digests": ["md5"]}))
    wait_progress(transferd, sid, task["id"], 512 * 1024)
    transferd.kill9()
    transferd.restart()
    done = assert_success(wait_task(transferd, sid, task["id"]))
    assert "range" in origin.requests[-1].headers and origin.requests[-1].status == 206, "it continued with Range"
    assert done["result"]["verified"] == ["repr-digest:sha-512", "x-goog-hash:crc32c", "x-goog-hash:md5"]
    assert done["result"]["digests"] == {"md5": expected(Origin.expected_bytes(size, "rv"))["md5"]}


def test_a_resumed_download_whose_whole_file_does_not_match_fails(transferd, origin):
    sid = create_session(transferd, mode="background")
    size = 3 * MiB
    url = origin.url(f"/bytes/{size}?seed=rw&rate={MiB}&declare=repr-sha-256&declare_wrong=1")
    task = create_task(transferd, sid, download(url))
    wait_progress(transferd, sid, task["id"], 512 * 1024)
    transferd.kill9()
    transferd.restart()
    done = assert_task_error(wait_task(transferd, sid, task["id"]), "checksum_mismatch")
    assert "repr-digest:sha-256" in done["error"]["message"]
    assert origin.requests[-1].status == 206


# MARK: digests sent with uploads


@pytest.fixture
def upload_root(tmp_path):
    root = tmp_path / "up"
    root.mkdir()
    return root


@pytest.mark.parametrize("name, algorithm", [("sha-256", "sha256"), ("sha-512", "sha512")])
@pytest.mark.parametrize("source", ["file", "blob"])
def test_an_upload_sends_its_digest_as_repr_digest(start_transferd, origin, upload_root, api_token, name, algorithm, source):
    td = start_transferd("--allow-path", str(upload_root), api_token=api_token)
    sid = create_session(td)
    content = os.urandom(3 * MiB + 11)
    if source == "file":
        (upload_root / "payload.bin").write_bytes(content)
        upload = {"from_file": str(upload_root / "payload.bin"), "send_digest": name}
    else:
        blob = td.post("/v1/blobs", data=content, headers={"Content-Type": "application/octet-stream"})
        assert blob.status_code == 201, blob.text
        upload = {"from_blob": blob.json()["id"], "send_digest": name}
    task = run_task(td, sid, {"kind": "upload", "request": {"url": origin.url("/upload")}, "upload": upload})
    assert_success(task)
    assert task["upload"] == {"send_digest": name}
    received = origin.uploads[-1]
    assert received.sha256 == hashlib.sha256(content).hexdigest()
    want = base64.b64encode(hashlib.new(algorithm, content).digest()).decode()
    assert received.headers["repr-digest"] == f"{name}=:{want}:"


def test_a_multipart_upload_sends_the_digest_of_the_whole_body(start_transferd, origin, upload_root, api_token):
    td = start_transferd("--allow-path", str(upload_root), api_token=api_token)
    sid = create_session(td)
    (upload_root / "photo.jpg").write_bytes(os.urandom(100_000))
    task = run_task(td, sid, {"kind": "upload", "request": {"url": origin.url("/echo"), "method": "POST"},
                              "upload": {"from_file": str(upload_root / "photo.jpg"), "send_digest": "sha-256"},
                              "multipart": {"field": "file", "filename": "photo.jpg", "mime_type": "image/jpeg"}})
    assert_success(task)
    echo = json.loads(transferd_body(td, sid, task["id"]))
    digest = echo["headers"]["repr-digest"]
    assert digest == "sha-256=:" + base64.b64encode(bytes.fromhex(echo["body_sha256"])).decode() + ":"


def test_an_upload_without_send_digest_sends_none(transferd, origin):
    sid = create_session(transferd)
    task = run_task(transferd, sid, {"kind": "upload", "request": {"url": origin.url("/echo"), "body": {"text": "hi"}}})
    assert "upload" not in task
    assert "repr-digest" not in json.loads(transferd_body(transferd, sid, task["id"]))["headers"]


@pytest.mark.parametrize("value", ["sha256", "md5", "SHA-256", 256])
def test_a_bad_send_digest_is_422_naming_the_field(start_transferd, origin, upload_root, api_token, value):
    td = start_transferd("--allow-path", str(upload_root), api_token=api_token)
    sid = create_session(td)
    (upload_root / "x.bin").write_bytes(b"x")
    body = {"kind": "upload", "request": {"url": origin.url("/upload")},
            "upload": {"from_file": str(upload_root / "x.bin"), "send_digest": value}}
    problem = assert_problem(post_task(td, sid, body), 422)
    assert problem.get("field") == "upload.send_digest", problem
    assert td.get(f"/v1/sessions/{sid}/tasks").json()["tasks"] == []


def transferd_body(td, sid: str, tid: str) -> bytes:
    response = td.get(f"/v1/sessions/{sid}/tasks/{tid}/body")
    assert response.status_code == 200, response.text
    return response.content


def test_what_was_verified_and_sent_is_kept_across_a_restart(start_transferd, origin, upload_root, api_token):
    td = start_transferd("--allow-path", str(upload_root), api_token=api_token)
    sid = create_session(td, mode="background")
    verified = run_task(td, sid, download(origin.url("/bytes/4000?seed=kr&declare=goog")))
    (upload_root / "p.bin").write_bytes(b"payload")
    queued = create_task(td, sid, {"kind": "upload", "request": {"url": origin.url("/upload")}, "start": False,
                                   "upload": {"from_file": str(upload_root / "p.bin"), "send_digest": "sha-512"}})
    td.restart()
    assert td.get(f"/v1/sessions/{sid}/tasks/{verified['id']}").json()["result"]["verified"] == DECLARED["goog"]
    assert td.get(f"/v1/sessions/{sid}/tasks/{queued['id']}").json()["upload"] == {"send_digest": "sha-512"}
    assert td.post(f"/v1/sessions/{sid}/tasks/{queued['id']}/resume").status_code == 200
    assert_success(wait_task(td, sid, queued["id"]))
    want = base64.b64encode(hashlib.sha512(b"payload").digest()).decode()
    assert origin.uploads[-1].headers["repr-digest"] == f"sha-512=:{want}:"


def test_a_download_continued_after_kill_9_hashes_only_what_its_checkpoint_does_not_cover(transferd, origin):
    """Every 64 MiB hashed, a download's digest state is kept with its record; after a kill -9 the
    continued download restores it and reads back only the partial file's tail, not all of it. The
    digests still cover the whole file."""
    sid = create_session(transferd, mode="background")
    size, first = 100 * MiB, 72 * MiB
    url = origin.url(f"/bytes/{size}?seed=ck2&stall_after={first}")
    task = create_task(transferd, sid, download(url, download={"digests": ["sha256", "md5", "crc32c"]}))
    wait_progress(transferd, sid, task["id"], first, timeout=60)
    time.sleep(2)  # the hasher catches up (a step behind) and its checkpoint is stored (0.2 s)
    transferd.kill9()
    transferd.restart()
    done = assert_success(wait_task(transferd, sid, task["id"]))
    assert origin.requests[-1].status == 206, "it continued with Range"
    want = expected(Origin.expected_bytes(size, "ck2"))
    assert done["result"]["digests"] == {"sha256": want["sha256"], "md5": want["md5"], "crc32c": want["crc32c"]}
    continued = transferd.wait_for_log(lambda r: r.get("msg") == "digests continued from a checkpoint")
    # The first checkpoint past 64 MiB hashed (reads are not aligned to it), before the 72 MiB held.
    assert 64 * MiB <= int(continued["offset"]) < first, continued


def test_a_checkpoint_of_content_the_file_no_longer_holds_is_not_used(transferd, origin):
    """The partial file is overwritten behind transferd's back between the kill and the restart:
    its checkpoint's tail no longer matches, so the digests come from reading the file again —
    and describe what is on disk, which the origin's Repr-Digest of the real content then refuses."""
    sid = create_session(transferd, mode="background")
    size, first = 100 * MiB, 72 * MiB
    url = origin.url(f"/bytes/{size}?seed=ck3&stall_after={first}&declare=repr-sha-256")
    task = create_task(transferd, sid, download(url))
    wait_progress(transferd, sid, task["id"], first, timeout=60)
    time.sleep(2)
    transferd.kill9()
    partials = [p for p in transferd.data_dir.rglob("*") if p.is_file() and p.stat().st_size == first]
    assert len(partials) == 1, list(transferd.data_dir.rglob("*"))
    # Wherever past 64 MiB the checkpoint was taken, the 64 KiB before it are among these bytes.
    with open(partials[0], "r+b") as f:
        f.seek(64 * MiB - 128 * 1024)
        f.write(b"\0" * (first - 64 * MiB + 128 * 1024))
    transferd.restart()
    done = assert_task_error(wait_task(transferd, sid, task["id"]), "checksum_mismatch")
    assert "repr-digest:sha-256" in done["error"]["message"]
    assert not any(r.get("msg") == "digests continued from a checkpoint" for r in transferd.log_records())

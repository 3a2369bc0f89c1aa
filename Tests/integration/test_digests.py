"""Digests of downloads: `download.digests` computes any of sha256, sha512, sha1, md5 and crc32c over
the file (checked here against Python's hashlib and the `crc32c` package), `--default-digests` sets
what a download computes when it does not say, `checksum` takes any one of them (a mismatch is
`checksum_mismatch`, naming the algorithm and both values, with nothing at the destination), and a
download resumed after a `kill -9` still reports digests of the whole file."""

from __future__ import annotations

import hashlib

import crc32c
import pytest

from support.api import (assert_problem, assert_success, assert_task_error, create_session, create_task,
                         download, post_task, run_task, wait_progress, wait_task)
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

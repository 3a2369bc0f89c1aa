"""A full disk (ENOSPC) or a file over the size limit (EFBIG, RLIMIT_FSIZE) fails the task with
`cannot_write_to_file`, removes its temporary file, and leaves transferd serving. A full disk is not
retried. A file is written under a temporary name and renamed into place only once complete and
fsynced, so nothing half-written is ever left at a final name."""

from __future__ import annotations

import resource

import pytest

from support.api import (assert_success, assert_task_error, create_session, data, download, get_task, run_task)
from support.origin import Origin
from support.tmpfs import tmpfs

MiB = 1 << 20


def leftovers(directory):
    return [p.name for p in directory.rglob("*") if p.is_file() and p.name.startswith(".")]


@pytest.mark.parametrize("kind", [download, data])
def test_file_size_limit_fails_the_task_and_transferd_keeps_serving(transferd, origin, kind):
    sid = create_session(transferd, mode="background")
    # SQLite's files stay far below the limit; the 16 MiB response does not.
    resource.prlimit(transferd.pid, resource.RLIMIT_FSIZE, (8 * MiB, 8 * MiB))
    failed = assert_task_error(run_task(transferd, sid, kind(origin.url(f"/bytes/{16 * MiB}?seed=big"))),
                               "cannot_write_to_file")
    assert "File too large" in failed["error"]["message"], failed["error"]
    assert failed["error"]["resume_data"] is None
    assert failed["metrics"]["attempts"] == 1, "a full disk is not a transient failure"
    assert leftovers(transferd.data_dir / "sessions" / sid) == [], "temporary file left behind"

    # Still serving, and what fits is still written.
    small = assert_success(run_task(transferd, sid, kind(origin.url("/bytes/5000?seed=small"))))
    assert small["progress"]["bytes_received"] == 5000
    assert transferd.get("/readyz").status_code == 200
    # The failure was stored like any completion.
    transferd.restart()
    assert get_task(transferd, sid, failed["id"])["error"]["code"] == "cannot_write_to_file"


@pytest.fixture
def small_tmpfs(tmp_path):
    """A 4 MiB tmpfs (needs the right to mount; skipped without it)."""
    with tmpfs(tmp_path / "small", "4m") as mountpoint:
        yield mountpoint


# 8 MiB is written through the page cache; from 16 MiB on a download is written with O_DIRECT from
# chunks, whose failed write must fail the task the same way.
@pytest.mark.parametrize("size", [8 * MiB, 24 * MiB])
def test_full_file_system_fails_the_task_and_frees_the_space(start_transferd, api_token, origin, small_tmpfs, size):
    td = start_transferd("--allow-path", str(small_tmpfs), api_token=api_token)
    sid = create_session(td, mode="background")
    failed = run_task(td, sid, download(origin.url(f"/bytes/{size}"), download={"destination": str(small_tmpfs / "big.bin")}))
    assert_task_error(failed, "cannot_write_to_file")
    assert "No space left" in failed["error"]["message"], failed["error"]
    assert list(small_tmpfs.iterdir()) == [], "temporary file left behind"
    # The space came back: a file that fits is written there now.
    fits = assert_success(run_task(td, sid, download(origin.url(f"/bytes/{MiB}?seed=fits"),
                                                     download={"destination": str(small_tmpfs / "fits.bin")})))
    assert fits["result"]["sha256"] == Origin.expected_sha256(MiB, "fits")
    assert [p.name for p in small_tmpfs.iterdir()] == ["fits.bin"]

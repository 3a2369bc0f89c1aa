"""What a queued task costs: a download waiting for a slot holds no file descriptor (nor curl handle
or buffer) until the engine admits it, so a session can queue tens of thousands of downloads
behind a few running ones without running out of descriptors."""

from __future__ import annotations

import os

from support.api import create_batch, create_session, download, get_session, wait_for

QUEUED = 20_000
BATCH = 1_000
RUNNING = 4


def open_descriptors(pid: int) -> int:
    return len(os.listdir(f"/proc/{pid}/fd"))


def test_queued_downloads_hold_no_descriptors(transferd, origin):
    sid = create_session(transferd, configuration={"max_concurrent_tasks": RUNNING})
    # The running ones get a first kilobyte and then nothing more: they stay open, the rest wait.
    url = origin.url("/bytes/1000000?stall_after=1000")
    for start in range(0, QUEUED, BATCH):
        create_batch(transferd, sid, [download(url) for _ in range(start, start + BATCH)], timeout=60)
    wait_for(lambda: origin.active_connections >= RUNNING, timeout=30,
             message=lambda: f"{RUNNING} transfers to reach the origin (open: {origin.active_connections})")
    assert get_session(transferd, sid)["tasks"]["running"] == QUEUED

    descriptors = open_descriptors(transferd.pid)
    assert origin.max_concurrent_connections == RUNNING
    # Each running download holds its file and that file's directory; a waiting one nothing.
    assert descriptors < 2 * RUNNING + 200, f"{descriptors} descriptors open with {QUEUED} downloads queued"

    assert transferd.delete(f"/v1/sessions/{sid}?mode=cancel").status_code == 202

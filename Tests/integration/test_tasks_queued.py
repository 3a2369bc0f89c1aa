"""What a queued task costs: a download waiting for a slot holds no file descriptor (nor curl handle
or buffer) until the engine admits it, so a session can queue tens of thousands of downloads
behind a few running ones without running out of descriptors. A partial download waiting for a
slot still reports its progress and still leaves resume data when cancelled."""

from __future__ import annotations

import base64
import json
import os

from support.api import (action, assert_task_error, create_batch, create_session, create_task, download,
                         get_session, get_task, wait_for, wait_progress, wait_task)

QUEUED = 20_000
BATCH = 1_000
RUNNING = 4
MiB = 1 << 20


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


def test_a_partial_download_waiting_for_a_slot_keeps_its_progress_and_resume_data(transferd, origin):
    sid = create_session(transferd, configuration={"max_concurrent_tasks": 1})
    task = create_task(transferd, sid, download(origin.url(f"/bytes/{2 * MiB}?seed=w&rate={MiB}")))
    wait_progress(transferd, sid, task["id"], 256 * 1024)
    action(transferd, sid, task["id"], "suspend")
    wait_for(lambda: origin.active_connections == 0, timeout=5, message="the suspended request to end")
    partial = get_task(transferd, sid, task["id"])["progress"]["bytes_received"]
    assert partial >= 256 * 1024

    # The only slot is taken: the resumed task waits, its file not opened yet.
    create_task(transferd, sid, download(origin.url("/bytes/1000000?stall_after=1000&seed=blocker")))
    wait_for(lambda: origin.active_connections == 1, timeout=10, message="the blocking download to start")
    action(transferd, sid, task["id"], "resume")
    # (Until the suspended attempt is settled, the task may still show that attempt's phase.)
    waiting = wait_for(lambda: (t := get_task(transferd, sid, task["id"]))["phase"] == "waiting" and t,
                       timeout=5, message="the resumed task to wait for a slot")
    assert waiting["state"] == "running", waiting
    assert waiting["progress"]["bytes_received"] == partial

    cancelled = action(transferd, sid, task["id"], "cancel", {"produce_resume_data": True})
    if cancelled["state"] != "completed":
        cancelled = wait_task(transferd, sid, task["id"], timeout=5)
    assert_task_error(cancelled, "cancelled")
    token = json.loads(base64.b64decode(cancelled["error"]["resume_data"]))
    assert token["offset"] == partial
    assert len(origin.requests) == 2, "the waiting task reached the origin"

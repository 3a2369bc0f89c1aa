"""Controlling tasks: suspend and resume mid-transfer (continuing with Range), cancel, PATCH,
DELETE, and long-polling a task with `?wait=`."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from support.api import (action, assert_problem, assert_success, assert_task_error, create_session,
                         create_task, data, download, get_session, get_task, run_task, task_path,
                         wait_for, wait_progress, wait_task)
from support.origin import Origin

MiB = 1 << 20


def suspend_mid_transfer(td, origin, sid, url_path: str, at_least: int) -> tuple[dict, int]:
    """Starts a slow download, suspends it once it has received `at_least` bytes; returns the task
    (suspended) and the bytes the origin had sent by the time the connection closed."""
    task = create_task(td, sid, download(origin.url(url_path)))
    wait_progress(td, sid, task["id"], at_least)
    suspended = action(td, sid, task["id"], "suspend")
    assert suspended["state"] == "suspended", suspended
    wait_for(lambda: origin.active_connections == 0, timeout=5,
             message="the origin connection to close after suspend")
    served = origin.bytes_served("/bytes/")
    return suspended, served


def test_suspend_then_resume_continues_with_range(transferd, origin):
    sid = create_session(transferd)
    size = 2 * MiB
    task, served = suspend_mid_transfer(transferd, origin, sid, f"/bytes/{size}?seed=sr&rate={MiB}", 256 * 1024)
    assert served < size
    time.sleep(0.5)
    assert origin.bytes_served("/bytes/") == served, "bytes kept flowing after suspend"
    assert get_task(transferd, sid, task["id"])["state"] == "suspended"

    resumed = action(transferd, sid, task["id"], "resume")
    assert resumed["state"] in ("running", "completed")
    done = wait_task(transferd, sid, task["id"])
    assert_success(done)
    assert done["result"]["size"] == size
    assert done["result"]["sha256"] == Origin.expected_sha256(size, "sr")
    assert Path(done["result"]["location"]).stat().st_size == size

    first, second = origin.requests
    assert first.headers.get("Range") is None
    range_header = second.headers.get("Range")
    assert range_header and range_header.startswith("bytes="), second.headers.items()
    offset = int(range_header[len("bytes="):].split("-")[0])
    assert 0 < offset <= served
    assert second.status == 206
    assert second.headers.get("If-Range") in Origin.validators(size, "sr")
    assert origin.bytes_served("/bytes/") < 2 * size
    assert second.bytes_sent == size - offset


def test_resume_restarts_from_zero_when_origin_ignores_range(transferd, origin):
    sid = create_session(transferd)
    size = 2 * MiB
    task, _ = suspend_mid_transfer(transferd, origin, sid, f"/bytes/{size}?seed=ir&rate={MiB}&ignore_range=1",
                                   256 * 1024)
    action(transferd, sid, task["id"], "resume")
    done = assert_success(wait_task(transferd, sid, task["id"]))
    assert done["result"]["size"] == size
    assert done["result"]["sha256"] == Origin.expected_sha256(size, "ir")
    assert origin.requests[-1].status == 200


def test_running_task_reports_live_progress(transferd, origin):
    sid = create_session(transferd)
    size = 2 * MiB
    task = create_task(transferd, sid, download(origin.url(f"/bytes/{size}?rate={MiB}")))
    wait_progress(transferd, sid, task["id"], 200_000)
    running = wait_for(lambda: (t := get_task(transferd, sid, task["id"]))["progress"]["bytes_per_second"] > 0 and t,
                       timeout=3, message="a non-zero bytes_per_second")
    assert running["state"] == "running" and running["phase"] == "transferring", running
    progress = running["progress"]
    assert progress["bytes_expected_to_receive"] == size
    assert 0 < progress["fraction"] < 1
    assert 100_000 < progress["bytes_per_second"] < 10 * MiB, progress
    assert running["started_at"] and running["completed_at"] is None
    assert running["response"]["status"] == 200
    action(transferd, sid, task["id"], "cancel")


def test_suspend_and_resume_are_idempotent(transferd, origin):
    sid = create_session(transferd)
    task = create_task(transferd, sid, download(origin.url("/bytes/100"), start=False))
    assert action(transferd, sid, task["id"], "suspend")["state"] == "suspended"
    action(transferd, sid, task["id"], "resume")
    done = assert_success(wait_task(transferd, sid, task["id"]))
    # Acting on a completed task leaves it as it is.
    for name in ("resume", "suspend", "cancel"):
        again = action(transferd, sid, task["id"], name)
        assert again["state"] == "completed" and again["error"] is None
        assert again["result"] == done["result"]
    assert len(origin.requests) == 1


def test_cancel_running_task(transferd, origin):
    sid = create_session(transferd)
    size = 4 * MiB
    task = create_task(transferd, sid, download(origin.url(f"/bytes/{size}?rate={MiB}")))
    wait_progress(transferd, sid, task["id"], 100_000)
    cancelled = action(transferd, sid, task["id"], "cancel")
    if cancelled["state"] != "completed":
        cancelled = wait_task(transferd, sid, task["id"], timeout=5)
    assert_task_error(cancelled, "cancelled")
    assert cancelled["result"] is None
    wait_for(lambda: origin.active_connections == 0, timeout=5, message="the origin connection to close")
    assert origin.bytes_served("/bytes/") < size
    assert not [p for p in (transferd.data_dir / "sessions" / sid).rglob("*") if p.is_file()], "files left behind"
    assert_problem(transferd.get(task_path(sid, task["id"], "/file")), 409)
    assert get_session(transferd, sid)["tasks"]["completed"] == 1


def test_cancel_suspended_task(transferd, origin):
    sid = create_session(transferd)
    task = create_task(transferd, sid, data(origin.url("/echo"), start=False))
    cancelled = action(transferd, sid, task["id"], "cancel")
    if cancelled["state"] != "completed":
        cancelled = wait_task(transferd, sid, task["id"], timeout=5)
    assert_task_error(cancelled, "cancelled")
    assert origin.requests == []
    # A cancelled task does not come back.
    assert action(transferd, sid, task["id"], "resume")["state"] == "completed"
    time.sleep(0.3)
    assert origin.requests == []


def test_patch_priority_and_description(transferd, origin):
    sid = create_session(transferd)
    task = create_task(transferd, sid, download(origin.url("/bytes/10"), start=False, description="old"))
    response = transferd.patch(task_path(sid, task["id"]), json={"priority": 0.9, "description": "new"})
    assert response.status_code == 200, response.text
    assert response.json()["priority"] == 0.9 and response.json()["description"] == "new"
    fetched = get_task(transferd, sid, task["id"])
    assert fetched["priority"] == 0.9 and fetched["description"] == "new"
    # Only what is given changes; null clears the description.
    response = transferd.patch(task_path(sid, task["id"]), json={"description": None})
    assert response.status_code == 200, response.text
    assert response.json()["description"] is None and response.json()["priority"] == 0.9
    response = transferd.patch(task_path(sid, task["id"]), json={"priority": 0})
    assert response.status_code == 200 and response.json()["priority"] == 0
    assert_problem(transferd.patch(task_path(sid, task["id"]), json={"priority": 2}), 422, field="priority")
    assert_problem(transferd.patch(task_path(sid, task["id"]), json={"priority": "high"}), 422, field="priority")
    assert_problem(transferd.patch(task_path(sid, task["id"]), json={"state": "running"}), 422, "unknown_field",
                   field="state")
    assert get_task(transferd, sid, task["id"])["state"] == "suspended"
    # Completed tasks can be patched too.
    action(transferd, sid, task["id"], "resume")
    wait_task(transferd, sid, task["id"])
    response = transferd.patch(task_path(sid, task["id"]), json={"description": "done"})
    assert response.status_code == 200, response.text
    assert get_task(transferd, sid, task["id"])["description"] == "done"


def test_delete_completed_download_removes_the_file(transferd, origin):
    sid = create_session(transferd)
    task = assert_success(run_task(transferd, sid, download(origin.url("/bytes/50000"))))
    location = Path(task["result"]["location"])
    assert location.is_file()
    response = transferd.delete(task_path(sid, task["id"]))
    assert response.status_code == 204, response.text
    assert response.content == b""
    assert_problem(transferd.get(task_path(sid, task["id"])), 404)
    assert_problem(transferd.get(task_path(sid, task["id"], "/file")), 404)
    wait_for(lambda: not location.exists(), timeout=5, message=f"{location} to be removed")
    assert_problem(transferd.delete(task_path(sid, task["id"])), 404)
    counts = get_session(transferd, sid)["tasks"]
    assert counts["total"] == 0 and counts["completed"] == 0, counts
    assert transferd.get(f"/v1/sessions/{sid}/tasks").json()["tasks"] == []


def test_delete_data_task_removes_the_body(transferd, origin):
    sid = create_session(transferd)
    task = assert_success(run_task(transferd, sid, data(origin.url("/bytes/5000"))))
    assert transferd.delete(task_path(sid, task["id"])).status_code == 204
    assert_problem(transferd.get(task_path(sid, task["id"], "/body")), 404)
    wait_for(lambda: not [p for p in (transferd.data_dir / "sessions" / sid).rglob("*") if p.is_file()],
             timeout=5, message="the body file to be removed")


def test_delete_running_task_cancels_it(transferd, origin):
    sid = create_session(transferd)
    size = 4 * MiB
    task = create_task(transferd, sid, download(origin.url(f"/bytes/{size}?rate={MiB}")))
    wait_progress(transferd, sid, task["id"], 1)
    started = time.monotonic()
    assert transferd.delete(task_path(sid, task["id"])).status_code == 204
    assert time.monotonic() - started < 3
    assert_problem(transferd.get(task_path(sid, task["id"])), 404)
    wait_for(lambda: origin.active_connections == 0, timeout=5, message="the origin connection to close")
    assert origin.bytes_served("/bytes/") < size
    wait_for(lambda: not [p for p in (transferd.data_dir / "sessions" / sid).rglob("*") if p.is_file()],
             timeout=5, message="the partial file to be removed")
    assert get_session(transferd, sid)["tasks"]["total"] == 0


# MARK: ?wait=


def test_wait_returns_when_the_task_completes(transferd, origin):
    sid = create_session(transferd)
    task = create_task(transferd, sid, download(origin.url("/bytes/200000?rate=400000")))
    started = time.monotonic()
    response = transferd.get(task_path(sid, task["id"]) + "?wait=5")
    elapsed = time.monotonic() - started
    assert response.status_code == 200
    assert response.json()["state"] == "completed", response.json()
    assert elapsed < 4, f"wait took {elapsed:.2f}s for a task that takes about 0.5s"
    # A completed task answers at once.
    started = time.monotonic()
    assert transferd.get(task_path(sid, task["id"]) + "?wait=5").json()["state"] == "completed"
    assert time.monotonic() - started < 2.5  # well before the 5 s wait


def test_wait_returns_the_running_task_after_the_wait(transferd, origin):
    sid = create_session(transferd)
    task = create_task(transferd, sid, download(origin.url("/bytes/100000?stall_after=1000")))
    started = time.monotonic()
    response = transferd.get(task_path(sid, task["id"]) + "?wait=2")
    elapsed = time.monotonic() - started
    assert response.status_code == 200
    assert response.json()["state"] == "running", response.json()
    assert 1.8 <= elapsed < 5, elapsed


def test_wait_on_a_suspended_task_returns_after_the_wait(transferd, origin):
    sid = create_session(transferd)
    task = create_task(transferd, sid, download(origin.url("/bytes/10"), start=False))
    started = time.monotonic()
    response = transferd.get(task_path(sid, task["id"]) + "?wait=1")
    assert response.status_code == 200 and response.json()["state"] == "suspended"
    assert 0.8 <= time.monotonic() - started < 3


@pytest.mark.parametrize("wait", ["-1", "abc", "1e9"])
def test_bad_wait_is_422(transferd, origin, wait):
    sid = create_session(transferd)
    task = create_task(transferd, sid, download(origin.url("/bytes/10"), start=False))
    assert_problem(transferd.get(task_path(sid, task["id"]) + f"?wait={wait}"), 422, field="wait")

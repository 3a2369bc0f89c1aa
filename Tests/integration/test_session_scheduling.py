"""Bandwidth and scheduling (the session configuration's `max_bytes_per_second` and `discretionary`,
`--max-bytes-per-second`, fairness across sessions). Rates are the product's promise — within ±15%
over about ten seconds — measured over whole tasks: the bytes they moved divided by the time from
the first task's start to the last one's completion (transferd's own timestamps: the origin's socket buffers would hide the pace)."""

from __future__ import annotations

import os
from datetime import datetime

import pytest

from support.api import (assert_success, create_batch, create_session, create_task, data, download, get_task,
                         run_task, unique, wait_for, wait_tasks)

RATE = 250_000  # bytes per second
SIZE = 2_500_000  # ten seconds' worth at RATE


def task_rate(tasks: list[dict]) -> float:
    """Body bytes per second of completed tasks, from the first start to the last completion."""
    start = min(datetime.fromisoformat(t["started_at"]) for t in tasks)
    end = max(datetime.fromisoformat(t["completed_at"]) for t in tasks)
    moved = sum(assert_success(t)["progress"]["bytes_received"] + t["progress"]["bytes_sent"] for t in tasks)
    return moved / (end - start).total_seconds()


def loop_of(identifier: str, loops: int) -> int:
    """The curl loop a session is pinned to: FNV-1a of its identifier modulo the loops (one per
    core), as `TransferEngine` computes it."""
    h = 0xCBF29CE484222325
    for byte in identifier.encode():
        h = ((h ^ byte) * 0x100000001B3) & 0xFFFFFFFFFFFFFFFF
    return h % loops


def session_pair(placement: str) -> tuple[str, str]:
    """Two fresh identifiers whose sessions share a loop, or sit on different loops."""
    loops = os.cpu_count() or 1
    if placement == "different loops" and loops < 2:
        pytest.skip("one core: one loop")
    first = unique("first")
    while True:
        second = unique("second")
        if (loop_of(first, loops) == loop_of(second, loops)) == (placement == "same loop"):
            return first, second


PLACEMENTS = ["same loop", "different loops"]


def assert_rate(measured: float, limit: int) -> None:
    assert 0.85 * limit <= measured <= 1.15 * limit, f"{measured:.0f} B/s against a limit of {limit} B/s"


def test_a_sessions_rate_is_shared_by_its_running_tasks(transferd, origin):
    """Two downloads at once share the session's rate: together, not each, they get RATE."""
    sid = create_session(transferd, configuration={"max_bytes_per_second": RATE})
    tasks = [create_task(transferd, sid, download(origin.url(f"/bytes/{SIZE // 2}?seed={i}"))) for i in range(2)]
    assert_rate(task_rate(wait_tasks(transferd, sid, [t["id"] for t in tasks], timeout=60)), RATE)


def test_the_global_rate_holds_across_sessions(start_transferd, api_token, origin):
    td = start_transferd("--max-bytes-per-second", str(RATE), api_token=api_token)
    sessions = [create_session(td) for _ in range(2)]
    tasks = [(sid, create_task(td, sid, download(origin.url(f"/bytes/{SIZE // 2}?seed={sid}")))) for sid in sessions]
    assert_rate(task_rate([wait_tasks(td, sid, [task["id"]], timeout=60)[0] for sid, task in tasks]), RATE)


def test_an_upload_is_paced_too(transferd, origin):
    sid = create_session(transferd, configuration={"max_bytes_per_second": RATE})
    blob = transferd.post("/v1/blobs", data=b"x" * SIZE, timeout=30).json()
    task = run_task(transferd, sid, {"kind": "upload", "request": {"url": origin.url("/upload"), "method": "PUT"},
                                     "upload": {"from_blob": blob["id"]}}, timeout=60)
    assert task["progress"]["bytes_sent"] == SIZE
    assert_rate(task_rate([task]), RATE)


def test_a_throttled_task_is_not_idle(transferd, origin):
    """Time spent paused for the rate is not time without data: a short idle timeout does not fire."""
    sid = create_session(transferd, configuration={"max_bytes_per_second": 20_000, "timeout_request_s": 2})
    assert_success(run_task(transferd, sid, download(origin.url("/bytes/100000")), timeout=30))


@pytest.mark.parametrize("placement", PLACEMENTS)
def test_a_session_with_one_task_is_not_starved_by_one_with_ten_thousand(start_transferd, api_token, origin, placement):
    """With two running slots, session A's 10,000 queued tasks and session B's single one take
    turns: B's task runs as soon as a slot frees, long before A's queue drains — whether the two
    sessions share a curl loop or not."""
    td = start_transferd("--max-running-transfers", "2", api_token=api_token)
    a, b = session_pair(placement)
    create_session(td, a, mode="ephemeral", configuration={"max_concurrent_tasks": 100})
    create_session(td, b, mode="ephemeral")
    create_batch(td, a, [data(origin.url(f"/bytes/64?seed={i}")) for i in range(10_000)], timeout=60)
    task = run_task(td, b, data(origin.url("/bytes/64?seed=b")), timeout=60)
    assert_success(task)
    completed_a = td.get(f"/v1/sessions/{a}").json()["tasks"]["completed"]
    assert completed_a < 1_000, f"B finished only after {completed_a} of A's tasks"
    assert td.delete(f"/v1/sessions/{a}?mode=cancel").status_code == 202


@pytest.mark.parametrize("placement", PLACEMENTS)
def test_discretionary_work_waits_for_urgent_work(transferd, origin, placement):
    """A discretionary task starts only once no non-discretionary task waits, in any session."""
    urgent, spare = session_pair(placement)
    create_session(transferd, urgent, configuration={"max_concurrent_tasks": 1})
    slow = [create_task(transferd, urgent, download(origin.url(f"/bytes/160000?rate=80000&seed={i}"))) for i in range(3)]
    create_session(transferd, spare, configuration={"discretionary": True})
    later = create_task(transferd, spare, download(origin.url("/bytes/100?seed=spare")))
    wait_for(lambda: get_task(transferd, urgent, slow[1]["id"])["started_at"], timeout=30,
             message="the second urgent task to start")
    assert get_task(transferd, spare, later["id"])["started_at"] is None  # the third still waits
    done = assert_success(wait_tasks(transferd, spare, [later["id"]], timeout=60)[0])
    last = get_task(transferd, urgent, slow[2]["id"])
    assert last["started_at"] is not None and done["started_at"] >= last["started_at"]

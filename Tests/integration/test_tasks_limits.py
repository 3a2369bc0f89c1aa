"""Admission and scheduling, counted at the origin: `max_connections_per_host`,
`max_concurrent_tasks` (across hosts), `priority` ordering queued work, `begin_at` delaying the
start, the idle timeout on a stalled origin, and 1,000 tasks in one session."""

from __future__ import annotations

import time
from datetime import datetime, timedelta, timezone

import pytest

from support.api import (action, assert_success, assert_task_error, create_batch, create_session, create_task,
                         data, download, get_session, get_task, run_task, tasks_path, wait_for, wait_progress,
                         wait_task, wait_tasks)
from support.origin import Origin


# The origin stamps a request's end on its handler thread after the last write; the client may
# already have sent its next request by then. Ends are moved this much earlier so that hand-over
# is not counted as overlap (every request in these tests lasts far longer).
HANDOVER_SLACK = 0.05


def peak_concurrency(*origins: Origin, prefix: str = "/bytes/") -> int:
    """The most requests under `prefix` in progress at one moment across all `origins`."""
    edges = []
    for origin in origins:
        for record in origin.requests:
            if record.path.startswith(prefix):
                end = record.end_time - HANDOVER_SLACK if record.end_time else float("inf")
                edges += [(record.time, 1), (max(record.time, end), -1)]
    running = peak = 0
    for _, step in sorted(edges):
        running += step
        peak = max(peak, running)
    return peak


def rfc3339(moment: datetime) -> str:
    return moment.astimezone(timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def test_max_connections_per_host(transferd, origin):
    sid = create_session(transferd, configuration={"max_connections_per_host": 2})
    tasks = [create_task(transferd, sid, download(origin.url(f"/bytes/150000?seed=h{i}&rate=300000")))
             for i in range(8)]
    done = wait_tasks(transferd, sid, [t["id"] for t in tasks])
    for i, task in enumerate(done):
        assert_success(task)
        assert task["result"]["sha256"] == Origin.expected_sha256(150000, f"h{i}")
    assert peak_concurrency(origin) == 2
    assert origin.max_concurrent_connections == 2
    assert len(origin.requests) == 8


def test_max_concurrent_tasks_across_hosts(transferd):
    with Origin() as first, Origin() as second:
        sid = create_session(transferd, configuration={"max_concurrent_tasks": 3})
        tasks = []
        for i in range(4):
            for origin in (first, second):
                tasks.append(create_task(transferd, sid, download(origin.url(f"/bytes/120000?rate=300000&seed=c{i}"))))
        done = wait_tasks(transferd, sid, [t["id"] for t in tasks])
        assert all(t["error"] is None for t in done), [t["error"] for t in done]
        assert len(first.requests) == 4 and len(second.requests) == 4
        assert peak_concurrency(first, second) == 3
        assert max(peak_concurrency(first), peak_concurrency(second)) >= 2


def test_limits_are_per_session(transferd, origin):
    # One session's limit does not hold back another session's tasks.
    narrow = create_session(transferd, configuration={"max_concurrent_tasks": 1})
    other = create_session(transferd, configuration={"max_concurrent_tasks": 1})
    tasks = [(sid, create_task(transferd, sid, download(origin.url("/bytes/100000?rate=200000"))))
             for sid in (narrow, other, narrow, other)]
    for sid, task in tasks:
        assert_success(wait_task(transferd, sid, task["id"]))
    assert peak_concurrency(origin) == 2


def test_priority_orders_queued_work(transferd, origin):
    sid = create_session(transferd, configuration={"max_concurrent_tasks": 1})
    blocker = create_task(transferd, sid, download(origin.url("/bytes/300000?rate=300000&seed=blocker")))
    wait_progress(transferd, sid, blocker["id"], 1)
    queued = {}
    for priority in (0.1, 0.9, 0.5, 0.3):
        task = create_task(transferd, sid, download(origin.url(f"/bytes/1000?seed=p{priority}"), priority=priority))
        assert task["priority"] == priority
        queued[priority] = task
    assert get_task(transferd, sid, blocker["id"])["state"] == "running"
    assert get_task(transferd, sid, queued[0.9]["id"])["progress"]["bytes_received"] == 0
    wait_tasks(transferd, sid, [t["id"] for t in queued.values()])
    order = [r.query["seed"] for r in origin.requests]
    assert order == ["blocker", "p0.9", "p0.5", "p0.3", "p0.1"], order


def test_patched_priority_reorders_queued_work(transferd, origin):
    sid = create_session(transferd, configuration={"max_concurrent_tasks": 1})
    blocker = create_task(transferd, sid, download(origin.url("/bytes/300000?rate=300000&seed=blocker")))
    wait_progress(transferd, sid, blocker["id"], 1)
    low = create_task(transferd, sid, download(origin.url("/bytes/10?seed=low"), priority=0.2))
    high = create_task(transferd, sid, download(origin.url("/bytes/10?seed=high"), priority=0.8))
    response = transferd.patch(f"{tasks_path(sid)}/{low['id']}", json={"priority": 1.0})
    assert response.status_code == 200, response.text
    wait_tasks(transferd, sid, [low["id"], high["id"]])
    assert [r.query["seed"] for r in origin.requests] == ["blocker", "low", "high"]


def test_equal_priorities_run_in_creation_order(transferd, origin):
    sid = create_session(transferd, configuration={"max_concurrent_tasks": 1})
    blocker = create_task(transferd, sid, download(origin.url("/bytes/200000?rate=400000&seed=blocker")))
    wait_progress(transferd, sid, blocker["id"], 1)
    ids = [create_task(transferd, sid, download(origin.url(f"/bytes/10?seed=e{i}")))["id"] for i in range(5)]
    wait_tasks(transferd, sid, ids)
    assert [r.query["seed"] for r in origin.requests] == ["blocker"] + [f"e{i}" for i in range(5)]


def test_begin_at_delays_the_start(transferd, origin):
    sid = create_session(transferd)
    begin = datetime.now(timezone.utc) + timedelta(seconds=2)
    task = create_task(transferd, sid, download(origin.url("/bytes/1000?seed=later"), begin_at=rfc3339(begin)))
    assert task["state"] == "running"
    assert task["begin_at"] is not None
    scheduled = wait_for(lambda: (t := get_task(transferd, sid, task["id"]))["phase"] == "scheduled" and t,
                         timeout=1.5, message="phase scheduled")
    assert scheduled["progress"]["bytes_received"] == 0
    time.sleep(max(0.0, (begin - datetime.now(timezone.utc)).total_seconds() - 0.4))
    assert origin.requests == [], "the origin was asked before begin_at"
    done = assert_success(wait_task(transferd, sid, task["id"], timeout=10))
    first_request = datetime.fromtimestamp(origin.requests[0].wall_time, timezone.utc)
    assert first_request >= begin - timedelta(milliseconds=50), (first_request, begin)
    assert first_request < begin + timedelta(seconds=2)
    assert done["result"]["sha256"] == Origin.expected_sha256(1000, "later")


def test_scheduled_tasks_can_be_cancelled_or_suspended(transferd, origin):
    sid = create_session(transferd)
    # Far enough ahead that the four calls below come before it even on a loaded machine.
    begin = datetime.now(timezone.utc) + timedelta(seconds=4)
    cancelled = create_task(transferd, sid, download(origin.url("/bytes/10?seed=cancelled"), begin_at=rfc3339(begin)))
    paused = create_task(transferd, sid, download(origin.url("/bytes/10?seed=paused"), begin_at=rfc3339(begin)))
    done = action(transferd, sid, cancelled["id"], "cancel")
    if done["state"] != "completed":
        done = wait_task(transferd, sid, cancelled["id"], timeout=5)
    assert_task_error(done, "cancelled")
    assert action(transferd, sid, paused["id"], "suspend")["state"] == "suspended"
    assert action(transferd, sid, paused["id"], "resume")["state"] == "running"
    # Resumed before its begin_at, the task still waits for it.
    wait_for(lambda: get_task(transferd, sid, paused["id"])["phase"] == "scheduled", timeout=2,
             message="phase scheduled after resume")
    assert_success(wait_task(transferd, sid, paused["id"], timeout=15))
    assert [r.query["seed"] for r in origin.requests] == ["paused"]
    first_request = datetime.fromtimestamp(origin.requests[0].wall_time, timezone.utc)
    assert first_request >= begin - timedelta(milliseconds=50), (first_request, begin)


def test_begin_at_in_the_past_starts_at_once(transferd, origin):
    sid = create_session(transferd)
    past = rfc3339(datetime.now(timezone.utc) - timedelta(hours=1))
    started = time.monotonic()
    assert_success(run_task(transferd, sid, download(origin.url("/bytes/10"), begin_at=past)))
    assert time.monotonic() - started < 10  # not held back: an hour-old begin_at is no wait at all


def test_begin_at_with_a_zone_offset(transferd, origin):
    sid = create_session(transferd)
    begin = datetime.now(timezone(timedelta(hours=5, minutes=30))) + timedelta(seconds=1.5)
    task = create_task(transferd, sid, download(origin.url("/bytes/10"), begin_at=begin.isoformat(timespec="seconds")))
    time.sleep(0.5)
    assert origin.requests == []
    assert_success(wait_task(transferd, sid, task["id"], timeout=10))


@pytest.mark.parametrize("stall_after", [0, 1000])
def test_idle_timeout_on_stalled_origin(transferd, origin, stall_after):
    """`timeout_request_s`: no bytes moved for this long ⇒ `timed_out`, whether the
    origin stalls before the first body byte or in the middle of the body."""
    sid = create_session(transferd, configuration={"timeout_request_s": 1, "retry": {"max_attempts": 1}})
    started = time.monotonic()
    task = create_task(transferd, sid, download(origin.url(f"/bytes/1000000?stall_after={stall_after}")))
    task = wait_task(transferd, sid, task["id"], timeout=6)
    elapsed = time.monotonic() - started
    assert_task_error(task, "timed_out")
    assert task["result"] is None
    assert task["progress"]["bytes_received"] == stall_after
    assert 0.9 <= elapsed < 6, elapsed  # not before the idle timeout; not long after it


def test_idle_timeout_on_slow_headers(transferd, origin):
    sid = create_session(transferd, configuration={"timeout_request_s": 1, "retry": {"max_attempts": 1}})
    task = run_task(transferd, sid, data(origin.url("/slow-headers?delay=5")), timeout=10)
    assert_task_error(task, "timed_out")


def test_resource_timeout_limits_the_whole_task(transferd, origin):
    sid = create_session(transferd, configuration={"timeout_resource_s": 1})
    started = time.monotonic()
    task = run_task(transferd, sid, download(origin.url("/bytes/1000000?rate=100000")), timeout=10)
    assert_task_error(task, "timed_out")
    assert task["result"] is None
    assert 0.8 <= time.monotonic() - started < 4


def test_a_slow_but_moving_transfer_is_not_timed_out(transferd, origin):
    sid = create_session(transferd, configuration={"timeout_request_s": 1, "retry": {"max_attempts": 1}})
    task = run_task(transferd, sid, download(origin.url("/bytes/60000?rate=20000")), timeout=15)
    assert_success(task)


def test_a_thousand_tasks_in_one_session(transferd, origin):
    sid = create_session(transferd, mode="background")
    bodies = [download(origin.url(f"/bytes/2048?seed=k&n={i}"), id=f"t{i:04d}") for i in range(1000)]
    started = time.monotonic()
    created = create_batch(transferd, sid, bodies)
    assert [t["id"] for t in created] == [f"t{i:04d}" for i in range(1000)]
    counts = wait_for(lambda: (c := get_session(transferd, sid)["tasks"])["completed"] == 1000 and c,
                      timeout=30, interval=0.2, message=lambda: f"1000 completed: {get_session(transferd, sid)['tasks']}")
    assert counts["total"] == 1000 and counts["running"] == 0, counts
    expected = Origin.expected_sha256(2048, "k")
    seen = []
    after = None
    while True:
        page = transferd.get(tasks_path(sid), params={"limit": 1000, **({"after": after} if after else {})}).json()
        for task in page["tasks"]:
            assert task["error"] is None, task
            assert task["result"]["sha256"] == expected and task["result"]["size"] == 2048
            seen.append(task["id"])
        after = page["next"]
        if after is None:
            break
    assert len(seen) == 1000 and len(set(seen)) == 1000
    default_page = transferd.get(tasks_path(sid)).json()
    assert len(default_page["tasks"]) == 100 and default_page["next"] is not None
    assert sorted({r.query["n"] for r in origin.requests}, key=int) == [str(i) for i in range(1000)]
    assert len(origin.requests) == 1000
    assert time.monotonic() - started < 30

"""Listing a session's tasks (`getAllTasks`): creation order, `state` and `kind` filters,
pagination with `limit`/`after`/`next`, query validation; and `GET /v1/stats`."""

from __future__ import annotations

import pytest

from support.api import (action, assert_problem, assert_success, create_session, create_task, data,
                         download, get_session, run_task, tasks_path, wait_for, wait_progress, wait_task)


def list_all(td, sid, **params) -> tuple[list[dict], int]:
    """Every task through the pages; returns them and the number of pages."""
    tasks, after, pages = [], None, 0
    while True:
        query = dict(params, **({"after": after} if after else {}))
        response = td.get(tasks_path(sid), params=query)
        assert response.status_code == 200, response.text
        page = response.json()
        tasks += page["tasks"]
        pages += 1
        after = page["next"]
        if after is None:
            return tasks, pages
        assert isinstance(after, str) and after
        assert pages < 50, "pagination does not end"


@pytest.mark.parametrize("mode", ["default", "ephemeral", "background"])
def test_list_filter_and_paginate(transferd, origin, mode):
    sid = create_session(transferd, mode=mode)
    suspended = [create_task(transferd, sid, download(origin.url(f"/bytes/{i + 1}"), start=False, id=f"s{i}"))
                 for i in range(4)]
    completed = [run_task(transferd, sid, data(origin.url("/echo"), id=f"d{i}")) for i in range(3)]
    completed.append(run_task(transferd, sid, download(origin.url("/bytes/5"), id="dl")))
    created = [t["id"] for t in suspended] + [t["id"] for t in completed]

    everything, pages = list_all(transferd, sid)
    assert [t["id"] for t in everything] == created and pages == 1
    assert everything[0]["state"] == "suspended" and everything[-1]["state"] == "completed"

    paged, pages = list_all(transferd, sid, limit=3)
    assert [t["id"] for t in paged] == created
    assert pages == 3

    one_by_one, pages = list_all(transferd, sid, limit=1)
    assert [t["id"] for t in one_by_one] == created and pages == len(created)

    by_state, _ = list_all(transferd, sid, state="suspended")
    assert [t["id"] for t in by_state] == ["s0", "s1", "s2", "s3"]
    done, _ = list_all(transferd, sid, state="completed", limit=2)
    assert [t["id"] for t in done] == ["d0", "d1", "d2", "dl"]
    assert list_all(transferd, sid, state="running")[0] == []
    data_tasks, _ = list_all(transferd, sid, kind="data")
    assert [t["id"] for t in data_tasks] == ["d0", "d1", "d2"]
    downloads, _ = list_all(transferd, sid, kind="download", state="completed")
    assert [t["id"] for t in downloads] == ["dl"]
    assert list_all(transferd, sid, kind="upload")[0] == []

    # The list shows the current state: a task resumed and finished moves between filters.
    action(transferd, sid, "s0", "resume")
    assert_success(wait_task(transferd, sid, "s0"))
    assert [t["id"] for t in list_all(transferd, sid, state="suspended")[0]] == ["s1", "s2", "s3"]
    assert "s0" in [t["id"] for t in list_all(transferd, sid, state="completed")[0]]


def test_list_shows_running_tasks_with_live_progress(transferd, origin):
    sid = create_session(transferd)
    task = create_task(transferd, sid, download(origin.url("/bytes/2000000?rate=1000000")))
    wait_progress(transferd, sid, task["id"], 100_000)
    listed = list_all(transferd, sid, state="running")[0]
    assert [t["id"] for t in listed] == [task["id"]]
    assert listed[0]["progress"]["bytes_received"] > 0
    action(transferd, sid, task["id"], "cancel")


@pytest.mark.parametrize("query", ["state=paused", "kind=stream", "sort=asc"])
def test_list_bad_query_is_422(shared_transferd, query):
    sid = create_session(shared_transferd)
    assert_problem(shared_transferd.get(f"{tasks_path(sid)}?{query}"), 422)


@pytest.mark.parametrize("query", ["limit=0", "limit=1001", "limit=ten", "after=xyz!", "after=LTE"])
def test_list_bad_page_is_400(shared_transferd, query):
    sid = create_session(shared_transferd)
    assert_problem(shared_transferd.get(f"{tasks_path(sid)}?{query}"), 400, field=query.split("=")[0])


def test_stats_reflect_task_counts(transferd, origin):
    first = create_session(transferd)
    second = create_session(transferd, mode="ephemeral")
    for sid in (first, second):
        create_task(transferd, sid, download(origin.url("/bytes/10"), start=False))
    for _ in range(3):
        run_task(transferd, first, download(origin.url("/bytes/100")))
    running = create_task(transferd, second, download(origin.url("/bytes/3000000?rate=1000000")))
    wait_progress(transferd, second, running["id"], 1)

    response = transferd.get("/v1/stats")
    assert response.status_code == 200, response.text
    stats = response.json()
    assert stats["sessions"] == 2
    assert stats["tasks"]["suspended"] == 2, stats
    assert stats["tasks"]["completed"] == 3, stats
    assert stats["tasks"]["running"] == 1, stats
    assert stats["tasks"].get("canceling", 0) == 0
    assert stats["bytes_per_second"]["down"] >= 0 and stats["bytes_per_second"]["up"] >= 0
    assert isinstance(stats["queue_depth"], int)

    # While bytes flow, the download rate shows it.
    wait_for(lambda: transferd.get("/v1/stats").json()["bytes_per_second"]["down"] > 0, timeout=4,
             message="a non-zero download rate in /v1/stats")

    action(transferd, second, running["id"], "cancel")
    wait_task(transferd, second, running["id"], timeout=5)
    stats = transferd.get("/v1/stats").json()
    assert stats["tasks"]["running"] == 0 and stats["tasks"]["completed"] == 4, stats
    # Counts agree with the sessions' own.
    assert get_session(transferd, first)["tasks"]["completed"] + get_session(transferd, second)["tasks"]["completed"] == 4


def test_stats_queue_depth_counts_waiting_tasks(transferd, origin):
    sid = create_session(transferd, configuration={"max_concurrent_tasks": 1})
    blocker = create_task(transferd, sid, download(origin.url("/bytes/400000?rate=400000")))
    wait_progress(transferd, sid, blocker["id"], 1)
    queued = [create_task(transferd, sid, download(origin.url("/bytes/10"))) for _ in range(3)]
    stats = wait_for(lambda: (st := transferd.get("/v1/stats").json())["queue_depth"] == 3 and st, timeout=2,
                     message=lambda: f"queue_depth 3: {transferd.get('/v1/stats').json()}")
    assert stats["tasks"]["running"] == 4, stats
    for task in [blocker, *queued]:
        wait_task(transferd, sid, task["id"])
    wait_for(lambda: transferd.get("/v1/stats").json()["queue_depth"] == 0, timeout=2, message="queue_depth 0")

"""An outage is an outage: while PostgreSQL is stopped, or SQLite's disk is full, every call that
needs the store is answered 503 `store_unavailable` with `Retry-After` — on the replica holding the
session and on the others — never 404 "does not exist" nor 200 with an empty list, and `/readyz`
says unready. Started again,
everything acknowledged before is there and the session's `seq` goes on without a gap.
"""

from __future__ import annotations

import errno
import os
from pathlib import Path

import pytest

from support.api import (assert_problem, assert_success, create_batch, create_session, create_task, download, get_task,
                         session_path, task_path, tasks_path, wait_for, wait_task)
from support.cluster import Cluster, PostgresServer
from support.events import all_events, events_path
from support.tmpfs import tmpfs


@pytest.fixture(scope="module")
def postgres():
    with PostgresServer() as server:
        yield server


def outage_calls(sid: str, tid: str, origin) -> list[tuple[str, str, dict]]:
    """Every kind of call a client makes on a session: create a task, read it, list, read events,
    read the session."""
    return [("POST", tasks_path(sid), {"json": download(origin.url("/bytes/512?seed=during"))}),
            ("GET", task_path(sid, tid), {}),
            ("GET", tasks_path(sid), {}),
            ("GET", events_path(sid, "?after=0"), {}),
            ("GET", session_path(sid), {})]


def assert_outage(response) -> None:
    body = assert_problem(response, 503, "store_unavailable")
    assert response.headers.get("Retry-After", "").isdigit(), (response.headers, body)


def test_a_stopped_database_is_answered_503_and_everything_acknowledged_is_there_after(postgres, origin):
    with Cluster(postgres.database(), replicas=2) as cluster:
        a, b = cluster.replicas
        sid = create_session(a, mode="background")
        done = [assert_success(wait_task(b, sid, create_task(b, sid, download(origin.url(f"/bytes/{1024 + i}?seed=before")))["id"]))
                for i in range(3)]
        journal = all_events(a, sid)
        assert len(journal) >= 6

        postgres.stop()
        try:
            for replica in (a, b):
                wait_for(lambda replica=replica: replica.get("/readyz").status_code == 503, timeout=30, message="/readyz 503")
            # The holder may answer from memory until its lease lapses; from then on, and on the
            # other replica at once, every call is a 503 saying why.
            seen: dict[int, str] = {}

            def session_reads_refused() -> bool:
                for r in (a, b):
                    response = r.get(session_path(sid))
                    seen[r.port] = f"{response.status_code} {response.text[:200]}"
                return all(text.startswith("503") for text in seen.values())
            try:
                wait_for(session_reads_refused, timeout=cluster.lease_timeout * 3, message="the session's reads to turn 503")
            except AssertionError as error:
                raise AssertionError(f"{error}; last answers: {seen}") from None
            for replica in (a, b):
                for method, path, extra in outage_calls(sid, done[0]["id"], origin):
                    assert_outage(replica.request(method, path, **extra))
        finally:
            postgres.start()

        for replica in (a, b):
            wait_for(lambda replica=replica: replica.get("/readyz").status_code == 200, timeout=30, message="/readyz back to 200")
        # Everything acknowledged before the outage, as it was.
        for task in done:
            assert get_task(b, sid, task["id"]) == task
        assert all_events(b, sid) == journal
        # The same calls work again, and the journal goes on without a gap.
        after = create_task(a, sid, download(origin.url("/bytes/700?seed=after")))
        assert_success(wait_task(b, sid, after["id"]))
        for method, path, extra in outage_calls(sid, done[0]["id"], origin)[1:]:
            assert b.request(method, path, **extra).status_code == 200
        seqs = [e["seq"] for e in all_events(a, sid)]
        assert seqs == list(range(1, len(seqs) + 1)), seqs
        assert all_events(a, sid)[:len(journal)] == journal


def test_one_node_on_a_stopped_database_refuses_with_503_and_leaves_no_trace_of_what_it_refused(
        postgres, start_transferd, api_token, origin):
    """Without a cluster the session stays in memory; what needs the store is refused all the
    same, and a refused task creation leaves nothing: no task, no consumed `seq`."""
    td = start_transferd("--database", postgres.database(), api_token=api_token)
    sid = create_session(td, mode="background")
    done = assert_success(wait_task(td, sid, create_task(td, sid, download(origin.url("/bytes/2048?seed=one")))["id"]))
    journal = all_events(td, sid)
    blob = td.post("/v1/blobs", data=b"kept before the outage").json()

    postgres.stop()
    try:
        wait_for(lambda: td.get("/readyz").status_code == 503, timeout=30, message="/readyz 503")
        # The session itself is in memory and answered from there; the rest needs the store.
        for method, path, extra in outage_calls(sid, done["id"], origin)[:4]:
            assert_outage(td.request(method, path, **extra))
        # Uploading what a stored task downloaded: whether that task exists cannot be told now.
        assert_outage(td.post(tasks_path(sid), json={"kind": "upload", "request": {"url": origin.url("/upload")},
                                                     "upload": {"from_task": done["id"]}}))
        assert_outage(td.get(f"/v1/blobs/{blob['id']}"))
    finally:
        postgres.start()

    wait_for(lambda: td.get("/readyz").status_code == 200, timeout=30, message="/readyz back to 200")
    assert get_task(td, sid, done["id"]) == done
    assert all_events(td, sid) == journal
    assert td.get(f"/v1/blobs/{blob['id']}").json() == blob
    after = create_task(td, sid, download(origin.url("/bytes/900?seed=one-after")))
    assert_success(wait_task(td, sid, after["id"]))
    listed = td.get(tasks_path(sid)).json()["tasks"]
    assert [t["id"] for t in listed] == [done["id"], after["id"]], "the refused creation left a task behind"
    seqs = [e["seq"] for e in all_events(td, sid)]
    assert seqs == list(range(1, len(seqs) + 1)), f"a refused change consumed a seq: {seqs}"


@pytest.fixture
def small_data_dir(tmp_path):
    """A data directory on an 8 MiB tmpfs (needs the right to mount; skipped without it)."""
    with tmpfs(tmp_path / "data", "8m") as mountpoint:
        yield mountpoint


def fill(directory: Path) -> Path:
    """Takes every free byte of `directory`'s file system, in a file that is returned."""
    filler = directory / "filler"
    fd = os.open(filler, os.O_WRONLY | os.O_CREAT, 0o600)
    try:
        while True:
            os.write(fd, b"\0" * 4096)
    except OSError as error:
        assert error.errno == errno.ENOSPC, error
    finally:
        os.close(fd)
    return filler


def test_a_full_disk_under_sqlite_is_an_outage_until_there_is_room_again(start_transferd, api_token, origin, small_data_dir):
    td = start_transferd(api_token=api_token, data_dir=small_data_dir)
    sid = create_session(td, mode="background")
    suspended = [download(origin.url(f"/bytes/64?n={i}"), start=False, description="x" * 200) for i in range(300)]
    created = create_batch(td, sid, suspended)
    journal = all_events(td, sid)

    filler = fill(small_data_dir)
    try:
        # Batches go on being acknowledged while the store's log has room; then they are refused.
        refused = None
        for _ in range(100):
            response = td.post(tasks_path(sid) + ":batch", json={"tasks": suspended})
            if response.status_code != 201:
                refused = response
                break
            created += response.json()["tasks"]
        assert refused is not None, "the full disk never refused a change"
        assert_outage(refused)
        wait_for(lambda: td.get("/readyz").status_code == 503, timeout=30, message="/readyz 503 with the disk full")
    finally:
        filler.unlink()

    wait_for(lambda: td.get("/readyz").status_code == 200, timeout=30, message="/readyz back to 200 with room again")
    after = create_task(td, sid, download(origin.url("/bytes/100?seed=room")))
    assert_success(wait_task(td, sid, after["id"]))
    listed, cursor = [], None
    while True:
        page = td.get(tasks_path(sid) + "?limit=1000" + (f"&after={cursor}" if cursor else "")).json()
        listed += [t["id"] for t in page["tasks"]]
        cursor = page.get("next")
        if not cursor:
            break
    assert listed == [t["id"] for t in created] + [after["id"]], "acknowledged tasks lost, or a refused one left"
    events = all_events(td, sid)
    assert events[:len(journal)] == journal
    seqs = [e["seq"] for e in events]
    assert seqs == list(range(1, len(seqs) + 1)), "a refused change consumed seqs"


def test_a_task_completing_while_the_database_is_down_is_stored_completed_once_it_is_back(
        postgres, start_transferd, api_token, origin):
    """A completion the store refused is not shown as one (it would be dropped from memory and read
    back from the store as running): it is committed again until it is stored, with its events."""
    td = start_transferd("--database", postgres.database(), api_token=api_token)
    sid = create_session(td, mode="background")
    size = 96 * 1024
    task = create_task(td, sid, download(origin.url(f"/bytes/{size}?seed=late&rate={size // 3}")))
    wait_for(lambda: get_task(td, sid, task["id"])["progress"]["bytes_received"] > 0, timeout=10,
             message="the download to start")
    postgres.stop()
    try:
        # The download ends about three seconds after it began, with the database still down; its
        # completion's commit is refused (and logged, naming the task).
        wait_for(lambda: td.get("/readyz").status_code == 503, timeout=30, message="/readyz 503")
        wait_for(lambda: get_task(td, sid, task["id"])["progress"]["bytes_received"] == size, timeout=30,
                 message="the download to end")
        td.wait_for_log(lambda r: r.get("task") == task["id"] and r.get("level") in ("error", "warning"), timeout=30)
    finally:
        postgres.start()

    done = assert_success(wait_task(td, sid, task["id"]))
    assert done["progress"]["bytes_received"] == size
    # Read again: out of memory now, from the store, which has it completed too.
    assert get_task(td, sid, task["id"])["state"] == "completed"
    events = all_events(td, sid)
    assert [e["type"] for e in events if e.get("task") == task["id"]][-1] == "task.completed", events
    seqs = [e["seq"] for e in events]
    assert seqs == list(range(1, len(seqs) + 1)), seqs

"""Cluster mode: three transferd replicas on one real PostgreSQL (from Debian's packages, started by
the test as an unprivileged user) and one data directory.

Any replica answers any call; a session's requests are served by the replica holding its lease and
forwarded there by the others; events are read on any replica and wake across replicas; a replica
killed with SIGKILL loses nothing and its transfers continue on another within the lease timeout
plus five seconds, from their partial files (Range) — a large one written with O_DIRECT included;
a replica frozen (SIGSTOP) past its lease writes nothing more to the files once thawed, not even
what waited in its sockets; a database restart makes replicas unready and then ready again
without a restart of theirs.
"""

from __future__ import annotations

import hashlib
import os
import signal
import threading
import time
from pathlib import Path

import pytest

from support.api import (assert_success, create_session, create_task, download, file_sha256, get_task, session_path,
                         task_path, tasks_path, unique, wait_for, wait_progress, wait_task)
from support.cluster import Cluster, PostgresServer
from support.origin import Origin, expected_sha256
from support.tenants import Principal, write_auth_file

KiB = 1 << 10
MiB = 1 << 20


@pytest.fixture(scope="module")
def postgres():
    with PostgresServer() as server:
        yield server


@pytest.fixture
def cluster(postgres):
    with Cluster(postgres.database(), replicas=3) as running:
        yield running


def holder_of(cluster: Cluster, postgres: PostgresServer, sid: str):
    """The replica holding `sid`'s lease, as the database says."""
    address = postgres.psql(cluster.database_url,
                            "SELECT r.address FROM session_leases l JOIN replicas r ON r.id = l.owner "
                            f"WHERE l.session = '{sid}' AND l.expires_at > now()")
    return next((r for r in cluster.replicas if address == f"127.0.0.1:{r.port}"), None)


def test_every_replica_answers_for_every_session(cluster, origin):
    a, b, c = cluster.replicas
    sid = create_session(a, mode="background")
    # Created through B, read through C: both forwarded to A, which holds the session.
    task = create_task(b, sid, download(origin.url(f"/bytes/{64 * 1024}?seed=any")))
    done = wait_task(c, sid, task["id"])
    assert_success(done)
    assert get_task(b, sid, task["id"]) == get_task(a, sid, task["id"])
    # Every replica lists every session, whoever holds it.
    for replica in cluster.replicas:
        listed = replica.get("/v1/sessions?limit=1000").json()["sessions"]
        assert sid in [s["identifier"] for s in listed]
    session = c.get(session_path(sid)).json()
    assert session["tasks"]["completed"] == 1


def test_a_long_poll_on_one_replica_wakes_for_events_made_on_another(cluster, origin):
    a, b, c = cluster.replicas
    sid = create_session(a, mode="background")
    seen = {}

    def poll():
        # C does not hold the session: it reads the shared journal and wakes on NOTIFY.
        response = c.get(session_path(sid) + "/events?after=0&wait=30", timeout=40)
        seen["events"] = response.json()["events"]

    waiter = threading.Thread(target=poll)
    waiter.start()
    time.sleep(0.5)
    create_task(a, sid, download(origin.url(f"/bytes/{1024}?seed=poll")))
    waiter.join(timeout=45)
    assert seen.get("events"), "the long-poll on another replica returned no events"
    assert seen["events"][0]["seq"] == 1


def test_event_seqs_stay_gap_free_across_replicas(cluster, origin):
    a, b, c = cluster.replicas
    sid = create_session(b, mode="background")
    for i, replica in enumerate([a, b, c] * 3):
        create_task(replica, sid, download(origin.url(f"/bytes/{1024}?seed=g{i}")))
    tasks = b.get(tasks_path(sid) + "?limit=100").json()["tasks"]
    for t in tasks:
        wait_task(a, sid, t["id"])
    events = c.get(session_path(sid) + "/events?after=0&limit=1000").json()["events"]
    assert [e["seq"] for e in events] == list(range(1, len(events) + 1))
    assert len({e["id"] for e in events}) == len(events)


def test_an_idempotency_key_holds_across_replicas(cluster, origin):
    a, b, c = cluster.replicas
    sid = create_session(a, mode="background")
    body = download(origin.url(f"/bytes/{1024}?seed=idem"))
    headers = {"Idempotency-Key": unique("key")}
    first = b.post(tasks_path(sid), json=body, headers=headers)
    again = c.post(tasks_path(sid), json=body, headers=headers)
    assert first.status_code == 201, first.text
    assert again.status_code == 201, again.text
    assert again.json()["id"] == first.json()["id"]


def test_a_killed_replicas_transfers_continue_elsewhere_from_their_partial_files(cluster, postgres):
    size = 6 * MiB
    with Origin() as origin:
        first = cluster.replicas[0]
        sid = create_session(first, mode="background")
        holder = holder_of(cluster, postgres, sid)
        assert holder is first
        task = create_task(first, sid, download(origin.url(f"/bytes/{size}?seed=kill&rate={MiB}")))
        wait_progress(first, sid, task["id"], at_least=MiB)
        killed_at = time.monotonic()
        first.kill9()
        survivor = cluster.replicas[1]

        def moving_elsewhere():
            new_holder = holder_of(cluster, postgres, sid)
            if new_holder is None or new_holder is first:
                return None
            current = get_task(survivor, sid, task["id"])
            return current if current["state"] == "completed" or current["progress"]["bytes_received"] > MiB else None

        wait_for(moving_elsewhere, timeout=cluster.lease_timeout + 15, interval=0.2,
                 message="the task to move to a live replica")
        took = time.monotonic() - killed_at
        done = assert_success(wait_task(survivor, sid, task["id"], timeout=60))
        assert done["progress"]["bytes_received"] == size
        ranged = [r for r in origin.requests if r.headers.get("range")]
        assert ranged, "the new holder fetched the whole file again instead of resuming with Range"
        assert took < cluster.lease_timeout + 5 + 5, f"takeover took {took:.1f}s"
        path = survivor.get(task_path(sid, task["id"], "/file"))
        assert path.status_code == 200
        assert hashlib.sha256(path.content).hexdigest() == expected_sha256(size, seed="kill")


def test_a_frozen_holder_thawed_after_another_replica_finished_writes_nothing_more(cluster, postgres):
    """The resource changes while the holder is frozen, so the replica taking over fetches the new
    version whole (its If-Range no longer matches) into the same partial file; the old holder's
    socket still holds old bytes. Thawed, it must not write them into the finished file."""
    size = 8 * MiB
    with Origin() as origin:
        first = cluster.replicas[0]
        sid = create_session(first, mode="background")
        assert holder_of(cluster, postgres, sid) is first
        # Slow for the first 1.5 MiB (where the holder is frozen), quick after (the taker's rest).
        url = origin.url(f"/versioned/frozen?bytes={size}&rate={512 * KiB}&rate_until={3 * MiB // 2}")
        task = create_task(first, sid, download(url))
        wait_progress(first, sid, task["id"], at_least=MiB)
        os.kill(first.pid, signal.SIGSTOP)
        try:
            origin.set_version("frozen", "2")
            wait_for(lambda: holder_of(cluster, postgres, sid) not in (None, first),
                     timeout=cluster.lease_timeout + 15, interval=0.2, message="another replica to take the session over")
            survivor = cluster.replicas[1]
            done = assert_success(wait_task(survivor, sid, task["id"], timeout=60))
        finally:
            os.kill(first.pid, signal.SIGCONT)
        first_request = origin.requests[0]
        # Thawed, the old holder stops its transfer; the origin sees that connection close.
        wait_for(lambda: first_request.end_time is not None, timeout=30,
                 message="the thawed replica to close its connection to the origin")
        first.wait_for_log(lambda r: r.get("msg") == "session lease lost; stopped acting for it", timeout=30)
        # Its transfer is gone, and with it anything it could still write.
        assert done["result"]["sha256"] == expected_sha256(size, seed="0", etag="2")
        assert file_sha256(done["result"]["location"]) == done["result"]["sha256"], \
            "the thawed replica wrote into the file another replica had finished"
        assert Path(done["result"]["location"]).stat().st_size == size


def test_a_killed_holders_large_download_continues_elsewhere_with_range_within_the_lease_and_five_seconds(
        cluster, postgres):
    """24 MiB: written with O_DIRECT in 1 MiB chunks. Killed under a second in, with less than a
    chunk received (as bench/cluster.sh does): what arrived before is on disk, and continued."""
    size = 24 * MiB
    rate = 256 * KiB
    with Origin() as origin:
        first = cluster.replicas[0]
        sid = create_session(first, mode="background")
        assert holder_of(cluster, postgres, sid) is first
        task = create_task(first, sid, download(origin.url(f"/bytes/{size}?seed=killed&rate={rate}&rate_until={2 * MiB}")))
        wait_progress(first, sid, task["id"], at_least=rate * 3 // 4)
        killed_at = time.monotonic()
        first.kill9()

        def continued():
            return next((r for r in origin.requests if r.time > killed_at), None)

        again = wait_for(continued, timeout=cluster.lease_timeout + 30, interval=0.1,
                         message="another replica to ask the origin again")
        took = again.time - killed_at
        assert again.headers.get("Range"), f"continued from byte 0: {dict(again.headers)}"
        assert again.headers["Range"] != "bytes=0-"
        assert again.headers.get("If-Range")
        assert took <= cluster.lease_timeout + 5, f"continued {took:.1f} s after the kill"
        survivor = cluster.replicas[1]
        done = assert_success(wait_task(survivor, sid, task["id"], timeout=60))
        assert again.status == 206
        assert done["result"]["sha256"] == expected_sha256(size, seed="killed")
        assert file_sha256(done["result"]["location"]) == done["result"]["sha256"]


def test_a_database_restart_makes_replicas_unready_then_ready_without_their_restart(postgres, origin):
    with Cluster(postgres.database(), replicas=2) as cluster:
        a, b = cluster.replicas
        sid = create_session(a, mode="background")
        postgres.stop()
        try:
            wait_for(lambda: a.get("/readyz").status_code == 503, timeout=20, message="readiness 503")
        finally:
            postgres.start()
        wait_for(lambda: all(r.get("/readyz").status_code == 200 for r in cluster.replicas), timeout=30,
                 message="readiness back to 200")
        task = create_task(b, sid, download(origin.url(f"/bytes/{4096}?seed=db")))
        assert_success(wait_task(a, sid, task["id"]))


def test_replicas_starting_at_once_migrate_the_schema_once(postgres):
    database = postgres.database()
    with Cluster(database, replicas=3) as cluster:
        assert all(r.get("/readyz").status_code == 200 for r in cluster.replicas)
    versions = postgres.psql(database, "SELECT count(*), count(DISTINCT version) FROM schema_migrations")
    total, distinct = versions.split("|")
    assert total == distinct


def test_a_graceful_stop_hands_sessions_over_at_once(cluster, postgres, origin):
    a, b, c = cluster.replicas
    sid = create_session(a, mode="background")
    assert holder_of(cluster, postgres, sid) is a
    a.stop()
    # Leases given up at shutdown: claimed on the next round, well within a lease timeout.
    wait_for(lambda: holder_of(cluster, postgres, sid) in (b, c), timeout=cluster.lease_timeout,
             message="another replica to take the session over")
    task = create_task(b, sid, download(origin.url(f"/bytes/{1024}?seed=stop")))
    assert_success(wait_task(c, sid, task["id"]))


def test_a_principals_request_rate_is_shared_by_the_replicas_and_spent_once_per_request(postgres, tmp_path):
    """Three replicas each grant a third of the rate and burst; a forwarded request is counted by
    the replica it reached only (its proof tells the holder), so the holder's share is intact."""
    paced = Principal("paced", "admin", limits={"requests_per_second": 0.3, "burst": 3})
    auth = write_auth_file(tmp_path / "auth.json", [paced])
    with Cluster(postgres.database(), replicas=3, extra_args=("--auth-file", str(auth))) as cluster:
        a, b, c = (r.as_caller(paced.token) for r in cluster.replicas)
        admin = cluster.replicas[0]
        wait_for(lambda: len(postgres.psql(cluster.database_url, "SELECT id FROM replicas").split()) == 3,
                 message="three replicas heard from")
        sid = create_session(admin, mode="background")  # held by the first replica; the admin token is unpaced
        time.sleep(1.5)  # every replica has counted the others by now
        forwarded = b.get(session_path(sid))
        assert forwarded.status_code == 200, forwarded.text
        direct = a.get(session_path(sid))
        assert direct.status_code == 200, "the holder spent its share on a request another replica had counted"
        again = a.get(session_path(sid))
        assert again.status_code == 429, "a third of a burst of three is one request"


def test_a_completed_task_is_answered_on_any_replica_and_its_changes_reach_every_copy(cluster, origin):
    """A replica keeps the holder's reply of a completed task and answers from it; a PATCH or a
    DELETE, through any replica, reaches every copy (the holder's store notifies the change)."""
    a, b, c = cluster.replicas
    sid = create_session(a, mode="background")
    task = create_task(a, sid, download(origin.url(f"/bytes/{1024}?seed=copy")))
    assert_success(wait_task(a, sid, task["id"]))
    path = task_path(sid, task["id"])

    def seen_by_the_holder(request_id: str) -> bool:
        # A forwarded request keeps the client's X-Request-Id, on the holder's log line too.
        return any(r.get("msg") == "request" and r.get("request_id") == request_id for r in a.log_records())

    first = b.get(path, headers={"X-Request-Id": "copy-first"})
    assert first.status_code == 200
    wait_for(lambda: seen_by_the_holder("copy-first"), timeout=5, message="the holder's log line of the relayed GET")
    for n in range(5):
        again = b.get(path, headers={"X-Request-Id": f"copy-{n}"})
        assert again.content == first.content and again.headers["ETag"] == first.headers["ETag"]
    # A request that does reach the holder, after those: once its line is there, theirs would be.
    assert b.get(session_path(sid), headers={"X-Request-Id": "copy-marker"}).status_code == 200
    wait_for(lambda: seen_by_the_holder("copy-marker"), timeout=5, message="the holder's log line of the marker")
    assert not any(seen_by_the_holder(f"copy-{n}") for n in range(5)), "answered from the copy, not asked of the holder"
    assert b.get(task_path(sid, task["id"]), headers={"If-None-Match": first.headers["ETag"]}).status_code == 304

    changed = c.patch(task_path(sid, task["id"]), json={"description": "renamed"})
    assert changed.status_code == 200, changed.text
    wait_for(lambda: b.get(task_path(sid, task["id"])).json()["description"] == "renamed", timeout=5,
             message="the change to reach the other replica's copy")
    # Through the replica that keeps the copy: its own change is read back at once.
    assert b.patch(task_path(sid, task["id"]), json={"description": "again"}).status_code == 200
    assert b.get(task_path(sid, task["id"])).json()["description"] == "again"
    assert c.delete(task_path(sid, task["id"])).status_code in (200, 204)
    wait_for(lambda: b.get(task_path(sid, task["id"])).status_code == 404, timeout=5,
             message="the deletion to reach the other replica's copy")

"""Cluster mode: a store read never holds an HTTP event loop. transferd runs with one HTTP thread on
a throwaway PostgreSQL; the test holds a lock on the tasks table in a psql session of its own, so
that `GET …/tasks` (which pages the session's tasks in the database) waits for the lock. Meanwhile
other requests on that same loop — `/healthz`, the session, a task held in memory — are answered
at once; and once the lock goes, the list is answered in full.
"""

from __future__ import annotations

import subprocess
import threading
import time

import pytest

from support.api import create_session, create_task, data, session_path, task_path, tasks_path
from support.cluster import Cluster, PostgresServer
from support.origin import Origin


@pytest.fixture
def postgres():
    with PostgresServer() as server:
        yield server


class TableLock:
    """`LOCK TABLE … IN ACCESS EXCLUSIVE MODE` in an open transaction of a psql process the test
    drives through its stdin; the lock goes when the process ends."""

    def __init__(self, database_url: str, table: str) -> None:
        self.process = subprocess.Popen(["psql", database_url, "-v", "ON_ERROR_STOP=1", "-tAq"], stdin=subprocess.PIPE,
                                        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        self.process.stdin.write(f"BEGIN;\nLOCK TABLE {table} IN ACCESS EXCLUSIVE MODE;\nSELECT 'locked';\n")
        self.process.stdin.flush()
        line = self.process.stdout.readline().strip()
        assert line == "locked", line

    def release(self) -> None:
        if self.process.poll() is None:
            self.process.stdin.write("ROLLBACK;\n")
            self.process.stdin.close()
            self.process.wait(timeout=10)


def test_a_read_waiting_for_the_database_holds_no_loop(postgres, origin: Origin):
    with Cluster(postgres.database(), replicas=1, extra_args=("--http-threads", "1")) as cluster:
        td = cluster.replicas[0]
        sid = create_session(td, mode="background")
        # A data task whose origin takes its time: it stays running, in memory, and writes nothing.
        task = create_task(td, sid, data(origin.url("/slow-headers?delay=60")))

        lock = TableLock(cluster.database_url, "tasks")
        listed: dict = {}

        def list_tasks() -> None:
            listed["response"] = td.get(tasks_path(sid), timeout=30)

        lister = threading.Thread(target=list_tasks)
        try:
            lister.start()
            time.sleep(0.5)
            assert "response" not in listed, "the list did not wait for the lock"

            started = time.monotonic()
            assert td.get("/healthz", timeout=5).status_code == 200
            assert td.get(session_path(sid), timeout=5).status_code == 200
            in_memory = td.get(task_path(sid, task["id"]), timeout=5)
            assert in_memory.status_code == 200 and in_memory.json()["state"] == "running"
            # Well inside the database's lock timeout (10 s), which would end a blocked loop's wait.
            assert time.monotonic() - started < 3
            assert "response" not in listed, "the list was answered while the lock was held"
        finally:
            lock.release()
            lister.join(timeout=30)

        response = listed["response"]
        assert response.status_code == 200, response.text
        assert [t["id"] for t in response.json()["tasks"]] == [task["id"]]

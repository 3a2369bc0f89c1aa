"""transferd on PostgreSQL (`--database postgres://…`): a durable session's task and its events
are kept in the database across a restart of transferd, and `/readyz` follows the database — 503
while it is down, 200 again once it is back, without restarting transferd.

The server is a throwaway PostgreSQL from Debian's packages, started by scripts/postgres.sh on a
free port in a temporary directory."""

from __future__ import annotations

import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest
import requests

from support.api import assert_success, create_session, create_task, download, get_task, wait_for, wait_task
from support.events import all_events, types_of
from support.origin import Origin
from support.transferd import REPO_ROOT, free_port

SCRIPT = REPO_ROOT / "scripts" / "postgres.sh"


class Postgres:
    """scripts/postgres.sh's server in a directory of its own, removed on close."""

    def __init__(self) -> None:
        self.root = Path(tempfile.mkdtemp(prefix="transferd-pg-"))
        self.root.chmod(0o755)  # as root, the server runs as another user that must reach it
        self.data = self.root / "data"
        self.port = free_port()
        self.url = self._script("url").strip()

    def _script(self, what: str) -> str:
        return subprocess.run([str(SCRIPT), what, str(self.data), str(self.port)], check=True, capture_output=True,
                              text=True, timeout=120).stdout

    def start(self) -> None:
        self._script("start")

    def stop(self) -> None:
        self._script("stop")

    def close(self) -> None:
        try:
            self.stop()
        finally:
            shutil.rmtree(self.root, ignore_errors=True)


@pytest.fixture
def postgres():
    if not list(Path("/usr/lib/postgresql").glob("*/bin/pg_ctl")):
        pytest.fail("no PostgreSQL server: scripts/install-deps.sh test installs it", pytrace=False)
    server = Postgres()
    server.start()
    try:
        yield server
    finally:
        server.close()


def readyz(td) -> int:
    return requests.get(td.url("/readyz"), timeout=10).status_code


def test_state_lives_in_postgres_and_readiness_follows_it(start_transferd, api_token, origin, postgres):
    td = start_transferd("--database", postgres.url, api_token=api_token)
    sid = create_session(td, mode="background")
    task = create_task(td, sid, download(origin.url("/bytes/4096?seed=pg")))
    assert_success(wait_task(td, sid, task["id"]))
    journal = types_of(all_events(td, sid))
    assert "task.completed" in journal

    # Nothing of it is in the data directory's SQLite file: it was never made.
    assert not (td.data_dir / "transferd.sqlite").exists()

    td.restart()
    again = get_task(td, sid, task["id"])
    assert again["state"] == "completed" and again["result"]["sha256"] == Origin.expected_sha256(4096, "pg")
    assert types_of(all_events(td, sid)) == journal

    postgres.stop()
    wait_for(lambda: readyz(td) == 503, timeout=30, message="/readyz did not turn 503 with the database down")
    postgres.start()
    wait_for(lambda: readyz(td) == 200, timeout=30, message="/readyz did not recover with the database back")
    # Writes work again too, on the same process: a new task runs to completion.
    second = create_task(td, sid, download(origin.url("/bytes/1024?seed=back")))
    assert_success(wait_task(td, sid, second["id"]))

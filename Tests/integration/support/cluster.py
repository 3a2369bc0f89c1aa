"""Cluster mode for the integration tests: a throwaway PostgreSQL from Debian's packages and
transferd replicas sharing it and one data directory.

    with PostgresServer() as pg, Cluster(pg.database(), replicas=3) as cluster:
        a, b, c = cluster.replicas
        ...
        cluster.replicas[0].kill9()

`PostgresServer` runs `scripts/postgres.sh` (initdb and pg_ctl as an unprivileged user, trust
authentication on 127.0.0.1), and `database()` creates a fresh database for one test. Each replica
is a `Transferd` with `--database`, a short `--lease-timeout` and `--advertise-address` on its own
loopback port.
"""

from __future__ import annotations

import secrets
import shutil
import subprocess
import tempfile
from pathlib import Path

from .transferd import REPO_ROOT, Transferd, binary_path, free_port

SCRIPT = REPO_ROOT / "scripts" / "postgres.sh"
LEASE_TIMEOUT = 3.0


class PostgresServer:
    def __init__(self) -> None:
        self.directory = Path(tempfile.mkdtemp(prefix="transferd-pg-"))
        self.port = free_port()

    def _script(self, command: str) -> str:
        done = subprocess.run([str(SCRIPT), command, str(self.directory), str(self.port)],
                              capture_output=True, text=True, timeout=120)
        if done.returncode != 0:
            raise RuntimeError(f"scripts/postgres.sh {command} failed: {done.stdout}{done.stderr}")
        return done.stdout.strip()

    def start(self) -> "PostgresServer":
        self._script("start")
        return self

    def stop(self) -> None:
        self._script("stop")

    @property
    def url(self) -> str:
        return self._script("url")

    def database(self) -> str:
        """The URL of a new, empty database."""
        name = "t_" + secrets.token_hex(6)
        subprocess.run(["psql", self.url, "-v", "ON_ERROR_STOP=1", "-qc", f"CREATE DATABASE {name}"],
                       check=True, capture_output=True, timeout=30)
        return self.url.rsplit("/", 1)[0] + "/" + name

    def psql(self, database_url: str, sql: str) -> str:
        done = subprocess.run(["psql", database_url, "-v", "ON_ERROR_STOP=1", "-tAqc", sql],
                              check=True, capture_output=True, text=True, timeout=30)
        return done.stdout.strip()

    def __enter__(self) -> "PostgresServer":
        return self.start()

    def __exit__(self, *exc: object) -> None:
        try:
            self.stop()
        finally:
            shutil.rmtree(self.directory, ignore_errors=True)


class Cluster:
    """`replicas` transferd processes on one database and one data directory."""

    def __init__(self, database_url: str, replicas: int = 3, api_token: str | None = None,
                 lease_timeout: float = LEASE_TIMEOUT, extra_args: tuple[str, ...] = ()) -> None:
        self.database_url = database_url
        self.data_dir = Path(tempfile.mkdtemp(prefix="transferd-cluster-"))
        self.api_token = api_token or "tdt_" + secrets.token_urlsafe(24)
        self.lease_timeout = lease_timeout
        self.replicas: list[Transferd] = []
        for _ in range(replicas):
            port = free_port()
            self.replicas.append(Transferd(
                "--database", database_url, "--lease-timeout", str(lease_timeout),
                "--advertise-address", f"127.0.0.1:{port}", *extra_args,
                api_token=self.api_token, port=port, data_dir=self.data_dir, binary=binary_path()))

    def start(self) -> "Cluster":
        for replica in self.replicas:
            replica.spawn()
        for replica in self.replicas:
            replica._wait_ready()
        return self

    def close(self) -> None:
        for replica in self.replicas:
            replica.close()
        shutil.rmtree(self.data_dir, ignore_errors=True)

    def __enter__(self) -> "Cluster":
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.close()

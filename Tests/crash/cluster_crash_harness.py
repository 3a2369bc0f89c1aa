#!/usr/bin/env python3
"""The crash harness in cluster mode: three transferd replicas on one PostgreSQL and one data
directory, and each round `kill -9` of a random replica while the others keep serving.

The workload, and every check of the single-node harness (crash_harness.py), are the same; requests
go to a random live replica. What differs:
  - a killed replica's sessions are taken over by another once their leases expire, and its
    running transfers continue there from their partial files; it is started again next round;
  - meanwhile a request for such a session answers 503 `replica_unavailable`, which the harness
    retries after its Retry-After, as a client of a cluster must;
  - an ephemeral session survives a round when its holder did (a re-attach answers 200), and is
    gone with its holder otherwise (201; the workload still running on the other replicas finds it
    gone, 404);
  - the database is PostgreSQL's to keep consistent, so no SQLite integrity check runs.

    python3 Tests/crash/cluster_crash_harness.py --rounds 100 [--seed N] [--keep]

`make test` runs a short form through Tests/integration/test_crash_harness.py; `make crash-cluster`
(with `ROUNDS=`) the long one.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import Any

import requests

import crash_harness
from crash_harness import Harness
from crash_workload import SESSIONS

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "integration"))

from support.cluster import Cluster, PostgresServer  # noqa: E402
from support.transferd import _Verbs  # noqa: E402

REPLICAS = 3


class Replicas(_Verbs):
    """The cluster as the harness sees one transferd: requests go to a random live replica; a kill
    takes one replica down, a restart brings the killed ones back."""

    def __init__(self, harness: "ClusterHarness", data_dir: Path):
        self.harness = harness
        self.postgres = PostgresServer()
        self.cluster: Cluster | None = None
        self.args = harness.service_args()
        self.data_dir = data_dir

    @property
    def process(self) -> Any:
        return None if self.cluster is None else self.cluster.replicas[0].process

    @property
    def running(self) -> bool:
        return self.cluster is not None and any(r.running for r in self.cluster.replicas)

    def start(self) -> None:
        self.postgres.start()
        self.cluster = Cluster(self.postgres.database(), replicas=REPLICAS, extra_args=tuple(self.args)).start()

    def restart(self) -> None:
        assert self.cluster is not None
        for replica in self.cluster.replicas:
            if not replica.running:
                replica.restart()

    def kill9(self) -> None:
        assert self.cluster is not None
        live = [r for r in self.cluster.replicas if r.running]
        self.harness.rng.choice(live).kill9()

    def request(self, method: str, path: str, **kwargs: Any) -> requests.Response:
        """As a client of a cluster does: a 503 `replica_unavailable` (the session's holder was
        just killed, its lease not yet taken over) is retried after its Retry-After."""
        assert self.cluster is not None
        deadline = time.monotonic() + self.cluster.lease_timeout * 4
        while True:
            live = [r for r in self.cluster.replicas if r.running]
            response = self.harness.rng.choice(live).request(method, path, **kwargs)
            moving = response.status_code == 503 and "replica_unavailable" in response.text
            if not moving or time.monotonic() >= deadline:
                return response
            time.sleep(float(response.headers.get("Retry-After", "1")))

    def output(self) -> str:
        if self.cluster is None:
            return ""
        return "\n".join(f"== replica {i}\n{r.output()}" for i, r in enumerate(self.cluster.replicas))

    def close(self) -> None:
        try:
            if self.cluster is not None:
                self.cluster.close()
        finally:
            self.postgres.__exit__()


class ClusterHarness(Harness):
    def service(self, data_dir: Path) -> Replicas:  # type: ignore[override]
        return Replicas(self, data_dir)

    def expected_attach(self, mode: str) -> set[int]:
        if mode == "ephemeral":
            return {200, 201}
        return super().expected_attach(mode)

    def expected_refusal(self, sid: str, response: requests.Response) -> bool:
        """An ephemeral session lives in its holder's memory: once the holder is killed, the
        workload still running on the other replicas finds it gone (404), as a client of a single
        transferd would after its restart."""
        return SESSIONS[sid][0] == "ephemeral" and response.status_code == 404

    def check_database(self) -> None:
        """PostgreSQL keeps itself consistent; what the harness checks is what the API shows."""


if __name__ == "__main__":
    sys.exit(crash_harness.main(ClusterHarness, __doc__))

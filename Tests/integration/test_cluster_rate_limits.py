"""A principal's request rate holds across the replicas of a cluster: of requests spread over two or
three replicas, at most `burst + rate·t` get through in any window of t seconds — from the moment
the replicas are ready, while a replica joining is not yet counted by the others, and however the
requests are spread. A replica grants its share (rate and burst ÷ live replicas) only once every
other replica has had a heartbeat to count it.
"""

from __future__ import annotations

import time

import pytest

from support.api import wait_for
from support.cluster import Cluster, PostgresServer
from support.tenants import Principal, write_auth_file

RATE, BURST = 4.0, 20


@pytest.fixture(scope="module")
def postgres():
    with PostgresServer() as server:
        yield server


def spread(callers, count: int) -> tuple[int, float]:
    """`count` requests, alternating over `callers` as fast as they are answered: how many got
    through, and the seconds from the first request to the last answer."""
    started = time.monotonic()
    allowed = 0
    for i in range(count):
        status = callers[i % len(callers)].get("/v1/whoami").status_code
        assert status in (200, 429), status
        allowed += status == 200
    return allowed, time.monotonic() - started


@pytest.mark.parametrize("replicas", [2, 3])
def test_a_principals_rate_holds_across_replicas_from_the_start(postgres, tmp_path, replicas):
    paced = Principal("paced", "read", namespaces=["paced."], limits={"requests_per_second": RATE, "burst": BURST})
    auth = write_auth_file(tmp_path / "auth.json", [paced])
    with Cluster(postgres.database(), replicas=replicas, extra_args=("--auth-file", str(auth))) as cluster:
        callers = [r.as_caller(paced.token) for r in cluster.replicas]
        # At once, as a client would the moment the replicas are ready.
        allowed, took = spread(callers, 3 * BURST)
        assert allowed <= BURST + RATE * took, f"{allowed} of {3 * BURST} let through in {took:.2f}s"

        # Settled, the replicas together grant the whole burst again once it refilled, and no more.
        wait_for(lambda: all(c.get("/v1/whoami").status_code == 200 for c in callers),
                 timeout=BURST / RATE + 10, message="every replica to grant requests")
        time.sleep(BURST / RATE)  # the shared burst refills (a wait for the bucket, not a timing assertion)
        allowed, took = spread(callers, 3 * BURST)
        assert allowed <= BURST + RATE * took, f"{allowed} of {3 * BURST} let through in {took:.2f}s"
        assert allowed >= BURST - replicas, f"only {allowed} of a burst of {BURST} granted by {replicas} settled replicas"

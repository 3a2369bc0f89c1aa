"""A principal's limits (`limits` in the auth file): its request rate (429 `rate_limited`, with
`Retry-After` and the RateLimit headers on every response), its unfinished tasks (429
`quota_exceeded`, a batch as a whole) and the bandwidth of its sessions together.

One transferd serves the module; each test has a principal of its own, so no test spends another's
budget.
"""

from __future__ import annotations

import math
import time
from datetime import datetime

import pytest

from support.api import (assert_problem, assert_success, create_session, create_task, download, post_task,
                         session_path, task_path, tasks_path, unique, wait_tasks)
from support.origin import Origin
from support.tenants import Principal, ratelimit_headers, wait_audit, write_auth_file
from support.transferd import Transferd

RATE, BURST = 2, 3
PACED = Principal("paced", "write", ["com.paced."], limits={"requests_per_second": RATE, "burst": BURST})
QUOTA = Principal("quota", "write", ["com.quota."], limits={"max_unfinished_tasks": 3})
BANDWIDTH = 128 * 1024  # bytes per second
THROTTLED = Principal("throttled", "write", ["com.throttled."], limits={"max_bytes_per_second": BANDWIDTH})
FREE = Principal("free", "write", ["com.free."])
OPS = Principal("ops", "admin")


@pytest.fixture(scope="module")
def td(transferd_binary, tmp_path_factory) -> Transferd:
    auth = write_auth_file(tmp_path_factory.mktemp("limits-auth") / "auth.json", [PACED, QUOTA, THROTTLED, FREE, OPS])
    instance = Transferd("--auth-file", str(auth), binary=transferd_binary)
    try:
        yield instance.start()
    finally:
        instance.close()


@pytest.fixture(scope="module")
def origin() -> Origin:
    with Origin() as server:
        yield server


def test_a_principal_beyond_its_request_rate_gets_429_with_retry_after(td):
    paced = td.as_caller(PACED.token)
    window = math.ceil(BURST / RATE)
    # Refusals carry the headers too, and count against the rate like any request.
    responses = [paced.put(session_path(unique("org.elsewhere"))), paced.get(session_path(unique("com.paced.none")))]
    assert [r.status_code for r in responses] == [403, 404]
    while responses[-1].status_code != 429:
        assert len(responses) < 20, "never limited"
        responses.append(paced.get("/v1/whoami"))
    for response in responses:
        (quota, seconds), (remaining, reset) = ratelimit_headers(response)
        assert (quota, seconds) == (BURST, window)
        assert 0 <= remaining <= BURST and 0 <= reset <= window, response.headers
    served = next(r for r in responses if r.status_code == 200)
    assert served.json()["limits"] == {"requests_per_second": RATE, "burst": BURST, "max_unfinished_tasks": None,
                                       "max_bytes_per_second": None}
    refused = responses[-1]
    assert_problem(refused, 429, "rate_limited")
    assert refused.headers["Retry-After"].isdigit() and int(refused.headers["Retry-After"]) >= 1
    assert ratelimit_headers(refused)[1][0] == 0
    # A refused change is audited with its 429.
    request_id = unique("limited")
    assert paced.put(session_path(unique("com.paced.s")), headers={"X-Request-Id": request_id}).status_code == 429
    assert str(wait_audit(td, request_id)["status"]) == "429"
    # After Retry-After seconds, a request is accepted again.
    time.sleep(int(refused.headers["Retry-After"]))
    assert paced.get("/v1/whoami").status_code == 200


def test_a_principal_without_a_rate_gets_no_ratelimit_headers(td):
    response = td.as_caller(FREE.token).get("/v1/whoami")
    assert response.status_code == 200
    assert "RateLimit" not in response.headers and "RateLimit-Policy" not in response.headers


def test_creations_beyond_max_unfinished_tasks_are_refused_a_batch_as_a_whole(td, origin):
    quota = td.as_caller(QUOTA.token)
    first, second = (create_session(quota, unique("com.quota.s")) for _ in range(2))

    def held(i: int) -> dict:
        return download(origin.url(f"/bytes/100?seed={i}"), start=False)

    kept = [create_task(quota, first, held(i)) for i in range(2)]
    # Two more would make four: the batch is refused whole, in any session of the principal.
    refused = quota.post(tasks_path(second) + ":batch", json={"tasks": [held(2), held(3)]})
    assert_problem(refused, 429, "quota_exceeded")
    assert "Retry-After" not in refused.headers and "RateLimit" not in refused.headers
    assert quota.get(tasks_path(second)).json()["tasks"] == []
    create_task(quota, second, held(4))  # the third
    assert_problem(post_task(quota, second, held(5)), 429, "quota_exceeded")
    assert len(quota.get(tasks_path(second)).json()["tasks"]) == 1
    # An admin is not held to the limit, but every unfinished task in the principal's sessions
    # counts, whoever made it; a task that completes frees room.
    create_task(td.as_caller(OPS.token), second, held(6))
    assert quota.post(task_path(first, kept[0]["id"], "/cancel")).status_code == 200
    assert_problem(post_task(quota, second, held(7)), 429, "quota_exceeded")
    assert quota.post(task_path(first, kept[1]["id"], "/cancel")).status_code == 200
    create_task(quota, second, held(8))
    assert_problem(post_task(quota, first, held(9)), 429, "quota_exceeded")


def test_a_principals_sessions_share_its_bandwidth(td, origin):
    """Two sessions of one principal, one download each: together they move no faster than the
    principal's rate (each alone is not limited at all). A lower bound only, from transferd's own
    timestamps: the time can only be longer than the rate implies, never much shorter."""
    throttled = td.as_caller(THROTTLED.token)
    size = BANDWIDTH  # a second's worth each: two seconds together
    tasks = []
    for seed in ("a", "b"):
        sid = create_session(throttled, unique("com.throttled.s"))
        tasks.append((sid, create_task(throttled, sid, download(origin.url(f"/bytes/{size}?seed={seed}")))))
    done = [assert_success(wait_tasks(throttled, sid, [task["id"]], timeout=30)[0]) for sid, task in tasks]
    start = min(datetime.fromisoformat(t["started_at"]) for t in done)
    end = max(datetime.fromisoformat(t["completed_at"]) for t in done)
    # The bucket may hold a fifth of a second's worth at the start; 0.7 leaves room for it and more.
    assert (end - start).total_seconds() >= 0.7 * 2 * size / BANDWIDTH, (start, end)

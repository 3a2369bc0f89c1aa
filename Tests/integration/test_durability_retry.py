"""Retries (the session configuration's `retry`, `waits_for_connectivity`, `timeout_resource_s`; README
"Durability"): transient failures
and listed statuses are tried again with backoff while the task shows phase `retrying` and
`next_attempt_at`; `Retry-After` is honoured; a download continues from its offset; attempts stop at
`retry.max_attempts` or the resource timeout; a session waiting for connectivity keeps knocking until
the origin comes up."""

from __future__ import annotations

from support.api import (assert_success, assert_task_error, create_session, create_task, download, get_task,
                         run_task, wait_for, wait_task)
from support.events import all_events, of_type
from support.origin import Origin
from support.transferd import free_port

MiB = 1 << 20
QUICK = {"backoff_initial_s": 0.2, "backoff_max_s": 0.5}


def test_503_with_retry_after_is_retried_until_it_succeeds(transferd, origin):
    sid = create_session(transferd, configuration={"retry": {"on_http_status": [503], **QUICK}})
    task = create_task(transferd, sid, download(origin.url("/flaky/r503?fail=2&status=503&retry_after=2&bytes=100000&seed=f")))
    retrying = wait_for(lambda: (t := get_task(transferd, sid, task["id"]))["phase"] == "retrying" and t,
                        timeout=20, message="phase retrying")
    assert retrying["state"] == "running" and retrying["next_attempt_at"], retrying
    assert retrying["error"] is None

    done = assert_success(wait_task(transferd, sid, task["id"]))
    assert done["response"]["status"] == 200 and done["metrics"]["attempts"] == 3
    assert done["next_attempt_at"] is None and done["phase"] == "finished"
    assert done["result"]["sha256"] == Origin.expected_sha256(100000, "f")
    assert origin.flaky_hits("r503") == 3
    # Retry-After: 2 is a floor under the backoff (0.2 s here) for each wait.
    first, second, third = origin.requests
    assert second.time - first.time >= 1.9 and third.time - second.time >= 1.9
    # The 503 bodies never reached the file.
    assert done["result"]["size"] == 100000


def test_429_with_retry_after_is_retried_without_being_listed(transferd, origin):
    sid = create_session(transferd, configuration={"retry": QUICK})
    done = assert_success(run_task(transferd, sid, download(origin.url("/flaky/r429?fail=1&status=429&retry_after=1"))))
    assert done["response"]["status"] == 200 and done["metrics"]["attempts"] == 2


def test_listed_status_stops_at_max_attempts_and_completes_with_it(transferd, origin):
    """As in URLSession an HTTP status is not a task error: out of attempts, the task completes
    with the last answer."""
    sid = create_session(transferd, configuration={"retry": {"on_http_status": [503], "max_attempts": 3, **QUICK}})
    done = assert_success(run_task(transferd, sid, download(origin.url("/flaky/many?fail=10&status=503"))))
    assert done["response"]["status"] == 503 and done["metrics"]["attempts"] == 3
    assert origin.flaky_hits("many") == 3


def test_reset_mid_body_is_resumed_on_retry_from_its_offset(transferd, origin):
    sid = create_session(transferd, configuration={"retry": QUICK})
    size = 3 * MiB
    # Every answer is cut after 1 MiB: each attempt must continue where the last one stopped.
    done = assert_success(run_task(transferd, sid, download(origin.url(f"/bytes/{size}?seed=rm&reset_after={MiB}"))))
    assert done["result"]["size"] == size
    assert done["result"]["sha256"] == Origin.expected_sha256(size, "rm")
    assert done["metrics"]["attempts"] == 3
    assert [r.headers.get("Range") for r in origin.requests] == [None, f"bytes={MiB}-", f"bytes={2 * MiB}-"]
    assert [r.status for r in origin.requests] == [200, 206, 206]
    assert origin.bytes_served("/bytes/") == size, "bytes were fetched twice"
    offsets = [e["data"]["offset"] for e in of_type(all_events(transferd, sid), "task.resumed_at_offset", done["id"])]
    assert offsets == [MiB, 2 * MiB]


def test_transient_failures_stop_at_max_attempts(transferd, origin):
    sid = create_session(transferd, configuration={"retry": {"max_attempts": 2, **QUICK}})
    failed = run_task(transferd, sid, download(origin.url(f"/bytes/{MiB}?seed=ma&reset_after=1000")))
    assert_task_error(failed, "network_connection_lost")
    assert failed["metrics"]["attempts"] == 2 and len(origin.requests) == 2
    assert failed["error"]["resume_data"], "the bytes that arrived are kept for resume data"


def test_resource_timeout_ends_waiting_for_connectivity(transferd):
    """Nothing listens on the port: a background session waits for connectivity, trying again and
    again, until `timeout_resource_s` ends the task with `timed_out`."""
    sid = create_session(transferd, mode="background",
                         configuration={"timeout_resource_s": 3, "retry": {"max_attempts": 1, **QUICK}})
    task = create_task(transferd, sid, download(f"http://127.0.0.1:{free_port()}/bytes/10"))
    done = assert_task_error(wait_task(transferd, sid, task["id"]), "timed_out")
    assert done["metrics"]["attempts"] > 1, "max_attempts does not bound waiting for connectivity"
    assert "resource timeout" in done["error"]["message"]


def test_default_session_does_not_wait_for_connectivity(transferd):
    sid = create_session(transferd, configuration={"retry": {"max_attempts": 2, **QUICK}})
    done = run_task(transferd, sid, download(f"http://127.0.0.1:{free_port()}/bytes/10"))
    assert_task_error(done, "cannot_connect_to_host")
    assert done["metrics"]["attempts"] == 2


def test_waits_for_connectivity_until_the_origin_comes_up(transferd):
    port = free_port()
    sid = create_session(transferd, configuration={"waits_for_connectivity": True, "retry": {"max_attempts": 1, **QUICK}})
    task = create_task(transferd, sid, download(f"http://127.0.0.1:{port}/bytes/5000?seed=up"))
    wait_for(lambda: get_task(transferd, sid, task["id"])["metrics"]["attempts"] >= 3, timeout=20,
             message="several refused attempts")
    assert get_task(transferd, sid, task["id"])["state"] == "running"
    with Origin(port=port) as late:
        done = assert_success(wait_task(transferd, sid, task["id"]))
        assert done["result"]["sha256"] == Origin.expected_sha256(5000, "up")
        assert len(late.requests) == 1


def test_a_task_waiting_to_retry_moves_nothing_and_says_so(transferd, origin):
    """Between attempts nothing moves: the rate a waiting task shows is 0, not its last attempt's."""
    sid = create_session(transferd, configuration={"retry": {"backoff_initial_s": 30, "backoff_max_s": 30}})
    task = create_task(transferd, sid, download(origin.url(f"/bytes/{3 * MiB}?seed=wr&reset_after={MiB}")))
    retrying = wait_for(lambda: (t := get_task(transferd, sid, task["id"]))["phase"] == "retrying" and t,
                        timeout=20, message="phase retrying")
    assert retrying["progress"]["bytes_received"] == MiB, retrying["progress"]
    assert retrying["progress"]["bytes_per_second"] == 0, retrying["progress"]

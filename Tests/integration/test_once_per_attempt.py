"""A request goes out once per attempt (README, "Retries"): a method outside
RFC 9110's idempotent set is never sent twice by the transport — no silent re-send on a kept-alive
connection that turned out closed — nor retried once the origin may have seen it, unless the
session's `retry.methods` names it; `metrics.attempts` counts every time the origin may have seen the
request; retries keep to the backoff and `max_attempts` in every mode. The origin's `/once/{id}`
counts the bodies it read per request id."""

from __future__ import annotations

import pytest

from support.api import (assert_problem, assert_success, assert_task_error, create_session, create_task, data,
                         get_session, get_task, put_session, run_task, unique, wait_for, wait_task)
from support.transferd import free_port

QUICK = {"backoff_initial_s": 0.2, "backoff_max_s": 0.5}


def post(url: str, text: str | None) -> dict:
    body = data(url)
    body["request"]["method"] = "POST"
    if text is not None:
        body["request"]["body"] = {"text": text}
    return body


def keep_alive_then_closed(transferd, origin, configuration: dict, text: str | None) -> dict:
    """A first POST answered on a kept-alive connection, then a second one that the origin reads on
    that connection and answers by closing it: the second task, completed."""
    sid = create_session(transferd, configuration=configuration)
    assert_success(run_task(transferd, sid, post(origin.url("/once/first?reset_reused=1"), "first")))
    second = run_task(transferd, sid, post(origin.url("/once/second?reset_reused=1"), text))
    first_request, second_request = origin.requests[:2]
    assert first_request.connection_id == second_request.connection_id, "the second POST did not reuse the connection"
    return second


@pytest.mark.parametrize("text", ["second", None], ids=["with-body", "empty-body"])
def test_a_post_is_not_sent_again_on_a_kept_alive_connection_the_origin_closed(transferd, origin, text):
    second = keep_alive_then_closed(transferd, origin, {"retry": QUICK}, text)
    assert origin.bodies("second") == [(text or "").encode()], "the origin read the POST more than once"
    assert_task_error(second, "network_connection_lost")
    assert second["metrics"]["attempts"] == 1
    assert origin.bodies("first") == [b"first"]


def test_a_post_the_session_retries_is_sent_again_and_counted(transferd, origin):
    """With POST in `retry.methods`, the transport's re-send on a fresh connection is allowed, and is
    an attempt: the origin saw the body twice, and the task says so."""
    second = keep_alive_then_closed(transferd, origin, {"retry": {"methods": ["POST"], **QUICK}}, "second")
    assert_success(second)
    assert origin.bodies("second") == [b"second", b"second"]
    assert second["metrics"]["attempts"] == 2


def test_a_post_reset_after_it_was_sent_is_not_retried(transferd, origin):
    sid = create_session(transferd, configuration={"retry": QUICK})
    done = run_task(transferd, sid, post(origin.url("/once/reset?reset=1"), "pay 10 EUR"))
    assert_task_error(done, "network_connection_lost")
    assert done["metrics"]["attempts"] == 1
    assert origin.bodies("reset") == [b"pay 10 EUR"]
    assert "retry.methods does not list POST" in done["error"]["message"], done["error"]


def test_a_post_the_session_retries_is_retried_with_backoff_up_to_max_attempts(transferd, origin):
    backoff = 0.4
    sid = create_session(transferd, configuration={"retry": {"methods": ["POST"], "max_attempts": 3,
                                                             "backoff_initial_s": backoff, "backoff_max_s": backoff}})
    done = run_task(transferd, sid, post(origin.url("/once/listed?reset=1"), "retry me"))
    assert_task_error(done, "network_connection_lost")
    assert done["metrics"]["attempts"] == 3
    assert origin.bodies("listed") == [b"retry me"] * 3
    times = [r.time for r in origin.requests]
    # The jitter spreads each wait over 0.75–1 times the backoff (it never passes the cap).
    assert all(later - earlier >= 0.75 * backoff for earlier, later in zip(times, times[1:])), times


def test_a_reset_get_in_a_background_session_backs_off_says_so_and_stops_at_max_attempts(transferd, origin):
    """A connection reset is no missing connectivity: waiting for connectivity does not lift
    `max_attempts` for it, and the waits are the configured backoff."""
    backoff = 0.5
    sid = create_session(transferd, mode="background",
                         configuration={"retry": {"max_attempts": 3, "backoff_initial_s": backoff, "backoff_max_s": backoff}})
    task = create_task(transferd, sid, data(origin.url("/once/get?reset=1")))
    retrying = wait_for(lambda: (t := get_task(transferd, sid, task["id"]))["phase"] == "retrying" and t,
                        timeout=20, message="phase retrying")
    assert retrying["state"] == "running" and retrying["next_attempt_at"], retrying
    assert retrying["error"] and retrying["error"]["code"] == "network_connection_lost", retrying
    done = assert_task_error(wait_task(transferd, sid, task["id"], timeout=30), "network_connection_lost")
    assert done["metrics"]["attempts"] == 3 and done["next_attempt_at"] is None
    assert len(origin.bodies("get")) == 3
    times = [r.time for r in origin.requests]
    assert all(later - earlier >= 0.75 * backoff for earlier, later in zip(times, times[1:])), times


def test_waiting_for_connectivity_says_so(transferd):
    """Nothing listens: a background session keeps knocking past `max_attempts`, and while it waits
    the task shows why — phase `retrying`, the last attempt's error, `next_attempt_at`."""
    sid = create_session(transferd, mode="background", configuration={"retry": {"max_attempts": 1, **QUICK}})
    task = create_task(transferd, sid, post(f"http://127.0.0.1:{free_port()}/once/nobody", "hello"))
    waiting = wait_for(lambda: (t := get_task(transferd, sid, task["id"]))["phase"] == "retrying"
                       and t["metrics"]["attempts"] >= 2 and t, timeout=20, message="a second refused attempt")
    assert waiting["state"] == "running" and waiting["next_attempt_at"], waiting
    assert waiting["error"] and waiting["error"]["code"] == "cannot_connect_to_host", waiting


def test_retry_methods_default_to_the_idempotent_methods_and_are_echoed(transferd):
    sid = create_session(transferd)
    assert get_session(transferd, sid)["configuration"]["retry"]["methods"] == ["GET", "HEAD", "OPTIONS", "TRACE", "PUT", "DELETE"]
    sid = create_session(transferd, configuration={"retry": {"methods": ["POST", "PATCH"]}})
    assert get_session(transferd, sid)["configuration"]["retry"]["methods"] == ["POST", "PATCH"]


@pytest.mark.parametrize("methods, field", [
    ("POST", "configuration.retry.methods"),
    (["GET", "PO ST"], "configuration.retry.methods[1]"),
    ([""], "configuration.retry.methods[0]"),
    ([7], "configuration.retry.methods[0]"),
])
def test_bad_retry_methods_are_refused_naming_the_field(shared_transferd, methods, field):
    assert_problem(put_session(shared_transferd, unique(), configuration={"retry": {"methods": methods}}), 422, field=field)


def post_in_flight_at_kill9(transferd, origin, configuration: dict, request_id: str) -> dict:
    """A background session's POST that the origin read and holds unanswered when transferd is
    killed with SIGKILL; transferd started again. The task, once completed."""
    sid = create_session(transferd, mode="background", configuration=configuration)
    task = create_task(transferd, sid, post(origin.url(f"/once/{request_id}?hold=20"), "pay 10 EUR"))
    wait_for(lambda: origin.bodies(request_id), timeout=10, message="the POST to reach the origin")
    transferd.kill9()
    transferd.restart()
    return wait_task(transferd, sid, task["id"])


def test_a_background_post_in_flight_at_kill9_is_not_sent_again(transferd, origin):
    done = post_in_flight_at_kill9(transferd, origin, {"retry": QUICK}, "inflight")
    assert_task_error(done, "interrupted")
    assert "may have reached the origin" in done["error"]["message"], done["error"]
    assert origin.bodies("inflight") == [b"pay 10 EUR"], "the POST was sent again after the restart"


def test_a_background_post_the_session_retries_runs_again_after_kill9(transferd, origin):
    done = post_in_flight_at_kill9(transferd, origin, {"retry": {"methods": ["POST"], **QUICK}}, "again")
    assert_success(done)
    assert origin.bodies("again") == [b"pay 10 EUR", b"pay 10 EUR"]

"""Sessions (README "Sessions"): create and re-attach, mode conflicts, identifier and
configuration validation, reading and listing with pagination, invalidation (`finish` / `cancel`)
and the identifier becoming free again, and the task counts a session reports."""

from __future__ import annotations

import time

import pytest

from support.api import (assert_problem, assert_success, create_session, create_task, download,
                         get_session, post_task, put_session, run_task, session_path, unique,
                         wait_for, wait_progress)
from support.transferd import read_response

# MARK: create and re-attach


@pytest.mark.parametrize("mode", ["background", "default", "ephemeral"])
def test_put_creates_201_then_reattaches_200(transferd, mode):
    sid = f"com.example.app.{mode}-uploads_1"
    first = put_session(transferd, sid, mode)
    assert first.status_code == 201, first.text
    assert first.headers["Content-Type"].startswith("application/json")
    body = first.json()
    assert body["identifier"] == sid and body["mode"] == mode
    assert isinstance(body["configuration"], dict)
    again = put_session(transferd, sid, mode)
    assert again.status_code == 200, again.text
    assert again.json()["identifier"] == sid and again.json()["mode"] == mode
    assert get_session(transferd, sid)["mode"] == mode


def test_session_without_a_body_is_created(transferd):
    response = transferd.put(session_path("no-body"))
    assert response.status_code == 201, response.text
    assert response.json()["identifier"] == "no-body"


@pytest.mark.parametrize("first,second", [("background", "default"), ("default", "ephemeral"),
                                          ("ephemeral", "background")])
def test_reattach_with_another_mode_is_409_mode_conflict(shared_transferd, first, second):
    td = shared_transferd
    sid = unique("conflict")
    assert put_session(td, sid, first).status_code == 201
    assert_problem(put_session(td, sid, second), 409, "mode_conflict")
    assert get_session(td, sid)["mode"] == first


def test_unknown_mode_is_422_naming_mode(transferd):
    assert_problem(put_session(transferd, "m", "forever"), 422, field="mode")
    assert transferd.get(session_path("m")).status_code == 404


def test_unknown_top_level_field_is_refused(transferd):
    response = transferd.put(session_path("typo"), json={"mode": "default", "configuraton": {}})
    assert_problem(response, 422, "unknown_field", field="configuraton")


# MARK: identifiers


def raw_request(td, method: str, target: str, body: bytes = b""):
    """One request written by hand, so the request-target reaches the server exactly as given
    (HTTP client libraries remove dot segments such as `/.` and `/..`)."""
    with td.connect() as sock:
        head = (f"{method} {target} HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer {td.token}\r\n"
                f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\nConnection: close\r\n\r\n")
        sock.sendall(head.encode() + body)
        return read_response(sock)


@pytest.mark.parametrize("identifier", [
    "bad!id", "bad*id", "semi;colon", "tilde~", "caf%C3%A9", "sp%20ace", "x" * 201,
])
def test_bad_identifier_is_422(transferd, identifier):
    response = raw_request(transferd, "PUT", f"/v1/sessions/{identifier}", b'{"mode":"default"}')
    assert response.status == 422, (response.status, response.body)
    problem = response.json()
    assert response.headers["content-type"].startswith("application/problem+json")
    assert problem["status"] == 422 and problem["code"]
    assert problem.get("field") == "identifier" or "identifier" in problem["detail"], problem
    assert transferd.get("/v1/sessions").json()["sessions"] == []


@pytest.mark.parametrize("identifier", [".", ".."])
def test_dot_identifiers_are_422(transferd, identifier):
    response = raw_request(transferd, "PUT", f"/v1/sessions/{identifier}", b'{"mode":"default"}')
    assert response.status == 422, (response.status, response.body)
    assert transferd.get("/v1/sessions").json()["sessions"] == []


@pytest.mark.parametrize("identifier", ["a", "x" * 200, "com.example.app.uploads", "A-Z_a-z.0-9", "...", ".hidden"])
def test_good_identifiers_are_accepted(shared_transferd, identifier):
    response = raw_request(shared_transferd, "PUT", f"/v1/sessions/{identifier}", b'{"mode":"ephemeral"}')
    assert response.status == 201, (response.status, response.body)
    assert response.json()["identifier"] == identifier
    assert get_session(shared_transferd, identifier)["identifier"] == identifier


# MARK: configuration


@pytest.mark.parametrize("configuration,field", [
    ({"x": 1}, "configuration.x"),
    ({"timeout_request_s": "60"}, "configuration.timeout_request_s"),
    ({"timeout_request_s": 0}, "configuration.timeout_request_s"),
    ({"timeout_request_s": -5}, "configuration.timeout_request_s"),
    ({"timeout_resource_s": True}, "configuration.timeout_resource_s"),
    ({"max_connections_per_host": 0}, "configuration.max_connections_per_host"),
    ({"max_connections_per_host": 2.5}, "configuration.max_connections_per_host"),
    ({"max_connections_per_host": "6"}, "configuration.max_connections_per_host"),
    ({"max_concurrent_tasks": -1}, "configuration.max_concurrent_tasks"),
    ({"max_concurrent_tasks": 0}, "configuration.max_concurrent_tasks"),
    ({"waits_for_connectivity": "yes"}, "configuration.waits_for_connectivity"),
    ({"discretionary": 1}, "configuration.discretionary"),
    ({"headers": {"X-A": 1}}, "configuration.headers.X-A"),
    ({"headers": {"X-A": "a\r\nX-B: b"}}, "configuration.headers.X-A"),
    ({"headers": ["X-A: b"]}, "configuration.headers"),
    ({"cookies": {"accept": "sometimes"}}, "configuration.cookies.accept"),
    ({"cookies": {"eat": True}}, "configuration.cookies.eat"),
    ({"redirects": {"follow": "no"}}, "configuration.redirects.follow"),
    ({"redirects": {"max": -1}}, "configuration.redirects.max"),
    ({"redirects": {"hops": 3}}, "configuration.redirects.hops"),
    ({"retry": {"max_attempts": 0}}, "configuration.retry.max_attempts"),
    ({"retry": {"backoff_initial_s": -1}}, "configuration.retry.backoff_initial_s"),
    ({"max_bytes_per_second": 0}, "configuration.max_bytes_per_second"),
    ({"proxy": {"url": "ftp://proxy:21"}}, "configuration.proxy.url"),
    ({"credentials": [{"host": "h", "scheme": "ntlm", "username": "u", "password": "p"}]},
     "configuration.credentials[0].scheme"),
])
def test_bad_configuration_is_422_naming_the_field(shared_transferd, configuration, field):
    sid = unique("cfg")
    problem = assert_problem(put_session(shared_transferd, sid, "default", configuration), 422, field=field)
    assert problem.get("field") == field, problem
    if field == "configuration.x":
        assert problem["code"] == "unknown_field", problem
    assert shared_transferd.get(session_path(sid)).status_code == 404


def test_configuration_must_be_an_object(transferd):
    response = transferd.put(session_path("cfg-list"), json={"mode": "default", "configuration": [1]})
    assert_problem(response, 422, field="configuration")


def test_configuration_is_echoed_with_defaults(transferd):
    sid = create_session(transferd, mode="background", configuration={
        "max_connections_per_host": 3, "timeout_request_s": 12, "redirects": {"max": 4},
        "headers": {"X-Team": "storage"}})
    config = get_session(transferd, sid)["configuration"]
    assert config["max_connections_per_host"] == 3
    assert config["timeout_request_s"] == 12
    assert config["redirects"] == {"follow": True, "max": 4}
    assert config["headers"] == {"X-Team": "storage"}
    assert config["max_concurrent_tasks"] == 64  # default
    assert config["timeout_resource_s"] == 604800  # default


# MARK: reading and listing


def test_get_unknown_session_is_404(transferd):
    assert_problem(transferd.get(session_path("nobody-here")), 404)


def test_list_sessions_paginates(transferd):
    ids = sorted(f"list-{i:02d}" for i in range(7))
    for sid in ids:
        assert put_session(transferd, sid, "ephemeral").status_code == 201
    seen, after, pages = [], None, 0
    while True:
        response = transferd.get("/v1/sessions", params={"limit": 3, **({"after": after} if after else {})})
        assert response.status_code == 200, response.text
        page = response.json()
        assert len(page["sessions"]) <= 3
        seen += [s["identifier"] for s in page["sessions"]]
        pages += 1
        after = page["next"]
        if after is None:
            break
        assert pages < 10, "pagination does not end"
    assert seen == ids
    assert pages == 3
    everything = transferd.get("/v1/sessions").json()
    assert [s["identifier"] for s in everything["sessions"]] == ids and everything["next"] is None


@pytest.mark.parametrize("query", ["limit=0", "limit=-1", "limit=abc", "limit=100000"])
def test_list_sessions_bad_limit_is_400(transferd, query):
    assert_problem(transferd.get(f"/v1/sessions?{query}"), 400, field="limit")


def test_list_sessions_unknown_parameter_is_422(transferd):
    assert_problem(transferd.get("/v1/sessions?colour=red"), 422, "unknown_parameter")


# MARK: task counts


def test_session_counts_tasks_by_state(transferd, origin):
    sid = create_session(transferd)
    for _ in range(2):
        create_task(transferd, sid, download(origin.url("/bytes/10"), start=False))
    run_task(transferd, sid, download(origin.url("/bytes/100")))
    slow = create_task(transferd, sid, download(origin.url("/bytes/1000000?rate=100000")))
    wait_progress(transferd, sid, slow["id"], 1)
    counts = get_session(transferd, sid)["tasks"]
    assert counts["suspended"] == 2, counts
    assert counts["completed"] == 1, counts
    assert counts["running"] == 1, counts
    assert counts["total"] == 4, counts
    transferd.post(f"{session_path(sid)}/tasks/{slow['id']}/cancel")
    counts = wait_for(lambda: (c := get_session(transferd, sid)["tasks"])["completed"] == 2 and c)
    assert counts["running"] == 0 and counts["suspended"] == 2 and counts["total"] == 4


# MARK: invalidation


def settle_invalidation(td, sid: str, timeout: float = 15) -> None:
    """Waits for the session to be invalidated (its journal ends with `session.invalidated`), then
    acknowledges its events, after which it is gone."""
    wait_for(lambda: td.get(session_path(sid)).json().get("state") == "invalidated", timeout=timeout,
             message="the session to be invalidated")
    events = td.get(session_path(sid) + "/events?after=0&limit=1000").json()["events"]
    assert events[-1]["type"] == "session.invalidated", [e["type"] for e in events]
    assert td.post(session_path(sid) + "/events/ack", json={"through": events[-1]["seq"]}).status_code == 200
    wait_for(lambda: td.get(session_path(sid)).status_code == 404, timeout=5,
             message="the session to be gone once its events were acknowledged")


def test_delete_finish_lets_running_tasks_finish_then_frees_identifier(transferd, origin):
    sid = create_session(transferd, mode="background")
    size = 300_000
    slow = create_task(transferd, sid, download(origin.url(f"/bytes/{size}?rate=300000")))
    wait_progress(transferd, sid, slow["id"], 1)
    response = transferd.delete(session_path(sid) + "?mode=finish")
    assert response.status_code == 202, response.text
    assert_problem(post_task(transferd, sid, download(origin.url("/bytes/10"))), 409, "session_invalidated")
    # The running task is not cancelled: it runs to the end, then the session is invalidated, and
    # goes away once its events are acknowledged.
    settle_invalidation(transferd, sid)
    assert origin.bytes_served("/bytes/") == size
    assert len(origin.requests) == 1  # the refused task never reached the origin
    # Its files go with it.
    wait_for(lambda: not (transferd.data_dir / "sessions" / sid).exists(), timeout=5,
             message="the invalidated session's directory to be removed")
    again = put_session(transferd, sid, "default")
    assert again.status_code == 201, again.text
    assert again.json()["tasks"]["total"] == 0
    run = run_task(transferd, sid, download(origin.url("/bytes/10")))
    assert_success(run)


def test_delete_default_mode_is_finish(transferd, origin):
    sid = create_session(transferd)
    slow = create_task(transferd, sid, download(origin.url("/bytes/200000?rate=400000")))
    wait_progress(transferd, sid, slow["id"], 1)
    assert transferd.delete(session_path(sid)).status_code == 202
    settle_invalidation(transferd, sid)
    assert origin.bytes_served("/bytes/") == 200000


def test_delete_cancel_cancels_running_tasks(transferd, origin):
    sid = create_session(transferd, mode="background")
    size = 5_000_000
    slow = create_task(transferd, sid, download(origin.url(f"/bytes/{size}?rate=250000")))
    suspended = create_task(transferd, sid, download(origin.url("/bytes/10"), start=False))
    wait_progress(transferd, sid, slow["id"], 1)
    started = time.monotonic()
    response = transferd.delete(session_path(sid) + "?mode=cancel")
    assert response.status_code == 202, response.text
    assert_problem(post_task(transferd, sid, download(origin.url("/bytes/10"))), 409, "session_invalidated")
    settle_invalidation(transferd, sid, timeout=10)
    assert time.monotonic() - started < 10
    wait_for(lambda: origin.active_connections == 0, timeout=5, message="the origin connection to close")
    assert origin.bytes_served("/bytes/") < size  # the transfer was stopped, not finished
    assert [r.path for r in origin.requests] == [f"/bytes/{size}"]  # the suspended task never ran
    assert put_session(transferd, sid, "background").status_code == 201
    assert transferd.get(f"{session_path(sid)}/tasks/{suspended['id']}").status_code == 404


def test_invalidating_an_idle_session_frees_it_at_once(transferd, origin):
    sid = create_session(transferd)
    run_task(transferd, sid, download(origin.url("/bytes/10")))
    assert transferd.delete(session_path(sid) + "?mode=cancel").status_code == 202
    settle_invalidation(transferd, sid, timeout=5)
    assert put_session(transferd, sid, "ephemeral").status_code == 201


def test_an_invalidated_session_identifier_can_be_used_at_once(transferd, origin):
    """PUT on an invalidated (not yet acknowledged) session replaces it with a new one."""
    sid = create_session(transferd, mode="background")
    run_task(transferd, sid, download(origin.url("/bytes/10")))
    assert transferd.delete(session_path(sid)).status_code == 202
    wait_for(lambda: transferd.get(session_path(sid)).json().get("state") == "invalidated", timeout=5)
    again = put_session(transferd, sid, "default")
    assert again.status_code == 201, again.text
    assert again.json()["tasks"]["total"] == 0 and again.json()["pending_events"] == 0


def test_delete_session_bad_mode_and_unknown_session(transferd):
    sid = create_session(transferd)
    assert_problem(transferd.delete(session_path(sid) + "?mode=later"), 422, field="mode")
    assert get_session(transferd, sid)["identifier"] == sid
    assert_problem(transferd.delete(session_path("never-made")), 404)

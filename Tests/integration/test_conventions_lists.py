"""Every list pages the same way (`limit`, an opaque `after` cursor, `next` null on the last page),
and a problem document names every invalid field and the request it answers."""

from __future__ import annotations

import pytest

from support.api import (assert_problem, assert_success, create_session, create_task, data, download, run_task,
                         session_path, tasks_path, unique, wait_for)
from support.events import create_delegated_session, events_path, wait_delivered
from support.receiver import WebhookReceiver


def walk(td, path: str, member: str, limit: int) -> list[dict]:
    """Every item of a list, read `limit` at a time by following `next` to its end."""
    items, after = [], None
    for _ in range(100):
        params = {"limit": limit, **({"after": after} if after is not None else {})}
        response = td.get(path, params=params)
        assert response.status_code == 200, response.text
        page = response.json()
        assert len(page[member]) <= limit
        items += page[member]
        after = page["next"]
        if after is None:
            return items
        assert isinstance(after, str)
    raise AssertionError("the list never ended")


def test_sessions_tasks_and_cookies_page_to_their_end(transferd, origin):
    sids = sorted(create_session(transferd, unique("page")) for _ in range(5))
    assert [s["identifier"] for s in walk(transferd, "/v1/sessions", "sessions", 2)] == sids
    sid = sids[0]
    ids = [create_task(transferd, sid, download(origin.url("/bytes/10"), start=False))["id"] for _ in range(5)]
    assert [t["id"] for t in walk(transferd, tasks_path(sid), "tasks", 2)] == ids
    names = [f"c{i}" for i in range(5)]
    assert_success(run_task(transferd, sid, data(origin.url("/cookies/set?" + "&".join(f"{n}=v" for n in names)))))
    assert [c["name"] for c in walk(transferd, session_path(sid) + "/cookies", "cookies", 2)] == names


def test_deliveries_page_to_their_end(transferd, origin):
    with WebhookReceiver() as receiver:
        sid = create_delegated_session(transferd, receiver, mode="default")
        run_task(transferd, sid, download(origin.url("/bytes/10")))
        pushed = wait_delivered(receiver, lambda es: es[-1]["type"] == "session.all_tasks_finished")
        # Attempts are recorded just after the receiver answers.
        attempts = wait_for(lambda: len(a := walk(transferd, session_path(sid) + "/deliveries", "deliveries", 2)) == len(pushed) and a,
                            message="every attempt listed")
        assert [a["event"] for a in attempts] == [e["id"] for e in pushed]


def test_the_event_stream_cursor_is_a_string_that_always_continues(transferd, origin):
    sid = create_session(transferd)
    run_task(transferd, sid, download(origin.url("/bytes/10")))
    seen, after = [], "0"
    while True:
        page = transferd.get(events_path(sid), params={"after": after, "limit": 2}).json()
        assert isinstance(page["next"], str)
        if not page["events"]:
            assert page["next"] == after  # nothing more yet: read from the same place later
            break
        seen += page["events"]
        after = page["next"]
    assert [e["seq"] for e in seen] == list(range(1, len(seen) + 1)) and len(seen) > 2


@pytest.mark.parametrize("path", ["/v1/sessions", "{tasks}", "{session}/cookies", "{session}/deliveries", "{session}/events"])
@pytest.mark.parametrize("query,field", [("limit=0", "limit"), ("limit=1001", "limit"), ("after=%25%25", "after")])
def test_every_list_refuses_a_bad_page_with_400(shared_transferd, path, query, field):
    sid = create_session(shared_transferd)
    target = path.format(tasks=tasks_path(sid), session=session_path(sid))
    assert_problem(shared_transferd.get(f"{target}?{query}"), 400, field=field)
    assert shared_transferd.get(f"{target}?limit=1000").status_code == 200


def test_a_problem_lists_every_invalid_field_and_names_the_request(transferd):
    body = {"mode": "sometimes", "configuration": {"timeout_request_s": 0, "max_connections_per_host": "six"}}
    response = transferd.put(session_path(unique()), json=body, headers={"X-Request-Id": "req-conventions-1"})
    problem = assert_problem(response, 422)
    assert [e["field"] for e in problem["errors"]] == ["mode", "configuration.timeout_request_s",
                                                        "configuration.max_connections_per_host"]
    assert all(e["code"] == "validation_failed" and e["detail"] for e in problem["errors"])
    assert (problem["field"], problem["code"]) == ("mode", "validation_failed")  # the first, as before
    assert problem["instance"] == response.headers["X-Request-Id"] == "req-conventions-1"
    unknown = assert_problem(transferd.put(session_path(unique()), json={"colour": 1, "size": 2}), 422, "unknown_field")
    assert [e["field"] for e in unknown["errors"]] == ["colour", "size"]
    # A request id the server made up is the instance too.
    made_up = transferd.get("/v1/sessions/no-such-session")
    assert assert_problem(made_up, 404)["instance"] == made_up.headers["X-Request-Id"]


def test_a_task_creation_problem_lists_every_invalid_field_and_creates_nothing(transferd):
    sid = unique()
    create_session(transferd, sid)
    body = {"kind": "download", "id": "..", "priority": 2,
            "request": {"url": "ftp://example.com/a", "method": "GET /", "headers": {"Host": "x"}, "colour": 1},
            "download": {"max_bytes": 0, "digests": ["sha3"]}, "begin_at": "tomorrow", "start": "yes"}
    problem = assert_problem(transferd.post(tasks_path(sid), json=body), 422)
    assert [e["field"] for e in problem["errors"]] == [
        "id", "request.url", "request.method", "request.headers.Host", "request.colour",
        "download.max_bytes", "download.digests[0]", "priority", "begin_at", "start"]
    assert problem["field"] == "id"  # the first leads, as before
    assert [e["code"] for e in problem["errors"]][1:5] == ["unsupported_url", "validation_failed",
                                                          "validation_failed", "unknown_field"]
    # Rules between members are checked once the members themselves are right.
    both = {"kind": "upload", "request": {"url": "http://127.0.0.1:9/u", "body": {"text": "a"}},
            "upload": {"from_blob": "b_1"}, "checksum": {"sha256": "00"}}
    problem = assert_problem(transferd.post(tasks_path(sid), json=both), 422)
    assert [e["field"] for e in problem["errors"]] == ["upload", "checksum"]
    assert transferd.get(tasks_path(sid)).json()["tasks"] == []

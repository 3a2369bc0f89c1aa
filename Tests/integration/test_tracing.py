"""W3C Trace Context: a valid `traceparent` on the request that creates tasks (`POST …/tasks`,
`…/tasks:batch`) is kept with each task — durably — and sent, as a child (same trace id, a new span
id each time), on the task's origin requests and on the webhooks about it; it is on the task's log
lines. Invalid values are ignored, as the specification says, never refused."""

from __future__ import annotations

import base64
import re
import secrets

import pytest

from support.api import (assert_success, assert_task_error, create_session, create_task, data, download, tasks_path,
                         unique, wait_progress, wait_task)
from support.events import create_delegated_session
from support.origin import Origin
from support.receiver import WebhookReceiver

TRACE_ID = "4bf92f3577b34da6a3ce929d0e0e4736"
PARENT = f"00-{TRACE_ID}-00f067aa0ba902b7-01"
CHILD = re.compile(r"00-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})")


def children_of(values: list[str | None], trace_id: str = TRACE_ID, flags: str = "01") -> list[str]:
    """The span ids of `values`, each checked to be a child of the trace."""
    spans = []
    for value in values:
        match = CHILD.fullmatch(value or "")
        assert match, value
        assert (match[1], match[3]) == (trace_id, flags), value
        assert match[2] != "0" * 16
        spans.append(match[2])
    return spans


def origin_traceparents(origin: Origin, path_prefix: str) -> list[str | None]:
    return [r.headers.get("traceparent") for r in origin.requests if r.path.startswith(path_prefix)]


@pytest.fixture
def receiver():
    with WebhookReceiver(secret="whsec_" + base64.b64encode(secrets.token_bytes(32)).decode()) as server:
        yield server


def test_origin_requests_and_webhooks_carry_the_trace(transferd, origin, receiver):
    sid = create_delegated_session(transferd, receiver, events=["task.completed"])
    path = f"/bytes/3000?seed={unique('t')}"
    task = create_task(transferd, sid, download(origin.url(path)), headers={"traceparent": PARENT})
    assert "traceparent" not in task  # kept with the task, not part of the task object
    assert_success(wait_task(transferd, sid, task["id"]))
    [origin_span] = children_of(origin_traceparents(origin, path.split("?")[0]))
    assert origin_span != PARENT.split("-")[2], "a new span id, not the caller's"
    pushed = receiver.wait_for(lambda ds: [d for d in ds if d.json["type"] == "task.completed"])
    [webhook_span] = children_of([d.headers.get("traceparent") for d in pushed])
    assert webhook_span != origin_span


def test_every_webhook_of_a_traced_task_carries_the_trace_the_first_included(transferd, origin, receiver):
    """`task.created` of a session's first traced task is delivered as soon as it is committed,
    which may be before the task is in memory: it carries the trace too. A race, so tried in
    several fresh sessions (each one's first traced task is the case)."""
    for round in range(40):
        sid = create_delegated_session(transferd, receiver, events=["task.created", "task.completed"])
        task = create_task(transferd, sid, data(origin.url(f"/bytes/10?seed={round}")), headers={"traceparent": PARENT})
        pushed = receiver.wait_for(lambda ds: len(mine := [d for d in ds if d.json["task"] == task["id"]]) == 2 and mine)
        assert sorted(d.json["type"] for d in pushed) == ["task.completed", "task.created"]
        for delivery in pushed:
            assert delivery.headers.get("traceparent"), (round, delivery.json["type"], "without traceparent")
        children_of([d.headers.get("traceparent") for d in pushed])


def test_each_attempt_gets_a_span_of_its_own(transferd, origin):
    sid = create_session(transferd, configuration={"retry": {"max_attempts": 3, "backoff_initial_s": 0, "backoff_max_s": 0,
                                                  "on_http_status": [503]}})
    name = unique("flaky")
    parent = f"00-{TRACE_ID}-1111111111111111-00"
    task = create_task(transferd, sid, data(origin.url(f"/flaky/{name}?fail=2&status=503")), headers={"traceparent": parent})
    assert_success(wait_task(transferd, sid, task["id"]))
    spans = children_of(origin_traceparents(origin, f"/flaky/{name}"), flags="00")
    assert len(spans) == 3 and len(set(spans)) == 3


def test_batch_tasks_share_the_trace(transferd, origin):
    sid = create_session(transferd)
    prefix = f"/bytes/10?seed={unique('b')}"
    response = transferd.post(tasks_path(sid) + ":batch", headers={"traceparent": PARENT},
                              json={"tasks": [data(origin.url(prefix + f"&n={i}")) for i in range(3)]})
    assert response.status_code == 201, response.text
    for task in response.json()["tasks"]:
        assert_success(wait_task(transferd, sid, task["id"]))
    assert len(set(children_of(origin_traceparents(origin, "/bytes/10")))) == 3


@pytest.mark.parametrize("value", [
    f"00-{TRACE_ID.upper()}-00f067aa0ba902b7-01",   # upper case
    f"00-{'0' * 32}-00f067aa0ba902b7-01",           # all-zero trace id
    f"00-{TRACE_ID}-{'0' * 16}-01",                  # all-zero parent id
    f"ff-{TRACE_ID}-00f067aa0ba902b7-01",           # version ff
    f"00-{TRACE_ID}-00f067aa0ba902b7-01-extra",     # version 00 with more
    f"00-{TRACE_ID}-00f067aa0ba902b7",              # too short
    "garbage",
])
def test_invalid_traceparent_is_ignored(transferd, origin, value):
    sid = create_session(transferd)
    path = f"/echo/{unique('i')}"
    task = create_task(transferd, sid, data(origin.url(path)), headers={"traceparent": value})
    assert_success(wait_task(transferd, sid, task["id"]))
    assert origin_traceparents(origin, path) == [None]


def test_a_later_version_is_read_as_version_00(transferd, origin):
    sid = create_session(transferd)
    path = f"/echo/{unique('v')}"
    task = create_task(transferd, sid, data(origin.url(path)),
                       headers={"traceparent": f"cc-{TRACE_ID}-00f067aa0ba902b7-01-future-fields"})
    assert_success(wait_task(transferd, sid, task["id"]))
    children_of(origin_traceparents(origin, path))


def test_the_tasks_trace_replaces_one_among_its_headers(transferd, origin):
    sid = create_session(transferd)
    path = f"/echo/{unique('h')}"
    body = data(origin.url(path))
    body["request"]["headers"] = {"traceparent": f"00-{'1' * 32}-{'2' * 16}-01"}
    task = create_task(transferd, sid, body, headers={"traceparent": PARENT})
    assert_success(wait_task(transferd, sid, task["id"]))
    children_of(origin_traceparents(origin, path))


def test_failure_log_line_carries_the_trace(transferd, origin):
    sid = create_session(transferd, configuration={"retry": {"max_attempts": 1}})
    task = create_task(transferd, sid, download(origin.url("/bytes/1000?reset_after=10")), headers={"traceparent": PARENT})
    assert_task_error(wait_task(transferd, sid, task["id"]), "network_connection_lost")
    line = transferd.wait_for_log(lambda r: r.get("msg") == "task failed" and r.get("task") == task["id"])
    assert line["trace_id"] == TRACE_ID
    assert line["traceparent"] == PARENT
    assert line["session"] == sid


def test_trace_survives_a_restart(transferd, origin):
    """The trace is in the task's stored record: the attempt that continues a background download
    after a restart carries it too."""
    sid = create_session(transferd, mode="background")
    size = 4 << 20
    path = f"/bytes/{size}"
    task = create_task(transferd, sid, download(origin.url(f"{path}?seed=trace&rate=1000000")),
                       headers={"traceparent": PARENT})
    wait_progress(transferd, sid, task["id"], 1 << 20, timeout=20)
    transferd.restart()
    done = assert_success(wait_task(transferd, sid, task["id"], timeout=60))
    assert done["result"]["sha256"] == Origin.expected_sha256(size, "trace")
    requests_seen = [r for r in origin.requests if r.path == path]
    assert len(requests_seen) >= 2
    assert requests_seen[-1].headers.get("Range"), "the continued attempt asks for the rest"
    spans = children_of([r.headers.get("traceparent") for r in requests_seen])
    assert len(set(spans)) == len(spans)

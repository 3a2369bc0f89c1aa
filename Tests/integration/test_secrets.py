"""Secrets never leave through the side door: the values of `Authorization`, `Proxy-Authorization`,
`Cookie` and the headers a session lists in `configuration.sensitive_headers` read `<redacted>`
in task replies, events, webhooks and the session's configuration, while the origin still gets
them. (That no secret reaches a log line or a reply elsewhere is checked for every test by the
harness: `support.secret_watch`.)"""

from __future__ import annotations

import base64
import json
import secrets

import pytest

from support.api import (assert_problem, assert_success, create_task, data, get_session, put_session, task_path,
                         unique, wait_task)
from support.events import all_events, create_delegated_session, of_type, wait_delivered
from support.receiver import WebhookReceiver
from support.secret_watch import WATCH, SecretWatch

REDACTED = "<redacted>"


@pytest.fixture
def receiver():
    with WebhookReceiver(secret="whsec_" + base64.b64encode(secrets.token_bytes(32)).decode()) as server:
        yield server


def test_sensitive_headers_are_redacted_where_shown_and_sent_as_given(transferd, origin, receiver):
    sent = {
        "Authorization": "Bearer " + secrets.token_urlsafe(24),
        "Cookie": "sid=" + secrets.token_urlsafe(24),
        "X-Api-Key": secrets.token_urlsafe(24),
        "X-Plain": "shown as it is",
    }
    session_secret = secrets.token_urlsafe(24)
    sid = create_delegated_session(transferd, receiver, events=["task.created", "task.completed"], configuration={
        "sensitive_headers": ["x-api-key", "X-Session-Secret"],
        "headers": {"X-Session-Secret": session_secret},
    })
    configuration = get_session(transferd, sid)["configuration"]
    assert configuration["sensitive_headers"] == ["x-api-key", "x-session-secret"]
    assert configuration["headers"] == {"X-Session-Secret": REDACTED}

    path = f"/echo/{unique('r')}"
    body = data(origin.url(path))
    body["request"]["headers"] = sent
    shown = {**{name: REDACTED for name in sent}, "X-Plain": "shown as it is"}
    task = create_task(transferd, sid, body)
    assert task["request"]["headers"] == shown
    done = assert_success(wait_task(transferd, sid, task["id"]))
    assert done["request"]["headers"] == shown

    [completed] = of_type(all_events(transferd, sid), "task.completed", task["id"])
    assert completed["data"]["request"]["headers"] == shown
    pushed = wait_delivered(receiver, lambda es: of_type(es, "task.completed", task["id"]))
    assert of_type(pushed, "task.completed", task["id"])[0]["data"]["request"]["headers"] == shown

    [seen] = [r for r in origin.requests if r.path == path]
    for name, value in {**sent, "X-Session-Secret": session_secret}.items():
        assert seen.headers[name] == value, name


@pytest.mark.parametrize("value, field", [
    ("x-api-key", "configuration.sensitive_headers"),
    ([42], "configuration.sensitive_headers[0]"),
    (["x-api-key", "bad name"], "configuration.sensitive_headers[1]"),
    ([""], "configuration.sensitive_headers[0]"),
])
def test_sensitive_headers_are_validated(transferd, value, field):
    response = put_session(transferd, unique("s"), configuration={"sensitive_headers": value})
    assert_problem(response, 422, field=field)


def test_a_redacted_session_header_sent_back_is_refused(transferd):
    """A configuration copied from a reply would otherwise store the marker as the header's value."""
    response = put_session(transferd, unique("s"), configuration={"headers": {"Authorization": REDACTED}})
    assert_problem(response, 422, field="configuration.headers.Authorization")


def test_the_watch_finds_a_secret_in_a_log_line_and_a_reply():
    """The harness itself: a registered secret is found in a log line and in a reply, not in the
    reply that generated a delegate secret, and not where it is only part of `<redacted>`."""

    class Process:
        stderr_lines = ['{"msg":"store error","error":"conflict: Bearer tdt_0123456789abcdef"}']

    class Reply:
        def __init__(self, document):
            self.content = json.dumps(document).encode()
            self.headers = {"Content-Type": "application/json"}
            self.status_code = 200

    watch = SecretWatch()
    watch.add_request({"Authorization": "Bearer tdt_0123456789abcdef"}, None)
    watch.watch(Process())
    watch.check_logs()
    assert len(watch.take_findings()) == 1
    watch.check_reply("PUT", "/v1/sessions/s", Reply({"delegate": {"secret": "whsec_generated0123456789"}}))
    assert watch.take_findings() == []
    watch.check_reply("GET", "/v1/sessions/s", Reply({"delegate": {"secret": "whsec_generated0123456789"}}))
    assert len(watch.take_findings()) == 1
    watch.check_reply("GET", "/v1/sessions/s/tasks/t", Reply({"request": {"headers": {"Authorization": REDACTED}}}))
    assert watch.take_findings() == []
    assert WATCH is not watch

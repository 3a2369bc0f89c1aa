"""Log lines an operator greps for (README "Operating it"): a task that fails logs one warning line
with its session, task, error code and message; a cancelled one does not; a retry logs one line; a
failed webhook attempt, a disabled delegate and a store error log one line each; every change made
through the API logs one audit line with its request id, session, task and principal."""

from __future__ import annotations

import resource

from support.api import action, assert_task_error, create_session, create_task, data, download, run_task, unique, wait_for
from support.events import create_delegated_session
from support.receiver import WebhookReceiver


def test_a_failed_task_logs_one_line(transferd, origin):
    sid = create_session(transferd, configuration={"retry": {"max_attempts": 1}})
    task = run_task(transferd, sid, download("http://127.0.0.1:1/refused"))
    assert_task_error(task, "cannot_connect_to_host")
    line = transferd.wait_for_log(lambda r: r.get("msg") == "task failed" and r.get("task") == task["id"])
    assert line["level"] == "warning"
    assert (line["session"], line["code"]) == (sid, "cannot_connect_to_host")
    assert line["error"] == task["error"]["message"] and str(line["curl_code"]) == str(task["error"]["curl_code"])
    assert len([r for r in transferd.log_records() if r.get("msg") == "task failed" and r.get("task") == task["id"]]) == 1


def test_a_cancelled_task_is_not_logged_as_failed(transferd, origin):
    sid = create_session(transferd)
    task = create_task(transferd, sid, download(origin.url("/bytes/10000000?rate=100000")))
    action(transferd, sid, task["id"], "cancel")
    wait_for(lambda: transferd.get(f"/v1/sessions/{sid}/tasks/{task['id']}").json()["state"] == "completed")
    assert not any(r.get("msg") == "task failed" and r.get("task") == task["id"] for r in transferd.log_records())


def test_a_retry_logs_one_line(start_transferd, origin, api_token):
    td = start_transferd(api_token=api_token)
    sid = create_session(td, configuration={"retry": {"on_http_status": [503], "backoff_initial_s": 0.1}})
    task = run_task(td, sid, download(origin.url("/flaky/logretry?fail=1&status=503")))
    assert task["error"] is None, task
    line = td.wait_for_log(lambda r: r.get("msg") == "retrying" and r.get("task") == task["id"])
    assert line["session"] == sid and line["reason"] == "HTTP 503" and str(line["attempts"]) == "1"


# MARK: audit: every change made through the API logs one line


def audit_line(td, response) -> dict:
    """The one audit line of the request that got `response`."""
    request_id = response.headers["X-Request-Id"]
    td.wait_for_log(lambda r: r.get("msg") == "audit" and r.get("request_id") == request_id)
    lines = [r for r in td.log_records() if r.get("msg") == "audit" and r.get("request_id") == request_id]
    assert len(lines) == 1, lines
    return lines[0]


def test_every_change_logs_an_audit_line_naming_session_task_and_principal(transferd, origin):
    sid = unique("audit")
    put = transferd.put(f"/v1/sessions/{sid}", json={"mode": "default"})
    assert put.status_code == 201
    line = audit_line(transferd, put)
    assert (line["session"], line["principal"], line["method"], str(line["status"])) == (sid, "token-1", "PUT", "201")
    assert "task" not in line

    created = transferd.post(f"/v1/sessions/{sid}/tasks", json=download(origin.url("/bytes/10000000?rate=100000")),
                             headers={"traceparent": "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"})
    assert created.status_code == 201
    tid = created.json()["id"]
    line = audit_line(transferd, created)
    assert (line["session"], line["task"], line["principal"]) == (sid, tid, "token-1")
    assert line["traceparent"] == "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"

    for response in (transferd.post(f"/v1/sessions/{sid}/tasks/{tid}/suspend"),
                     transferd.patch(f"/v1/sessions/{sid}/tasks/{tid}", json={"description": "audited"}),
                     transferd.post(f"/v1/sessions/{sid}/tasks/{tid}/cancel"),
                     transferd.delete(f"/v1/sessions/{sid}/tasks/{tid}")):
        assert response.status_code < 300, response.text
        line = audit_line(transferd, response)
        assert (line["session"], line["task"], line["principal"]) == (sid, tid, "token-1"), line

    batch = transferd.post(f"/v1/sessions/{sid}/tasks:batch", json={"tasks": [data(origin.url("/bytes/1"))]})
    assert batch.status_code == 201
    assert audit_line(transferd, batch)["session"] == sid
    # A refused change is a change asked for: logged with its status.
    refused = transferd.post(f"/v1/sessions/{sid}/tasks", json={"kind": "nonsense"})
    assert refused.status_code == 422
    line = audit_line(transferd, refused)
    assert str(line["status"]) == "422" and line["session"] == sid
    # Reading changes nothing and is not audited.
    read = transferd.get(f"/v1/sessions/{sid}")
    transferd.wait_for_log(lambda r: r.get("msg") == "request" and r.get("request_id") == read.headers["X-Request-Id"])
    assert not [r for r in transferd.log_records() if r.get("msg") == "audit" and r.get("request_id") == read.headers["X-Request-Id"]]


# MARK: webhooks


def test_failed_webhook_and_disabled_delegate_log_a_line_each(start_transferd, api_token, origin):
    td = start_transferd("--webhook-retry-schedule", "0,100ms", api_token=api_token)
    with WebhookReceiver() as receiver:
        receiver.respond_with(500, times=1)
        receiver.respond_with(410, times=1)
        sid = create_delegated_session(td, receiver, events=["task.completed"])
        task = run_task(td, sid, data(origin.url("/bytes/10")))
        failed = td.wait_for_log(lambda r: r.get("msg") == "webhook delivery failed" and r.get("session") == sid)
        assert failed["task"] == task["id"] and str(failed["status"]) == "500"
        disabled = td.wait_for_log(lambda r: r.get("msg") == "delegate disabled" and r.get("session") == sid)
        assert disabled["level"] == "warning"
        assert len([r for r in td.log_records() if r.get("msg") == "delegate disabled" and r.get("session") == sid]) == 1


# MARK: the store


def test_a_store_error_logs_a_line(transferd, origin):
    sid = create_session(transferd, mode="background")
    largest = max(p.stat().st_size for p in transferd.data_dir.rglob("*") if p.is_file())
    # No file of the store may grow: the next commit that needs more room fails.
    limits = resource.prlimit(transferd.pid, resource.RLIMIT_FSIZE)
    resource.prlimit(transferd.pid, resource.RLIMIT_FSIZE, (largest, limits[1]))
    try:
        response = transferd.post(f"/v1/sessions/{sid}/tasks:batch",
                                  json={"tasks": [data(origin.url(f"/bytes/1?n={i}"), start=False,
                                                       description="x" * 200) for i in range(2000)]})
        assert response.status_code >= 500, response.text
        line = transferd.wait_for_log(lambda r: r.get("msg") == "store error" and r.get("session") == sid)
        assert line["level"] == "error" and line["error"]
    finally:
        resource.prlimit(transferd.pid, resource.RLIMIT_FSIZE, limits)

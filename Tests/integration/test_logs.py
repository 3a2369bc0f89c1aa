"""Log lines an operator greps for (README "Operating it"): a task that fails logs one warning line
with its session, task, error code and message; a cancelled one does not; a retry logs one line."""

from __future__ import annotations

from support.api import action, assert_task_error, create_session, create_task, download, run_task, wait_for


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

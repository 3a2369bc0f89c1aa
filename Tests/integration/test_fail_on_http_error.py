"""`configuration.fail_on_http_error`: an origin status ≥ 400 that no retry changes completes the
task with error `http_error` (its `status` in `error.status`), leaves nothing at a download's
destination, and keeps the origin's body readable at `…/body`. Off (the default), an HTTP error is
no task error, as in URLSession."""

from __future__ import annotations

import pytest

from support.api import (assert_problem, assert_success, assert_task_error, create_session, data, download,
                         get_session, put_session, run_task, task_path, unique)
from support.events import all_events, types_of

FAILING = {"fail_on_http_error": True}


def test_default_is_off_and_an_http_error_completes_the_task(transferd, origin):
    sid = create_session(transferd)
    assert get_session(transferd, sid)["configuration"]["fail_on_http_error"] is False
    task = assert_success(run_task(transferd, sid, data(origin.url("/status/404?body=nothing+here"))))
    assert task["response"]["status"] == 404


def test_invalid_value_is_refused(transferd):
    sid = unique("bad")
    assert_problem(put_session(transferd, sid, "default", {"fail_on_http_error": "yes"}), 422,
                   field="configuration.fail_on_http_error")
    assert transferd.get(f"/v1/sessions/{sid}").status_code == 404


@pytest.mark.parametrize("mode", ["background", "default", "ephemeral"])
def test_data_task_fails_and_keeps_its_body(transferd, origin, mode):
    sid = create_session(transferd, mode=mode, configuration=FAILING)
    assert get_session(transferd, sid)["configuration"]["fail_on_http_error"] is True
    task = assert_task_error(run_task(transferd, sid, data(origin.url("/status/503?body=try+later"))), "http_error")
    assert task["error"]["status"] == 503
    assert task["response"]["status"] == 503
    body = transferd.get(task_path(sid, task["id"], "/body"))
    assert body.status_code == 200, body.text
    assert body.content == b"try later"
    # The failure reaches the event log like any other.
    completed = [e for e in all_events(transferd, sid) if e["type"] == "task.completed"]
    assert completed[-1]["data"]["error"]["code"] == "http_error"
    assert completed[-1]["data"]["error"]["status"] == 503


def test_success_is_unchanged(transferd, origin):
    sid = create_session(transferd, configuration=FAILING)
    task = assert_success(run_task(transferd, sid, data(origin.url("/status/200?body=fine"))))
    assert task["response"]["status"] == 200
    assert "status" not in (task["error"] or {})


@pytest.mark.parametrize("mode", ["background", "ephemeral"])
def test_download_leaves_nothing_at_its_destination(start_transferd, api_token, origin, tmp_path, mode):
    root = tmp_path / "root"
    root.mkdir()
    td = start_transferd("--allow-path", str(root), api_token=api_token)
    sid = create_session(td, mode=mode, configuration=FAILING)
    destination = root / "report.csv"
    task = run_task(td, sid, download(origin.url("/status/404?body=no+such+report"),
                                      download={"destination": str(destination)}))
    assert_task_error(task, "http_error")
    assert task["error"]["status"] == 404
    assert task["result"] is None
    assert list(root.iterdir()) == [], "nothing may be left beside the destination either"
    assert "task.finished_downloading" not in types_of(all_events(td, sid), task["id"])
    assert_problem(td.get(task_path(sid, task["id"], "/file")), 409, "file_not_available")
    body = td.get(task_path(sid, task["id"], "/body"))
    assert body.status_code == 200, body.text
    assert body.content == b"no such report"
    # Deleting the task removes the kept body too.
    assert td.delete(task_path(sid, task["id"])).status_code in (200, 202, 204)
    assert not any(p.name == task["id"] for p in td.data_dir.rglob("*"))


def test_retried_statuses_fail_only_once_retries_are_spent(transferd, origin):
    config = {**FAILING, "retry": {"max_attempts": 2, "backoff_initial_s": 0, "backoff_max_s": 0,
                                   "on_http_status": [503]}}
    sid = create_session(transferd, mode="background", configuration=config)
    name = unique("flaky")
    # Fails three times: both attempts see 503, so the task fails with the last status.
    task = run_task(transferd, sid, data(origin.url(f"/flaky/{name}?fail=3&status=503")))
    assert_task_error(task, "http_error")
    assert task["error"]["status"] == 503
    assert task["metrics"]["attempts"] == 2
    assert origin.flaky_hits(name) == 2
    # A status retried and then answered with success is a success.
    name = unique("flaky")
    task = assert_success(run_task(transferd, sid, data(origin.url(f"/flaky/{name}?fail=1&status=503"))))
    assert task["response"]["status"] == 200


def test_restart_keeps_the_error_and_the_body(transferd, origin):
    sid = create_session(transferd, mode="background", configuration=FAILING)
    task = run_task(transferd, sid, download(origin.url("/status/410?body=gone+for+good")))
    assert_task_error(task, "http_error")
    transferd.restart()
    again = transferd.get(task_path(sid, task["id"])).json()
    assert again["error"] == task["error"]
    assert transferd.get(task_path(sid, task["id"], "/body")).content == b"gone for good"
    assert get_session(transferd, sid)["configuration"]["fail_on_http_error"] is True

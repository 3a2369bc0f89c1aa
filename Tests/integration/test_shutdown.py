"""Graceful shutdown (README "Running it"): on SIGTERM `/readyz` answers 503 at once while requests
are still served through `--shutdown-grace`; open long-polls are answered, not cut off; a running
download of a background session is kept and continues with Range after the restart; a second
signal exits at once; `--shutdown-timeout` bounds it all. And `--check-config`, which checks
without starting."""

from __future__ import annotations

import json
import signal
import threading
import time
from datetime import datetime

import pytest

from support.api import assert_success, create_session, create_task, download, wait_for, wait_progress, wait_task
from support.events import all_events
from support.origin import Origin
from support.transferd import run_transferd

MiB = 1 << 20


def rfc3339(text: str) -> float:
    return datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()


def test_readiness_turns_503_at_once_while_requests_are_served_through_the_grace(start_transferd, api_token):
    td = start_transferd("--shutdown-grace", "2s", api_token=api_token)
    sid = create_session(td)
    started = time.monotonic()
    td.process.send_signal(signal.SIGTERM)
    deadline = time.monotonic() + 1
    while td.get("/readyz", token=None).status_code != 503:
        assert time.monotonic() < deadline, "readiness still 200 a second after SIGTERM"
        time.sleep(0.02)
    # Still served, new connections included, for the grace.
    assert td.get(f"/v1/sessions/{sid}").status_code == 200
    assert td.get("/healthz", token=None).status_code == 200
    assert td.wait(timeout=10) == 0
    assert time.monotonic() - started >= 2, "the grace was kept"


def test_an_open_long_poll_is_answered_at_shutdown(transferd, origin):
    sid = create_session(transferd)
    task = create_task(transferd, sid, download(origin.url(f"/bytes/{4 * MiB}?rate=100000")))
    answers: dict[str, object] = {}

    def poll(name: str, path: str) -> None:
        response = transferd.get(path, timeout=30)
        answers[name] = (response.status_code, response.json())
        answers[name + ".connection"] = response.headers.get("Connection", "").lower()

    pollers = [threading.Thread(target=poll, args=("task", f"/v1/sessions/{sid}/tasks/{task['id']}?wait=60")),
               threading.Thread(target=poll, args=("events", f"/v1/sessions/{sid}/events?after=1000000&wait=60"))]
    for p in pollers:
        p.start()
    time.sleep(0.5)
    started = time.monotonic()
    transferd.process.send_signal(signal.SIGTERM)
    for p in pollers:
        p.join(timeout=15)
    assert time.monotonic() - started < 10, "answered at shutdown, not after the 60 s wait"
    status, body = answers["task"]
    assert status == 200 and body["id"] == task["id"] and body["state"] != "completed", body
    status, body = answers["events"]
    assert status == 200 and body["events"] == [], body
    # Answered, then closed: the process is going away.
    assert answers["task.connection"] == answers["events.connection"] == "close"
    assert transferd.wait(timeout=10) == 0


def test_a_download_running_at_sigterm_continues_after_the_restart(transferd, origin):
    sid = create_session(transferd, mode="background")
    task = create_task(transferd, sid, download(origin.url(f"/bytes/{3 * MiB}?seed=sd&rate={MiB}")))
    wait_progress(transferd, sid, task["id"], 1 * MiB)
    assert transferd.stop(timeout=10) == 0
    # Checkpointed at shutdown: still running, its partial file kept under its temporary name.
    partials = [p for p in (transferd.data_dir / "sessions" / sid).rglob("*.part")]
    assert len(partials) == 1 and partials[0].stat().st_size >= 1 * MiB, partials
    transferd.restart()
    done = assert_success(wait_task(transferd, sid, task["id"]))
    assert done["result"]["size"] == 3 * MiB
    assert done["result"]["sha256"] == Origin.expected_sha256(3 * MiB, "sd")
    last = origin.requests[-1]
    assert "range" in last.headers, "continued with Range"
    assert int(last.headers["range"].removeprefix("bytes=").split("-")[0]) >= 1 * MiB
    assert last.headers["if-range"] in Origin.validators(3 * MiB, "sd")


def test_a_default_sessions_running_task_is_interrupted_at_shutdown(transferd, origin):
    """A default session's running task completes `interrupted`, with resume data, during the
    shutdown itself — not at the next start: the first process logs it and stores it, with its
    `task.completed` event, before it exits."""
    sid = create_session(transferd, mode="default")
    size = 4 * MiB
    task = create_task(transferd, sid, download(origin.url(f"/bytes/{size}?seed=dflt&rate={MiB}")))
    wait_progress(transferd, sid, task["id"], 1 * MiB)
    assert transferd.stop(timeout=10) == 0
    first_run = transferd.log_records()
    messages = [r.get("msg") for r in first_run]
    failed = [r for r in first_run if r.get("msg") == "task failed" and r.get("task") == task["id"]]
    assert len(failed) == 1 and failed[0]["code"] == "interrupted", failed
    assert messages.index("task failed") < messages.index("stopped"), "interrupted before the process stopped"

    restarted_at = time.time()
    transferd.restart()
    done = transferd.get(f"/v1/sessions/{sid}/tasks/{task['id']}").json()
    assert done["state"] == "completed" and done["error"]["code"] == "interrupted", done
    assert done["error"]["message"] == "transferd shut down while the task was running"
    assert done["error"]["resume_data"], "resumable: the partial file is offered as resume data"
    assert rfc3339(done["completed_at"]) < restarted_at, "stored at shutdown, not at the start after it"
    completed = [e for e in all_events(transferd, sid) if e["type"] == "task.completed"]
    assert len(completed) == 1 and rfc3339(completed[0]["at"]) < restarted_at

    # The resume data continues the download with Range, to the right bytes.
    resumed = assert_success(wait_task(transferd, sid, create_task(
        transferd, sid, {"kind": "download", "resume_data": done["error"]["resume_data"]})["id"]))
    assert resumed["result"]["sha256"] == Origin.expected_sha256(size, "dflt")
    assert "range" in origin.requests[-1].headers


def test_a_default_sessions_tasks_at_rest_are_interrupted_at_shutdown(transferd, origin):
    """Suspended tasks and tasks waiting to retry do not outlive the process either: the shutdown
    completes them `interrupted` too, a suspended download with resume data for its partial file."""
    sid = create_session(transferd, mode="default", configuration={
        "retry": {"on_http_status": [503], "backoff_initial_s": 600, "backoff_max_s": 600}})
    retrying = create_task(transferd, sid, {"kind": "data", "request": {"url": origin.url(f"/flaky/{sid}?fail=5&status=503")}})
    suspended = create_task(transferd, sid, {"kind": "data", "request": {"url": origin.url("/bytes/10")}, "start": False})
    partial = create_task(transferd, sid, download(origin.url(f"/bytes/{4 * MiB}?seed=rest&rate={MiB}")))
    wait_progress(transferd, sid, partial["id"], 1 * MiB)
    assert transferd.post(f"/v1/sessions/{sid}/tasks/{partial['id']}/suspend").status_code == 200
    wait_for(lambda: transferd.get(f"/v1/sessions/{sid}/tasks/{retrying['id']}").json()["phase"] == "retrying")
    wait_for(lambda: transferd.get(f"/v1/sessions/{sid}/tasks/{partial['id']}").json()["state"] == "suspended")
    assert transferd.stop(timeout=10) == 0
    messages = [r.get("msg") for r in transferd.log_records()]
    ids = {retrying["id"], suspended["id"], partial["id"]}
    failed = {r["task"]: r for r in transferd.log_records() if r.get("msg") == "task failed" and r.get("task") in ids}
    assert set(failed) == ids and all(r["code"] == "interrupted" for r in failed.values()), failed
    assert max(i for i, m in enumerate(messages) if m == "task failed") < messages.index("stopped")

    restarted_at = time.time()
    transferd.restart()
    for tid in ids:
        task = transferd.get(f"/v1/sessions/{sid}/tasks/{tid}").json()
        assert task["state"] == "completed" and task["error"]["code"] == "interrupted", task
        assert rfc3339(task["completed_at"]) < restarted_at
    assert transferd.get(f"/v1/sessions/{sid}/tasks/{partial['id']}").json()["error"]["resume_data"]
    assert transferd.get(f"/v1/sessions/{sid}/tasks/{suspended['id']}").json()["error"]["resume_data"] is None


def test_a_second_signal_exits_at_once(start_transferd, api_token):
    td = start_transferd("--shutdown-grace", "30s", "--shutdown-timeout", "40s", api_token=api_token)
    td.process.send_signal(signal.SIGTERM)
    td.wait_for_log(lambda r: "grace" in r.get("msg", ""))
    started = time.monotonic()
    td.process.send_signal(signal.SIGTERM)
    assert td.wait(timeout=5) == 1
    assert time.monotonic() - started < 3
    assert any(r.get("msg") == "second signal: exiting at once" for r in td.log_records())


@pytest.mark.parametrize("flags, message", [
    (["--shutdown-grace", "30s", "--shutdown-timeout", "20s"], "--shutdown-grace"),
    (["--shutdown-grace", "soon"], "--shutdown-grace"),
    (["--shutdown-timeout", "0"], "--shutdown-timeout"),
])
def test_bad_shutdown_settings_stop_the_start(flags, message):
    result = run_transferd(flags)
    assert result.returncode == 2, result
    assert message in result.stderr, result.stderr


# MARK: --check-config


def test_check_config_accepts_a_good_configuration_without_starting(tmp_path):
    auth = tmp_path / "auth.json"
    auth.write_text(json.dumps({"principals": [{"name": "ops", "token_sha256": "0" * 64, "role": "admin"}]}))
    result = run_transferd(["--check-config", "--auth-file", str(auth), "--allow-path", str(tmp_path),
                            "--data-dir", str(tmp_path / "not-yet" / "data")], default_data_dir=False)
    assert result.returncode == 0, result
    assert "configuration OK" in result.stdout, result
    assert not (tmp_path / "not-yet").exists(), "checking creates nothing"


@pytest.mark.parametrize("case", ["auth file", "allow path", "data dir is a file", "flag"])
def test_check_config_refuses_what_starting_would_refuse(tmp_path, case):
    args = ["--check-config", "--data-dir", str(tmp_path / "data")]
    if case == "auth file":
        (tmp_path / "auth.json").write_text('{"principals": [{"name": "x"}]}')
        args += ["--auth-file", str(tmp_path / "auth.json")]
    elif case == "allow path":
        args += ["--allow-path", str(tmp_path / "missing")]
    elif case == "data dir is a file":
        (tmp_path / "data").write_text("not a directory")
    else:
        args += ["--max-connections", "many"]
    result = run_transferd(args, default_data_dir=False)
    assert result.returncode == 2, result
    assert result.stderr.strip(), result
    assert "configuration OK" not in result.stdout

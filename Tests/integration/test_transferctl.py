"""transferctl, the operator's command line, against a real transferd and origin: results in pipes
(paths, aligned tables, JSON lines), the exit codes, live progress in a pseudo-terminal (redrawn in
place, the cursor hidden and restored; nothing but plain lines with NO_COLOR or TERM=dumb), Ctrl-C
leaving the task running, a restart of transferd while it waits, `top`, and the completion scripts."""

from __future__ import annotations

import json
import os
import re
import subprocess
from pathlib import Path

import pytest

from support.origin import Origin
from support.transferctl import PtyCtl, ctl_binary, run_ctl
from support.transferd import REPO_ROOT, free_port

KiB = 1 << 10
HIDE, SHOW, UP = b"\x1b[?25l", b"\x1b[?25h", b"\x1b[1A"


@pytest.fixture(scope="module", autouse=True)
def binary():
    if not ctl_binary().exists():
        pytest.fail(f"no transferctl at {ctl_binary()}: run `make build` (or set TRANSFERCTL_BINARY)", pytrace=False)


@pytest.fixture
def td(start_transferd, api_token, tmp_path):
    """A transferd that may write beneath the test's directory."""
    return start_transferd("--allow-path", str(tmp_path), api_token=api_token)


def json_lines(text: str) -> list[dict]:
    return [json.loads(line) for line in text.splitlines()]


# MARK: results in pipes


def test_download_names_the_file_as_curl_does_and_prints_its_path(td, origin, tmp_path):
    url = origin.url("/bytes/20000?seed=ctl")
    relative = run_ctl(td, "download", url, "-o", "sub/../out.bin", "--wait", cwd=tmp_path)
    assert relative.returncode == 0, relative.stderr
    assert relative.stdout.strip() == str(tmp_path / "out.bin")
    assert (tmp_path / "out.bin").read_bytes() == Origin.expected_bytes(20000, "ctl")
    from_url = run_ctl(td, "download", url, "--wait", cwd=tmp_path)
    assert from_url.returncode == 0, from_url.stderr
    assert (tmp_path / "20000").read_bytes() == Origin.expected_bytes(20000, "ctl")
    # Waiting in a pipe: progress is plain lines on stderr, never a control sequence.
    assert "\x1b" not in from_url.stderr and "100%" in from_url.stderr


def test_json_output_is_one_api_object_a_line(td, origin, tmp_path):
    done = run_ctl(td, "download", origin.url("/bytes/1000"), "-o", "a.bin", "--wait", "--json", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    (task,) = json_lines(done.stdout)
    assert task["state"] == "completed" and task["result"]["size"] == 1000
    assert task["session"].startswith("transferctl.")
    created = run_ctl(td, "download", origin.url("/bytes/10"), "-o", "b.bin", "--no-wait", "--format", "json", cwd=tmp_path)
    assert json_lines(created.stdout)[0]["kind"] == "download"
    listed = json_lines(run_ctl(td, "tasks", "ls", "--json").stdout)
    assert {t["id"] for t in listed} == {task["id"], json_lines(created.stdout)[0]["id"]}
    sessions = json_lines(run_ctl(td, "sessions", "ls", "--json").stdout)
    assert [s["identifier"] for s in sessions] == [task["session"]]


def test_json_lines_are_the_apis_objects_nulls_and_member_order_included(td, origin, tmp_path):
    done = run_ctl(td, "download", origin.url("/bytes/100"), "-o", "c.bin", "--wait", "--json", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    (waited,) = json_lines(done.stdout)
    session, task = waited["session"], waited["id"]
    # The task has completed, so nothing changes between transferctl's read and the test's.
    api_task = td.get(f"/v1/sessions/{session}/tasks/{task}").json()
    assert "error" in api_task and api_task["error"] is None
    for ctl, api in [
        ([waited], [api_task]),
        (json_lines(run_ctl(td, "tasks", "get", task, "--json").stdout), [api_task]),
        (json_lines(run_ctl(td, "tasks", "ls", "--json").stdout), td.get(f"/v1/sessions/{session}/tasks").json()["tasks"]),
        (json_lines(run_ctl(td, "sessions", "get", session, "--json").stdout), [td.get(f"/v1/sessions/{session}").json()]),
    ]:
        assert ctl == api
        assert [list(o) for o in ctl] == [list(o) for o in api]  # members in the order the API sent them


def test_tables_are_aligned(td, origin, tmp_path):
    for name in ("a", "bb"):
        assert run_ctl(td, "download", origin.url("/bytes/100"), "-o", name, "--wait", cwd=tmp_path).returncode == 0
    lines = run_ctl(td, "tasks", "ls").stdout.splitlines()
    assert lines[0].split() == ["TASK", "KIND", "STATE", "PROGRESS", "RESULT", "URL"]
    assert len(lines) == 3
    url_column = {line.index("http://") for line in lines[1:]}
    assert len(url_column) == 1 and lines[0].index("URL") in url_column
    assert "\x1b" not in "".join(lines)


def test_sessions_tasks_blobs_events_and_service_commands(td, origin, tmp_path):
    created = run_ctl(td, "sessions", "create", "com.example.ctl", "--mode", "default")
    assert created.returncode == 0 and "com.example.ctl" in created.stdout and "default" in created.stdout
    env = {"TRANSFERD_SESSION": "com.example.ctl"}
    slow = origin.url("/bytes/400000?rate=20000")
    task = run_ctl(td, "download", slow, "-o", "slow.bin", "--no-wait", env=env, cwd=tmp_path).stdout.strip()
    assert json_lines(run_ctl(td, "tasks", "suspend", task, "--json", env=env).stdout)[0]["state"] == "suspended"
    assert json_lines(run_ctl(td, "tasks", "resume", task, "--json", env=env).stdout)[0]["state"] == "running"
    cancelled = json_lines(run_ctl(td, "tasks", "cancel", task, "--json", env=env).stdout)[0]
    assert cancelled["error"]["code"] == "cancelled"
    assert run_ctl(td, "tasks", "get", task, env=env).stdout.split("\n")[1].split() == ["KIND", "download"]
    events = json_lines(run_ctl(td, "events", "--after", "0", "--json", env=env).stdout)
    assert [e["seq"] for e in events] == list(range(1, len(events) + 1))
    assert events[0]["type"] == "task.created" and "task.completed" in [e["type"] for e in events]
    assert run_ctl(td, "tasks", "rm", task, env=env).stdout.strip() == task
    assert run_ctl(td, "tasks", "ls", "--json", env=env).stdout == ""

    (tmp_path / "blob.txt").write_bytes(b"hello blob")
    blob = json_lines(run_ctl(td, "blobs", "put", str(tmp_path / "blob.txt"), "--json").stdout)[0]
    assert blob["size"] == 10
    assert json_lines(run_ctl(td, "blobs", "get", blob["id"], "--json").stdout)[0]["sha256"] == blob["sha256"]
    assert run_ctl(td, "blobs", "rm", blob["id"]).returncode == 0
    assert run_ctl(td, "blobs", "get", blob["id"]).returncode == 1

    assert json_lines(run_ctl(td, "whoami", "--json").stdout)[0]["role"] == "admin"
    assert "sessions" in json_lines(run_ctl(td, "stats", "--json").stdout)[0]
    assert run_ctl(td, "deliveries", env=env).stdout.split() == ["EVENT", "SEQ", "ATTEMPT", "AT", "STATUS", "ERROR"]
    assert run_ctl(td, "redeliver", events[0]["id"], env=env).returncode == 1  # no delegate: 409
    invalidated = json_lines(run_ctl(td, "sessions", "invalidate", "com.example.ctl", "--json").stdout)[0]
    assert invalidated["state"] in ("invalidating", "invalidated")


def test_upload_sends_a_local_file(td, origin, tmp_path):
    body = os.urandom(50 * KiB)
    (tmp_path / "up.bin").write_bytes(body)
    done = run_ctl(td, "upload", str(tmp_path / "up.bin"), origin.url("/upload/x"), "--method", "POST", "--wait", "--json")
    assert done.returncode == 0, done.stderr
    assert json_lines(done.stdout)[0]["response"]["status"] == 201
    (record,) = origin.uploads
    assert record.method == "POST" and record.length == len(body)


def test_events_follow_tails_the_stream(td, origin, tmp_path):
    follow = subprocess.Popen([str(ctl_binary()), "events", "--follow", "--json"], stdout=subprocess.PIPE, text=True,
                              env={**os.environ, "TRANSFERD_URL": f"http://127.0.0.1:{td.port}", "TRANSFERD_TOKEN": td.token})
    try:
        assert run_ctl(td, "download", origin.url("/bytes/10"), "-o", "f.bin", "--wait", cwd=tmp_path).returncode == 0
        types = []
        while "task.completed" not in types:
            types.append(json.loads(follow.stdout.readline())["type"])
        assert types[0] == "task.created"
    finally:
        follow.kill()
        follow.wait()


# MARK: exit codes


def test_exit_codes(td, origin, tmp_path):
    assert run_ctl(td, "download").returncode == 2  # missing URL
    assert run_ctl(td, "tasks", "ls", "--bogus").returncode == 2
    assert run_ctl(td, "download", "http://127.0.0.1/", "--wait", cwd=tmp_path).returncode == 2  # no file name
    assert run_ctl(td, "upload", str(tmp_path / "missing"), origin.url("/upload")).returncode == 2
    unreachable = run_ctl(None, "stats", env={"TRANSFERD_URL": f"http://127.0.0.1:{free_port()}"})
    assert unreachable.returncode == 3 and "unreachable" in unreachable.stderr
    unauthorised = run_ctl(td, "stats", "--token", "wrong")
    assert unauthorised.returncode == 4 and "401" in unauthorised.stderr
    outside = run_ctl(td, "download", origin.url("/bytes/1"), "-o", "/etc/x", "--wait")
    assert outside.returncode == 4 and "path_not_allowed" in outside.stderr
    http_error = run_ctl(td, "download", origin.url("/status/404"), "-o", "e.bin", "--wait", cwd=tmp_path)
    assert http_error.returncode == 1 and "404" in http_error.stderr
    refused = run_ctl(td, "download", origin.url("/redirect-to?url=file:///etc/passwd"), "-o", "r.bin", "--wait", cwd=tmp_path)
    assert refused.returncode == 1 and "unsupported_url" in refused.stderr


# MARK: a terminal


def test_progress_is_redrawn_in_place_with_the_cursor_hidden(td, origin, tmp_path):
    run = PtyCtl(td, "download", origin.url("/bytes/300000?rate=100000"), "-o", "p.bin", cwd=tmp_path, columns=90)
    code = run.wait()
    assert code == 0, run.output
    out = run.output
    assert out.startswith(HIDE) and out.rstrip().endswith(str(tmp_path / "p.bin").encode())
    assert out.count(UP) >= 2  # redrawn, not scrolled
    assert SHOW in out[out.rindex(UP):]
    assert b"100%" in out and b"/s" in out and b"\x1b[32mdone" in out
    assert max(visible_widths(out)) < 90


def visible_widths(drawn: bytes) -> list[int]:
    """The width of each line drawn, control sequences left out."""
    text = re.sub(rb"\x1b\[[0-9;?]*[A-Za-z]", b"", drawn)
    return [len(line.decode()) for line in text.replace(b"\r", b"\n").split(b"\n")]


def test_several_tasks_are_drawn_one_line_each(td, origin, tmp_path):
    ids = [run_ctl(td, "download", origin.url(f"/bytes/{n}?rate=100000"), "-o", f"m{n}.bin", "--no-wait", cwd=tmp_path).stdout.strip()
           for n in (300000, 200000)]
    run = PtyCtl(td, "wait", *ids)
    assert run.wait() == 0
    assert b"\x1b[2A" in run.output  # the block of two lines is redrawn from its top
    last = run.output[run.output.rindex(b"\x1b[2A"):run.output.rindex(SHOW)]
    assert re.findall(rb"m(\d+)\.bin", last) == [b"300000", b"200000"] and last.count(b"done") == 2
    assert run.output[run.output.rindex(SHOW) + len(SHOW):].decode().split() == [ids[0], "done", ids[1], "done"]


def test_progress_follows_the_terminal_width(td, origin, tmp_path):
    run = PtyCtl(td, "download", origin.url("/bytes/400000?rate=80000"), "-o", "w.bin", cwd=tmp_path, columns=120)
    wide = run.read_until(b"/s")
    assert max(visible_widths(wide)) > 80
    run.resize(60)
    assert run.wait() == 0
    drawn = run.output[:run.output.rindex(SHOW)]
    last = drawn[drawn.rindex(UP):]
    assert b"done" in last and 30 < max(visible_widths(last)) < 60


@pytest.mark.parametrize("env", [{"NO_COLOR": "1"}, {"TERM": "dumb"}])
def test_no_colour_no_bars_no_cursor_movement_when_asked(td, origin, tmp_path, env):
    run = PtyCtl(td, "download", origin.url("/bytes/200000?rate=100000"), "-o", "n.bin", env=env, cwd=tmp_path)
    assert run.wait() == 0
    assert b"\x1b" not in run.output and b"100%" in run.output and b"#" not in run.output


def test_ctrl_c_leaves_the_task_running_and_says_how_to_reattach(td, origin, tmp_path):
    run = PtyCtl(td, "download", origin.url("/bytes/300000?rate=60000"), "-o", "c.bin", cwd=tmp_path)
    run.read_until(b"/s")
    run.send(b"\x03")
    assert run.wait() == 130
    assert run.output.rstrip().endswith(b"")
    message = run.output[run.output.rindex(SHOW):].decode()
    assert "transferctl wait" in message
    task = message.split("transferctl wait")[1].split()[0]
    (listed,) = json_lines(run_ctl(td, "tasks", "ls", "--json").stdout)
    assert listed["id"] == task and listed["state"] == "running"
    again = run_ctl(td, "wait", task)
    assert again.returncode == 0 and again.stdout.strip() == f"{task} done"


def test_the_cursor_comes_back_when_waiting_fails(td):
    run = PtyCtl(td, "wait", "no-such-task")
    assert run.wait() == 1
    assert HIDE in run.output and SHOW in run.output[run.output.index(HIDE):]
    assert b"404" in run.output


def test_waiting_survives_a_restart_of_transferd(td, origin, tmp_path):
    run = PtyCtl(td, "download", origin.url("/bytes/400000?rate=80000"), "-o", "r.bin", cwd=tmp_path)
    run.read_until(b"/s")
    td.restart()
    assert run.wait() == 0, run.output
    assert (tmp_path / "r.bin").stat().st_size == 400000


def test_top_shows_running_tasks_and_quits_on_q(td, origin, tmp_path):
    slow = run_ctl(td, "download", origin.url("/bytes/900000?rate=30000"), "-o", "t.bin", "--no-wait", cwd=tmp_path)
    top = PtyCtl(td, "top", "--interval", "0.3", columns=120)
    screen = top.read_until(b"t.bin")
    assert b"SESSION" in screen and slow.stdout.strip().encode() in screen and b"/bytes/900000" in screen
    before = top.settings()
    top.send(b"q")
    assert top.wait() == 0
    assert top.output.endswith(SHOW + b"\x1b[?1049l")
    assert before[3] & termios_lflags() == 0  # raw while running (no echo, no line editing)


def test_top_quits_on_ctrl_c_with_the_terminal_restored(td):
    top = PtyCtl(td, "top")
    top.read_until(b"q to quit")
    top.send(b"\x03")
    assert top.wait() == 130
    assert top.output.endswith(SHOW + b"\x1b[?1049l")


def termios_lflags() -> int:
    import termios
    return termios.ICANON | termios.ECHO


def test_top_in_a_pipe_prints_the_table_once(td):
    out = run_ctl(td, "top")
    assert out.returncode == 0 and out.stdout.split() == ["SESSION", "TASK", "PROGRESS", "RATE", "URL"]


# MARK: help and completions


def test_help_has_examples_for_every_command():
    commands = ["download", "upload", "wait", "sessions", "tasks", "blobs", "sessions ls", "sessions get", "sessions create", "sessions invalidate",
                "tasks ls", "tasks get", "tasks suspend", "tasks resume", "tasks cancel", "tasks rm", "events",
                "deliveries", "redeliver", "blobs put", "blobs get", "blobs rm", "stats", "whoami", "top"]
    for command in commands:
        text = run_ctl(None, *command.split(), "--help").stdout
        assert "Examples:" in text and f"transferctl {command.split()[0]}" in text, command


@pytest.mark.parametrize("shell", ["bash", "zsh", "fish"])
def test_completion_scripts(shell, tmp_path):
    script = run_ctl(None, "--generate-completion-script", shell)
    assert script.returncode == 0 and "download" in script.stdout
    if shell == "bash":
        (tmp_path / "transferctl.bash").write_text(script.stdout)
        assert subprocess.run(["bash", "-n", str(tmp_path / "transferctl.bash")]).returncode == 0


def test_make_man_writes_the_manual_from_the_commands(tmp_path):
    made = subprocess.run(["make", "man"], cwd=REPO_ROOT, capture_output=True, text=True, timeout=900)
    assert made.returncode == 0, made.stderr
    page = (REPO_ROOT / "man" / "transferctl.1").read_text()
    assert ".Dt TRANSFERCTL 1" in page and "transferctl download" in page and "TRANSFERD_TOKEN" in page

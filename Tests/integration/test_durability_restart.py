"""What a restart does, by session mode (the table in README "Durability"), beyond the basics of
test_tasks_durability.py: a background download continues from its offset (after SIGTERM and after
kill -9), a task waiting to retry keeps its `next_attempt_at`, a default session's running download
completes `interrupted` with resume data and its events, ephemeral leftovers beside destinations
and files that belong to nothing are swept, and the retention period sweeps completed tasks, their
bodies and files, and old events."""

from __future__ import annotations

import json
import signal
import sqlite3
import time
from pathlib import Path

import pytest

from support.api import (action, assert_success, assert_task_error, create_batch, create_session, create_task, data, download,
                         fetch_sha256, get_task, run_task, task_path, wait_for, wait_progress, wait_task)
from support.events import all_events, of_type, wait_events
from support.origin import Origin

MiB = 1 << 20


def restart_mid_download(td, origin, mode: str, seed: str, how: str) -> tuple[str, dict]:
    """A slow 4 MiB download in a new session of `mode`, stopped (SIGTERM or SIGKILL) once 512 KiB
    arrived and its response head (with the validator a resume needs) is stored — the journal
    shows `task.response_received` once it is committed — and transferd started again. Returns the
    session and the task."""
    sid = create_session(td, mode=mode)
    task = create_task(td, sid, download(origin.url(f"/bytes/{4 * MiB}?seed={seed}&rate={2 * MiB}")))
    wait_progress(td, sid, task["id"], 512 * 1024)
    wait_events(td, sid, lambda events: of_type(events, "task.response_received", task["id"]))
    td.kill9() if how == "kill9" else td.stop(signal=signal.SIGTERM)
    td.restart()
    return sid, task


@pytest.mark.parametrize("how", ["sigterm", "kill9"])
def test_background_download_continues_from_its_offset(transferd, origin, how):
    sid, task = restart_mid_download(transferd, origin, "background", "off", how)
    size = 4 * MiB
    done = assert_success(wait_task(transferd, sid, task["id"]))
    assert done["result"]["sha256"] == Origin.expected_sha256(size, "off")
    first, second = origin.requests
    offset = size - second.bytes_sent
    assert second.headers["Range"] == f"bytes={offset}-" and second.status == 206
    assert offset >= 512 * 1024, "the partial file was not continued"
    assert second.headers["If-Range"] == Origin.validators(size, "off")[0]
    resumed = of_type(all_events(transferd, sid), "task.resumed_at_offset", task["id"])
    assert [e["data"]["offset"] for e in resumed] == [offset]


def test_a_clean_stop_records_what_each_running_download_wrote(transferd, origin):
    """SIGTERM stops transfers and stores each one's progress and validator before exiting — also
    of a download whose hasher still trails its writes (its outcome waits for it)."""
    sid = create_session(transferd, mode="background")
    # Fast enough that hashing trails the writes (the outcome of a stop then waits for it).
    size = 1 << 30
    tasks = [create_task(transferd, sid, download(origin.url(f"/bytes/{size}?seed=c{i}&rate={256 * MiB}")))
             for i in range(3)]
    for task in tasks:
        wait_progress(transferd, sid, task["id"], 32 * MiB, timeout=30)
    assert transferd.stop() == 0
    with sqlite3.connect(f"file:{transferd.data_dir / 'transferd.sqlite'}?mode=ro", uri=True) as db:
        stored = {row[0]: (row[1], json.loads(row[2])) for row in db.execute("SELECT id, state, doc FROM tasks")}
    for task in tasks:
        state, doc = stored[task["id"]]
        partial = transferd.data_dir / "sessions" / sid / "files" / f".{task['id']}.part"
        # The document leaves out its defaults: the phase "waiting", a validator that is the ETag.
        assert (state, doc.get("phase", "waiting")) == ("running", "waiting"), doc
        assert doc["progress"]["bytes_received"] == partial.stat().st_size > 0
        etag = next((v for k, v in doc["response"]["headers"].items() if k.lower() == "etag"), None)
        validator = doc.get("_internal", {}).get("validator", etag)
        assert validator == Origin.validators(size, task["request"]["url"].split("seed=")[1][:2])[0]


def test_task_waiting_to_retry_keeps_its_next_attempt_after_restart(transferd, origin):
    sid = create_session(transferd, mode="background",
                         configuration={"retry": {"on_http_status": [503], "backoff_initial_s": 0.2}})
    task = create_task(transferd, sid, download(origin.url("/flaky/later?fail=1&status=503&retry_after=10")))
    waiting = wait_for(lambda: (t := get_task(transferd, sid, task["id"]))["phase"] == "retrying" and t,
                       timeout=20, message="phase retrying")
    transferd.restart()
    again = get_task(transferd, sid, task["id"])
    assert (again["phase"], again["next_attempt_at"]) == ("retrying", waiting["next_attempt_at"])
    assert origin.flaky_hits("later") == 1
    done = assert_success(wait_task(transferd, sid, task["id"]))
    assert done["metrics"]["attempts"] == 2 and origin.flaky_hits("later") == 2


@pytest.mark.parametrize("how", ["sigterm", "kill9"])
def test_default_running_download_is_interrupted_with_resume_data(transferd, origin, how):
    sid, task = restart_mid_download(transferd, origin, "default", "int", how)
    done = assert_task_error(wait_task(transferd, sid, task["id"]), "interrupted")
    token = done["error"]["resume_data"]
    assert token, done["error"]
    events = all_events(transferd, sid)
    completed = of_type(events, "task.completed", task["id"])
    assert len(completed) == 1 and completed[0]["data"]["error"]["code"] == "interrupted"
    assert completed[0]["data"]["error"]["resume_data"] == token
    assert events[-1]["type"] == "session.all_tasks_finished"
    assert [e["seq"] for e in events] == list(range(1, len(events) + 1))
    assert len(origin.requests) == 1, "a default task must not run again after a restart"

    resumed = run_task(transferd, sid, {"kind": "download", "resume_data": token})
    assert assert_success(resumed)["result"]["sha256"] == Origin.expected_sha256(4 * MiB, "int")
    assert origin.requests[-1].status == 206


@pytest.mark.parametrize("mode", ["background", "default"])
def test_far_future_begin_at_survives_restarts(transferd, origin, mode):
    """A start date centuries ahead is valid; it once overflowed the monotonic clock and crashed
    transferd at creation, and a durable task at every start after."""
    sid = create_session(transferd, mode=mode)
    task = create_task(transferd, sid, download(origin.url("/bytes/10"), begin_at="9999-12-31T23:59:59Z"))
    assert task["state"] == "running"
    transferd.kill9()
    transferd.restart()
    again = get_task(transferd, sid, task["id"])
    if mode == "background":
        assert (again["state"], again["phase"]) == ("running", "scheduled"), again
    else:
        assert_task_error(wait_task(transferd, sid, task["id"]), "interrupted")
    assert origin.requests == []


def test_scheduled_tasks_hold_no_file_until_their_begin_at(transferd, origin):
    """Tens of thousands of tasks may wait for tomorrow: each costs a timer, not an open file."""
    sid = create_session(transferd, mode="background")
    tomorrow = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(time.time() + 86400))
    tasks = create_batch(transferd, sid, [download(origin.url(f"/bytes/{i + 1}"), begin_at=tomorrow) for i in range(300)])
    transferd.kill9()
    transferd.restart()
    assert {get_task(transferd, sid, t["id"])["phase"] for t in tasks[:5]} == {"scheduled"}
    files = transferd.data_dir / "sessions" / sid / "files"
    assert not files.exists() or list(files.iterdir()) == []
    descriptors = len(list(Path(f"/proc/{transferd.pid}/fd").iterdir()))
    assert descriptors < 200, f"{descriptors} open descriptors for 300 scheduled tasks"
    assert origin.requests == []


def test_a_download_gets_a_name_once_a_crash_would_cost_a_second_or_a_mib(start_transferd, api_token, origin, tmp_path):
    """A download's file has no name until it is complete (O_TMPFILE), except a durable session's
    one with a validator once it ran a second or holds 1 MiB — however small and slow — named for
    a restart to continue it: a crash leaves nothing of the others behind, and the named ones
    continue from their offsets."""
    root = tmp_path / "root"
    root.mkdir()
    td = start_transferd("--allow-path", str(root), api_token=api_token)
    ephemeral = create_session(td, mode="ephemeral")
    background = create_session(td, mode="background")
    slow = f"rate={256 * 1024}"
    running = {
        "gone": create_task(td, ephemeral, download(origin.url(f"/bytes/{4 * MiB}?rate={MiB}"),
                                                    download={"destination": str(root / "gone.bin")})),
        "small": create_task(td, background, download(origin.url(f"/bytes/{MiB - 1}?{slow}&seed=s"),
                                                      download={"destination": str(root / "small.bin")})),
        "unvalidated": create_task(td, background, download(origin.url(f"/bytes/{4 * MiB}?{slow}&validators=none"),
                                                            download={"destination": str(root / "unvalidated.bin")})),
        "kept": create_task(td, background, download(origin.url(f"/bytes/{4 * MiB}?rate={MiB}&seed=k"),
                                                     download={"destination": str(root / "kept.bin")})),
    }
    for name, task in running.items():
        wait_progress(td, ephemeral if name == "gone" else background, task["id"], 128 * 1024)
    # Two seconds in (512 KiB at 256 KiB/s): the small slow one is worth a name too.
    wait_progress(td, background, running["small"]["id"], 512 * 1024)
    def partials():
        return sorted(p.name for p in root.iterdir() if p.name.startswith("."))

    # Still running (4 MiB at 1 MiB/s and 1 MiB at 256 KiB/s): both have their names by now.
    assert len(partials()) == 2, f"two named partials: {sorted(p.name for p in root.iterdir())}"
    assert all(p.startswith(".transferd-") and p.endswith(".part") for p in partials()), partials()
    td.kill9()
    td.restart()
    # The background ones continue: the named ones from their offsets, the other from zero.
    done = assert_success(wait_task(td, background, running["kept"]["id"]))
    assert done["result"]["sha256"] == Origin.expected_sha256(4 * MiB, "k")
    small = assert_success(wait_task(td, background, running["small"]["id"], timeout=60))
    assert small["result"]["sha256"] == Origin.expected_sha256(MiB - 1, "s")
    continued = [r for r in origin.requests if "seed=s" in r.target and r.headers.get("Range")]
    assert len(continued) == 1 and continued[0].status == 206, [(r.target, r.headers.get("Range")) for r in origin.requests]
    assert_success(wait_task(td, background, running["unvalidated"]["id"], timeout=60))
    wait_for(lambda: sorted(p.name for p in root.iterdir()) == ["kept.bin", "small.bin", "unvalidated.bin"], timeout=15,
             message=lambda: f"only the completed files to be left: {sorted(p.name for p in root.iterdir())}")


def slow_small_download_killed_half_way(td, origin, mode: str, seed: str) -> tuple[str, dict, int]:
    """A 768 KiB download at 128 KiB/s in a new session of `mode`, killed with SIGKILL three seconds
    in (384 KiB), once its response head is stored, and transferd started again."""
    size = 768 * 1024
    sid = create_session(td, mode=mode)
    task = create_task(td, sid, download(origin.url(f"/bytes/{size}?seed={seed}&rate={128 * 1024}")))
    wait_events(td, sid, lambda events: of_type(events, "task.response_received", task["id"]))
    wait_progress(td, sid, task["id"], 384 * 1024)
    td.kill9()
    td.restart()
    return sid, task, size


def test_a_slow_small_background_download_continues_after_kill9(transferd, origin):
    sid, task, size = slow_small_download_killed_half_way(transferd, origin, "background", "ssb")
    done = assert_success(wait_task(transferd, sid, task["id"], timeout=60))
    assert done["result"]["sha256"] == Origin.expected_sha256(size, "ssb")
    first, second = origin.requests
    assert second.headers.get("Range", "").startswith("bytes=") and second.status == 206, second.headers
    offset = int(second.headers["Range"][len("bytes="):-1])
    assert offset >= 384 * 1024 and second.bytes_sent == size - offset


def test_a_slow_small_default_download_is_interrupted_with_resume_data_after_kill9(transferd, origin):
    sid, task, size = slow_small_download_killed_half_way(transferd, origin, "default", "ssd")
    done = assert_task_error(wait_task(transferd, sid, task["id"]), "interrupted")
    token = done["error"]["resume_data"]
    assert token, done["error"]
    resumed = run_task(transferd, sid, {"kind": "download", "resume_data": token}, timeout=60)
    assert assert_success(resumed)["result"]["sha256"] == Origin.expected_sha256(size, "ssd")
    assert origin.requests[-1].status == 206 and origin.requests[-1].bytes_sent <= size - 384 * 1024


def test_a_suspended_download_keeps_its_partial_by_name(transferd, origin):
    """An unnamed file is named when its task is suspended, and the next attempt continues it."""
    sid = create_session(transferd, mode="background")
    task = create_task(transferd, sid, download(origin.url(f"/bytes/{MiB}?rate={256 * 1024}&seed=sp")))
    wait_progress(transferd, sid, task["id"], 128 * 1024)
    files = transferd.data_dir / "sessions" / sid / "files"
    assert list(files.iterdir()) == [], "a small download's file has a name before it completes"
    action(transferd, sid, task["id"], "suspend")
    wait_for(lambda: [p.name for p in files.iterdir()] == [f".{task['id']}.part"], timeout=10,
             message=lambda: f"the partial file kept by name: {[p.name for p in files.iterdir()]}")
    action(transferd, sid, task["id"], "resume")
    done = assert_success(wait_task(transferd, sid, task["id"]))
    assert done["result"]["sha256"] == Origin.expected_sha256(MiB, "sp")
    assert origin.requests[-1].status == 206


def test_files_that_belong_to_nothing_are_swept_at_start(transferd, origin):
    sid = create_session(transferd, mode="background")
    done = assert_success(run_task(transferd, sid, download(origin.url("/bytes/1000"))))
    body = assert_success(run_task(transferd, sid, data(origin.url("/bytes/10"))))
    files = transferd.data_dir / "sessions" / sid / "files"
    bodies = transferd.data_dir / "sessions" / sid / "bodies"
    blobs = transferd.data_dir / "blobs"
    orphans = [files / ".gone.part", files / ".gone.resume", files / "gone", bodies / ".gone.part", bodies / "gone",
               blobs / ".b_gone.part", blobs / "b_gone"]
    transferd.stop()
    for path in orphans:
        path.write_bytes(b"left behind")
    # Only what changed before this start (with a margin for file-system clocks) is swept.
    time.sleep(1)
    transferd.restart()
    wait_for(lambda: not any(p.exists() for p in orphans), timeout=15,
             message=lambda: f"orphans swept; left: {[p.name for p in orphans if p.exists()]}")
    assert (files / done["id"]).exists() and (bodies / body["id"]).exists()
    _, digest, _ = fetch_sha256(transferd, task_path(sid, done["id"], "/file"))
    assert digest == Origin.expected_sha256(1000)


def test_retention_sweeps_completed_tasks_files_bodies_and_events(start_transferd, api_token, origin):
    td = start_transferd("--retention", "2s", "--sweep-interval", "0.5s", api_token=api_token)
    sid = create_session(td, mode="background")
    dl = assert_success(run_task(td, sid, download(origin.url("/bytes/1000"))))
    body = assert_success(run_task(td, sid, data(origin.url("/bytes/10"))))
    waiting = create_task(td, sid, download(origin.url("/bytes/10"), start=False))
    files = td.data_dir / "sessions" / sid / "files"
    bodies = td.data_dir / "sessions" / sid / "bodies"
    assert (files / dl["id"]).exists() and (bodies / body["id"]).exists()
    last_seq = all_events(td, sid)[-1]["seq"]

    wait_for(lambda: td.get(task_path(sid, dl["id"])).status_code == 404
             and td.get(task_path(sid, body["id"])).status_code == 404, timeout=20,
             message="the completed tasks to be swept")
    wait_for(lambda: not (files / dl["id"]).exists() and not (bodies / body["id"]).exists(), timeout=10,
             message="their file and body to be removed")
    wait_for_events_swept_but_the_newest(td, sid, last_seq)
    # What is not completed stays; the session is untouched.
    assert get_task(td, sid, waiting["id"])["state"] == "suspended"
    td.restart(args=["--retention", "1h"])
    later = assert_success(run_task(td, sid, download(origin.url("/bytes/10"))))
    assert_numbering_continues(td, sid, last_seq, later["id"])


def wait_for_events_swept_but_the_newest(td, sid: str, last_seq: int) -> None:
    """Events past the retention period go, but for the newest: the numbering continues from it."""
    remaining = wait_for(lambda: (events := all_events(td, sid)) and len(events) == 1 and events, timeout=20,
                         message="old events to be swept")
    assert remaining[0]["seq"] == last_seq


def assert_numbering_continues(td, sid: str, last_seq: int, later_task: str) -> None:
    """A task after the sweep gets new seqs after the kept one, never one reused."""
    seqs = [e["seq"] for e in all_events(td, sid)]
    assert seqs[0] == last_seq and seqs == sorted(set(seqs)) and len(seqs) > 1, seqs
    assert all(e["seq"] > last_seq for e in all_events(td, sid) if e["task"] == later_task)


def test_retention_sweeps_the_events_of_an_ephemeral_session(start_transferd, api_token, origin):
    """Memory-only events no client acknowledges are swept like stored ones, newest kept."""
    td = start_transferd("--retention", "2s", "--sweep-interval", "0.5s", api_token=api_token)
    sid = create_session(td, mode="ephemeral")
    assert_success(run_task(td, sid, data(origin.url("/bytes/10"))))
    events = all_events(td, sid)
    assert len(events) > 1
    wait_for_events_swept_but_the_newest(td, sid, events[-1]["seq"])
    later = assert_success(run_task(td, sid, data(origin.url("/bytes/10"))))
    assert_numbering_continues(td, sid, events[-1]["seq"], later["id"])

"""Durability basics across a restart of transferd on the same data directory (README
"Durability"): sessions and completed tasks stay (and their files are still served), a `default`
session's unfinished tasks complete with `interrupted`, an `ephemeral` session is gone, and a
`background` session's running download continues and completes."""

from __future__ import annotations

import signal

import pytest

from support.api import (action, assert_success, assert_task_error, create_session, create_task, data,
                         download, fetch_sha256, get_session, get_task, run_task, task_path,
                         wait_progress, wait_task)
from support.origin import Origin

MiB = 1 << 20


def test_sessions_and_completed_tasks_survive_a_restart(transferd, origin):
    stored = {}
    for mode in ("background", "default"):
        sid = create_session(transferd, mode=mode, configuration={"max_connections_per_host": 3})
        dl = assert_success(run_task(transferd, sid, download(origin.url(f"/bytes/300000?seed={mode}"),
                                                              description="keep me")))
        body = assert_success(run_task(transferd, sid, data(origin.url(f"/bytes/777?seed={mode}&content_type=text/x-kept"))))
        stored[sid] = (mode, dl, body)

    assert transferd.stop() == 0
    transferd.restart()

    for sid, (mode, dl, body) in stored.items():
        session = get_session(transferd, sid)
        assert session["mode"] == mode
        assert session["configuration"]["max_connections_per_host"] == 3
        assert session["tasks"]["completed"] == 2 and session["tasks"]["total"] == 2, session["tasks"]
        again = get_task(transferd, sid, dl["id"])
        assert again["state"] == "completed" and again["error"] is None
        assert again["result"] == dl["result"]
        assert again["description"] == "keep me"
        assert again["response"]["status"] == 200
        response, digest, size = fetch_sha256(transferd, task_path(sid, dl["id"], "/file"))
        assert response.status_code == 200
        assert (digest, size) == (Origin.expected_sha256(300000, mode), 300000)
        kept = transferd.get(task_path(sid, body["id"], "/body"))
        assert kept.status_code == 200
        assert kept.content == Origin.expected_bytes(777, mode)
        assert kept.headers["Content-Type"] == "text/x-kept"
        listed = transferd.get(f"/v1/sessions/{sid}/tasks").json()["tasks"]
        assert [t["id"] for t in listed] == [dl["id"], body["id"]]
    stats = transferd.get("/v1/stats").json()
    assert stats["sessions"] == 2 and stats["tasks"]["completed"] == 4, stats


def test_default_session_unfinished_tasks_are_interrupted(transferd, origin):
    sid = create_session(transferd, mode="default")
    suspended = create_task(transferd, sid, download(origin.url("/bytes/1000"), start=False))
    running = create_task(transferd, sid, download(origin.url(f"/bytes/{4 * MiB}?rate={MiB}")))
    wait_progress(transferd, sid, running["id"], 100_000)

    transferd.restart()

    for task in (suspended, running):
        done = get_task(transferd, sid, task["id"])
        if done["state"] != "completed":
            done = wait_task(transferd, sid, task["id"], timeout=5)
        assert_task_error(done, "interrupted")
        assert done["result"] is None
    counts = get_session(transferd, sid)["tasks"]
    assert counts["completed"] == 2 and counts["running"] == 0 and counts["suspended"] == 0, counts
    # Nothing is fetched again after the restart.
    assert len(origin.requests) == 1
    assert not list((transferd.data_dir / "sessions" / sid).rglob("*.part")), "partial file kept"
    # The session itself is still usable.
    assert_success(run_task(transferd, sid, download(origin.url("/bytes/10"))))


def test_ephemeral_session_is_gone_after_restart(transferd, origin):
    sid = create_session(transferd, mode="ephemeral")
    task = assert_success(run_task(transferd, sid, download(origin.url("/bytes/1000"))))
    durable = create_session(transferd, mode="default")

    transferd.restart()

    assert transferd.get(f"/v1/sessions/{sid}").status_code == 404
    assert transferd.get(task_path(sid, task["id"])).status_code == 404
    assert not (transferd.data_dir / "sessions" / sid).exists()
    assert [s["identifier"] for s in transferd.get("/v1/sessions").json()["sessions"]] == [durable]
    # The identifier can be used again, in any mode.
    assert transferd.put(f"/v1/sessions/{sid}", json={"mode": "background"}).status_code == 201


@pytest.mark.parametrize("stop_signal", [signal.SIGTERM, signal.SIGINT])
def test_background_download_continues_after_restart(transferd, origin, stop_signal):
    sid = create_session(transferd, mode="background")
    size = 3 * MiB
    task = create_task(transferd, sid, download(origin.url(f"/bytes/{size}?seed=bg&rate={2 * MiB}")))
    wait_progress(transferd, sid, task["id"], 300_000)

    transferd.restart(signal=stop_signal)

    done = assert_success(wait_task(transferd, sid, task["id"], timeout=20))
    assert done["result"]["size"] == size
    assert done["result"]["sha256"] == Origin.expected_sha256(size, "bg")
    response, digest, _ = fetch_sha256(transferd, task_path(sid, task["id"], "/file"))
    assert response.status_code == 200 and digest == done["result"]["sha256"]
    assert len(origin.requests) == 2


def test_background_suspended_task_stays_suspended_after_restart(transferd, origin):
    sid = create_session(transferd, mode="background")
    task = create_task(transferd, sid, download(origin.url("/bytes/5000?seed=later"), start=False))
    transferd.restart()
    assert get_task(transferd, sid, task["id"])["state"] == "suspended"
    assert origin.requests == []
    action(transferd, sid, task["id"], "resume")
    done = assert_success(wait_task(transferd, sid, task["id"]))
    assert done["result"]["sha256"] == Origin.expected_sha256(5000, "later")


def test_background_download_continues_after_kill_9(transferd, origin):
    sid = create_session(transferd, mode="background")
    size = 3 * MiB
    task = create_task(transferd, sid, download(origin.url(f"/bytes/{size}?seed=k9&rate={2 * MiB}")))
    wait_progress(transferd, sid, task["id"], 300_000)
    transferd.kill9()
    transferd.restart()
    done = assert_success(wait_task(transferd, sid, task["id"], timeout=20))
    assert done["result"]["sha256"] == Origin.expected_sha256(size, "k9")


@pytest.mark.parametrize("mode", ["background", "default"])
def test_a_201_means_stored(transferd, origin, mode):
    """Sessions and tasks acknowledged with 201 are there after kill -9 right afterwards."""
    sid = create_session(transferd, mode=mode)
    single = create_task(transferd, sid, download(origin.url("/bytes/10"), start=False, id="single"))
    response = transferd.post(f"/v1/sessions/{sid}/tasks:batch",
                              json={"tasks": [download(origin.url("/bytes/10"), start=False, id=f"b{i}")
                                              for i in range(200)]})
    assert response.status_code == 201, response.text[:500]
    transferd.kill9()
    transferd.restart()
    assert get_session(transferd, sid)["tasks"]["total"] == 201
    assert get_task(transferd, sid, single["id"])["id"] == "single"
    listed = transferd.get(f"/v1/sessions/{sid}/tasks", params={"limit": 1000}).json()["tasks"]
    assert [t["id"] for t in listed] == ["single"] + [f"b{i}" for i in range(200)]

"""`Idempotency-Key` on every POST that creates or acts: the same key and body return the first
reply (status and body) without acting again; the same key with another body is refused."""

from __future__ import annotations

import base64
import secrets

import pytest

from support.api import (assert_problem, assert_success, create_session, create_task, data, download, get_task,
                         run_task, task_path, tasks_path, wait_for, wait_task)
from support.events import (all_events, assert_journal_order, create_delegated_session, deliveries, events_path,
                            summary, wait_delivered)
from support.receiver import WebhookReceiver


def twice(td, path: str, key: str, **kwargs):
    """The same POST sent twice with one key: both replies, the second marked as replayed."""
    first = td.post(path, headers={"Idempotency-Key": key}, **kwargs)
    again = td.post(path, headers={"Idempotency-Key": key}, **kwargs)
    assert (again.status_code, again.content) == (first.status_code, first.content), (first.text, again.text)
    assert again.headers.get("Idempotent-Replayed") == "true"
    return first


def test_batch_is_created_once(transferd, origin):
    sid = create_session(transferd)
    body = {"tasks": [download(origin.url("/bytes/10"), start=False) for _ in range(3)]}
    first = twice(transferd, tasks_path(sid) + ":batch", "batch-1", json=body)
    assert first.status_code == 201, first.text
    assert len(transferd.get(tasks_path(sid)).json()["tasks"]) == 3
    other = {"tasks": body["tasks"][:1]}
    assert_problem(transferd.post(tasks_path(sid) + ":batch", json=other, headers={"Idempotency-Key": "batch-1"}),
                   422, "idempotency_key_reused")
    assert len(transferd.get(tasks_path(sid)).json()["tasks"]) == 3


def test_blob_is_stored_once(transferd):
    content = secrets.token_bytes(4096)
    first = transferd.post("/v1/blobs", data=content, headers={"Idempotency-Key": "blob-1"})
    again = transferd.post("/v1/blobs", data=content, headers={"Idempotency-Key": "blob-1"})
    assert first.status_code == 201, first.text
    assert (again.status_code, again.content) == (first.status_code, first.content)
    assert again.headers["Location"] == first.headers["Location"]
    assert_problem(transferd.post("/v1/blobs", data=content + b"!", headers={"Idempotency-Key": "blob-1"}),
                   422, "idempotency_key_reused")
    # Another key stores another blob.
    assert transferd.post("/v1/blobs", data=content, headers={"Idempotency-Key": "blob-2"}).json()["id"] != first.json()["id"]


def test_task_action_is_done_once(transferd, origin):
    sid = create_session(transferd)
    task = create_task(transferd, sid, download(origin.url("/bytes/3000000?rate=100000"), start=False))
    path = task_path(sid, task["id"], "/resume")
    first = transferd.post(path, headers={"Idempotency-Key": "resume-1"})
    assert first.status_code == 200 and first.json()["state"] == "running", first.text
    assert transferd.post(task_path(sid, task["id"], "/suspend")).json()["state"] == "suspended"
    again = transferd.post(path, headers={"Idempotency-Key": "resume-1"})
    assert (again.status_code, again.content) == (first.status_code, first.content)
    assert get_task(transferd, sid, task["id"])["state"] == "suspended", "the replayed resume ran again"
    cancel = task_path(sid, task["id"], "/cancel")
    assert transferd.post(cancel, json={}, headers={"Idempotency-Key": "cancel-1"}).status_code == 200
    assert_problem(transferd.post(cancel, json={"produce_resume_data": True}, headers={"Idempotency-Key": "cancel-1"}),
                   422, "idempotency_key_reused")


def test_ack_is_replayed(transferd, origin):
    sid = create_session(transferd)
    run_task(transferd, sid, download(origin.url("/bytes/10")))
    first = twice(transferd, events_path(sid, "/ack"), "ack-1", json={"through": 1})
    assert first.status_code == 200 and first.json()["acked_through"] == 1
    assert_problem(transferd.post(events_path(sid, "/ack"), json={"through": 2}, headers={"Idempotency-Key": "ack-1"}),
                   422, "idempotency_key_reused")


def test_redeliver_is_queued_once(transferd, origin):
    with WebhookReceiver(secret="whsec_" + base64.b64encode(secrets.token_bytes(32)).decode()) as receiver:
        sid = create_delegated_session(transferd, receiver, events=["task.completed"])
        run_task(transferd, sid, download(origin.url("/bytes/10")))
        (completed,) = wait_delivered(receiver, lambda es: len(es) == 1)
        path = events_path(sid, f"/{completed['id']}/redeliver")
        assert twice(transferd, path, "again-1").status_code == 202
        # A redelivery under a new key is queued behind any the replay would have queued.
        assert transferd.post(path, headers={"Idempotency-Key": "again-2"}).status_code == 202
        wait_delivered(receiver, lambda es: len(es) >= 3)
        manual = wait_for(lambda: len(m := [a for a in deliveries(transferd, sid)["deliveries"] if a["attempt"] == 0]) >= 2 and m,
                          message="both redeliveries listed")
        assert len(manual) == 2 and len(receiver.deliveries) == 3


def test_keys_are_scoped_to_the_path_they_guard(transferd, origin):
    sid = create_session(transferd)
    ids = [create_task(transferd, sid, download(origin.url("/bytes/10"), start=False))["id"] for _ in range(2)]
    for tid in ids:
        response = transferd.post(task_path(sid, tid, "/resume"), headers={"Idempotency-Key": "shared"})
        assert response.status_code == 200 and response.json()["id"] == tid
        assert "Idempotent-Replayed" not in response.headers


def test_a_refused_request_does_not_use_up_its_key(transferd):
    sid = create_session(transferd)
    path = events_path(sid, "/ack")
    assert_problem(transferd.post(path, json={"through": "x"}, headers={"Idempotency-Key": "k"}), 422)
    assert transferd.post(path, json={"through": 0}, headers={"Idempotency-Key": "k"}).status_code == 200
    assert_problem(transferd.post(path, json={}, headers={"Idempotency-Key": "bad key"}), 400, "invalid_idempotency_key")


def test_keys_of_durable_things_survive_a_restart(transferd, origin):
    sid = create_session(transferd, mode="background")
    task = create_task(transferd, sid, download(origin.url("/bytes/3000000?rate=100000"), start=False))
    resume = task_path(sid, task["id"], "/resume")
    resumed = transferd.post(resume, headers={"Idempotency-Key": "resume-restart"})
    assert resumed.status_code == 200, resumed.text
    assert transferd.post(task_path(sid, task["id"], "/suspend")).json()["state"] == "suspended"
    ack = transferd.post(events_path(sid, "/ack"), json={"through": 1}, headers={"Idempotency-Key": "ack-restart"})
    content = secrets.token_bytes(1024)
    blob = transferd.post("/v1/blobs", data=content, headers={"Idempotency-Key": "blob-restart"})
    assert ack.status_code == 200 and blob.status_code == 201
    transferd.restart()
    again = transferd.post(events_path(sid, "/ack"), json={"through": 1}, headers={"Idempotency-Key": "ack-restart"})
    assert (again.status_code, again.content, again.headers.get("Idempotent-Replayed")) == (200, ack.content, "true")
    stored = transferd.post("/v1/blobs", data=content, headers={"Idempotency-Key": "blob-restart"})
    assert (stored.status_code, stored.content, stored.headers["Location"]) == (201, blob.content, blob.headers["Location"])
    assert_problem(transferd.post(events_path(sid, "/ack"), json={"through": 2}, headers={"Idempotency-Key": "ack-restart"}),
                   422, "idempotency_key_reused")
    replayed = transferd.post(resume, headers={"Idempotency-Key": "resume-restart"})
    assert (replayed.status_code, replayed.content) == (200, resumed.content)
    assert get_task(transferd, sid, task["id"])["state"] == "suspended", "the replayed resume ran again"


def errors_logged(td) -> list[dict]:
    return [r for r in td.log_records() if r.get("level") in ("error", "critical")]


@pytest.mark.parametrize("mode", ["default", "background", "ephemeral"])
def test_a_task_creation_is_replayed_as_it_was_first_answered(transferd, origin, mode):
    """Once the task has completed (and left memory), and after a restart where the session
    outlives one: the same 201 and body, byte for byte (a task still `running`), nothing journaled,
    no `seq` skipped, no error logged. The task sends a bearer token to its origin, which a logged
    record would leak."""
    sid = create_session(transferd, mode=mode)
    body = data(origin.url(f"/bytes/10?seed={mode}"))
    body["request"]["headers"] = {"Authorization": "Bearer " + secrets.token_urlsafe(24)}
    key = {"Idempotency-Key": f"create-{mode}"}
    first = transferd.post(tasks_path(sid), json=body, headers=key)
    assert first.status_code == 201, first.text
    tid = first.json()["id"]
    assert first.json()["state"] == "running"
    assert_success(wait_task(transferd, sid, tid))
    journal = wait_for(lambda: (events := all_events(transferd, sid)) and events[-1]["type"] == "session.all_tasks_finished"
                       and events, message="the task's events journaled")
    for restart in ([False, True] if mode != "ephemeral" else [False]):
        if restart:
            transferd.restart()
        again = transferd.post(tasks_path(sid), json=body, headers=key)
        assert (again.status_code, again.content) == (201, first.content), again.text
        assert again.headers.get("Idempotent-Replayed") == "true"
        assert (again.headers["Location"], again.headers["ETag"]) == (first.headers["Location"], first.headers["ETag"])
        assert summary(all_events(transferd, sid)) == summary(journal), "a replay journaled something"
    assert_problem(transferd.post(tasks_path(sid), json=data(origin.url("/bytes/11")), headers=key),
                   422, "idempotency_key_reused")
    # The next event takes the next seq: a replay numbered none.
    other = create_task(transferd, sid, data(origin.url("/bytes/12")))
    assert_success(wait_task(transferd, sid, other["id"]))
    events = wait_for(lambda: (e := all_events(transferd, sid)) and len(e) > len(journal) + 2 and e,
                      message="the second task's events")
    assert_journal_order(events, sid)
    assert [t["id"] for t in transferd.get(tasks_path(sid)).json()["tasks"]] == [tid, other["id"]]
    assert errors_logged(transferd) == []


def test_a_batch_is_replayed_after_a_restart_without_a_trace(transferd, origin):
    sid = create_session(transferd, mode="background")
    body = {"tasks": [data(origin.url(f"/bytes/{n}")) for n in (10, 20)]}
    key = {"Idempotency-Key": "batch-restart"}
    first = transferd.post(tasks_path(sid) + ":batch", json=body, headers=key)
    assert first.status_code == 201, first.text
    for task in first.json()["tasks"]:
        assert_success(wait_task(transferd, sid, task["id"]))
    journal = wait_for(lambda: (events := all_events(transferd, sid)) and events[-1]["type"] == "session.all_tasks_finished"
                       and events, message="the tasks' events journaled")
    transferd.restart()
    again = transferd.post(tasks_path(sid) + ":batch", json=body, headers=key)
    assert (again.status_code, again.content, again.headers.get("Idempotent-Replayed")) == (201, first.content, "true")
    assert summary(all_events(transferd, sid)) == summary(journal)
    assert len(transferd.get(tasks_path(sid)).json()["tasks"]) == 2
    assert errors_logged(transferd) == []

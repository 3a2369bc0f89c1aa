"""The event journal and its pull side (README "Events and webhooks"): every event type in
order with `seq` per session, long-poll, Server-Sent Events with `Last-Event-ID` resume and
heartbeats, acknowledgements and `pending_events`, re-attaching after a restart, and the events of
invalidation. Webhooks are in test_webhooks.py."""

from __future__ import annotations

import signal
import threading
import time

import pytest

from support.api import (action, assert_problem, assert_success, create_batch, create_session, create_task,
                         download, get_session, post_task, put_session, run_task, session_path, wait_for,
                         wait_progress, wait_task)
from support.events import (DOWNLOAD_EVENTS, EventStream, ack, all_events, assert_journal_order, events_path,
                            read_events, summary, types_of, wait_events)
from support.origin import Origin


def test_one_download_journals_its_events_in_order_in_the_journal_and_over_sse(transferd, origin):
    sid = create_session(transferd, mode="background")
    with EventStream(transferd, sid) as stream:
        assert stream.status == 200
        assert stream.headers["content-type"] == "text/event-stream"
        task = create_task(transferd, sid, download(origin.url("/bytes/5000?seed=ev")))
        done = assert_success(wait_task(transferd, sid, task["id"]))
        events = wait_events(transferd, sid, lambda es: "session.all_tasks_finished" in types_of(es))
        streamed = stream.wait_for(lambda s: len(s.journaled) >= len(events) and s.journaled)

    assert types_of(events) == DOWNLOAD_EVENTS + ["session.all_tasks_finished"], summary(events)
    assert_journal_order(events, sid)
    assert events[0]["seq"] == 1
    assert all(e["task"] == task["id"] for e in events[:4]) and events[4]["task"] is None
    created, response, finished, completed, idle = events
    assert created["data"]["kind"] == "download" and created["data"]["url"] == task["request"]["url"]
    assert response["data"]["status"] == 200
    assert response["data"]["expected_content_length"] == 5000
    assert finished["data"] == done["result"]
    assert finished["data"]["sha256"] == Origin.expected_sha256(5000, "ev")
    # task.completed carries the task as GET shows it.
    assert completed["data"]["id"] == task["id"] and completed["data"]["state"] == "completed"
    assert completed["data"]["error"] is None and completed["data"]["result"] == done["result"]
    # The stream tells the same events, with `id:` the seq and `event:` the type.
    assert streamed == events
    ids = [(e.id, e.event) for e in stream.events if e.id is not None]
    assert ids == [(str(e["seq"]), e["type"]) for e in events]


def test_every_lifecycle_event_type_is_journaled(transferd, origin):
    """Redirects, suspend/resume with the download continued from its offset, a failure, and
    cancellation each journal their events."""
    sid = create_session(transferd, mode="background")
    redirected = assert_success(run_task(transferd, sid, download(origin.url("/redirect/2?bytes=100"))))
    size = 2_000_000
    slow = create_task(transferd, sid, download(origin.url(f"/bytes/{size}?rate=400000")))
    wait_progress(transferd, sid, slow["id"], 100_000)
    action(transferd, sid, slow["id"], "suspend")
    wait_for(lambda: get_task_phase(transferd, sid, slow["id"]) == "waiting", message="the transfer to stop")
    action(transferd, sid, slow["id"], "resume")
    assert_success(wait_task(transferd, sid, slow["id"]))
    # The default network policy refuses cloud metadata addresses: a failure that is not retried.
    failed = run_task(transferd, sid, download("http://169.254.169.254/latest/meta-data", id="refused"))
    assert failed["error"]["code"] == "blocked_by_policy"
    parked = create_task(transferd, sid, download(origin.url("/bytes/10"), start=False))
    action(transferd, sid, parked["id"], "cancel")

    events = wait_events(transferd, sid, lambda es: types_of(es, parked["id"])[-1:] == ["task.completed"])
    assert_journal_order(events, sid)
    hops = [e for e in events if e["task"] == redirected["id"] and e["type"] == "task.redirected"]
    assert [(h["data"]["status"], h["data"]["to"].split("?")[0]) for h in hops] == [
        (302, origin.url("/redirect/1")), (302, origin.url("/redirect/0"))]
    slow_types = types_of(events, slow["id"])
    assert slow_types[:3] == ["task.created", "task.response_received", "task.suspended"], slow_types
    assert slow_types[3:] == ["task.resumed", "task.response_received", "task.resumed_at_offset",
                              "task.finished_downloading", "task.completed"], slow_types
    offset = next(e for e in events if e["type"] == "task.resumed_at_offset")
    assert 0 < offset["data"]["offset"] < size and offset["data"]["expected_total"] == size
    assert types_of(events, "refused") == ["task.created", "task.completed"]
    assert [e for e in events if e["task"] == "refused"][-1]["data"]["error"]["code"] == "blocked_by_policy"
    assert types_of(events, parked["id"]) == ["task.created", "task.completed"]
    assert [e for e in events if e["task"] == parked["id"]][-1]["data"]["error"]["code"] == "cancelled"


def get_task_phase(td, sid: str, tid: str) -> str:
    return td.get(f"{session_path(sid)}/tasks/{tid}").json()["phase"]


def test_all_tasks_finished_follows_the_last_of_many_tasks_completing_at_once(transferd, origin):
    """A batch makes the session busy once; whatever order the tasks complete in, one
    `session.all_tasks_finished` follows the last `task.completed` (urlSessionDidFinishEvents)."""
    sid = create_session(transferd, mode="default")
    for round_ in range(2):
        tasks = create_batch(transferd, sid, [download(origin.url(f"/bytes/{100 + i}?seed=r{round_}")) for i in range(40)])
        for task in tasks:
            assert_success(wait_task(transferd, sid, task["id"]))
        events = wait_events(transferd, sid, lambda es: types_of(es).count("session.all_tasks_finished") == round_ + 1)
        assert_journal_order(events, sid)
        kinds = types_of(events)
        assert kinds.count("task.completed") == 40 * (round_ + 1)
        assert kinds[-1] == "session.all_tasks_finished", summary(events[-5:])
        assert kinds.count("session.all_tasks_finished") == round_ + 1, summary(events)
    # Nothing follows once the session is idle.
    assert read_events(transferd, sid, after=events[-1]["seq"], wait=0.3)["events"] == []


def test_progress_is_streamed_live_but_not_journaled(transferd, origin):
    sid = create_session(transferd, mode="background")
    with EventStream(transferd, sid) as stream:
        task = create_task(transferd, sid, download(origin.url("/bytes/1500000?rate=500000")))
        stream.wait_for(lambda s: [e for e in s.events if e.event == "task.progress"][1:])
        assert_success(wait_task(transferd, sid, task["id"]))
        progress = [e for e in stream.events if e.event == "task.progress"]
    assert all(e.id is None for e in progress), "progress events carry no id: they cannot be resumed"
    received = [e.document["data"]["bytes_received"] for e in progress]
    assert received == sorted(received) and received[-1] > 0
    assert all(e.document["task"] == task["id"] and e.document["type"] == "task.progress" for e in progress)
    assert "task.progress" not in types_of(all_events(transferd, sid))


def test_sse_resume_with_last_event_id_loses_nothing(transferd, origin):
    sid = create_session(transferd, mode="background")
    first = [create_task(transferd, sid, download(origin.url(f"/bytes/{10 + i}"))) for i in range(3)]
    with EventStream(transferd, sid, query="?after=0") as stream:
        stream.wait_for(lambda s: len(s.journaled) >= 5)
        seen = stream.journaled
    last_id = seen[-1]["seq"]
    # Events keep coming while nobody listens.
    more = [create_task(transferd, sid, download(origin.url(f"/bytes/{20 + i}"))) for i in range(3)]
    for task in first + more:
        wait_task(transferd, sid, task["id"])
    journal = wait_events(transferd, sid, lambda es: types_of(es)[-1:] == ["session.all_tasks_finished"]
                          and types_of(es).count("task.completed") == 6)
    # Last-Event-ID wins over ?after= (a reconnecting EventSource sends it).
    with EventStream(transferd, sid, last_event_id=last_id, query="?after=0") as resumed:
        rest = resumed.wait_for(lambda s: len(s.journaled) >= len(journal) - len(seen) and s.journaled)
    assert rest[0]["seq"] == last_id + 1
    assert seen + rest == journal, (summary(seen), summary(rest))


def test_a_client_that_accepts_json_and_the_stream_gets_the_page(transferd, origin):
    """Generated clients send every type the operation documents in Accept: JSON wins, so their
    listing is answered and ends instead of turning into a stream."""
    sid = create_session(transferd)
    create_task(transferd, sid, download(origin.url("/bytes/10"), start=False))
    for accept in ("application/json, text/event-stream", "text/event-stream, application/json;q=0.5"):
        response = transferd.get(events_path(sid) + "?after=0", headers={"Accept": accept}, timeout=10)
        assert response.status_code == 200 and response.headers["content-type"].startswith("application/json"), accept
        assert response.json()["events"][0]["type"] == "task.created"


def test_sse_sends_heartbeats_while_quiet(start_transferd, api_token):
    td = start_transferd("--sse-heartbeat", "200ms", api_token=api_token)
    sid = create_session(td)
    with EventStream(td, sid) as stream:
        stream.wait_for(lambda s: s.comments >= 3, timeout=20)
        assert stream.events == []


def test_sse_without_a_cursor_starts_after_what_was_acknowledged(transferd, origin):
    sid = create_session(transferd)
    run_task(transferd, sid, download(origin.url("/bytes/10")))
    events = wait_events(transferd, sid, lambda es: "session.all_tasks_finished" in types_of(es))
    ack(transferd, sid, events[1]["seq"])
    with EventStream(transferd, sid) as stream:
        got = stream.wait_for(lambda s: len(s.journaled) >= len(events) - 2 and s.journaled)
    assert got == events[2:]


def test_long_poll_answers_when_an_event_is_committed(transferd, origin):
    sid = create_session(transferd)
    quiet = read_events(transferd, sid, after=0, wait=0.3)
    assert quiet["events"] == [] and quiet["next"] == "0"
    answered: dict = {}

    def poll():
        started = time.monotonic()
        answered["page"] = read_events(transferd, sid, after=0, wait=60)
        answered["took"] = time.monotonic() - started

    poller = threading.Thread(target=poll)
    poller.start()
    time.sleep(0.3)  # let the poll start waiting (if it has not, it finds the event at once: same outcome)
    task = create_task(transferd, sid, download(origin.url("/bytes/10"), start=False))
    poller.join(timeout=70)
    assert not poller.is_alive()
    page = answered["page"]
    assert types_of(page["events"])[:1] == ["task.created"] and page["events"][0]["task"] == task["id"]
    assert page["next"] == str(page["events"][-1]["seq"])
    assert answered["took"] < 60, "the long-poll waited out its whole wait instead of answering the event"


def test_acknowledging_counts_down_pending_events(transferd, origin):
    sid = create_session(transferd, mode="background")
    assert get_session(transferd, sid)["pending_events"] == 0
    for i in range(2):
        run_task(transferd, sid, download(origin.url(f"/bytes/{10 + i}")))
    events = wait_events(transferd, sid, lambda es: types_of(es).count("task.completed") == 2
                         and types_of(es)[-1] == "session.all_tasks_finished")
    total = len(events)
    session = get_session(transferd, sid)
    assert session["pending_events"] == total and session["acked_through"] == 0
    reattached = put_session(transferd, sid, "background")
    assert reattached.status_code == 200 and reattached.json()["pending_events"] == total

    assert ack(transferd, sid, 3) == {"acked_through": 3, "pending_events": total - 3}
    assert get_session(transferd, sid)["pending_events"] == total - 3
    page = read_events(transferd, sid, after=None)  # no cursor: after what was acknowledged
    assert [e["seq"] for e in page["events"]] == list(range(4, total + 1))
    assert page["pending_events"] == total - 3
    # Acknowledging is monotonic and cannot run ahead of the journal.
    assert ack(transferd, sid, 1)["acked_through"] == 3
    assert ack(transferd, sid, 10**9) == {"acked_through": total, "pending_events": 0}
    assert read_events(transferd, sid, after=None, wait=0.2)["events"] == []
    # The explicit cursor still reads acknowledged events while they are kept.
    assert all_events(transferd, sid) == events


def test_event_requests_are_validated(transferd):
    sid = create_session(transferd)
    for query, field in [("?wait=601", "wait"), ("?wait=-1", "wait")]:
        assert_problem(transferd.get(events_path(sid, query)), 422, field=field)
    # The cursor and page size are read as every list reads them: 400 naming the parameter.
    for query, field in [("?after=-1", "after"), ("?after=x", "after"), ("?limit=0", "limit"), ("?limit=1001", "limit")]:
        assert_problem(transferd.get(events_path(sid, query)), 400, field=field)
    assert_problem(transferd.get(events_path(sid, "?since=1")), 422, "unknown_parameter")
    assert_problem(transferd.get(events_path(sid), headers={"Accept": "text/event-stream", "Last-Event-ID": "soon"}),
                   400, field="Last-Event-ID")
    assert_problem(transferd.get(events_path("no-such-session")), 404)
    for body in ({}, {"through": -1}, {"through": "3"}, {"through": 1, "extra": True}):
        assert_problem(transferd.post(events_path(sid, "/ack"), json=body), 422)
    assert_problem(transferd.post(events_path(sid, "/ack"), data=b"{"), 400, "invalid_json")
    assert_problem(transferd.post(events_path("no-such-session", "/ack"), json={"through": 1}), 404)


@pytest.mark.parametrize("how", ["sigterm", "kill9"])
def test_reattaching_after_a_restart_finds_every_unacknowledged_event(transferd, origin, how):
    sid = create_session(transferd, mode="background")
    for i in range(3):
        run_task(transferd, sid, download(origin.url(f"/bytes/{100 + i}")))
    before = wait_events(transferd, sid, lambda es: types_of(es).count("task.completed") == 3
                         and types_of(es)[-1] == "session.all_tasks_finished")
    ack(transferd, sid, 4)
    slow = create_task(transferd, sid, download(origin.url("/bytes/3000000?rate=1000000")))
    wait_progress(transferd, sid, slow["id"], 1)

    if how == "kill9":
        transferd.kill9()
        transferd.restart()
    else:
        transferd.restart(signal=signal.SIGTERM)

    reattached = put_session(transferd, sid, "background")
    assert reattached.status_code == 200, reattached.text
    assert reattached.json()["acked_through"] == 4
    assert_success(wait_task(transferd, sid, slow["id"]))
    journal = wait_events(transferd, sid, lambda es: types_of(es, slow["id"])[-1:] == ["task.completed"]
                          and types_of(es)[-1] == "session.all_tasks_finished")
    assert journal[:len(before)] == before
    assert_journal_order(journal, sid)  # numbering continued after the restart, without gaps or repeats
    unacknowledged = read_events(transferd, sid, after=None)
    assert unacknowledged["events"] == journal[4:]
    assert unacknowledged["pending_events"] == len(journal) - 4 == get_session(transferd, sid)["pending_events"]


def test_ephemeral_sessions_keep_their_journal_in_memory(transferd, origin):
    sid = create_session(transferd, mode="ephemeral")
    run_task(transferd, sid, download(origin.url("/bytes/10")))
    events = wait_events(transferd, sid, lambda es: "session.all_tasks_finished" in types_of(es))
    assert types_of(events) == DOWNLOAD_EVENTS + ["session.all_tasks_finished"]
    ack(transferd, sid, 2)
    assert [e["seq"] for e in read_events(transferd, sid, after=None)["events"]] == [3, 4, 5]
    assert get_session(transferd, sid)["pending_events"] == 3
    transferd.restart()
    assert transferd.get(session_path(sid)).status_code == 404


@pytest.mark.parametrize("mode", ["finish", "cancel"])
def test_invalidation_ends_the_journal_and_the_stream_with_session_invalidated(transferd, origin, mode):
    sid = create_session(transferd, mode="background")
    slow = create_task(transferd, sid, download(origin.url("/bytes/600000?rate=600000")))
    wait_progress(transferd, sid, slow["id"], 1)
    with EventStream(transferd, sid, query="?after=0") as stream:
        assert transferd.delete(session_path(sid) + f"?mode={mode}").status_code == 202
        assert_problem(post_task(transferd, sid, download(origin.url("/bytes/10"))), 409, "session_invalidated")
        # The stream ends after the session's last event.
        stream.wait_for(lambda s: s.ended, timeout=30)
        streamed = stream.journaled
    journal = all_events(transferd, sid)
    assert streamed == journal
    assert types_of(journal)[-3:] == ["task.completed", "session.all_tasks_finished", "session.invalidated"], summary(journal)
    error = journal[-3]["data"]["error"]
    assert (error is None) if mode == "finish" else (error["code"] == "cancelled")
    assert get_session(transferd, sid)["state"] == "invalidated"
    # Acknowledged, the session goes; its identifier is free, and a new journal starts at 1.
    ack(transferd, sid, journal[-1]["seq"])
    wait_for(lambda: transferd.get(session_path(sid)).status_code == 404, timeout=10,
             message="the invalidated session to go once its events were acknowledged")
    assert put_session(transferd, sid, "background").status_code == 201
    run_task(transferd, sid, download(origin.url("/bytes/10")))
    fresh = wait_events(transferd, sid, lambda es: "task.completed" in types_of(es))
    assert fresh[0]["seq"] == 1 and fresh[0]["type"] == "task.created"

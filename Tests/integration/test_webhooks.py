"""The delegate: events pushed to `delegate.url`, signed per Standard Webhooks and checked by a real
receiver with the `standardwebhooks` package (README "Events and webhooks"): order,
retries with the same `webhook-id`, 410, Retry-After, redirects not followed, filters, the
deliveries list, redelivery, the network policy, restarts, invalidation.

transferd runs with a short retry schedule (`--webhook-retry-schedule`) where a test needs retries
to happen within its time; the production default is 0, 5 s, 5 min, 30 min, 2 h, 5 h, 10 h, 14 h,
20 h and 24 h, after which the delegate is disabled.
"""

from __future__ import annotations

import base64
import secrets
import signal
import sqlite3
import time
from urllib.parse import quote

import pytest
from standardwebhooks import Webhook

from support.api import (assert_problem, assert_success, create_task, download, get_session, put_session,
                         run_task, session_path, unique, wait_for, wait_task)
from support.events import (DOWNLOAD_EVENTS, all_events, assert_journal_order, assert_signed,
                            create_delegated_session, delegate_for, deliveries, delivered, events_path,
                            summary, types_of, wait_delivered, wait_events)
from support.receiver import WebhookReceiver

FAST_RETRIES = ("--webhook-retry-schedule", "0,100ms,200ms,300ms,400ms,500ms")


def new_secret() -> str:
    return "whsec_" + base64.b64encode(secrets.token_bytes(32)).decode()


@pytest.fixture
def receiver():
    with WebhookReceiver(secret=new_secret()) as server:
        yield server


@pytest.fixture
def fast(start_transferd, api_token):
    """transferd retrying deliveries within a second or two."""
    return start_transferd(*FAST_RETRIES, api_token=api_token)


def idle(events: list[dict]) -> bool:
    return bool(events) and events[-1]["type"] == "session.all_tasks_finished"


def test_one_download_is_pushed_signed_and_in_order(transferd, origin, receiver):
    sid = create_delegated_session(transferd, receiver)
    task = create_task(transferd, sid, download(origin.url("/bytes/2048")))
    assert_success(wait_task(transferd, sid, task["id"]))
    pushed = wait_delivered(receiver, idle)

    assert types_of(pushed) == DOWNLOAD_EVENTS + ["session.all_tasks_finished"], summary(pushed)
    assert pushed == all_events(transferd, sid)  # the same documents as the journal, in seq order
    assert_signed(receiver.deliveries)
    first = receiver.deliveries[0]
    assert first.path == "/webhook" and first.headers["content-type"] == "application/json"
    assert abs(int(first.webhook_timestamp) - time.time()) < 300
    # Delivered counts as acknowledged.
    wait_for(lambda: get_session(transferd, sid)["pending_events"] == 0, message="pending_events to reach 0")
    assert get_session(transferd, sid)["acked_through"] == pushed[-1]["seq"]
    attempts = wait_for(lambda: len(a := deliveries(transferd, sid)["deliveries"]) == len(pushed) and a,
                        message="every attempt listed")
    assert [(a["seq"], a["attempt"], a["status"], a["error"]) for a in attempts] == [
        (e["seq"], 1, 200, None) for e in pushed]
    assert [a["event"] for a in attempts] == [e["id"] for e in pushed]


def test_a_failing_receiver_gets_every_event_in_order_with_the_same_webhook_id(fast, origin, receiver):
    receiver.respond_with(500, times=4)
    sid = create_delegated_session(fast, receiver)
    for i in range(3):
        create_task(fast, sid, download(origin.url(f"/bytes/{100 + i}")))
    journal = wait_events(fast, sid, lambda es: types_of(es).count("task.completed") == 3 and idle(es))
    pushed = wait_delivered(receiver, lambda es: len(es) >= len(journal))

    assert pushed == journal, (summary(pushed), summary(journal))
    assert_signed(receiver.deliveries)
    failures = [d for d in receiver.deliveries if d.status == 500]
    assert len(failures) == 4
    # Retries of the first event keep its webhook-id; nothing later went out before it arrived.
    assert {d.webhook_id for d in failures} == {journal[0]["id"]}
    assert receiver.deliveries[4].webhook_id == journal[0]["id"] and receiver.deliveries[4].status == 200
    # Attempts are recorded as they end, a moment after the receiver answered.
    attempts = wait_for(lambda: len(a := [a for a in deliveries(fast, sid)["deliveries"] if a["seq"] == 1]) == 5 and a,
                        message="five attempts of the first event")
    assert [(a["attempt"], a["status"]) for a in attempts] == [(1, 500), (2, 500), (3, 500), (4, 500), (5, 200)]
    assert all(a["error"] == "HTTP 500" and a["next_attempt_at"] for a in attempts[:4])
    assert attempts[4]["error"] is None and attempts[4]["next_attempt_at"] is None
    # Each failed attempt also logged one line, naming the session, the event and the next try.
    logged = [r for r in fast.log_records() if r.get("msg") == "webhook delivery failed" and r.get("session") == sid]
    assert [(str(r["seq"]), str(r["attempt"]), str(r["status"]), r["error"]) for r in logged] == \
        [("1", str(n), "500", "HTTP 500") for n in range(1, 5)], logged
    assert all(r["level"] == "warning" and r["event"] == journal[0]["id"] and "retry_in_s" in r for r in logged)


def test_retry_after_is_honoured(fast, origin, receiver):
    receiver.respond_with(503, times=1, retry_after=2)
    sid = create_delegated_session(fast, receiver, events=["task.created"])
    create_task(fast, sid, download(origin.url("/bytes/10"), start=False))
    wait_delivered(receiver, lambda es: len(es) == 1)
    failed, retried = receiver.deliveries[:2]
    assert (failed.status, retried.status) == (503, 200) and failed.webhook_id == retried.webhook_id
    first = wait_for(lambda: deliveries(fast, sid)["deliveries"], message="the attempts listed")[0]
    assert first["status"] == 503 and first["next_attempt_at"] is not None
    # The retry was scheduled 2 s out (not the schedule's 100 ms) and was not sent earlier.
    scheduled = parse_rfc3339(first["next_attempt_at"]) - parse_rfc3339(first["at"])
    assert scheduled >= 1.9, first
    assert retried.received_wall >= parse_rfc3339(first["next_attempt_at"]) - 0.05


def parse_rfc3339(text: str) -> float:
    from datetime import datetime
    return datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()


def test_gone_disables_the_delegate_until_it_is_set_again(fast, origin, receiver):
    receiver.respond_with(410, times=1)
    sid = create_delegated_session(fast, receiver)
    run_task(fast, sid, download(origin.url("/bytes/10")))
    journal = wait_events(fast, sid, idle)
    session = wait_for(lambda: (s := get_session(fast, sid))["delegate"]["disabled"] and s,
                       message="the delegate to be disabled")
    assert session["pending_events"] == len(journal)  # nothing was delivered, nothing acknowledged
    assert [(d.status, d.webhook_id) for d in receiver.deliveries] == [(410, journal[0]["id"])]
    run_task(fast, sid, download(origin.url("/bytes/11")))
    wait_events(fast, sid, lambda es: types_of(es).count("task.completed") == 2 and idle(es))
    assert len(receiver.deliveries) == 1, "a disabled delegate was sent more"
    (attempt,) = wait_for(lambda: deliveries(fast, sid)["deliveries"], message="the attempt listed")
    assert attempt["status"] == 410 and attempt["next_attempt_at"] is None
    assert_problem(fast.post(events_path(sid, f"/{journal[0]['id']}/redeliver")), 409, "no_delegate")

    # Setting the delegate again enables it: delivery continues where it stopped.
    reattached = put_session(fast, sid, "background", delegate=delegate_for(receiver))
    assert reattached.status_code == 200 and reattached.json()["delegate"]["disabled"] is False
    journal = all_events(fast, sid)
    assert wait_delivered(receiver, lambda es: len(es) >= len(journal)) == journal


def test_redirects_are_not_followed(fast, origin, receiver):
    hop = origin.url("/redirect-to?status=307&url=" + quote(receiver.url, safe=""))
    sid = unique("hooks")
    assert put_session(fast, sid, "default", delegate={"url": hop, "secret": receiver.secret}).status_code == 201
    create_task(fast, sid, download(origin.url("/bytes/10"), start=False))
    attempts = wait_for(lambda: len(a := deliveries(fast, sid)["deliveries"]) >= 3 and a, timeout=20,
                        message="three delivery attempts")
    assert all(a["status"] == 307 and a["error"] == "HTTP 307" for a in attempts)
    assert receiver.deliveries == []
    assert get_session(fast, sid)["pending_events"] >= 1


def test_delegate_events_filter_what_is_pushed(transferd, origin, receiver):
    sid = create_delegated_session(transferd, receiver, events=["task.completed", "session.invalidated"])
    for i in range(2):
        run_task(transferd, sid, download(origin.url(f"/bytes/{10 + i}")))
    pushed = wait_delivered(receiver, lambda es: len(es) == 2)
    assert types_of(pushed) == ["task.completed", "task.completed"]
    assert_signed(receiver.deliveries)
    assert get_session(transferd, sid)["delegate"]["events"] == ["task.completed", "session.invalidated"]
    # What the filter leaves out counts as delivered too: nothing stays pending.
    wait_for(lambda: get_session(transferd, sid)["pending_events"] == 0, message="pending_events to reach 0")


def test_progress_is_pushed_only_when_asked_for(transferd, origin, receiver):
    sid = create_delegated_session(transferd, receiver, events=["task.progress", "task.completed"])
    task = create_task(transferd, sid, download(origin.url("/bytes/1500000?rate=500000")))
    assert_success(wait_task(transferd, sid, task["id"]))
    pushed = wait_delivered(receiver, lambda es: "task.completed" in types_of(es))
    progress = [e for e in pushed if e["type"] == "task.progress"]
    assert progress and all(e["seq"] == 0 and e["task"] == task["id"] for e in progress)
    assert_signed(receiver.deliveries)
    assert "task.progress" not in types_of(all_events(transferd, sid))


def test_redeliver_sends_one_event_again(transferd, origin, receiver):
    sid = create_delegated_session(transferd, receiver, events=["task.completed"])
    run_task(transferd, sid, download(origin.url("/bytes/10")))
    (completed,) = wait_delivered(receiver, lambda es: len(es) == 1)
    response = transferd.post(events_path(sid, f"/{completed['id']}/redeliver"))
    assert response.status_code == 202, response.text
    again = wait_delivered(receiver, lambda es: len(es) == 2)
    assert again == [completed, completed]
    assert receiver.deliveries[0].webhook_id == receiver.deliveries[1].webhook_id == completed["id"]
    assert_signed(receiver.deliveries)
    manual = wait_for(lambda: [a for a in deliveries(transferd, sid)["deliveries"] if a["attempt"] == 0],
                      message="the redelivery in the deliveries list")
    assert manual[0]["event"] == completed["id"] and manual[0]["status"] == 200
    # An event the filter left out can be asked for too; unknown events are 404.
    created = all_events(transferd, sid)[0]
    assert transferd.post(events_path(sid, f"/{created['id']}/redeliver")).status_code == 202
    wait_delivered(receiver, lambda es: created in es)
    assert_problem(transferd.post(events_path(sid, "/evt_nope/redeliver")), 404)
    plain = unique("plain")
    assert put_session(transferd, plain, "default").status_code == 201
    assert_problem(transferd.post(events_path(plain, f"/{created['id']}/redeliver")), 409, "no_delegate")


def test_a_generated_secret_is_shown_once_and_signs(transferd, origin):
    with WebhookReceiver() as receiver:
        sid = unique("hooks")
        response = put_session(transferd, sid, "default", delegate={"url": receiver.url})
        assert response.status_code == 201, response.text
        secret = response.json()["delegate"]["secret"]
        assert secret.startswith("whsec_") and len(base64.b64decode(secret[6:])) >= 16
        assert "secret" not in get_session(transferd, sid)["delegate"]
        # Re-attaching with the same delegate and no secret keeps it (and does not show it).
        again = put_session(transferd, sid, "default", delegate={"url": receiver.url})
        assert again.status_code == 200 and "secret" not in again.json()["delegate"]
        run_task(transferd, sid, download(origin.url("/bytes/10")))
        wait_for(lambda: idle(delivered(receiver)), message="every event delivered")
        verifier = Webhook(secret)
        for d in receiver.deliveries:
            assert verifier.verify(d.body, d.headers) == d.json


def test_the_network_policy_applies_to_deliveries(start_transferd, api_token, receiver):
    td = start_transferd("--network-policy", "public-only", *FAST_RETRIES, api_token=api_token)
    sid = create_delegated_session(td, receiver, mode="default", events=["task.created"])
    create_task(td, sid, download("http://203.0.113.9/never", start=False))
    attempts = wait_for(lambda: len(a := deliveries(td, sid)["deliveries"]) >= 2 and a, timeout=20,
                        message="delivery attempts")
    assert all(a["status"] is None and "policy" in a["error"] for a in attempts), attempts
    assert receiver.deliveries == []


@pytest.mark.parametrize("how", ["sigterm", "kill9"])
def test_undelivered_events_are_delivered_after_a_restart(start_transferd, api_token, origin, receiver, how):
    # Retries far apart: whatever is undelivered at the restart is still waiting for its next try.
    td = start_transferd("--webhook-retry-schedule", "0,1h", api_token=api_token)
    receiver.respond_with(503, times=None)
    sid = create_delegated_session(td, receiver)
    run_task(td, sid, download(origin.url("/bytes/100")))
    slow = create_task(td, sid, download(origin.url("/bytes/2000000?rate=1000000")))
    receiver.wait_for(lambda ds: ds)  # the first attempt failed
    if how == "kill9":
        td.kill9()
    else:
        td.stop(signal=signal.SIGTERM)
    receiver.clear_responses()
    td.restart()

    assert_success(wait_task(td, sid, slow["id"]))
    journal = wait_events(td, sid, lambda es: types_of(es, slow["id"])[-1:] == ["task.completed"] and idle(es))
    assert_journal_order(journal, sid)
    pushed = wait_delivered(receiver, lambda es: len(es) >= len(journal))
    assert pushed == journal, (summary(pushed), summary(journal))
    assert_signed(receiver.deliveries)
    assert {d.webhook_id for d in receiver.deliveries if d.status == 503} == {journal[0]["id"]}
    wait_for(lambda: get_session(td, sid)["pending_events"] == 0, message="pending_events to reach 0")


def test_ephemeral_deliveries_are_listed_but_never_stored(transferd, origin, receiver):
    sid = create_delegated_session(transferd, receiver, mode="ephemeral")
    run_task(transferd, sid, download(origin.url("/bytes/10")))
    pushed = wait_delivered(receiver, idle)
    attempts = wait_for(lambda: len(a := deliveries(transferd, sid)["deliveries"]) == len(pushed) and a,
                        message="every attempt listed")
    assert [a["event"] for a in attempts] == [e["id"] for e in pushed]
    page = deliveries(transferd, sid, limit=2)
    assert len(page["deliveries"]) == 2 and page["next"]
    assert deliveries(transferd, sid, after=page["next"])["deliveries"] == attempts[2:]
    with sqlite3.connect(f"file:{transferd.data_dir / 'transferd.sqlite'}?mode=ro", uri=True) as db:
        for table in ("deliveries", "events"):
            assert db.execute(f"SELECT count(*) FROM {table} WHERE session = ?", (sid,)).fetchone() == (0,)


def test_an_invalidated_session_delivers_its_last_event_then_goes(transferd, origin, receiver):
    sid = create_delegated_session(transferd, receiver)
    run_task(transferd, sid, download(origin.url("/bytes/10")))
    assert transferd.delete(session_path(sid)).status_code == 202
    pushed = wait_delivered(receiver, lambda es: types_of(es)[-1:] == ["session.invalidated"])
    assert types_of(pushed) == DOWNLOAD_EVENTS + ["session.all_tasks_finished", "session.invalidated"]
    assert_journal_order(pushed, sid)
    assert_signed(receiver.deliveries)
    # Delivered is acknowledged: nothing keeps the invalidated session, and its identifier is free.
    wait_for(lambda: transferd.get(session_path(sid)).status_code == 404, timeout=10,
             message="the session to go once its events were delivered")
    assert put_session(transferd, sid, "background").status_code == 201

"""A delegate's `max_in_flight`: up to that many of a session's events out to the receiver at once,
each carrying its `seq` for the receiver to order; an event that fails waits out its retry without
holding back the others, is retried and delivered after them, and acknowledgement still advances in
`seq` order only. Validation of the field, and its echo on the session.
"""

from __future__ import annotations

import base64
import secrets

import pytest

from support.api import assert_problem, download, get_session, put_session, run_task, unique, wait_for
from support.events import all_events, assert_signed, delegate_for, deliveries, wait_events
from support.receiver import WebhookReceiver


@pytest.fixture
def receiver():
    with WebhookReceiver(secret="whsec_" + base64.b64encode(secrets.token_bytes(32)).decode()) as server:
        yield server


def accepted_seqs(deliveries) -> set[int]:
    return {d.json["seq"] for d in deliveries if d.status == 200}


def test_a_failing_event_does_not_hold_back_the_others(transferd, origin, receiver):
    # The events are journaled before the delegate is set, so it is offered them all at once.
    sid = unique("parallel")
    assert put_session(transferd, sid, "background").status_code == 201
    for size in (10, 11):
        run_task(transferd, sid, download(origin.url(f"/bytes/{size}")))
    journal = wait_events(transferd, sid, lambda es: es and es[-1]["type"] == "session.all_tasks_finished")
    seqs = {e["seq"] for e in journal}
    assert len(seqs) > 4

    # The first event to arrive is refused with a retry far beyond the test: every other one must
    # get through meanwhile.
    receiver.respond_with(503, times=1, retry_after=600)
    reattached = put_session(transferd, sid, "background", delegate=delegate_for(receiver, max_in_flight=4))
    assert reattached.status_code == 200 and reattached.json()["delegate"]["max_in_flight"] == 4
    failed = receiver.wait_for(lambda ds: [d for d in ds if d.status == 503])[0].json["seq"]
    receiver.wait_for(lambda ds: accepted_seqs(ds) == seqs - {failed}, timeout=30)
    assert_signed(receiver.deliveries)
    assert all(d.json["seq"] in seqs for d in receiver.deliveries)

    # Acknowledgement stops before the event that was not received.
    session = wait_for(lambda: (s := get_session(transferd, sid))["acked_through"] == failed - 1 and s,
                       message=f"acknowledgement through {failed - 1}")
    assert session["pending_events"] == max(seqs) - failed + 1

    # Another delegate (here: another path) is sent what was not delivered at once.
    again = delegate_for(receiver, max_in_flight=4)
    again["url"] += "/again"
    assert put_session(transferd, sid, "background", delegate=again).status_code == 200
    receiver.wait_for(lambda ds: failed in accepted_seqs(ds), timeout=30)
    wait_for(lambda: get_session(transferd, sid)["pending_events"] == 0, message="every event delivered")
    assert get_session(transferd, sid)["acked_through"] == max(seqs)
    assert [e["seq"] for e in all_events(transferd, sid)] == sorted(seqs)


def test_a_failing_event_is_retried_and_delivered_after_the_others(start_transferd, api_token, origin, receiver):
    # A retry 5 s after a failure: the other events, sent meanwhile, take milliseconds.
    td = start_transferd("--webhook-retry-schedule", "0,5s", api_token=api_token)
    sid = unique("parallel")
    assert put_session(td, sid, "background").status_code == 201
    for size in (10, 11, 12, 13):
        run_task(td, sid, download(origin.url(f"/bytes/{size}")))
    journal = wait_events(td, sid, lambda es: es and es[-1]["type"] == "session.all_tasks_finished")
    seqs = {e["seq"] for e in journal}
    assert len(seqs) > 8  # more than two rooms' worth: events are offered after the failure too

    receiver.respond_with(503, times=1)
    assert put_session(td, sid, "background", delegate=delegate_for(receiver, max_in_flight=4)).status_code == 200
    failure = receiver.wait_for(lambda ds: [d for d in ds if d.status == 503])[0]
    failed = failure.json["seq"]
    # Every other event is delivered while the failed one waits for its retry...
    receiver.wait_for(lambda ds: accepted_seqs(ds) == seqs - {failed}, timeout=30)
    assert [d.status for d in receiver.deliveries if d.json["seq"] == failed] == [503]
    # ...which then delivers it, with the same webhook-id, and delivery moves past them all.
    retried = receiver.wait_for(lambda ds: [d for d in ds if d.json["seq"] == failed and d.status == 200], timeout=30)[0]
    assert retried.webhook_id == failure.webhook_id
    assert_signed(receiver.deliveries)
    assert accepted_seqs(receiver.deliveries) == seqs
    session = wait_for(lambda: (s := get_session(td, sid))["pending_events"] == 0 and s, message="every event delivered")
    assert session["acked_through"] == max(seqs)
    wait_for(lambda: [(a["attempt"], a["status"]) for a in deliveries(td, sid)["deliveries"] if a["seq"] == failed]
             == [(1, 503), (2, 200)], message=f"both attempts of event {failed} listed")


def test_sixteen_in_flight_are_sent_at_once(transferd, origin, receiver):
    # More than the six connections to a host an engine session gets by default.
    sid = unique("parallel")
    assert put_session(transferd, sid, "background").status_code == 201
    for size in range(10, 16):
        run_task(transferd, sid, download(origin.url(f"/bytes/{size}")))
    journal = wait_events(transferd, sid, lambda es: len(es) > 16 and es[-1]["type"] == "session.all_tasks_finished")
    seqs = {e["seq"] for e in journal}

    # The receiver holds every answer for 5 s: 16 deliveries can only arrive meanwhile if they
    # are out together, and a 17th only once one of them is answered.
    receiver.respond_with(200, times=None, delay=5)
    assert put_session(transferd, sid, "background", delegate=delegate_for(receiver, max_in_flight=16)).status_code == 200
    receiver.wait_for(lambda ds: len(ds) >= 16, timeout=4)
    assert len(receiver.deliveries) == 16
    receiver.clear_responses()
    receiver.wait_for(lambda ds: accepted_seqs(ds) == seqs, timeout=30)


def test_one_at_a_time_is_the_default(transferd, receiver):
    sid = unique("parallel")
    response = put_session(transferd, sid, "background", delegate=delegate_for(receiver))
    assert response.status_code == 201 and response.json()["delegate"]["max_in_flight"] == 1


@pytest.mark.parametrize("value", [0, 65, -1, 1.5, "4", True])
def test_max_in_flight_must_be_an_integer_from_1_to_64(transferd, receiver, value):
    response = put_session(transferd, unique("parallel"), "background", delegate=delegate_for(receiver, max_in_flight=value))
    assert_problem(response, 422, field="delegate.max_in_flight")

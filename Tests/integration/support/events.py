"""Helpers for the event journal and the delegate (README "Events and webhooks"), shared by
the tests that check what transferd reported (events, webhooks, durability, the crash harness).

    sid = create_delegated_session(td, receiver, mode="background")
    task = create_task(td, sid, download(origin.url("/bytes/100")))
    events = wait_events(td, sid, lambda es: types_of(es, task["id"])[-1:] == ["task.completed"])
    with EventStream(td, sid) as stream:          # Server-Sent Events, read on a thread
        stream.wait_for(lambda es: len(es) >= 4)

Every wait is bounded, so a server that never sends fails a test instead of hanging the suite.
"""

from __future__ import annotations

import http.client
import json
import threading
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, TypeVar

from .api import put_session, session_path, unique
from .receiver import Delivery, WebhookReceiver
from .transferd import Transferd

T = TypeVar("T")

#: What one download that succeeds journals, in order.
DOWNLOAD_EVENTS = ["task.created", "task.response_received", "task.finished_downloading", "task.completed"]


def events_path(sid: str, suffix: str = "") -> str:
    return f"{session_path(sid)}/events{suffix}"


def read_events(td: Transferd, sid: str, after: int | None = 0, limit: int = 1000, wait: float | None = None,
                timeout: float = 10.0) -> dict:
    """GET …/events (one page); `after=None` leaves the cursor out."""
    query = [f"limit={limit}"]
    if after is not None:
        query.append(f"after={after}")
    if wait is not None:
        query.append(f"wait={wait}")
    response = td.get(events_path(sid, "?" + "&".join(query)), timeout=timeout + (wait or 0))
    assert response.status_code == 200, response.text
    return response.json()


def all_events(td: Transferd, sid: str, after: int = 0) -> list[dict]:
    """Every journaled event after `after`, page by page."""
    events: list[dict] = []
    while True:
        page = read_events(td, sid, after=after)["events"]
        events += page
        if len(page) < 1000:
            return events
        after = page[-1]["seq"]


def wait_events(td: Transferd, sid: str, predicate: Callable[[list[dict]], T], timeout: float = 30.0) -> list[dict]:
    """Long-polls the journal from the start until `predicate(events)` holds; returns the events."""
    deadline = time.monotonic() + timeout
    events = all_events(td, sid)
    while not predicate(events):
        left = deadline - time.monotonic()
        if left <= 0:
            raise AssertionError(f"journal of {sid} never matched within {timeout}s: {summary(events)}")
        after = events[-1]["seq"] if events else 0
        events += read_events(td, sid, after=after, wait=max(0.1, min(5.0, left)))["events"]
    return events


def of_type(events: Iterable[dict], kind: str, task: str | None = None) -> list[dict]:
    """The events of one type (and of one task, when given)."""
    return [e for e in events if e["type"] == kind and (task is None or e["task"] == task)]


def types_of(events: Iterable[dict], task: str | None = None) -> list[str]:
    """The event types, of one task when `task` is given."""
    return [e["type"] for e in events if task is None or e["task"] == task]


def summary(events: Iterable[dict]) -> list[tuple]:
    return [(e.get("seq"), e.get("type"), e.get("task")) for e in events]


def assert_journal_order(events: list[dict], sid: str) -> None:
    """seq is 1, 2, 3… without gaps, ids unique, every event of the session."""
    assert [e["seq"] for e in events] == list(range(events[0]["seq"], events[0]["seq"] + len(events))), summary(events)
    assert len({e["id"] for e in events}) == len(events), "event ids repeat"
    assert all(e["session"] == sid for e in events)


def ack(td: Transferd, sid: str, through: int) -> dict:
    response = td.post(events_path(sid, "/ack"), json={"through": through})
    assert response.status_code == 200, response.text
    return response.json()


# MARK: the delegate


def delegate_for(receiver: WebhookReceiver, events: list[str] | None = None, **extra: Any) -> dict:
    """A `delegate` member pointing at `receiver`, with its secret."""
    delegate: dict[str, Any] = {"url": receiver.url, **extra}
    if receiver.secret:
        delegate["secret"] = receiver.secret
    if events is not None:
        delegate["events"] = events
    return delegate


def create_delegated_session(td: Transferd, receiver: WebhookReceiver, sid: str | None = None,
                             mode: str = "background", events: list[str] | None = None,
                             configuration: dict | None = None) -> str:
    sid = sid or unique(f"hooks-{mode}")
    response = put_session(td, sid, mode, configuration, delegate=delegate_for(receiver, events))
    assert response.status_code == 201, response.text
    return sid


def delivered(receiver: WebhookReceiver, status: int = 200) -> list[dict]:
    """The event documents the receiver accepted (answered `status`), in arrival order."""
    return [d.json for d in receiver.deliveries if d.status == status]


def wait_delivered(receiver: WebhookReceiver, predicate: Callable[[list[dict]], Any],
                   timeout: float = 30.0) -> list[dict]:
    """Waits until the accepted event documents satisfy `predicate`; returns them."""
    return receiver.wait_for(lambda ds: (events := [d.json for d in ds if d.status == 200]) and predicate(events) and events,
                             timeout=timeout)


def assert_signed(deliveries: Iterable[Delivery]) -> None:
    """Every delivery carries Standard Webhooks headers that verify with the receiver's secret, and
    its webhook-id is the event's id."""
    for d in deliveries:
        assert d.valid, (d.error, d.headers)
        assert d.webhook_id == d.json["id"], (d.webhook_id, d.json)


def deliveries(td: Transferd, sid: str, after: str | None = None, limit: int = 1000) -> dict:
    query = f"?limit={limit}" + (f"&after={after}" if after else "")
    response = td.get(f"{session_path(sid)}/deliveries{query}")
    assert response.status_code == 200, response.text
    return response.json()


# MARK: Server-Sent Events


@dataclass
class ServerSentEvent:
    id: str | None
    event: str | None
    data: str
    document: Any = field(default=None)


class EventStream:
    """One `Accept: text/event-stream` request to …/events, read on a thread into `events`
    (WHATWG HTML §9.2.6 parsing: `id:`, `event:`, `data:` lines, a blank line ends an event,
    lines starting with `:` are comments — counted in `comments`)."""

    def __init__(self, td: Transferd, sid: str, last_event_id: str | int | None = None, query: str = "",
                 timeout: float = 60.0):
        host, port = td.address
        self.connection = http.client.HTTPConnection(host, port, timeout=timeout)
        headers = {"Accept": "text/event-stream", **td.headers()}
        if last_event_id is not None:
            headers["Last-Event-ID"] = str(last_event_id)
        self.connection.request("GET", events_path(sid, query), headers=headers)
        self.response = self.connection.getresponse()
        self.status = self.response.status
        self.headers = {k.lower(): v for k, v in self.response.getheaders()}
        self.events: list[ServerSentEvent] = []
        self.comments = 0
        self.ended = False  # the server finished the response
        self._changed = threading.Condition()
        self._thread = threading.Thread(target=self._read, daemon=True, name=f"sse-{sid}")
        if self.status == 200:
            self._thread.start()

    def __enter__(self) -> "EventStream":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        try:
            self.connection.sock and self.connection.sock.shutdown(2)
        except OSError:
            pass
        self.connection.close()
        if self._thread.is_alive():
            self._thread.join(timeout=5)

    @property
    def journaled(self) -> list[dict]:
        """The documents of events with an `id:` (journaled ones; `task.progress` has none)."""
        with self._changed:
            return [e.document for e in self.events if e.id is not None]

    def wait_for(self, predicate: Callable[["EventStream"], T], timeout: float = 30.0) -> T:
        deadline = time.monotonic() + timeout
        with self._changed:
            while not (result := predicate(self)):
                left = deadline - time.monotonic()
                if left <= 0 or (self.ended and not self._thread.is_alive()):
                    raise AssertionError(f"stream never matched within {timeout}s (ended: {self.ended}): "
                                         f"{[(e.id, e.event) for e in self.events]}, {self.comments} comments")
                self._changed.wait(min(left, 0.5))
            return result

    def _read(self) -> None:
        fields: dict[str, str] = {}
        data: list[str] = []
        buffer = b""
        try:
            while True:
                chunk = self.response.read1(65536)
                if not chunk:
                    break
                buffer += chunk
                while b"\n" in buffer:
                    raw, buffer = buffer.split(b"\n", 1)
                    line = raw.decode("utf-8").rstrip("\r")
                    if line == "":
                        if data or fields:
                            self._add(fields, data)
                        fields, data = {}, []
                    elif line.startswith(":"):
                        with self._changed:
                            self.comments += 1
                            self._changed.notify_all()
                    else:
                        name, _, value = line.partition(":")
                        value = value[1:] if value.startswith(" ") else value
                        if name == "data":
                            data.append(value)
                        else:
                            fields[name] = value
        except Exception:  # noqa: BLE001 — closed by the test: http.client fails in several ways
            pass
        with self._changed:
            self.ended = True
            self._changed.notify_all()

    def _add(self, fields: dict[str, str], data: list[str]) -> None:
        text = "\n".join(data)
        try:
            document = json.loads(text)
        except ValueError:
            document = None
        with self._changed:
            self.events.append(ServerSentEvent(fields.get("id"), fields.get("event"), text, document))
            self._changed.notify_all()

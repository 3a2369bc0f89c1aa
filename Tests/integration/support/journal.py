"""Reading a session's event journal, for tests that check what transferd reported.

    events = read_events(td, sid)                       # every event after seq 0, in order
    [e["data"]["offset"] for e in of_type(events, "task.resumed_at_offset", task=tid)]
"""

from __future__ import annotations

from typing import Any

from support.api import session_path
from support.transferd import Transferd


def read_events(td: Transferd, sid: str, after: int = 0, page: int = 1000) -> list[dict[str, Any]]:
    """Every journaled event of the session after `after`, following pages to the end."""
    events: list[dict[str, Any]] = []
    while True:
        response = td.get(session_path(sid) + f"/events?after={after}&limit={page}")
        assert response.status_code == 200, response.text
        batch = response.json()["events"]
        events += batch
        if len(batch) < page:
            return events
        after = batch[-1]["seq"]


def of_type(events: list[dict[str, Any]], kind: str, task: str | None = None) -> list[dict[str, Any]]:
    """The events of one type (and of one task, when given)."""
    return [e for e in events if e["type"] == kind and (task is None or e["task"] == task)]

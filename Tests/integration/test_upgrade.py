"""Upgrading on an existing data directory: a directory written by transferd 0.1.0, left by a
SIGKILL in the middle of two downloads, opens with the binary under test and carries on.

The data directory is `fixtures/upgrade-0.1.0.tar.gz`, made by `fixtures/make_upgrade_fixture.py`
with the 0.1.0 release (its docstring lists what is in it); `fixtures/upgrade-0.1.0.json` records
what that run saw. Each test unpacks it into a temporary directory, points the stored URLs at this
run's origin and webhook receiver (the ports differ from run to run) and the stored absolute paths
of files (task results name them) at the directory it unpacked to — every text column of every
table is rewritten that way, nothing else: the resume key and everything signed with it stay as
they were — starts an origin that serves the same bytes and ETags as then, and starts transferd on it.

The fixture's tasks were made with the largest `timeout_resource_s` (a year); past that age of the
fixture they would time out, and it has to be made again with the old release.
"""

from __future__ import annotations

import json
import re
import sqlite3
import tarfile
from pathlib import Path

import pytest

from support.api import (action, assert_success, assert_task_error, create_task, data, fetch_sha256, get_session,
                         get_task, run_task, session_path, task_path, wait_task)
from support.events import all_events, deliveries, events_path, of_type, read_events
from support.origin import Origin
from support.receiver import WebhookReceiver

FIXTURES = Path(__file__).resolve().parent / "fixtures"
NAME = "upgrade-0.1.0"
MANIFEST = json.loads((FIXTURES / f"{NAME}.json").read_text())
BACKGROUND = "com.example.upgrade.background"
DEFAULT = "com.example.upgrade.default"
# Far longer than the fixture's age, so that the retention sweep keeps its completed tasks, events
# and blob.
RETENTION = "3650d"
_ADDRESS = re.compile(r"127\.0\.0\.1:(\d+)(?!\d)")


class Moves:
    """What changed between the fixture's run and this one: addresses (`127.0.0.1:<port>`) and the
    path of the data directory."""

    def __init__(self, addresses: dict[str, str], data_dir: tuple[str, str]):
        self.addresses = addresses
        self.data_dir = data_dir

    def __call__(self, text: str) -> str:
        text = _ADDRESS.sub(lambda m: self.addresses.get(m[0], m[0]), text)
        old, new = self.data_dir
        return text.replace(old + "/", new + "/")


def rewrite_database(path: Path, moves: Moves) -> int:
    """Applies `moves` to every text column of every table; returns how many values changed.
    (Opening the database replays its write-ahead log, as transferd's own open would.)"""
    changed = 0
    db = sqlite3.connect(path)
    try:
        db.create_function("moved", 1,
                           lambda value: moves(value) if isinstance(value, str) else value,
                           deterministic=True)
        tables = [row[0] for row in db.execute(
            "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'")]
        for table in tables:
            for _, column, declared, *_ in db.execute(f'PRAGMA table_info("{table}")').fetchall():
                if declared.upper() != "TEXT":
                    continue
                cursor = db.execute(f'UPDATE "{table}" SET "{column}" = moved("{column}") '
                                    f'WHERE "{column}" IS NOT moved("{column}")')
                changed += cursor.rowcount
        db.commit()
    finally:
        db.close()
    return changed


class Upgraded:
    """transferd (the binary under test) running on the unpacked fixture, with its origin and its
    webhook receiver."""

    def __init__(self, td, origin: Origin, receiver: WebhookReceiver, moves: Moves):
        self.td, self.origin, self.receiver, self.moves = td, origin, receiver, moves

    def expected(self, value):
        """A JSON value from the manifest as it reads after the moves."""
        return json.loads(self.moves(json.dumps(value)))


@pytest.fixture
def upgraded(tmp_path, origin, start_transferd, api_token) -> Upgraded:
    with tarfile.open(FIXTURES / f"{NAME}.tar.gz") as tar:
        if hasattr(tarfile, "data_filter"):
            tar.extractall(tmp_path, filter="data")
        else:  # pragma: no cover — Python without extraction filters
            tar.extractall(tmp_path)
    data_dir = tmp_path / "data"
    secret = MANIFEST["sessions"][BACKGROUND]["delegate_secret"]
    with WebhookReceiver(secret=secret) as receiver:
        # Every delivery fails, as when the fixture was made: nothing gets acknowledged by delivery,
        # so what the journal reports as pending does not depend on timing.
        receiver.respond_with(503, times=None)
        moves = Moves({MANIFEST["origin"]: f"127.0.0.1:{origin.port}",
                       MANIFEST["receiver"]: f"127.0.0.1:{receiver.port}"},
                      (MANIFEST["data_dir"], str(data_dir)))
        assert rewrite_database(data_dir / "transferd.sqlite", moves) > 0
        td = start_transferd("--retention", RETENTION, api_token=api_token, data_dir=data_dir)
        yield Upgraded(td, origin, receiver, moves)


def known(value, like):
    """`value` with only the keys `like` has, at every depth: settings added since may come too
    (`retry.methods` inside `retry`, say)."""
    if isinstance(like, dict) and isinstance(value, dict):
        return {k: known(value.get(k), v) for k, v in like.items()}
    return value


def test_it_is_ready_with_the_sessions_their_modes_and_configurations(upgraded):
    td = upgraded.td
    ready = td.get("/readyz", token=None)
    assert ready.status_code == 200, ready.text
    listed = {s["identifier"]: s for s in td.get("/v1/sessions").json()["sessions"]}
    assert sorted(listed) == [BACKGROUND, DEFAULT]
    for sid, before in MANIFEST["sessions"].items():
        for session in (listed[sid], get_session(td, sid)):
            assert session["mode"] == before["mode"]
            assert session["state"] == "active"
            # Every setting stored then reads back the same (settings added since may come too).
            old = upgraded.expected(before["configuration"])
            assert known(session["configuration"], old) == old, session["configuration"]
            # The delegate reads back as stored; one stored before `max_in_flight` existed
            # delivers one event at a time.
            stored = upgraded.expected(before["delegate"])
            if stored is None:
                assert session["delegate"] is None
            else:
                assert {k: session["delegate"].get(k) for k in stored} == stored, session["delegate"]
                assert session["delegate"].get("max_in_flight", 1) == 1
            assert session["tasks"]["total"] == len(before["tasks"])
    assert listed[BACKGROUND]["delegate"]["url"] == upgraded.receiver.url
    assert listed[BACKGROUND]["delegate"]["disabled"] is False


def test_the_completed_download_and_its_file(upgraded):
    td = upgraded.td
    before = MANIFEST["sessions"][BACKGROUND]["tasks"]["done"]
    expected = MANIFEST["downloads"]["done"]
    task = assert_success(get_task(td, BACKGROUND, "done"))
    # As before, with the digests a download reports since (its sha256, then the only one) and
    # what of the origin's declared digests was verified (nothing, then).
    assert task["result"] == {**upgraded.expected(before["result"]), "digests": {"sha256": expected["sha256"]},
                              "verified": []}
    assert task["download"]["digests"] == ["sha256"]
    assert task["result"]["sha256"] == expected["sha256"] and task["result"]["size"] == expected["size"]
    assert task["description"] == "completed before the upgrade"
    assert task["request"]["url"] == upgraded.origin.url(expected["path"])
    assert task["response"]["status"] == 200
    assert task["response"]["headers"]["ETag"] == expected["etag"]
    response, digest, size = fetch_sha256(td, task_path(BACKGROUND, "done", "/file"))
    assert response.status_code == 200
    assert (digest, size) == (expected["sha256"], expected["size"])
    # The cookie task of the default session kept its body too.
    body = td.get(task_path(DEFAULT, "cookies", "/body"))
    assert body.status_code == 200 and body.json() == {"set": {"upgrade": "1", "flavour": "vanilla"}}


def test_unacknowledged_events_are_still_there_in_order(upgraded):
    td = upgraded.td
    for sid, before in MANIFEST["sessions"].items():
        old = upgraded.expected(before["events"])
        events = all_events(td, sid)
        # The same documents — id, seq, type, task, time and data — in the same order; whatever
        # happened after the start (the resumed download, the interruption) comes after them.
        assert events[:len(old)] == old, [(e["seq"], e["type"], e["task"]) for e in events]
        assert all(e["seq"] > old[-1]["seq"] for e in events[len(old):])
        assert [e["seq"] for e in events] == list(range(1, len(events) + 1))
        # Without a cursor, reading starts after what was acknowledged then.
        acked = before["acked_through"]
        assert get_session(td, sid)["acked_through"] == acked
        page = read_events(td, sid, after=None)
        assert page["events"] and page["events"][0]["seq"] == acked + 1, page
        assert page["events"][:len(old) - acked] == old[acked:]
        assert page["pending_events"] >= len(old) - acked, page
    # Acknowledging continues from there.
    last = MANIFEST["sessions"][BACKGROUND]["events"][-1]["seq"]
    response = td.post(events_path(BACKGROUND, "/ack"), json={"through": last})
    assert response.status_code == 200, response.text
    assert response.json()["acked_through"] == last
    assert all(e["seq"] > last for e in read_events(td, BACKGROUND, after=None)["events"])


def test_the_delegate_keeps_its_secret_and_its_deliveries(upgraded):
    td, receiver = upgraded.td, upgraded.receiver
    before = MANIFEST["sessions"][BACKGROUND]
    listed = deliveries(td, BACKGROUND)["deliveries"]
    for attempt in before["deliveries"]:
        assert any((d["event"], d["seq"], d["attempt"], d["status"], d["at"]) ==
                   (attempt["event"], attempt["seq"], attempt["attempt"], attempt["status"], attempt["at"])
                   for d in listed), (attempt, listed)
    # A redelivery is signed with the secret stored then and carries the event as journaled.
    first = before["events"][0]
    response = td.post(events_path(BACKGROUND, f"/{first['id']}/redeliver"))
    assert response.status_code == 202, response.text
    delivery = receiver.wait_for(lambda ds: next((d for d in ds if d.webhook_id == first["id"]), None), timeout=20)
    assert delivery.valid, delivery.error
    assert delivery.json == upgraded.expected(first)
    # Whatever else reached the receiver is signed with that secret too, and in journal order.
    assert all(d.valid for d in receiver.deliveries), [(d.webhook_id, d.error) for d in receiver.deliveries]


def test_the_killed_background_download_resumes_with_a_range_request(upgraded):
    td, origin = upgraded.td, upgraded.origin
    expected = MANIFEST["downloads"]["partial"]
    done = assert_success(wait_task(td, BACKGROUND, "partial", timeout=25))
    assert done["result"]["size"] == expected["size"]
    assert done["result"]["sha256"] == expected["sha256"]
    response, digest, size = fetch_sha256(td, task_path(BACKGROUND, "partial", "/file"))
    assert response.status_code == 200 and (digest, size) == (expected["sha256"], expected["size"])
    # It continued the partial file: one request, for the rest, on the validator stored then.
    path = expected["path"].split("?")[0]
    requests = [r for r in origin.requests if r.path == path]
    assert len(requests) == 1, [(r.target, dict(r.headers)) for r in requests]
    resumed = requests[0]
    offset = expected["size"] - resumed.bytes_sent
    assert resumed.status == 206
    assert resumed.headers["Range"] == f"bytes={offset}-"
    assert resumed.headers["If-Range"] == expected["etag"]
    assert 0 < offset <= MANIFEST["partial_bytes_on_disk"]
    events = of_type(all_events(td, BACKGROUND), "task.resumed_at_offset", "partial")
    assert [e["data"]["offset"] for e in events] == [offset]


def test_the_default_sessions_running_task_is_interrupted_and_its_cookies_kept(upgraded):
    td, origin = upgraded.td, upgraded.origin
    task = get_task(td, DEFAULT, "running")
    if task["state"] != "completed":
        task = wait_task(td, DEFAULT, "running", timeout=10)
    assert_task_error(task, "interrupted")
    assert task["result"] is None
    assert task["error"]["resume_data"], task["error"]  # it had bytes on disk and an ETag
    completed = of_type(all_events(td, DEFAULT), "task.completed", "running")
    assert len(completed) == 1 and completed[0]["data"]["error"]["code"] == "interrupted"
    # Nothing fetched it again.
    assert not [r for r in origin.requests if r.path == MANIFEST["downloads"]["running"]["path"].split("?")[0]]

    kept = td.get(session_path(DEFAULT) + "/cookies").json()["cookies"]
    assert kept == MANIFEST["sessions"][DEFAULT]["cookies"]
    echo = assert_success(run_task(td, DEFAULT, data(origin.url("/cookies/echo"))))
    body = td.get(task_path(DEFAULT, echo["id"], "/body")).json()
    assert body["cookies"] == {"upgrade": "1", "flavour": "vanilla"}


def test_the_suspended_task_stays_suspended_and_resumes(upgraded):
    td, origin = upgraded.td, upgraded.origin
    expected = MANIFEST["downloads"]["later"]
    task = get_task(td, BACKGROUND, "later")
    assert task["state"] == "suspended", task
    assert not [r for r in origin.requests if r.path == expected["path"].split("?")[0]]
    action(td, BACKGROUND, "later", "resume")
    done = assert_success(wait_task(td, BACKGROUND, "later"))
    assert done["result"]["sha256"] == expected["sha256"] and done["result"]["size"] == expected["size"]


def test_the_blob_is_kept(upgraded):
    td, origin = upgraded.td, upgraded.origin
    before = MANIFEST["blob"]
    response = td.get(f"/v1/blobs/{before['id']}")
    assert response.status_code == 200, response.text
    blob = response.json()
    assert (blob["id"], blob["size"], blob["sha256"]) == (before["id"], before["size"], before["sha256"])
    # Its bytes are intact: upload them.
    task = create_task(td, DEFAULT, {"kind": "upload", "request": {"url": origin.url("/upload")},
                                     "upload": {"from_blob": before["id"]}})
    assert_success(wait_task(td, DEFAULT, task["id"]))
    assert origin.uploads[-1].length == before["length"]
    assert origin.uploads[-1].sha256 == Origin.expected_sha256(before["length"], before["seed"]) == before["sha256"]

"""Creating tasks (README "Tasks"; `POST …/tasks` in openapi.yaml): 201 with Location, validation as 422 problem documents that
name the field, client-chosen ids, Idempotency-Key, `start: false`, `tasks:batch` all-or-nothing,
and unknown sessions."""

from __future__ import annotations

import json
import time

import pytest

from support.api import (action, assert_problem, assert_success, create_batch, create_session,
                         create_task, data, download, get_task, post_task, task_path, tasks_path,
                         wait_task, wait_tasks)
from support.origin import Origin


def task_list(td, sid) -> list[dict]:
    response = td.get(tasks_path(sid))
    assert response.status_code == 200, response.text
    return response.json()["tasks"]


# MARK: the happy path


def test_create_is_201_with_location_and_the_task(transferd, origin):
    sid = create_session(transferd)
    url = origin.url("/bytes/1000?seed=create")
    response = post_task(transferd, sid, download(url, description="first"))
    assert response.status_code == 201, response.text
    task = response.json()
    assert task["id"] and task["session"] == sid and task["kind"] == "download"
    assert task["state"] == "running"
    assert task["request"]["url"] == url and task["request"]["method"] == "GET"
    assert task["priority"] == 0.5 and task["description"] == "first"
    assert task["created_at"].endswith("Z")
    location = response.headers["Location"]
    assert location == task_path(sid, task["id"])
    fetched = transferd.get(location)
    assert fetched.status_code == 200 and fetched.json()["id"] == task["id"]
    assert_success(wait_task(transferd, sid, task["id"]))


# MARK: validation


def valid(**overrides):
    body = {"kind": "download", "request": {"url": "http://127.0.0.1:9/x"}}
    body.update(overrides)
    return body


def with_request(**request):
    return {"kind": "download", "request": {"url": "http://127.0.0.1:9/x", **request}}


# (id, body, field, code or None for "any 422 code")
INVALID = [
    ("missing-kind", {"request": {"url": "http://127.0.0.1:9/x"}}, "kind", None),
    ("bad-kind", valid(kind="stream"), "kind", None),
    ("kind-not-string", valid(kind=1), "kind", None),
    ("missing-request", {"kind": "download"}, "request", None),
    ("request-not-object", valid(request="http://127.0.0.1:9/x"), "request", None),
    ("missing-url", valid(request={}), "request.url", None),
    ("url-not-string", valid(request={"url": 5}), "request.url", None),
    ("malformed-url", valid(request={"url": "not a url"}), "request.url", "bad_url"),
    ("url-without-host", valid(request={"url": "http://"}), "request.url", "bad_url"),
    ("relative-url", valid(request={"url": "/just/a/path"}), "request.url", "bad_url"),
    ("file-url", valid(request={"url": "file:///etc/passwd"}), "request.url", "unsupported_url"),
    ("gopher-url", valid(request={"url": "gopher://127.0.0.1:70/1"}), "request.url", "unsupported_url"),
    ("dict-url", valid(request={"url": "dict://127.0.0.1:2628/d:x"}), "request.url", "unsupported_url"),
    ("ftp-url", valid(request={"url": "ftp://127.0.0.1/x"}), "request.url", "unsupported_url"),
    ("header-value-cr", with_request(headers={"X-A": "a\rb"}), "request.headers.X-A", None),
    ("header-value-lf", with_request(headers={"X-A": "a\nInjected: 1"}), "request.headers.X-A", None),
    ("header-value-crlf", with_request(headers={"X-A": "a\r\nInjected: 1"}), "request.headers.X-A", None),
    ("header-value-nul", with_request(headers={"X-A": "a\u0000b"}), "request.headers.X-A", None),
    ("header-name-crlf", with_request(headers={"X-A\r\nX-B": "v"}), "request.headers.X-A\r\nX-B", None),
    ("header-name-lf", with_request(headers={"X-A\nX-B": "v"}), "request.headers.X-A\nX-B", None),
    ("header-name-nul", with_request(headers={"X-A\u0000": "v"}), "request.headers.X-A\u0000", None),
    ("header-name-empty", with_request(headers={"": "v"}), "request.headers.", None),
    ("header-name-space", with_request(headers={"Bad Name": "v"}), "request.headers.Bad Name", None),
    ("header-name-colon", with_request(headers={"X-A:": "v"}), "request.headers.X-A:", None),
    ("header-value-number", with_request(headers={"X-A": 1}), "request.headers.X-A", None),
    ("header-host", with_request(headers={"Host": "evil.example"}), "request.headers.Host", None),
    ("header-content-length", with_request(headers={"Content-Length": "5"}), "request.headers.Content-Length", None),
    ("header-transfer-encoding", with_request(headers={"transfer-encoding": "chunked"}),
     "request.headers.transfer-encoding", None),
    ("header-connection", with_request(headers={"Connection": "close"}), "request.headers.Connection", None),
    ("bad-method", with_request(method="GE T"), "request.method", None),
    ("unknown-request-field", with_request(verb="GET"), "request.verb", "unknown_field"),
    ("body-both", with_request(method="POST", body={"text": "a", "base64": "YQ=="}), "request.body", None),
    ("body-bad-base64", with_request(method="POST", body={"base64": "!!!"}), "request.body.base64", None),
    ("body-unknown", with_request(method="POST", body={"blobby": "x"}), "request.body.blobby", None),
    ("priority-high", valid(priority=1.5), "priority", None),
    ("priority-negative", valid(priority=-0.1), "priority", None),
    ("priority-string", valid(priority="high"), "priority", None),
    ("begin-at-words", valid(begin_at="tomorrow"), "begin_at", None),
    ("begin-at-number", valid(begin_at=1767225600), "begin_at", None),
    ("begin-at-no-zone", valid(begin_at="2026-01-31 12:00"), "begin_at", None),
    ("start-string", valid(start="yes"), "start", None),
    ("description-number", valid(description=3), "description", None),
    ("bad-id", valid(id="no spaces!"), "id", None),
    ("dot-id", valid(id=".."), "id", None),
    ("long-id", valid(id="x" * 201), "id", None),
    ("checksum-short", valid(checksum={"sha256": "abc"}), "checksum.sha256", None),
    ("checksum-two", valid(checksum={"sha256": "0" * 64, "md5": "0" * 32}), "checksum", None),
    ("checksum-unknown", valid(checksum={"sha384": "0" * 96}), "checksum.sha384", "unknown_field"),
    ("download-unknown", valid(download={"destination": "/tmp/x", "path": "/tmp/x"}), "download.path", "unknown_field"),
    ("unknown-field", valid(colour="red"), "colour", "unknown_field"),
]


@pytest.mark.parametrize("body,field,code", [case[1:] for case in INVALID], ids=[case[0] for case in INVALID])
def test_invalid_task_is_422_naming_the_field(shared_transferd, body, field, code):
    td = shared_transferd
    sid = create_session(td)
    problem = assert_problem(post_task(td, sid, body), 422, code, field=field)
    assert problem.get("field") == field, problem
    assert task_list(td, sid) == []


def test_the_body_must_be_a_json_object(transferd):
    sid = create_session(transferd)
    assert_problem(transferd.post(tasks_path(sid), data=b"{not json", headers={"Content-Type": "application/json"}),
                   400, "invalid_json")
    assert_problem(transferd.post(tasks_path(sid), json=[valid()]), 422)
    assert_problem(transferd.post(tasks_path(sid)), 400)
    assert task_list(transferd, sid) == []


def test_json_nested_past_64_levels_is_json_too_deep(transferd, origin):
    sid = create_session(transferd)
    body = {"kind": "download", "request": {"url": origin.url("/bytes/1")}, "description": "x"}
    deep = json.dumps(body)[:-1] + ', "extra": ' + "[" * 63 + "]" * 63 + "}"  # 64 levels: refused as a field
    assert_problem(transferd.post(tasks_path(sid), data=deep.encode(), headers={"Content-Type": "application/json"}), 422)
    deeper = json.dumps(body)[:-1] + ', "extra": ' + "[" * 64 + "]" * 64 + "}"  # 65 levels
    problem = assert_problem(transferd.post(tasks_path(sid), data=deeper.encode(), headers={"Content-Type": "application/json"}),
                             400, "json_too_deep")
    assert "64" in problem["detail"], problem
    assert task_list(transferd, sid) == []


def test_task_in_unknown_session_is_404(transferd):
    assert_problem(post_task(transferd, "no-such-session", valid()), 404, "not_found")
    assert_problem(transferd.post(tasks_path("no-such-session") + ":batch", json={"tasks": [valid()]}), 404)
    assert_problem(transferd.get(tasks_path("no-such-session")), 404)
    assert_problem(transferd.get(task_path("no-such-session", "abc")), 404)


def test_unknown_task_is_404(transferd):
    sid = create_session(transferd)
    for method, suffix in [("GET", ""), ("PATCH", ""), ("DELETE", ""), ("POST", "/resume"),
                           ("POST", "/suspend"), ("POST", "/cancel"), ("GET", "/body"), ("GET", "/file")]:
        kwargs = {"json": {"priority": 0.2}} if method == "PATCH" else {}
        assert_problem(transferd.request(method, task_path(sid, "nope") + suffix, **kwargs), 404)


# MARK: client-chosen ids


def test_client_chosen_id_and_duplicate_is_409(transferd, origin):
    sid = create_session(transferd)
    response = post_task(transferd, sid, download(origin.url("/bytes/10"), id="my-task.1_A"))
    assert response.status_code == 201, response.text
    assert response.json()["id"] == "my-task.1_A"
    assert response.headers["Location"] == task_path(sid, "my-task.1_A")
    assert_success(wait_task(transferd, sid, "my-task.1_A"))
    assert_problem(post_task(transferd, sid, download(origin.url("/bytes/20"), id="my-task.1_A")), 409, "task_exists")
    assert_problem(post_task(transferd, sid, data(origin.url("/echo"), id="my-task.1_A")), 409, "task_exists")
    assert len(task_list(transferd, sid)) == 1
    assert len(origin.requests) == 1
    # Ids are unique per session: another session may use the same id.
    other = create_session(transferd)
    assert post_task(transferd, other, download(origin.url("/bytes/10"), id="my-task.1_A")).status_code == 201


# MARK: Idempotency-Key


def test_idempotency_key_replays_the_same_task(transferd, origin):
    sid = create_session(transferd)
    body = download(origin.url("/bytes/500?seed=idem"))
    first = post_task(transferd, sid, body, headers={"Idempotency-Key": "key-1"})
    assert first.status_code == 201, first.text
    assert first.headers.get("Idempotent-Replayed", "false") != "true"
    tid = first.json()["id"]
    wait_task(transferd, sid, tid)
    for _ in range(2):
        again = post_task(transferd, sid, body, headers={"Idempotency-Key": "key-1"})
        assert again.status_code == 201, again.text
        assert again.headers.get("Idempotent-Replayed") == "true"
        assert again.json()["id"] == tid
        assert again.headers["Location"] == task_path(sid, tid)
    assert [t["id"] for t in task_list(transferd, sid)] == [tid]
    assert len(origin.requests) == 1  # one task, one transfer
    # Another key with the same body is another task.
    other = post_task(transferd, sid, body, headers={"Idempotency-Key": "key-2"})
    assert other.status_code == 201 and other.json()["id"] != tid


def test_idempotency_key_with_another_body_is_422(transferd, origin):
    sid = create_session(transferd)
    first = create_task(transferd, sid, download(origin.url("/bytes/10"), start=False), headers={"Idempotency-Key": "k"})
    assert_problem(post_task(transferd, sid, download(origin.url("/bytes/11"), start=False),
                             headers={"Idempotency-Key": "k"}), 422, "idempotency_key_reused")
    assert [t["id"] for t in task_list(transferd, sid)] == [first["id"]]


# MARK: start: false


def test_start_false_is_suspended_until_resumed(transferd, origin):
    sid = create_session(transferd)
    task = create_task(transferd, sid, download(origin.url("/bytes/4096?seed=later"), start=False))
    assert task["state"] == "suspended"
    time.sleep(1.0)
    assert get_task(transferd, sid, task["id"])["state"] == "suspended"
    assert origin.connections_opened == 0 and origin.requests == []
    resumed = action(transferd, sid, task["id"], "resume")
    assert resumed["state"] in ("running", "completed")
    done = assert_success(wait_task(transferd, sid, task["id"]))
    assert done["result"]["sha256"] == Origin.expected_sha256(4096, "later")
    assert len(origin.requests) == 1


# MARK: tasks:batch


def test_batch_creates_all_in_order(transferd, origin):
    sid = create_session(transferd)
    bodies = [download(origin.url(f"/bytes/{100 + i}?seed=b{i}"), id=f"b{i}") for i in range(5)]
    bodies.append(data(origin.url("/echo"), id="b-data"))
    tasks = create_batch(transferd, sid, bodies)
    assert [t["id"] for t in tasks] == [f"b{i}" for i in range(5)] + ["b-data"]
    done = wait_tasks(transferd, sid, [t["id"] for t in tasks])
    for i, task in enumerate(done[:5]):
        assert_success(task)
        assert task["result"]["sha256"] == Origin.expected_sha256(100 + i, f"b{i}")
    assert_success(done[5])


@pytest.mark.parametrize("bad,field", [
    ({"kind": "download", "request": {"url": "file:///etc/passwd"}}, "tasks[1].request.url"),
    ({"kind": "download", "request": {"url": "http://127.0.0.1:9/", "headers": {"X": "a\r\nb: c"}}},
     "tasks[1].request.headers.X"),
    ({"kind": "download"}, "tasks[1].request"),
    ({"kind": "download", "request": {"url": "http://127.0.0.1:9/"}, "priority": 7}, "tasks[1].priority"),
])
def test_batch_with_one_invalid_element_creates_nothing(transferd, origin, bad, field):
    sid = create_session(transferd)
    bodies = [download(origin.url("/bytes/10")), bad, download(origin.url("/bytes/20"))]
    response = transferd.post(tasks_path(sid) + ":batch", json={"tasks": bodies})
    problem = assert_problem(response, 422, field=field)
    assert problem.get("field") == field, problem
    time.sleep(0.3)
    assert task_list(transferd, sid) == []
    assert origin.requests == []


def test_batch_with_duplicate_ids_is_409_and_creates_nothing(transferd, origin):
    sid = create_session(transferd)
    bodies = [download(origin.url("/bytes/10"), id="same"), download(origin.url("/bytes/20"), id="other"),
              download(origin.url("/bytes/30"), id="same")]
    assert_problem(transferd.post(tasks_path(sid) + ":batch", json={"tasks": bodies}), 409, "task_exists")
    create_task(transferd, sid, download(origin.url("/bytes/40"), id="taken", start=False))
    bodies = [download(origin.url("/bytes/10"), id="fresh"), download(origin.url("/bytes/20"), id="taken")]
    assert_problem(transferd.post(tasks_path(sid) + ":batch", json={"tasks": bodies}), 409, "task_exists")
    time.sleep(0.3)
    assert [t["id"] for t in task_list(transferd, sid)] == ["taken"]
    assert origin.requests == []


@pytest.mark.parametrize("body", [{}, {"tasks": []}, {"tasks": "x"}, {"tasks": [], "extra": 1}])
def test_batch_shape_is_checked(shared_transferd, body):
    sid = create_session(shared_transferd)
    assert_problem(shared_transferd.post(tasks_path(sid) + ":batch", json=body), 422)


def test_json_of_more_than_131072_objects_and_arrays_is_json_too_complex(transferd):
    sid = create_session(transferd)
    body = ("[" + ",".join(["[]"] * 131_072) + "]").encode()  # 131,073 arrays, 384 KiB
    problem = assert_problem(transferd.post(f"/v1/sessions/{sid}/tasks:batch", data=body,
                                            headers={"Content-Type": "application/json"}), 400, "json_too_complex")
    assert "131072" in problem["detail"], problem
    assert task_list(transferd, sid) == []

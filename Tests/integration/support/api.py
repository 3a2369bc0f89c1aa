"""Small helpers for the session and task API, shared by the test_sessions / test_tasks_* modules.

    sid = create_session(td, mode="default", configuration={"max_concurrent_tasks": 2})
    task = create_task(td, sid, download(origin.url("/bytes/1024")))
    done = wait_task(td, sid, task["id"])
    assert done["result"]["sha256"] == Origin.expected_sha256(1024)

Every wait is bounded (30 s at most unless a test says otherwise) so a misbehaving server fails a
test instead of hanging the suite.
"""

from __future__ import annotations

import hashlib
import itertools
import time
from typing import Any, Callable, Iterable, Mapping

import requests

from support.transferd import Transferd

PROBLEM_TYPE = "application/problem+json"
WAIT_LIMIT = 30.0

_counter = itertools.count(1)


def unique(prefix: str = "s") -> str:
    """A session identifier (or task id) not used before in this test process."""
    return f"{prefix}-{time.monotonic_ns() % 10**9}-{next(_counter)}"


# MARK: paths


def session_path(sid: str) -> str:
    return f"/v1/sessions/{sid}"


def tasks_path(sid: str) -> str:
    return f"/v1/sessions/{sid}/tasks"


def task_path(sid: str, tid: str, suffix: str = "") -> str:
    return f"/v1/sessions/{sid}/tasks/{tid}{suffix}"


# MARK: problems


def assert_problem(response: requests.Response, status: int, code: str | None = None,
                   field: str | None = None) -> dict:
    """An RFC 9457 problem document with our stable `code`; when `field` is given, the problem names
    it (in `field`, or at least in `detail`)."""
    assert response.status_code == status, (response.request.method, response.request.url,
                                            response.status_code, response.text)
    assert response.headers.get("Content-Type", "").split(";")[0].strip() == PROBLEM_TYPE, response.headers
    body = response.json()
    for name in ("type", "title", "status", "detail", "code"):
        assert name in body, f"problem without {name}: {body}"
    assert body["status"] == status, body
    if code is not None:
        assert body["code"] == code, body
    # Every field at fault is listed; the document names the request it answers.
    assert isinstance(body.get("errors"), list), body
    if body.get("field") is not None:
        assert body["errors"][0]["field"] == body["field"], body
    if "instance" in body:
        assert body["instance"] == response.headers.get("X-Request-Id"), (body, response.headers)
    if field is not None:
        assert body.get("field") == field or field in body["detail"], \
            f"problem does not name {field!r}: {body}"
    return body


# MARK: sessions


def put_session(td: Transferd, sid: str, mode: str | None = "default",
                configuration: Mapping[str, Any] | None = None, **extra: Any) -> requests.Response:
    body: dict[str, Any] = dict(extra)
    if mode is not None:
        body["mode"] = mode
    if configuration is not None:
        body["configuration"] = dict(configuration)
    return td.put(session_path(sid), json=body)


def create_session(td: Transferd, sid: str | None = None, mode: str = "default",
                   configuration: Mapping[str, Any] | None = None) -> str:
    """Creates a session (asserting 201) and returns its identifier."""
    sid = sid or unique(f"{mode}")
    response = put_session(td, sid, mode, configuration)
    assert response.status_code == 201, response.text
    return sid


def get_session(td: Transferd, sid: str) -> dict:
    response = td.get(session_path(sid))
    assert response.status_code == 200, response.text
    return response.json()


# MARK: tasks


def download(url: str, **fields: Any) -> dict:
    """A download task body."""
    return {"kind": "download", "request": {"url": url}, **fields}


def data(url: str, **fields: Any) -> dict:
    """A data task body."""
    return {"kind": "data", "request": {"url": url}, **fields}


def post_task(td: Transferd, sid: str, body: Any, headers: Mapping[str, str] | None = None) -> requests.Response:
    return td.post(tasks_path(sid), json=body, headers=headers)


def create_task(td: Transferd, sid: str, body: Any, headers: Mapping[str, str] | None = None) -> dict:
    """Creates one task (asserting 201) and returns the task object."""
    response = post_task(td, sid, body, headers)
    assert response.status_code == 201, response.text
    return response.json()


def create_batch(td: Transferd, sid: str, bodies: list, timeout: float = 30.0) -> list[dict]:
    response = td.post(tasks_path(sid) + ":batch", json={"tasks": bodies}, timeout=timeout)
    assert response.status_code == 201, response.text[:2000]
    tasks = response.json()["tasks"]
    assert len(tasks) == len(bodies)
    return tasks


def get_task(td: Transferd, sid: str, tid: str) -> dict:
    response = td.get(task_path(sid, tid))
    assert response.status_code == 200, response.text
    return response.json()


def action(td: Transferd, sid: str, tid: str, name: str, body: Any = None) -> dict:
    """POST …/resume|suspend|cancel, asserting 200."""
    kwargs = {"json": body} if body is not None else {}
    response = td.post(task_path(sid, tid, "/" + name), timeout=15, **kwargs)
    assert response.status_code == 200, response.text
    return response.json()


def wait_task(td: Transferd, sid: str, tid: str, timeout: float = WAIT_LIMIT) -> dict:
    """The task once it has completed (long-polls with `?wait=`), failing after `timeout` seconds."""
    deadline = time.monotonic() + timeout
    task: dict = {}
    while True:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise AssertionError(f"task {sid}/{tid} not completed within {timeout}s: {task}")
        wait = max(1, min(10, int(remaining)))
        response = td.get(task_path(sid, tid) + f"?wait={wait}", timeout=wait + 10)
        assert response.status_code == 200, response.text
        task = response.json()
        if task["state"] == "completed":
            return task


def wait_tasks(td: Transferd, sid: str, ids: Iterable[str], timeout: float = WAIT_LIMIT) -> list[dict]:
    deadline = time.monotonic() + timeout
    return [wait_task(td, sid, tid, timeout=max(0.5, deadline - time.monotonic())) for tid in ids]


def wait_for(predicate: Callable[[], Any], timeout: float = 10.0, interval: float = 0.05,
             message: str | Callable[[], str] = "condition") -> Any:
    """Polls `predicate` until it returns something truthy (and returns that)."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() >= deadline:
            text = message() if callable(message) else message
            raise AssertionError(f"timed out after {timeout}s waiting for {text}")
        time.sleep(interval)


def wait_progress(td: Transferd, sid: str, tid: str, at_least: int, timeout: float = 10.0) -> dict:
    """The task once it has received at least `at_least` bytes (while still running)."""
    def check():
        task = get_task(td, sid, tid)
        assert task["state"] != "completed", f"task completed before reaching {at_least} bytes: {task}"
        return task if task["progress"]["bytes_received"] >= at_least else None
    return wait_for(check, timeout, message=f"{sid}/{tid} to receive {at_least} bytes")


def assert_success(task: dict) -> dict:
    assert task["state"] == "completed", task
    assert task["error"] is None, task["error"]
    return task


def assert_task_error(task: dict, code: str) -> dict:
    assert task["state"] == "completed", task
    assert task["error"] is not None, f"expected error {code}, task succeeded: {task}"
    assert task["error"]["code"] == code, task["error"]
    return task


def run_task(td: Transferd, sid: str, body: Any, timeout: float = WAIT_LIMIT) -> dict:
    """Creates a task and returns it completed."""
    task = create_task(td, sid, body)
    return wait_task(td, sid, task["id"], timeout)


# MARK: content


def file_sha256(path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        while chunk := f.read(1 << 20):
            digest.update(chunk)
    return digest.hexdigest()


def fetch_sha256(td: Transferd, path: str, headers: Mapping[str, str] | None = None) -> tuple[requests.Response, str, int]:
    """GETs `path` streaming; returns the response, the sha256 and the size of its body."""
    response = td.get(path, headers=headers, stream=True, timeout=30)
    digest = hashlib.sha256()
    size = 0
    try:
        for chunk in response.iter_content(1 << 20):
            digest.update(chunk)
            size += len(chunk)
    finally:
        response.close()
    return response, digest.hexdigest(), size

"""Resume data (README "Durability"): `cancel` with `produce_resume_data` hands out a signed, readable
token; a download task created from it continues the partial file with `Range` + `If-Range` and
reports `task.resumed_at_offset`; a changed validator or an origin that ignores ranges restarts the
file from zero (never appends); an altered token is refused with `resume_data_invalid`; a download
that fails on the network carries resume data in its error."""

from __future__ import annotations

import base64
import json

import pytest

from support.api import (action, assert_problem, assert_success, assert_task_error, create_session,
                         create_task, download, fetch_sha256, post_task, run_task, task_path, wait_for,
                         wait_progress, wait_task)
from support.events import all_events, of_type
from support.origin import Origin

MiB = 1 << 20


def cancel_for_resume_data(td, origin, sid, path, at_least):
    """Starts a slow download of `path`, cancels it with `produce_resume_data` once `at_least`
    bytes arrived, and waits until the origin is done with that request. Returns the cancelled task
    and its token."""
    task = create_task(td, sid, download(origin.url(path)))
    wait_progress(td, sid, task["id"], at_least)
    cancelled = action(td, sid, task["id"], "cancel", {"produce_resume_data": True})
    assert_task_error(cancelled, "cancelled")
    token = cancelled["error"]["resume_data"]
    assert token, cancelled
    wait_for(lambda: origin.active_connections == 0, message="the cancelled request to end at the origin")
    return cancelled, token


def token_fields(token: str) -> dict:
    return json.loads(base64.b64decode(token))


def test_resume_data_continues_with_only_the_remainder(transferd, origin):
    sid = create_session(transferd, mode="default")
    size = 4 * MiB
    path = f"/bytes/{size}?seed=rd&rate={MiB}"
    cancelled, token = cancel_for_resume_data(transferd, origin, sid, path, 512 * 1024)
    fields = token_fields(token)
    offset = fields["offset"]
    etag, _ = Origin.validators(size, "rd")
    assert fields["validator"] == etag and fields["url"] == origin.url(path)
    assert 512 * 1024 <= offset < size
    assert len(origin.requests) == 1

    # No request needed: the URL comes from the token.
    resumed = create_task(transferd, sid, {"kind": "download", "resume_data": token})
    done = assert_success(wait_task(transferd, sid, resumed["id"]))
    assert done["result"]["size"] == size
    assert done["result"]["sha256"] == Origin.expected_sha256(size, "rd")
    response, digest, length = fetch_sha256(transferd, task_path(sid, resumed["id"], "/file"))
    assert (response.status_code, digest, length) == (200, Origin.expected_sha256(size, "rd"), size)

    second = origin.requests[1]
    assert second.headers["Range"] == f"bytes={offset}-"
    assert second.headers["If-Range"] == etag
    assert second.status == 206
    assert second.bytes_sent == size - offset, "more than the remainder was fetched"
    events = all_events(transferd, sid)
    assert [e["data"]["offset"] for e in of_type(events, "task.resumed_at_offset", resumed["id"])] == [offset]
    # The partial file was taken over: nothing is left beside the finished file.
    assert sorted(p.name for p in (transferd.data_dir / "sessions" / sid / "files").iterdir()) == [resumed["id"]]


def test_resume_data_outlives_a_restart(transferd, origin):
    """The signing key is kept in the data directory: a token stays good after a restart."""
    sid = create_session(transferd, mode="background")
    size = 2 * MiB
    _, token = cancel_for_resume_data(transferd, origin, sid, f"/bytes/{size}?seed=rk&rate={MiB}", 256 * 1024)
    transferd.restart()
    resumed = create_task(transferd, sid, {"kind": "download", "resume_data": token})
    done = assert_success(wait_task(transferd, sid, resumed["id"]))
    assert done["result"]["sha256"] == Origin.expected_sha256(size, "rk")
    assert origin.requests[-1].status == 206


def test_changed_etag_restarts_the_file_from_zero(transferd, origin):
    sid = create_session(transferd)
    size = 2 * MiB
    _, token = cancel_for_resume_data(transferd, origin, sid, f"/bytes/{size}?seed=ce&rate={MiB}", 256 * 1024)
    # The resource changed meanwhile: the origin now serves another version (another ETag).
    resumed = create_task(transferd, sid, {"kind": "download", "resume_data": token,
                                           "request": {"url": origin.url(f"/bytes/{size}?seed=ce&etag=v2")}})
    done = assert_success(wait_task(transferd, sid, resumed["id"]))
    assert done["result"]["size"] == size
    assert done["result"]["sha256"] == Origin.expected_sha256(size, "ce", "v2")
    last = origin.requests[-1]
    assert last.headers["If-Range"] == Origin.validators(size, "ce")[0]
    assert (last.status, last.bytes_sent) == (200, size)
    assert of_type(all_events(transferd, sid), "task.resumed_at_offset", resumed["id"]) == []


def test_origin_ignoring_range_restarts_the_file_from_zero(transferd, origin):
    sid = create_session(transferd)
    size = 2 * MiB
    _, token = cancel_for_resume_data(transferd, origin, sid, f"/bytes/{size}?seed=ig&rate={MiB}&ignore_range=1",
                                      256 * 1024)
    resumed = create_task(transferd, sid, {"kind": "download", "resume_data": token})
    done = assert_success(wait_task(transferd, sid, resumed["id"]))
    assert (done["result"]["size"], done["result"]["sha256"]) == (size, Origin.expected_sha256(size, "ig"))
    assert "Range" in origin.requests[-1].headers and origin.requests[-1].status == 200


def test_last_modified_is_the_validator_without_an_etag(transferd, origin):
    sid = create_session(transferd)
    size = 2 * MiB
    _, token = cancel_for_resume_data(transferd, origin, sid,
                                      f"/bytes/{size}?seed=lm&rate={MiB}&validators=last_modified", 256 * 1024)
    _, last_modified = Origin.validators(size, "lm")
    assert token_fields(token)["validator"] == last_modified
    resumed = create_task(transferd, sid, {"kind": "download", "resume_data": token})
    assert_success(wait_task(transferd, sid, resumed["id"]))
    assert (origin.requests[-1].headers["If-Range"], origin.requests[-1].status) == (last_modified, 206)


def test_no_resume_data_without_a_validator(transferd, origin):
    """Without ETag or Last-Modified nothing could tell a continuation from another resource."""
    sid = create_session(transferd)
    task = create_task(transferd, sid, download(origin.url(f"/bytes/{2 * MiB}?rate={MiB}&validators=none")))
    wait_progress(transferd, sid, task["id"], 256 * 1024)
    cancelled = action(transferd, sid, task["id"], "cancel", {"produce_resume_data": True})
    assert_task_error(cancelled, "cancelled")
    assert cancelled["error"]["resume_data"] is None
    assert not list((transferd.data_dir / "sessions" / sid).rglob(".*.*")), "partial file left behind"


@pytest.mark.parametrize("change", ["offset", "url", "partial", "signature", "garbage"])
def test_altered_resume_data_is_refused(transferd, origin, change):
    sid = create_session(transferd)
    cancelled, token = cancel_for_resume_data(transferd, origin, sid, f"/bytes/{2 * MiB}?seed=t&rate={MiB}", 256 * 1024)
    fields = token_fields(token)
    if change == "offset":
        fields["offset"] = 0
    elif change == "url":
        fields["url"] = origin.url("/bytes/10")
    elif change == "partial":
        fields["partial"] = "/etc/passwd"
    elif change == "signature":
        fields["signature"] = "0" * 64
    altered = "not a token" if change == "garbage" else base64.b64encode(json.dumps(fields).encode()).decode()
    problem = assert_problem(post_task(transferd, sid, {"kind": "download", "resume_data": altered}),
                             422, "resume_data_invalid")
    assert "resume_data" in (problem.get("field") or problem["detail"])
    # In a batch, the problem names the task, and nothing of the batch is created.
    batch = transferd.post(f"/v1/sessions/{sid}/tasks:batch",
                           json={"tasks": [download(origin.url("/bytes/1")), {"kind": "download", "resume_data": altered}]})
    assert assert_problem(batch, 422, "resume_data_invalid")["field"] == "tasks[1].resume_data"
    assert [t["id"] for t in transferd.get(f"/v1/sessions/{sid}/tasks").json()["tasks"]] == [cancelled["id"]]


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


FIELDS = {"version": 1, "url": "http://127.0.0.1:1/x", "validator": "\"v\"", "offset": 1, "partial": "p",
          "destination": None, "origin": "s/t", "signature": "0" * 64}
MALFORMED_TOKENS = {
    "empty": "",
    "spaces": "   ",
    "not_base64": "!!!*** not base64 ***",
    "base64_of_binary": b64(bytes(range(256))),
    "base64_of_text": b64(b"resume me, please"),
    "base64_of_invalid_utf8_json": b64(b'{"version":1,"url":"\xff\xfe"}'),
    "json_array": b64(b"[1, 2, 3]"),
    "json_string": b64(b'"token"'),
    "json_null": b64(b"null"),
    "json_empty_object": b64(b"{}"),
    "json_deep": b64(b"[" * 10_000 + b"]" * 10_000),
    "wrong_types": b64(json.dumps({**FIELDS, "offset": "1", "version": "1"}).encode()),
    "negative_offset": b64(json.dumps({**FIELDS, "offset": -1}).encode()),
    "huge_offset": b64(json.dumps({**FIELDS, "offset": 2 ** 70}).encode()),
    "duplicate_keys": b64(b'{"version":1,"version":1}'),
    "large": b64(json.dumps({**FIELDS, "url": "http://127.0.0.1/" + "a" * 45_000}).encode()),  # under maxLength
}


@pytest.mark.parametrize("name", MALFORMED_TOKENS)
def test_malformed_resume_data_is_refused(transferd, name):
    """Whatever arrives as resume_data — garbage, other JSON, wrong types, huge — is the same 422,
    and transferd keeps serving."""
    sid = create_session(transferd)
    response = post_task(transferd, sid, {"kind": "download", "resume_data": MALFORMED_TOKENS[name]})
    assert_problem(response, 422, "resume_data_invalid")
    assert transferd.get("/v1/sessions/" + sid).status_code == 200
    assert transferd.get(f"/v1/sessions/{sid}/tasks").json()["tasks"] == []


def test_huge_resume_data_is_refused_by_its_length(transferd):
    """Over the schema's maxLength (64 KiB) the token is not even read: 422 naming the field."""
    sid = create_session(transferd)
    huge = b64(json.dumps({**FIELDS, "url": "http://127.0.0.1/" + "a" * 600_000}).encode())
    assert_problem(post_task(transferd, sid, {"kind": "download", "resume_data": huge}), 422, "validation_failed",
                   field="resume_data")


def test_truncated_resume_data_is_refused(transferd, origin):
    sid = create_session(transferd)
    cancelled, token = cancel_for_resume_data(transferd, origin, sid, f"/bytes/{2 * MiB}?seed=tr&rate={MiB}", 256 * 1024)
    decoded = base64.b64decode(token)
    for cut in [token[:-1], token[:-4], token[:len(token) // 2], token[:8], b64(decoded[:-1]), b64(decoded[:len(decoded) // 2])]:
        assert_problem(post_task(transferd, sid, {"kind": "download", "resume_data": cut}), 422, "resume_data_invalid")
    # The whole token still works: the refusals took nothing from it.
    resumed = run_task(transferd, sid, {"kind": "download", "resume_data": token})
    assert_success(resumed)
    assert resumed["result"]["sha256"] == Origin.expected_sha256(2 * MiB, "tr")


def test_failed_download_carries_resume_data_to_continue_from(transferd, origin):
    sid = create_session(transferd, configuration={"retry": {"max_attempts": 1}})
    size = 2 * MiB
    failed = run_task(transferd, sid, download(origin.url(f"/bytes/{size}?seed=fr&reset_after={MiB}")))
    assert_task_error(failed, "network_connection_lost")
    token = failed["error"]["resume_data"]
    assert token and token_fields(token)["offset"] == MiB
    resumed = run_task(transferd, sid, {"kind": "download", "resume_data": token,
                                        "request": {"url": origin.url(f"/bytes/{size}?seed=fr")}})
    assert_success(resumed)
    assert resumed["result"]["sha256"] == Origin.expected_sha256(size, "fr")
    assert (origin.requests[-1].headers["Range"], origin.requests[-1].bytes_sent) == (f"bytes={MiB}-", size - MiB)


def test_resume_data_is_only_for_downloads(transferd, origin):
    sid = create_session(transferd)
    _, token = cancel_for_resume_data(transferd, origin, sid, f"/bytes/{2 * MiB}?rate={MiB}", 256 * 1024)
    assert_problem(post_task(transferd, sid, {"kind": "data", "resume_data": token,
                                              "request": {"url": origin.url("/bytes/1")}}), 422, field="resume_data")

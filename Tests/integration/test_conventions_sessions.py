"""Sessions as a mature REST API keeps them: a re-attach keeps what it does not name, PATCH changes
part of a session by JSON Merge Patch, and entity tags make reads conditional and changes safe."""

from __future__ import annotations

from support.api import (action, assert_problem, create_session, create_task, download, get_session,
                         session_path, task_path, wait_task)

DELEGATE = {"url": "http://127.0.0.1:9/hook", "max_in_flight": 2}
CONFIG = {"max_concurrent_tasks": 3, "timeout_request_s": 42, "retry": {"max_attempts": 7}}


def configured(td) -> str:
    sid = create_session(td, configuration=CONFIG)
    assert td.put(session_path(sid), json={"mode": "default", "delegate": DELEGATE}).status_code == 200
    return sid


def test_reattach_without_configuration_or_delegate_keeps_them(transferd):
    sid = configured(transferd)
    before = get_session(transferd, sid)
    reattached = transferd.put(session_path(sid), json={"mode": "default"})
    assert reattached.status_code == 200, reattached.text
    for body in (reattached.json(), get_session(transferd, sid)):
        assert body["configuration"] == before["configuration"]
        assert body["configuration"]["max_concurrent_tasks"] == 3
        assert body["delegate"]["url"] == DELEGATE["url"] and body["delegate"]["max_in_flight"] == 2


def test_reattach_that_names_configuration_replaces_it(transferd):
    sid = configured(transferd)
    replaced = transferd.put(session_path(sid), json={"mode": "default", "configuration": {"timeout_request_s": 5}}).json()
    assert replaced["configuration"]["timeout_request_s"] == 5
    assert replaced["configuration"]["max_concurrent_tasks"] == 64  # back to its default
    assert replaced["delegate"]["url"] == DELEGATE["url"]  # not named: kept


def test_patch_changes_one_member_and_leaves_the_rest(transferd):
    sid = configured(transferd)
    response = transferd.patch(session_path(sid), json={"configuration": {"max_concurrent_tasks": 9}},
                               headers={"Content-Type": "application/merge-patch+json"})
    assert response.status_code == 200, response.text
    patched = get_session(transferd, sid)
    assert patched["configuration"]["max_concurrent_tasks"] == 9
    assert patched["configuration"]["timeout_request_s"] == 42
    assert patched["configuration"]["retry"]["max_attempts"] == 7
    assert patched["delegate"]["url"] == DELEGATE["url"]
    # application/json is read as a merge patch too; a nested member merges into its object.
    transferd.patch(session_path(sid), json={"delegate": {"max_in_flight": 5}}).raise_for_status()
    delegate = get_session(transferd, sid)["delegate"]
    assert delegate["max_in_flight"] == 5 and delegate["url"] == DELEGATE["url"]


def test_patch_null_resets_a_member_to_its_default(transferd):
    sid = configured(transferd)
    transferd.patch(session_path(sid), json={"configuration": {"timeout_request_s": None, "retry": None}}).raise_for_status()
    config = get_session(transferd, sid)["configuration"]
    assert config["timeout_request_s"] == 60 and config["retry"]["max_attempts"] == 5
    assert config["max_concurrent_tasks"] == 3
    transferd.patch(session_path(sid), json={"delegate": None}).raise_for_status()
    assert get_session(transferd, sid)["delegate"] is None


def test_bad_patch_is_refused_and_changes_nothing(transferd):
    sid = configured(transferd)
    before = get_session(transferd, sid)
    assert_problem(transferd.patch(session_path(sid), json={"configuration": {"max_concurrent_tasks": 0}}), 422,
                   field="configuration.max_concurrent_tasks")
    assert_problem(transferd.patch(session_path(sid), json={"mode": "ephemeral"}), 422, "unknown_field")
    assert_problem(transferd.patch(session_path(sid), data=b"{", headers={"Content-Type": "application/merge-patch+json"}),
                   400, "invalid_json")
    assert get_session(transferd, sid) == before
    assert_problem(transferd.patch(session_path("no-such-session"), json={}), 404)


def test_session_etag_changes_when_patched_and_answers_304(transferd):
    sid = configured(transferd)
    first = transferd.get(session_path(sid))
    tag = first.headers["ETag"]
    assert tag.startswith('"') and tag.endswith('"')
    unchanged = transferd.get(session_path(sid), headers={"If-None-Match": tag})
    assert unchanged.status_code == 304 and unchanged.content == b"" and unchanged.headers["ETag"] == tag
    patched = transferd.patch(session_path(sid), json={"configuration": {"max_concurrent_tasks": 4}})
    assert patched.headers["ETag"] != tag
    assert transferd.get(session_path(sid), headers={"If-None-Match": tag}).status_code == 200
    assert transferd.get(session_path(sid)).headers["ETag"] == patched.headers["ETag"]


def test_if_match_that_no_longer_matches_is_412_and_changes_nothing(transferd):
    sid = configured(transferd)
    stale = transferd.get(session_path(sid)).headers["ETag"]
    transferd.patch(session_path(sid), json={"configuration": {"max_concurrent_tasks": 4}}).raise_for_status()
    before = get_session(transferd, sid)
    guarded = {"If-Match": stale}
    assert_problem(transferd.patch(session_path(sid), json={"configuration": {"max_concurrent_tasks": 8}}, headers=guarded),
                   412, "precondition_failed")
    assert_problem(transferd.put(session_path(sid), json={"mode": "default", "configuration": {}}, headers=guarded),
                   412, "precondition_failed")
    assert_problem(transferd.delete(session_path(sid), headers=guarded), 412, "precondition_failed")
    assert get_session(transferd, sid) == before
    current = transferd.get(session_path(sid)).headers["ETag"]
    ok = transferd.patch(session_path(sid), json={"configuration": {"max_concurrent_tasks": 8}}, headers={"If-Match": current})
    assert ok.status_code == 200, ok.text
    assert_problem(transferd.put(session_path("not-there"), json={}, headers={"If-Match": "*"}), 412, "precondition_failed")


def test_task_etag_changes_as_it_completes_and_if_match_guards_actions(transferd, origin):
    sid = create_session(transferd)
    task = create_task(transferd, sid, download(origin.url("/bytes/1000"), start=False))
    path = task_path(sid, task["id"])
    created = transferd.get(path)
    tag = created.headers["ETag"]
    assert transferd.get(path, headers={"If-None-Match": tag}).status_code == 304
    # A stale tag stops the action and the change; the task stays as it was.
    transferd.patch(path, json={"description": "first"}).raise_for_status()
    assert_problem(transferd.post(path + "/resume", headers={"If-Match": tag}), 412, "precondition_failed")
    assert_problem(transferd.patch(path, json={"priority": 1}, headers={"If-Match": tag}), 412, "precondition_failed")
    assert_problem(transferd.delete(path, headers={"If-Match": tag}), 412, "precondition_failed")
    suspended = transferd.get(path)
    assert suspended.json()["state"] == "suspended" and suspended.json()["priority"] != 1
    resumed = transferd.post(path + "/resume", headers={"If-Match": suspended.headers["ETag"]})
    assert resumed.status_code == 200, resumed.text
    wait_task(transferd, sid, task["id"])
    done = transferd.get(path)
    assert done.headers["ETag"] not in (tag, suspended.headers["ETag"])
    assert transferd.get(path, headers={"If-None-Match": done.headers["ETag"]}).status_code == 304

"""Tenants: principals from `--auth-file`, each seeing only the sessions of its namespaces, with
roles, owned blobs, narrowed paths, `whoami`, write-only secrets and an audit line for every change.

One transferd serves every test here, with two write principals in different namespaces (`alpha`,
`beta`), a read principal over both (`reader`), an admin from the file (`ops`), an admin from
`--api-token` (`token-1`), a write principal with narrower paths (`gamma`) and one whose sessions
only the statistics test touches (`counted`). Each test uses sessions of its own. The walk over
every route is test_tenants_routes.py; limits are in test_tenants_limits.py, reloading in
test_tenants_reload.py.
"""

from __future__ import annotations

import base64
import secrets
import shutil
from dataclasses import dataclass
from pathlib import Path

import pytest

from support.api import (assert_problem, assert_success, create_session, create_task, data, download, get_session,
                         post_task, put_session, run_task, session_path, task_path, tasks_path, unique, wait_for,
                         wait_progress, wait_task)
from support.certs import TestPKI
from support.events import EventStream, all_events, deliveries, events_path
from support.origin import Origin
from support.tenants import Principal, assert_hidden, audit_records, new_token, wait_audit, write_auth_file
from support.transferd import Caller, Transferd

ALPHA = Principal("alpha", "write", ["com.alpha."])
BETA = Principal("beta", "write", ["com.beta."])
READER = Principal("reader", "read", ["com.alpha.", "com.beta."])
OPS = Principal("ops", "admin")
COUNTED = Principal("counted", "write", ["com.counted."])
API_TOKEN = new_token()
NO_LIMITS = {"requests_per_second": None, "burst": None, "max_unfinished_tasks": None, "max_bytes_per_second": None}


@dataclass
class Tenants:
    td: Transferd
    origin: Origin
    root: Path  # the global --allow-path root; gamma may use only root/gamma
    alpha: Caller
    beta: Caller
    reader: Caller
    ops: Caller
    token_admin: Caller  # the --api-token
    gamma: Caller
    counted: Caller


@pytest.fixture(scope="module")
def tenants(transferd_binary, tmp_path_factory) -> Tenants:
    root = tmp_path_factory.mktemp("tenants-root")
    for name in ("gamma", "other"):
        (root / name).mkdir()
    gamma = Principal("gamma", "write", ["com.gamma."], allow_paths=[str(root / "gamma")])
    auth = write_auth_file(tmp_path_factory.mktemp("tenants-auth") / "auth.json",
                           [ALPHA, BETA, READER, OPS, COUNTED, gamma])
    with Origin() as origin:
        td = Transferd("--auth-file", str(auth), "--allow-path", str(root), api_token=API_TOKEN,
                       binary=transferd_binary)
        try:
            td.start()
            yield Tenants(td, origin, root, *(td.as_caller(p.token) for p in (ALPHA, BETA, READER, OPS)),
                          td.as_caller(API_TOKEN), td.as_caller(gamma.token), td.as_caller(COUNTED.token))
        finally:
            td.close()


def session_ids(caller: Caller) -> list[str]:
    """Every session the caller lists, page by page (two a page, so the cursor is walked too)."""
    ids: list[str] = []
    after = None
    while True:
        response = caller.get("/v1/sessions?limit=2" + (f"&after={after}" if after else ""))
        assert response.status_code == 200, response.text
        page = response.json()
        ids += [s["identifier"] for s in page["sessions"]]
        if page["next"] is None:
            return ids
        after = page["next"]


def upload_from(origin: Origin, **source) -> dict:
    return {"kind": "upload", "request": {"url": origin.url("/upload")}, "upload": source}


# MARK: whoami


def test_whoami_describes_each_kind_of_principal(tenants):
    expected = [
        (tenants.alpha, {"name": "alpha", "role": "write", "namespaces": ["com.alpha."], "allow_paths": None}),
        (tenants.reader, {"name": "reader", "role": "read", "namespaces": ["com.alpha.", "com.beta."],
                          "allow_paths": None}),
        (tenants.ops, {"name": "ops", "role": "admin", "namespaces": None, "allow_paths": None}),
        (tenants.token_admin, {"name": "token-1", "role": "admin", "namespaces": None, "allow_paths": None}),
        (tenants.gamma, {"name": "gamma", "role": "write", "namespaces": ["com.gamma."],
                         "allow_paths": [str(tenants.root / "gamma")]}),
    ]
    for caller, whoami in expected:
        response = caller.get("/v1/whoami")
        assert response.status_code == 200, response.text
        assert response.json() == {**whoami, "limits": NO_LIMITS}


def test_without_tokens_every_caller_is_the_anonymous_admin(start_transferd):
    td = start_transferd()
    assert td.get("/v1/whoami").json() == {"name": "anonymous", "role": "admin", "namespaces": None,
                                           "allow_paths": None, "limits": NO_LIMITS}


# MARK: namespaces


def test_creating_or_reattaching_outside_ones_namespaces_is_403(tenants):
    alpha = tenants.alpha
    for sid in (unique("com.beta.new"), "com.alpha", unique("com.alphabet.x"), unique("org.unclaimed")):
        assert_problem(put_session(alpha, sid), 403, "namespace_not_allowed")
        assert_problem(tenants.ops.get(session_path(sid)), 404, "not_found")  # nothing was created
    # Re-attaching to another principal's session is refused exactly like creating one there, and
    # leaves it as it was.
    theirs = create_session(tenants.beta, unique("com.beta.kept"), configuration={"max_concurrent_tasks": 3})
    assert_hidden(alpha, "PUT", session_path(theirs), {theirs: "com.beta.never-created"}, 403,
                  "namespace_not_allowed", json={"mode": "default", "configuration": {"max_concurrent_tasks": 9}})
    assert get_session(tenants.beta, theirs)["configuration"]["max_concurrent_tasks"] == 3


def test_another_principals_session_answers_as_if_it_did_not_exist(tenants):
    """What the route walk (test_tenants_routes.py) does not vary: long-polls and streams answer at
    once, and ranges, queries and idempotency keys change nothing."""
    beta, origin = tenants.beta, tenants.origin
    sid = create_session(beta, unique("com.beta.hidden"))
    task = run_task(beta, sid, download(origin.url("/bytes/1000")))
    missing = {sid: "com.alpha.absent"}

    def hidden(method: str, path: str, **kwargs):
        assert_hidden(tenants.alpha, method, path, missing, timeout=5, **kwargs)

    hidden("GET", events_path(sid, "?after=0&wait=30"))
    hidden("GET", events_path(sid), headers={"Accept": "text/event-stream"})
    hidden("GET", task_path(sid, task["id"], "?wait=30"))
    hidden("GET", task_path(sid, task["id"], "/file"), headers={"Range": "bytes=0-9"})
    hidden("HEAD", task_path(sid, task["id"], "/file"))
    hidden("GET", tasks_path(sid) + "?state=completed&limit=1")
    hidden("GET", session_path(sid) + "/cookies?values=true")
    hidden("POST", tasks_path(sid), json=download(origin.url("/bytes/10")), headers={"Idempotency-Key": "k-1"})
    hidden("DELETE", session_path(sid) + "?mode=cancel")
    for admin in (tenants.ops, tenants.token_admin):
        assert admin.get(session_path(sid)).status_code == 200
        assert admin.get(task_path(sid, task["id"], "/file")).content == Origin.expected_bytes(1000)
    assert get_session(beta, sid)["state"] == "active"


def test_lists_show_only_the_sessions_of_ones_namespaces(tenants):
    mine = create_session(tenants.alpha, unique("com.alpha.listed"))
    theirs = create_session(tenants.beta, unique("com.beta.listed"))
    elsewhere = create_session(tenants.ops, unique("org.unclaimed.listed"))
    alpha, beta, reader = (session_ids(c) for c in (tenants.alpha, tenants.beta, tenants.reader))
    assert mine in alpha and all(s.startswith("com.alpha.") for s in alpha)
    assert theirs in beta and all(s.startswith("com.beta.") for s in beta)
    assert sorted(reader) == sorted(alpha + beta)
    for admin in (tenants.ops, tenants.token_admin):
        everything = session_ids(admin)
        assert set(reader) | {elsewhere} <= set(everything)


def test_stats_count_only_the_callers_sessions_and_transfers(tenants):
    counted, origin = tenants.counted, tenants.origin
    for held in (1, 2):
        sid = create_session(counted, unique("com.counted.s"))
        for _ in range(held):
            create_task(counted, sid, download(origin.url("/bytes/100"), start=False))
    busy = create_session(tenants.beta, unique("com.beta.busy"))
    slow = create_task(tenants.beta, busy, download(origin.url("/bytes/400000?rate=100000")))
    wait_progress(tenants.beta, busy, slow["id"], 1)

    stats = counted.get("/v1/stats").json()
    assert stats["sessions"] == 2, stats
    assert {state: stats["tasks"][state] for state in ("suspended", "running", "canceling", "completed")} == \
        {"suspended": 3, "running": 0, "canceling": 0, "completed": 0}, stats
    assert (stats["transfers_running"], stats["queue_depth"]) == (0, 0), stats
    assert stats["bytes_per_second"] == {"down": 0, "up": 0}, stats
    whole = tenants.ops.get("/v1/stats").json()
    assert whole["sessions"] >= 3 and whole["tasks"]["suspended"] >= 3, whole
    assert whole["transfers_running"] >= 1 and whole["tasks"]["running"] >= 1, whole
    assert tenants.beta.post(task_path(busy, slow["id"], "/cancel")).status_code == 200


# MARK: roles


def test_a_read_principal_reads_and_streams_but_changes_nothing(tenants):
    beta, reader, origin = tenants.beta, tenants.reader, tenants.origin
    sid = create_session(beta, unique("com.beta.watched"))
    with EventStream(reader, sid) as stream:
        assert stream.status == 200
        task = create_task(beta, sid, download(origin.url("/bytes/2000")))
        stream.wait_for(lambda s: any(e["type"] == "task.completed" for e in s.journaled))
    assert reader.get(session_path(sid)).status_code == 200
    assert reader.get(task_path(sid, task["id"], "?wait=10")).json()["state"] == "completed"
    assert reader.get(task_path(sid, task["id"], "/file")).content == Origin.expected_bytes(2000)
    assert "task.completed" in [e["type"] for e in all_events(reader, sid)]

    changes = [("PUT", session_path(sid), {"mode": "default"}),
               ("PUT", session_path(unique("com.beta.new")), None),
               ("PUT", session_path(unique("org.unclaimed")), None),  # outside its namespaces: still 403 forbidden
               ("POST", tasks_path(sid), download(origin.url("/bytes/10"))),
               ("PATCH", task_path(sid, task["id"]), {"priority": 1}),
               ("POST", task_path(sid, task["id"], "/suspend"), None),
               ("DELETE", task_path(sid, task["id"]), None),
               ("POST", events_path(sid, "/ack"), {"through": 1}),
               ("DELETE", session_path(sid), None),
               ("POST", "/v1/blobs", None)]
    for method, path, body in changes:
        assert_problem(reader.request(method, path, json=body), 403, "forbidden")
    after = get_session(beta, sid)
    assert (after["state"], after["acked_through"], after["tasks"]["total"]) == ("active", 0, 1), after


def test_a_write_principal_changes_what_is_inside_its_namespaces(tenants):
    alpha, origin = tenants.alpha, tenants.origin
    sid = create_session(alpha, unique("com.alpha.work"))
    assert put_session(alpha, sid).status_code == 200
    task = create_task(alpha, sid, download(origin.url("/bytes/100"), start=False))
    path = task_path(sid, task["id"])
    assert alpha.patch(path, json={"priority": 0.9}).status_code == 200
    assert alpha.post(path + "/resume").status_code == 200
    assert_success(wait_task(alpha, sid, task["id"]))
    last = all_events(alpha, sid)[-1]["seq"]
    assert alpha.post(events_path(sid, "/ack"), json={"through": last}).status_code == 200
    assert alpha.delete(path).status_code == 204
    assert alpha.delete(session_path(sid)).status_code == 202


def test_admins_change_every_namespace(tenants):
    sid = create_session(tenants.beta, unique("com.beta.administered"))
    for admin in (tenants.ops, tenants.token_admin):
        task = create_task(admin, sid, download(tenants.origin.url("/bytes/100"), start=False))
        assert admin.patch(task_path(sid, task["id"]), json={"description": "seen"}).status_code == 200
        assert admin.delete(task_path(sid, task["id"])).status_code == 204
        assert put_session(admin, unique("org.unclaimed.admin")).status_code == 201
    assert tenants.ops.delete(session_path(sid)).status_code == 202


# MARK: blobs and task sources


def test_blobs_belong_to_the_principal_that_stored_them(tenants):
    beta, alpha, origin = tenants.beta, tenants.alpha, tenants.origin
    blob = beta.post("/v1/blobs", data=b"beta's bytes\n").json()["id"]
    missing = {blob: "b_" + "0" * 20}
    for caller in (alpha, tenants.reader, tenants.gamma):
        assert_hidden(caller, "GET", f"/v1/blobs/{blob}", missing)
    assert_hidden(alpha, "DELETE", f"/v1/blobs/{blob}", missing)
    for caller in (beta, tenants.ops, tenants.token_admin):
        assert caller.get(f"/v1/blobs/{blob}").status_code == 200

    sid = create_session(alpha, unique("com.alpha.uploads"))
    for creation in (upload_from(origin, from_blob=blob),
                     {"kind": "upload", "request": {"url": origin.url("/upload"), "body": {"blob": blob}}}):
        assert_hidden(alpha, "POST", tasks_path(sid), missing, 422, "blob_not_found", json=creation)
    own = alpha.post("/v1/blobs", data=b"alpha's bytes\n").json()["id"]
    assert_success(run_task(alpha, sid, upload_from(origin, from_blob=own)))
    assert beta.delete(f"/v1/blobs/{blob}").status_code == 204  # still there: alpha's DELETE was refused


def test_from_task_names_only_a_task_of_the_callers_session(tenants):
    origin = tenants.origin
    theirs = create_session(tenants.beta, unique("com.beta.source"))
    assert_success(run_task(tenants.beta, theirs, download(origin.url("/bytes/300"), id="beta-download")))
    mine = create_session(tenants.alpha, unique("com.alpha.sink"))
    assert_problem(post_task(tenants.alpha, mine, upload_from(origin, from_task="beta-download")),
                   422, "task_not_found")
    assert_success(run_task(tenants.alpha, mine, download(origin.url("/bytes/300"), id="alpha-download")))
    assert_success(run_task(tenants.alpha, mine, upload_from(origin, from_task="alpha-download")))


def test_allow_paths_narrow_the_global_roots_for_one_principal(tenants, tmp_path):
    gamma, origin = tenants.gamma, tenants.origin
    inside, outside = tenants.root / "gamma", tenants.root / "other"
    for directory in (inside, outside):
        (directory / "upload.txt").write_text(f"from {directory.name}\n")

    def to(path: Path) -> dict:
        return download(origin.url("/bytes/100"), download={"destination": str(path)})

    sid = create_session(gamma, unique("com.gamma.files"))
    assert_problem(post_task(gamma, sid, to(outside / unique("f"))), 403, "path_not_allowed",
                   field="download.destination")
    assert_problem(post_task(gamma, sid, upload_from(origin, from_file=str(outside / "upload.txt"))),
                   403, "path_not_allowed", field="upload.from_file")
    assert_success(run_task(gamma, sid, to(inside / unique("f"))))
    assert_success(run_task(gamma, sid, upload_from(origin, from_file=str(inside / "upload.txt"))))
    # The others keep the global roots.
    theirs = create_session(tenants.alpha, unique("com.alpha.files"))
    assert_success(run_task(tenants.alpha, theirs, to(outside / unique("f"))))
    # A session's TLS files too.
    authority = TestPKI(tmp_path).authority("Tenant CA")
    for directory in (inside, outside):
        shutil.copy(authority.cert, directory / "ca.pem")
    refused = put_session(gamma, unique("com.gamma.tls"), configuration={"tls": {"ca_file": str(outside / "ca.pem")}})
    assert_problem(refused, 403, "path_not_allowed")
    accepted = put_session(gamma, unique("com.gamma.tls"), configuration={"tls": {"ca_file": str(inside / "ca.pem")}})
    assert accepted.status_code == 201, accepted.text


# MARK: secrets and audit


def test_secrets_given_in_a_put_never_come_back_nor_reach_the_log(tenants):
    alpha, origin, td = tenants.alpha, tenants.origin, tenants.td
    secret = "whsec_" + base64.b64encode(secrets.token_bytes(32)).decode()
    password, token = "pw-" + secrets.token_hex(12), "tk-" + secrets.token_hex(12)
    configuration = {"credentials": [
        {"host": "127.0.0.1", "scheme": "basic", "username": "alice", "password": password},
        {"host": "example.com", "scheme": "bearer", "token": token}]}
    delegate = {"url": origin.url("/echo"), "secret": secret}
    sid = unique("com.alpha.secretive")
    replies = [put_session(alpha, sid, "background", configuration, delegate=delegate) for _ in range(2)]
    assert [r.status_code for r in replies] == [201, 200], replies[0].text
    assert_success(run_task(alpha, sid, data(origin.url("/echo"))))  # sends the credential
    wait_for(lambda: deliveries(alpha, sid)["deliveries"], message="a webhook delivery")
    texts = [r.text for r in replies] + [
        alpha.get(session_path(sid)).text, alpha.get("/v1/sessions").text, tenants.ops.get("/v1/sessions").text,
        tenants.reader.get(session_path(sid)).text, alpha.get(events_path(sid, "?after=0")).text,
        alpha.get(session_path(sid) + "/deliveries").text]
    for text in texts + [td.output()]:
        for value in (secret, secret.removeprefix("whsec_"), password, token):
            assert value not in text

    # A secret transferd generates is handed out once: in the reply to the PUT that made it.
    generated = unique("com.alpha.generated")
    reply = put_session(alpha, generated, delegate={"url": origin.url("/echo")})
    handed = reply.json()["delegate"]["secret"]
    assert handed.startswith("whsec_")
    assert "secret" not in get_session(alpha, generated)["delegate"]
    assert handed.removeprefix("whsec_") not in td.output()


def test_every_change_is_audited_with_its_principal_and_reads_are_not(tenants):
    alpha, origin = tenants.alpha, tenants.origin
    sid = unique("com.alpha.audited")
    task = task_path(sid, "t")
    foreign = session_path(unique("com.beta.audited"))

    def send(caller: Caller, method: str, path: str, status: int, **kwargs) -> str:
        request_id = unique("audit")
        response = caller.request(method, path, headers={"X-Request-Id": request_id}, **kwargs)
        assert response.status_code == status, (method, path, response.text)
        return request_id

    reads = [send(alpha, "GET", "/v1/sessions", 200), send(tenants.reader, "GET", "/v1/whoami", 200),
             send(alpha, "HEAD", "/v1", 200)]
    changes = [
        ("alpha", "PUT", session_path(sid), 201, {"json": {"mode": "default"}}),
        ("alpha", "POST", tasks_path(sid), 201, {"json": download(origin.url("/bytes/10"), id="t", start=False)}),
        ("alpha", "PATCH", task, 200, {"json": {"priority": 0.2}}),
        ("alpha", "POST", task + "/cancel", 200, {}),
        ("alpha", "DELETE", task, 204, {}),
        ("alpha", "PUT", foreign, 403, {}),
        ("alpha", "DELETE", foreign, 404, {}),
        ("reader", "POST", tasks_path(sid), 403, {"json": download(origin.url("/bytes/10"))}),
        ("ops", "DELETE", session_path(sid), 202, {}),
        ("token-1", "POST", "/v1/blobs", 201, {"data": b"audited\n"}),
    ]
    callers = {"alpha": alpha, "reader": tenants.reader, "ops": tenants.ops, "token-1": tenants.token_admin}
    for name, method, path, status, kwargs in changes:
        record = wait_audit(tenants.td, send(callers[name], method, path, status, **kwargs))
        assert (record["principal"], record["method"], record["path"], str(record["status"])) == \
            (name, method, path, str(status)), record
    audited = {r.get("request_id") for r in audit_records(tenants.td)}
    assert not audited & set(reads)


def test_idempotency_keys_are_each_principals_own(tenants):
    """The same key and body from two principals are two requests: neither sees the other's reply."""
    content = b"shared key, separate tenants\n"
    replies = [caller.post("/v1/blobs", data=content, headers={"Idempotency-Key": "tenant-key"})
               for caller in (tenants.alpha, tenants.beta)]
    assert [r.status_code for r in replies] == [201, 201]
    assert replies[0].json()["id"] != replies[1].json()["id"]
    assert "Idempotent-Replayed" not in replies[1].headers
    again = tenants.alpha.post("/v1/blobs", data=content, headers={"Idempotency-Key": "tenant-key"})
    assert again.headers.get("Idempotent-Replayed") == "true" and again.json() == replies[0].json()

"""The auth file over transferd's life: refused at start when invalid, re-read on SIGHUP (an invalid
file is logged and the principals in force stay), given by flag or environment, and alongside
`--api-token` admins.
"""

from __future__ import annotations

import json
import os
import signal

import pytest

from support.api import assert_problem, put_session, unique, wait_for
from support.events import EventStream
from support.tenants import Principal, token_sha256, write_auth_file
from support.transferd import run_transferd

RELOADED = "auth file reloaded"
REJECTED = "auth file rejected; keeping the previous principals"


def whoami(td, principal: Principal) -> int:
    return td.as_caller(principal.token).get("/v1/whoami").status_code


def sighup_and_wait(td, message: str) -> dict:
    """Sends SIGHUP and returns the log line it produced (`message`, after those seen before)."""
    seen = len([r for r in td.log_records() if r.get("msg") == message])
    os.kill(td.pid, signal.SIGHUP)
    return wait_for(lambda: ([r for r in td.log_records() if r.get("msg") == message][seen:] or [None])[0],
                    timeout=5, message=f"the log line {message!r}")


def test_sighup_puts_a_rewritten_auth_file_in_force(start_transferd, tmp_path):
    alpha = Principal("alpha", "write", ["com.alpha."])
    beta = Principal("beta", "write", ["com.beta."])
    carol = Principal("carol", "read", ["com.carol."])
    path = write_auth_file(tmp_path / "auth.json", [alpha, beta, carol])
    td = start_transferd("--auth-file", str(path))
    assert [whoami(td, p) for p in (alpha, beta, carol)] == [200, 200, 200]
    assert_problem(put_session(td.as_caller(carol.token), unique("com.carol.s")), 403, "forbidden")

    dave = Principal("dave", "write", ["com.dave."])
    carol_writes = Principal("carol", "write", ["com.carol."], token=carol.token)
    write_auth_file(path, [alpha, carol_writes, dave])  # dave added, beta removed, carol a writer
    record = sighup_and_wait(td, RELOADED)
    assert str(record["principals"]) == "3" and record["level"] == "info", record
    assert whoami(td, dave) == 200
    assert_problem(td.as_caller(beta.token).get("/v1/whoami"), 401, "unauthorized")
    assert put_session(td.as_caller(carol.token), unique("com.carol.s")).status_code == 201
    assert td.as_caller(carol.token).get("/v1/whoami").json()["role"] == "write"
    assert whoami(td, alpha) == 200


def test_an_open_event_stream_ends_when_a_reload_takes_its_session_away(start_transferd, tmp_path):
    """A stream admitted before the reload is not a way around it: at its next heartbeat it asks
    whether its principal may still see the session, and ends if not — while a principal that
    keeps the session keeps its stream."""
    alpha = Principal("alpha", "write", ["com.alpha."])
    beta = Principal("beta", "read", ["com.alpha."])
    path = write_auth_file(tmp_path / "auth.json", [alpha, beta])
    td = start_transferd("--auth-file", str(path), "--sse-heartbeat", "200ms")
    sid = unique("com.alpha.s")
    assert put_session(td.as_caller(alpha.token), sid).status_code == 201
    with EventStream(td.as_caller(alpha.token), sid) as kept, EventStream(td.as_caller(beta.token), sid) as taken:
        assert kept.status == taken.status == 200
        taken.wait_for(lambda s: s.comments >= 1, timeout=5)
        write_auth_file(path, [alpha, Principal("beta", "read", ["com.other."], token=beta.token)])
        sighup_and_wait(td, RELOADED)
        taken.wait_for(lambda s: s.ended, timeout=5)
        heard = kept.comments
        kept.wait_for(lambda s: s.comments >= heard + 2, timeout=5)
        assert not kept.ended


def test_an_invalid_file_on_sighup_keeps_the_previous_principals(start_transferd, tmp_path):
    alpha = Principal("alpha", "write", ["com.alpha."])
    path = write_auth_file(tmp_path / "auth.json", [alpha])
    td = start_transferd("--auth-file", str(path))
    eve = Principal("eve", "write", ["com.eve."])
    for invalid in ("{not json", json.dumps({"principals": [eve.entry(), {**alpha.entry(), "colour": "red"}]})):
        path.write_text(invalid)
        record = sighup_and_wait(td, REJECTED)
        assert record["level"] == "error" and record.get("error"), record
        assert whoami(td, alpha) == 200
        assert whoami(td, eve) == 401
    os.unlink(path)
    assert sighup_and_wait(td, REJECTED)["error"]
    assert whoami(td, alpha) == 200


def entry(name: str = "p", **fields) -> dict:
    base = {"name": name, "token_sha256": token_sha256(name + "-token"), "role": "write", "namespaces": ["com.p."]}
    return {key: value for key, value in {**base, **fields}.items() if value is not None}


# Each invalid file, and a word the message must name besides the file.
INVALID = {
    "not JSON": ("{\"principals\": [", "JSON"),
    "no principals member": ({}, "principals"),
    "an unknown member": ({"principals": [entry(colour="red")]}, "colour"),
    "an unknown limit": ({"principals": [entry(limits={"requests_per_hour": 5})]}, "requests_per_hour"),
    "a bad name": ({"principals": [entry("a b")]}, "name"),
    "the name of a built-in admin": ({"principals": [entry("token-1", role="admin", namespaces=None)]}, "name"),
    "a name used twice": ({"principals": [entry(), entry(token_sha256="a" * 64)]}, "name"),
    "a token used twice": ({"principals": [entry("p"), entry("q", token_sha256=token_sha256("p-token"))]},
                           "token_sha256"),
    "a short hash": ({"principals": [entry(token_sha256="abc")]}, "token_sha256"),
    "an unknown role": ({"principals": [entry(role="owner")]}, "role"),
    "a writer without namespaces": ({"principals": [entry(namespaces=None)]}, "namespaces"),
    "an empty namespace list": ({"principals": [entry(namespaces=[])]}, "namespaces"),
    "an admin with namespaces": ({"principals": [entry(role="admin")]}, "namespaces"),
    "a namespace with a slash": ({"principals": [entry(namespaces=["com/p"])]}, "namespaces"),
    "a relative allow_path": ({"principals": [entry(allow_paths=["srv/x"])]}, "allow_paths"),
    "an allow_path outside every root": ({"principals": [entry(allow_paths=["/etc"])]}, "allow_paths"),
    "a rate of zero": ({"principals": [entry(limits={"requests_per_second": 0})]}, "requests_per_second"),
    "a burst of zero": ({"principals": [entry(limits={"requests_per_second": 1, "burst": 0})]}, "burst"),
    "a negative task limit": ({"principals": [entry(limits={"max_unfinished_tasks": -1})]}, "max_unfinished_tasks"),
    "a bandwidth under 1024": ({"principals": [entry(limits={"max_bytes_per_second": 1000})]}, "max_bytes_per_second"),
}


@pytest.mark.parametrize("document, named", INVALID.values(), ids=INVALID.keys())
def test_an_invalid_auth_file_stops_the_start_with_a_message_naming_the_fault(tmp_path, document, named):
    path = tmp_path / "auth.json"
    path.write_text(document if isinstance(document, str) else json.dumps(document))
    result = run_transferd(["--auth-file", str(path), "--allow-path", str(tmp_path)])
    assert result.exited and result.returncode != 0, result
    assert str(path) in result.stderr and named in result.stderr.replace(str(path), ""), result.stderr


def test_a_missing_auth_file_stops_the_start(tmp_path):
    path = tmp_path / "absent.json"
    result = run_transferd(["--auth-file", str(path)], env={"TRANSFERD_AUTH_FILE": str(tmp_path / "ignored.json")})
    assert result.exited and result.returncode != 0 and str(path) in result.stderr, result


def test_the_auth_file_may_come_from_the_environment(start_transferd, tmp_path):
    alpha = Principal("alpha", "write", ["com.alpha."])
    path = write_auth_file(tmp_path / "auth.json", [alpha])
    td = start_transferd(env={"TRANSFERD_AUTH_FILE": str(path)})
    assert td.as_caller(alpha.token).get("/v1/whoami").json()["name"] == "alpha"


def test_with_an_auth_file_every_request_needs_a_token_on_any_address(start_transferd, tmp_path):
    """Even a file without principals: then nobody gets in, and listening beyond loopback is allowed."""
    path = write_auth_file(tmp_path / "auth.json", [])
    td = start_transferd("--auth-file", str(path), host="0.0.0.0")
    assert_problem(td.get("/v1", token=None), 401, "unauthorized")
    assert_problem(td.get("/v1", token="anything"), 401, "unauthorized")


def test_api_tokens_stay_admins_named_in_order_beside_the_file(start_transferd, tmp_path):
    alpha = Principal("alpha", "write", ["com.alpha."])
    path = write_auth_file(tmp_path / "auth.json", [alpha])
    td = start_transferd("--auth-file", str(path), "--api-token", "first-token", "--api-token", "second-token")
    for token, name in (("first-token", "token-1"), ("second-token", "token-2")):
        assert td.as_caller(token).get("/v1/whoami").json() == {
            "name": name, "role": "admin", "namespaces": None, "allow_paths": None,
            "limits": {"requests_per_second": None, "burst": None, "max_unfinished_tasks": None,
                       "max_bytes_per_second": None}}
    assert td.as_caller(alpha.token).get("/v1/whoami").json()["name"] == "alpha"

"""Credentials per session (the session configuration's `credentials`): basic, digest and bearer,
offered only to their host — never to another host or port after a redirect, and chosen again for
each redirect's target, so a redirect to a host (or path) with its own credential carries that one — a refusal ending
the task with `user_authentication_required`, and secrets never shown, logged, or (for an
ephemeral session) written."""

from __future__ import annotations

import base64
from pathlib import Path
from urllib.parse import quote

import pytest

from support.api import (assert_success, assert_task_error, create_session, data, get_session, run_task, session_path)
from support.origin import Origin


def basic(user="alice", password="wonder", **extra) -> dict:
    return {"host": "127.0.0.1", "scheme": "basic", "username": user, "password": password, **extra}


def body(td, sid, task) -> dict:
    return td.get(session_path(sid) + f"/tasks/{task['id']}/body").json()


@pytest.mark.parametrize("scheme", ["basic", "digest"])
def test_password_schemes_authenticate(transferd, origin, scheme):
    sid = create_session(transferd, configuration={"credentials": [basic(scheme=scheme)]})
    task = assert_success(run_task(transferd, sid, data(origin.url(f"/auth/{scheme}?user=alice&pass=wonder"))))
    assert task["response"]["status"] == 200
    assert body(transferd, sid, task) == {"authenticated": True, "scheme": scheme, "user": "alice"}


def test_bearer_authenticates(transferd, origin):
    credential = {"host": "127.0.0.1", "scheme": "bearer", "token": "tok-123.abc"}
    sid = create_session(transferd, configuration={"credentials": [credential]})
    task = assert_success(run_task(transferd, sid, data(origin.url("/auth/bearer?token=tok-123.abc"))))
    assert body(transferd, sid, task)["authenticated"] is True


@pytest.mark.parametrize("scheme,url", [
    ("basic", "/auth/basic?user=alice&pass=other"),
    ("digest", "/auth/digest?user=alice&pass=other"),
    ("bearer", "/auth/bearer?token=other"),
])
def test_refused_credentials_end_with_user_authentication_required(transferd, origin, scheme, url):
    credential = {"host": "127.0.0.1", "scheme": "bearer", "token": "wrong"} if scheme == "bearer" else basic(scheme=scheme)
    sid = create_session(transferd, configuration={"credentials": [credential]})
    task = assert_task_error(run_task(transferd, sid, data(origin.url(url))), "user_authentication_required")
    assert task["response"]["status"] == 401


def test_a_401_without_credentials_is_just_a_response(transferd, origin):
    sid = create_session(transferd, configuration={"credentials": [basic(path_prefix="/elsewhere")]})
    task = assert_success(run_task(transferd, sid, data(origin.url("/auth/basic?user=alice&pass=wonder"))))
    assert task["response"]["status"] == 401
    assert origin.requests[-1].headers.get("Authorization") is None


def test_the_most_specific_credential_wins(transferd, origin):
    sid = create_session(transferd, configuration={"credentials": [
        basic(password="host-wide"),
        basic(password="wonder", port=origin.port, path_prefix="/auth"),
        basic(password="not-this-port", port=1),
    ]})
    task = assert_success(run_task(transferd, sid, data(origin.url("/auth/basic?user=alice&pass=wonder"))))
    assert body(transferd, sid, task)["authenticated"] is True
    # Outside the path prefix, the host-wide credential applies.
    task = assert_success(run_task(transferd, sid, data(origin.url("/echo"))))
    expected = "Basic " + base64.b64encode(b"alice:host-wide").decode()
    assert body(transferd, sid, task)["headers"]["authorization"] == expected


@pytest.mark.parametrize("second_host", ["localhost", "127.0.0.1"])
@pytest.mark.parametrize("credential", [basic(), {"host": "127.0.0.1", "scheme": "bearer", "token": "t0ken"}],
                         ids=["basic", "bearer"])
def test_no_authorization_at_another_host_or_port_after_a_redirect(transferd, origin, credential, second_host):
    with Origin() as second:
        # For the same host the credential names the first port: one without a port is the
        # host's on every port, so it would be chosen for the target too (see below).
        if second_host == "127.0.0.1":
            credential = {**credential, "port": origin.port}
        sid = create_session(transferd, configuration={"credentials": [credential]})
        target = f"http://{second_host}:{second.port}/echo"
        task = assert_success(run_task(transferd, sid, data(origin.url(f"/redirect-to?url={target}"))))
        assert task["metrics"]["redirect_count"] == 1
        # The first host got the credentials; the second never did.
        assert origin.requests[0].headers.get("Authorization") is not None
        assert [r.headers.get("Authorization") for r in second.requests] == [None]
        assert body(transferd, sid, task)["headers"].get("authorization") is None


def basic_header(user: str, password: str) -> str:
    return "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode()


@pytest.mark.parametrize("scheme", ["basic", "digest"])
def test_the_targets_credential_is_sent_after_a_redirect_to_another_port(transferd, origin, scheme):
    """curl alone offers only the first URL's credential, and only there; transferd picks the
    credential for every redirect's URL."""
    with Origin() as second:
        sid = create_session(transferd, configuration={"credentials": [
            basic(password="first", port=origin.port), basic(password="second", port=second.port, scheme=scheme)]})
        target = f"http://127.0.0.1:{second.port}/auth/{scheme}?user=alice&pass=second"
        task = assert_success(run_task(transferd, sid, data(origin.url(f"/redirect-to?url={quote(target, safe='')}"))))
        assert task["response"]["status"] == 200
        # (curl 7.88 counts digest's second request, the answer to the challenge, as a redirect.)
        assert task["metrics"]["redirect_count"] == (1 if scheme == "basic" else 2)
        assert body(transferd, sid, task) == {"authenticated": True, "scheme": scheme, "user": "alice"}
        assert origin.requests[0].headers.get("Authorization") == basic_header("alice", "first")
        sent = [r.headers.get("Authorization") or "" for r in second.requests]
        assert all("first" not in value and value != basic_header("alice", "first") for value in sent)


def test_the_targets_credential_is_sent_after_a_redirect_to_another_host(transferd, origin):
    """127.0.0.1 → localhost: the credential for localhost goes to localhost, 127.0.0.1's stays."""
    sid = create_session(transferd, configuration={"credentials": [
        basic(password="first"), basic(password="second", host="localhost")]})
    target = f"http://localhost:{origin.port}/auth/basic?user=alice&pass=second"
    task = assert_success(run_task(transferd, sid, data(origin.url(f"/redirect-to?url={quote(target, safe='')}"))))
    assert body(transferd, sid, task)["authenticated"] is True
    assert [r.headers.get("Authorization") for r in origin.requests] == [basic_header("alice", "first"),
                                                                         basic_header("alice", "second")]


def test_a_host_wide_credential_follows_a_redirect_to_another_port_of_its_host(transferd, origin):
    """A credential without a port applies to its host on any port, however the URL was reached."""
    with Origin() as second:
        sid = create_session(transferd, configuration={"credentials": [basic()]})
        target = quote(second.url("/auth/basic?user=alice&pass=wonder"), safe="")
        task = assert_success(run_task(transferd, sid, data(origin.url(f"/redirect-to?url={target}"))))
        assert body(transferd, sid, task)["authenticated"] is True
        assert [r.headers.get("Authorization") for r in second.requests] == [basic_header("alice", "wonder")]


def test_a_redirect_into_a_path_prefix_gets_its_credential_and_out_of_it_loses_it(transferd, origin):
    """Same host and port: the credential is the one for each hop's path."""
    sid = create_session(transferd, configuration={"credentials": [basic(password="wonder", path_prefix="/auth")]})
    task = assert_success(run_task(transferd, sid, data(origin.url("/redirect-to?url=/auth/basic%3Fuser%3Dalice%26pass%3Dwonder"))))
    assert body(transferd, sid, task)["authenticated"] is True
    assert [r.headers.get("Authorization") for r in origin.requests] == [None, basic_header("alice", "wonder")]
    origin.reset_stats()
    sid = create_session(transferd, configuration={"credentials": [basic(password="wonder", path_prefix="/redirect-to")]})
    task = assert_success(run_task(transferd, sid, data(origin.url("/redirect-to?url=/echo"))))
    assert body(transferd, sid, task)["headers"].get("authorization") is None
    assert [r.headers.get("Authorization") for r in origin.requests] == [basic_header("alice", "wonder"), None]


def test_a_307_to_another_credential_keeps_the_method_and_body(transferd, origin):
    with Origin() as second:
        sid = create_session(transferd, configuration={"credentials": [basic(password="second", port=second.port)]})
        target = quote(f"http://127.0.0.1:{second.port}/echo", safe="")
        task = assert_success(run_task(transferd, sid, {"kind": "data", "request": {
            "url": origin.url(f"/redirect-to?status=307&url={target}"), "method": "POST", "body": {"text": "hello"}}}))
        echo = body(transferd, sid, task)
        assert (echo["method"], echo["body_text"]) == ("POST", "hello")
        assert echo["headers"]["authorization"] == basic_header("alice", "second")


def test_custom_authorization_and_cookie_headers_stay_with_the_first_host(transferd, origin):
    with Origin() as second:
        sid = create_session(transferd, configuration={"headers": {"Authorization": "Bearer custom", "Cookie": "c=1",
                                                                   "X-Kept": "yes"}})
        task = assert_success(run_task(transferd, sid, data(origin.url(f"/redirect-to?url={second.url('/echo')}"))))
        headers = body(transferd, sid, task)["headers"]
        assert headers["x-kept"] == "yes"
        assert "authorization" not in headers and "cookie" not in headers
        assert origin.requests[0].headers.get("Authorization") == "Bearer custom"


def test_secrets_are_redacted_and_never_logged(transferd, origin):
    secrets = ["pa55-word-9f1", "bearer-token-7c2"]
    sid = create_session(transferd, configuration={"credentials": [
        basic(password=secrets[0]), {"host": "example.com", "port": 8443, "path_prefix": "/api", "scheme": "bearer",
                                     "token": secrets[1]}]})
    config = get_session(transferd, sid)["configuration"]
    assert config["credentials"] == [
        {"host": "127.0.0.1", "scheme": "basic", "username": "alice", "password": "<redacted>"},
        {"host": "example.com", "port": 8443, "path_prefix": "/api", "scheme": "bearer", "token": "<redacted>"},
    ]
    run_task(transferd, sid, data(origin.url(f"/auth/basic?user=alice&pass={secrets[0]}")))
    for text in (transferd.get("/v1/sessions").text, transferd.get(session_path(sid)).text, transferd.output()):
        assert not any(secret in text for secret in secrets)


def test_an_ephemeral_sessions_secrets_are_not_written(start_transferd, origin, api_token):
    td = start_transferd(api_token=api_token)
    secret = "ephemeral-secret-5d8e"
    sid = create_session(td, mode="ephemeral", configuration={"credentials": [basic(password=secret)]})
    assert_success(run_task(td, sid, data(origin.url(f"/auth/basic?user=alice&pass={secret}"))))
    assert td.stop() == 0
    for path in Path(td.data_dir).rglob("*"):
        if path.is_file():
            assert secret.encode() not in path.read_bytes(), path


def test_credentials_of_a_durable_session_survive_a_restart(start_transferd, origin, api_token):
    td = start_transferd(api_token=api_token)
    sid = create_session(td, configuration={"credentials": [basic()]})
    td.kill9()
    td.start()
    assert_success(run_task(td, sid, data(origin.url("/auth/basic?user=alice&pass=wonder"))))

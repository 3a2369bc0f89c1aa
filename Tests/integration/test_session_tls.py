"""TLS per session (the session configuration's `tls`): a CA file, a pinned public key and a client
certificate, with certificates made by `openssl` in the test; verification always on. Files
must lie under an `--allow-path` root."""

from __future__ import annotations

import pytest

from support.api import (assert_problem, assert_success, assert_task_error, create_session, data, put_session,
                         run_task, session_path)
from support.certs import TestPKI
from support.origin import Origin


@pytest.fixture
def pki(tmp_path):
    pki = TestPKI(tmp_path / "pki")
    pki.ca = pki.authority("Test CA")
    pki.server = pki.issue(pki.ca, "127.0.0.1", server=True)
    return pki


@pytest.fixture
def td(start_transferd, api_token, tmp_path):
    return start_transferd("--allow-path", str(tmp_path), api_token=api_token)


def body(td, sid, task) -> dict:
    return td.get(session_path(sid) + f"/tasks/{task['id']}/body").json()


def test_an_unknown_issuer_is_untrusted(td, pki):
    with Origin(tls=(pki.server.cert, pki.server.key, None)) as origin:
        sid = create_session(td)
        task = assert_task_error(run_task(td, sid, data(origin.url("/echo"))), "server_certificate_untrusted")
        assert task["response"] is None and origin.requests == []


def test_the_sessions_ca_file_makes_it_trusted(td, pki):
    with Origin(tls=(pki.server.cert, pki.server.key, None)) as origin:
        sid = create_session(td, configuration={"tls": {"ca_file": pki.ca.cert}})
        task = assert_success(run_task(td, sid, data(origin.url("/echo"))))
        assert body(td, sid, task)["tls"]["version"].startswith("TLS")


def test_a_ca_file_replaces_the_system_trust_store_for_other_issuers(td, pki):
    """Trusting one CA does not trust another one's certificates."""
    other = pki.authority("Other CA")
    with Origin(tls=(pki.server.cert, pki.server.key, None)) as origin:
        sid = create_session(td, configuration={"tls": {"ca_file": other.cert}})
        assert_task_error(run_task(td, sid, data(origin.url("/echo"))), "server_certificate_untrusted")


def test_a_pinned_public_key_must_match(td, pki):
    stranger = pki.issue(pki.ca, "127.0.0.2", server=True)
    with Origin(tls=(pki.server.cert, pki.server.key, None)) as origin:
        wrong = create_session(td, configuration={"tls": {"ca_file": pki.ca.cert,
                                                          "pinned_public_key": pki.public_key_pin(stranger)}})
        task = assert_task_error(run_task(td, wrong, data(origin.url("/echo"))), "server_certificate_untrusted")
        assert "pin" in task["error"]["message"].lower() or task["error"]["curl_code"] == 90
        right = create_session(td, configuration={"tls": {
            "ca_file": pki.ca.cert,
            "pinned_public_key": pki.public_key_pin(stranger) + ";" + pki.public_key_pin(pki.server)}})
        assert_success(run_task(td, right, data(origin.url("/echo"))))
        # The pinned session's request went out on a connection of its own, checked against its pin.
        assert len(origin.requests) == 1


def test_a_client_certificate_required_and_given(td, pki):
    client_ca = pki.authority("Client CA")
    client = pki.issue(client_ca, "transferd client")
    with Origin(tls=(pki.server.cert, pki.server.key, client_ca.cert)) as origin:
        without = create_session(td, configuration={"tls": {"ca_file": pki.ca.cert}})
        assert_task_error(run_task(td, without, data(origin.url("/echo"))), "client_certificate_rejected")
        assert origin.requests == []
        stranger = pki.issue(pki.ca, "not from the client CA")
        refused = create_session(td, configuration={"tls": {
            "ca_file": pki.ca.cert, "client_cert_file": stranger.cert, "client_key_file": stranger.key}})
        assert_task_error(run_task(td, refused, data(origin.url("/echo"))), "client_certificate_rejected")
        given = create_session(td, configuration={"tls": {
            "ca_file": pki.ca.cert, "client_cert_file": client.cert, "client_key_file": client.key}})
        task = assert_success(run_task(td, given, data(origin.url("/echo"))))
        assert "transferd client" in str(body(td, given, task)["tls"]["client_cert"])


def test_tls_files_must_be_under_an_allowed_root(start_transferd, api_token, pki, tmp_path):
    allowed = tmp_path / "allowed"
    allowed.mkdir()
    td = start_transferd("--allow-path", str(allowed), api_token=api_token)
    response = put_session(td, "tls-outside", configuration={"tls": {"ca_file": pki.ca.cert}})
    assert_problem(response, 403, "path_not_allowed", field="configuration.tls.ca_file")
    response = put_session(td, "tls-missing", configuration={"tls": {"ca_file": str(allowed / "none.pem")}})
    assert_problem(response, 422, "file_does_not_exist", field="configuration.tls.ca_file")
    (allowed / "junk.pem").write_text("not a certificate\n")
    response = put_session(td, "tls-junk", configuration={"tls": {"ca_file": str(allowed / "junk.pem")}})
    assert_problem(response, 422, field="configuration.tls.ca_file")
    (allowed / "escape.pem").symlink_to(pki.ca.cert)
    response = put_session(td, "tls-link", configuration={"tls": {"ca_file": str(allowed / "escape.pem")}})
    assert_problem(response, 403, "path_not_allowed", field="configuration.tls.ca_file")


def test_unreadable_tls_files_at_start_fail_the_sessions_tasks(start_transferd, api_token, pki, tmp_path):
    td = start_transferd("--allow-path", str(tmp_path), api_token=api_token)
    ca = tmp_path / "ca.pem"
    ca.write_bytes(open(pki.ca.cert, "rb").read())
    with Origin(tls=(pki.server.cert, pki.server.key, None)) as origin:
        sid = create_session(td, configuration={"tls": {"ca_file": str(ca)}})
        assert_success(run_task(td, sid, data(origin.url("/echo"))))
        assert td.stop() == 0
        ca.unlink()
        td.start()
        task = assert_task_error(run_task(td, sid, data(origin.url("/echo"))), "server_certificate_untrusted")
        assert "ca.pem" in task["error"]["message"]
        assert len(origin.requests) == 1  # only the first task reached the origin

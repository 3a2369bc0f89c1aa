"""Self-tests of the test servers: each origin scenario and the webhook receiver, driven with
`requests` and raw sockets."""

from __future__ import annotations

import base64
import hashlib
import json
import secrets
import socket
import subprocess
import threading
import time
from datetime import datetime, timezone

import pytest
import requests
from requests.auth import HTTPDigestAuth
from standardwebhooks import Webhook

from support.origin import BLOCK, MultipartParser, Origin
from support.receiver import WebhookReceiver

TIMEOUT = 5


@pytest.fixture(scope="module")
def origin():
    with Origin() as server:
        yield server


@pytest.fixture
def fresh_origin():
    """An origin of its own, for tests that look at its statistics."""
    with Origin() as server:
        yield server


def wait_until(condition, timeout=2.0):
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "condition not met in time"
        time.sleep(0.01)


# --- raw HTTP helpers ---------------------------------------------------------------------------


def send_raw(server: Origin, target: str, method="GET", headers=(), body=b"") -> socket.socket:
    """Connect and send one request; the caller reads the answer."""
    sock = socket.create_connection(("127.0.0.1", server.port), timeout=TIMEOUT)
    head = [f"{method} {target} HTTP/1.1", "Host: 127.0.0.1", *headers, "", ""]
    sock.sendall("\r\n".join(head).encode() + body)
    return sock


def read_head(sock: socket.socket) -> tuple[int, dict[str, str], bytes]:
    """Status, lower-cased headers and the body bytes already read past the head."""
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = sock.recv(65536)
        assert chunk, f"connection closed inside the head: {data!r}"
        data += chunk
    head, _, rest = data.partition(b"\r\n\r\n")
    status_line, *lines = head.decode("latin-1").split("\r\n")
    headers = {name.lower(): value.strip() for name, _, value in (line.partition(":") for line in lines)}
    return int(status_line.split()[1]), headers, rest


def read_to_eof(sock: socket.socket, already: bytes = b"") -> bytes:
    data = bytearray(already)
    while chunk := sock.recv(65536):
        data += chunk
    return bytes(data)


# --- /bytes ---------------------------------------------------------------------------------------


def test_bytes_full_body_and_headers(origin):
    n = 3 * BLOCK + 12345
    response = requests.get(origin.url(f"/bytes/{n}?seed=abc"), timeout=TIMEOUT)
    assert response.status_code == 200
    assert hashlib.sha256(response.content).hexdigest() == Origin.expected_sha256(n, "abc")
    assert response.content[:1000] == Origin.expected_bytes(1000, "abc")
    etag, last_modified = Origin.validators(n, "abc")
    assert response.headers["ETag"] == etag and not etag.startswith("W/")
    assert response.headers["Last-Modified"] == last_modified
    assert response.headers["Accept-Ranges"] == "bytes"
    assert response.headers["Content-Length"] == str(n)
    assert Origin.expected_sha256(n, "other") != Origin.expected_sha256(n, "abc")


def test_bytes_head(origin):
    response = requests.head(origin.url("/bytes/5000"), timeout=TIMEOUT)
    assert response.status_code == 200
    assert response.headers["Content-Length"] == "5000"
    assert response.content == b""


@pytest.mark.parametrize("header, start, stop", [
    ("bytes=10-19", 10, 20),
    ("bytes=1048000-2098000", 1048000, 2098001),  # across a block boundary
    ("bytes=3000000-", 3000000, 3 * BLOCK),
    ("bytes=-100", 3 * BLOCK - 100, 3 * BLOCK),
    ("bytes=0-99999999", 0, 3 * BLOCK),
])
def test_bytes_ranges(origin, header, start, stop):
    n = 3 * BLOCK
    response = requests.get(origin.url(f"/bytes/{n}?seed=r"), headers={"Range": header}, timeout=TIMEOUT)
    assert response.status_code == 206
    assert response.headers["Content-Range"] == f"bytes {start}-{stop - 1}/{n}"
    assert response.content == Origin.expected_bytes(n, "r")[start:stop]


@pytest.mark.parametrize("header", ["bytes=100-", "bytes=-0"])
def test_bytes_unsatisfiable_range(origin, header):
    response = requests.get(origin.url("/bytes/100"), headers={"Range": header}, timeout=TIMEOUT)
    assert response.status_code == 416
    assert response.headers["Content-Range"] == "bytes */100"


@pytest.mark.parametrize("header", ["bytes=0-1,5-6", "items=0-1", "bytes=9-2"])
def test_bytes_ignored_range_headers(origin, header):
    response = requests.get(origin.url("/bytes/100"), headers={"Range": header}, timeout=TIMEOUT)
    assert response.status_code == 200 and len(response.content) == 100


def test_if_range(origin):
    etag, last_modified = Origin.validators(1000)
    url = origin.url("/bytes/1000")

    def status(if_range):
        headers = {"Range": "bytes=500-", "If-Range": if_range}
        return requests.get(url, headers=headers, timeout=TIMEOUT).status_code

    assert status(etag) == 206
    assert status(last_modified) == 206
    assert status('"something-else"') == 200
    assert status("W/" + etag) == 200  # weak tags never match
    assert status("Wed, 01 Jan 2020 00:00:00 GMT") == 200


def test_etag_version_changes_resource(origin):
    old = requests.get(origin.url("/bytes/1000"), timeout=TIMEOUT)
    new = requests.get(origin.url("/bytes/1000?etag=v2"), timeout=TIMEOUT)
    assert new.headers["ETag"] != old.headers["ETag"]
    assert new.headers["Last-Modified"] != old.headers["Last-Modified"]
    assert new.content != old.content
    assert new.content == Origin.expected_bytes(1000, etag="v2")
    stale = requests.get(origin.url("/bytes/1000?etag=v2"),
                         headers={"Range": "bytes=500-", "If-Range": old.headers["ETag"]}, timeout=TIMEOUT)
    assert stale.status_code == 200


def test_validators_option(origin):
    none = requests.head(origin.url("/bytes/10?validators=none"), timeout=TIMEOUT)
    assert "ETag" not in none.headers and "Last-Modified" not in none.headers
    only_etag = requests.head(origin.url("/bytes/10?validators=etag"), timeout=TIMEOUT)
    assert "ETag" in only_etag.headers and "Last-Modified" not in only_etag.headers


def test_ignore_range(origin):
    response = requests.get(origin.url("/bytes/100?ignore_range=1"), headers={"Range": "bytes=0-9"},
                            timeout=TIMEOUT)
    assert response.status_code == 200 and len(response.content) == 100
    assert "Accept-Ranges" not in response.headers


def test_no_length_is_chunked(origin):
    n = BLOCK + 7
    response = requests.get(origin.url(f"/bytes/{n}?no_length=1"), timeout=TIMEOUT)
    assert response.headers["Transfer-Encoding"] == "chunked"
    assert "Content-Length" not in response.headers
    assert hashlib.sha256(response.content).hexdigest() == Origin.expected_sha256(n)


def test_rate_drips(origin):
    began = time.monotonic()
    response = requests.get(origin.url("/bytes/30000?rate=100000"), timeout=TIMEOUT)
    assert len(response.content) == 30000
    assert time.monotonic() - began >= 0.18  # three writes of 10000 bytes, 0.1 s apart


def test_content_type_and_disposition(origin):
    response = requests.head(origin.url("/bytes/10?content_type=image/png&disposition=photo.png"),
                             timeout=TIMEOUT)
    assert response.headers["Content-Type"] == "image/png"
    assert response.headers["Content-Disposition"] == 'attachment; filename="photo.png"'
    unicode = requests.head(origin.url("/bytes/10?disposition=r%C3%A9sum%C3%A9.pdf"), timeout=TIMEOUT)
    assert "filename*=UTF-8''r%C3%A9sum%C3%A9.pdf" in unicode.headers["Content-Disposition"]


def test_stall_after_keeps_connection_silent(fresh_origin):
    with send_raw(fresh_origin, "/bytes/100000?stall_after=1000") as sock:
        status, headers, body = read_head(sock)
        assert status == 200 and headers["content-length"] == "100000"
        while len(body) < 1000:
            body += sock.recv(65536)
        assert body == Origin.expected_bytes(1000)
        sock.settimeout(0.3)
        with pytest.raises(socket.timeout):
            sock.recv(1)
        record = fresh_origin.requests[0]
        assert record.end_time is None
    wait_until(lambda: record.end_time is not None)  # the origin noticed the client leaving


def test_reset_after_sends_rst(fresh_origin):
    with send_raw(fresh_origin, "/bytes/1000000?reset_after=500000") as sock:
        _, _, body = read_head(sock)
        with pytest.raises(ConnectionResetError):
            while chunk := sock.recv(65536):
                body += chunk
    assert body == Origin.expected_bytes(500000)  # a reading client gets every byte sent
    assert fresh_origin.bytes_served("/bytes/") == 500000
    with pytest.raises((requests.exceptions.ConnectionError, requests.exceptions.ChunkedEncodingError)):
        requests.get(fresh_origin.url("/bytes/1000000?reset_after=5000"), timeout=TIMEOUT)


@pytest.mark.parametrize("advertised", [200, 50])
def test_wrong_length(origin, advertised):
    with send_raw(origin, f"/bytes/100?wrong_length={advertised}") as sock:
        status, headers, body = read_head(sock)
        assert headers["content-length"] == str(advertised)
        assert read_to_eof(sock, body) == Origin.expected_bytes(100)  # then the origin closed


# --- status, redirects, flaky ---------------------------------------------------------------------


def test_status_with_retry_after_and_body(origin):
    response = requests.get(origin.url("/status/503?retry_after=7&body=busy"), timeout=TIMEOUT)
    assert response.status_code == 503
    assert response.headers["Retry-After"] == "7"
    assert response.text == "busy"
    assert requests.get(origin.url("/status/404"), timeout=TIMEOUT).json() == {"status": 404}
    assert requests.get(origin.url("/status/204"), timeout=TIMEOUT).content == b""


def test_redirect_hops_then_echo(origin):
    response = requests.get(origin.url("/redirect/3?x=1"), timeout=TIMEOUT)
    assert response.status_code == 200
    assert [r.status_code for r in response.history] == [302, 302, 302]
    assert response.history[0].headers["Location"] == origin.url("/redirect/2?x=1")
    assert response.json()["path"] == "/redirect/0"


def test_redirect_307_keeps_method_and_body(origin):
    response = requests.post(origin.url("/redirect/2?status=307&relative=1"), data=b"payload",
                             timeout=TIMEOUT)
    assert response.history[0].headers["Location"] == "/redirect/1?status=307&relative=1"
    assert response.json()["method"] == "POST"
    assert response.json()["body_text"] == "payload"


def test_redirect_then_bytes(origin):
    response = requests.get(origin.url("/redirect/1?bytes=100&seed=z"), timeout=TIMEOUT)
    assert response.content == Origin.expected_bytes(100, "z")


def test_redirect_to_any_scheme(origin):
    response = requests.get(origin.url("/redirect-to?url=gopher://example.invalid/x&status=301"),
                            allow_redirects=False, timeout=TIMEOUT)
    assert response.status_code == 301
    assert response.headers["Location"] == "gopher://example.invalid/x"


def test_redirect_loop(origin):
    session = requests.Session()
    session.max_redirects = 5
    with pytest.raises(requests.TooManyRedirects):
        session.get(origin.url("/redirect-loop"), timeout=TIMEOUT)


def test_flaky_fails_then_serves(origin):
    url = origin.url("/flaky/self-test?fail=2&status=503&retry_after=1&bytes=100&seed=f")
    first, second, third = (requests.get(url, timeout=TIMEOUT) for _ in range(3))
    assert (first.status_code, second.status_code, third.status_code) == (503, 503, 200)
    assert first.headers["Retry-After"] == "1"
    assert third.content == Origin.expected_bytes(100, "f")
    assert origin.flaky_hits("self-test") == 3
    assert origin.flaky_hits("another") == 0


# --- echo and upload ------------------------------------------------------------------------------


def test_echo_any_method_and_body(origin):
    response = requests.request("PROPFIND", origin.url("/echo/sub?q=1"), data=b"hello",
                                headers={"X-Test": "yes"}, timeout=TIMEOUT)
    echo = response.json()
    assert echo["method"] == "PROPFIND" and echo["path"] == "/echo/sub" and echo["query"] == {"q": "1"}
    assert echo["headers"]["x-test"] == "yes"
    assert echo["body_length"] == 5 and echo["body_text"] == "hello"
    assert echo["body_sha256"] == hashlib.sha256(b"hello").hexdigest()
    assert echo["chunked"] is False and echo["tls"] is None


def test_echo_chunked_body(origin):
    pieces = [b"a" * 70000, b"b" * 30000]
    echo = requests.post(origin.url("/echo"), data=iter(pieces), timeout=TIMEOUT).json()
    assert echo["chunked"] is True
    assert echo["body_length"] == 100000
    assert echo["body_sha256"] == hashlib.sha256(b"".join(pieces)).hexdigest()
    assert echo["body_text"] is None  # over 64 KiB


def test_upload_raw_body(origin):
    body = secrets.token_bytes(300000)
    response = requests.put(origin.url("/upload/blob"), data=body, timeout=TIMEOUT)
    assert response.status_code == 201
    assert response.json()["sha256"] == hashlib.sha256(body).hexdigest()
    assert response.json()["length"] == len(body)
    assert origin.uploads[-1].sha256 == hashlib.sha256(body).hexdigest()


def test_upload_multipart(origin):
    content = secrets.token_bytes(200000)
    response = requests.post(origin.url("/upload"), data={"note": "héllo"},
                             files={"file": ("photo.jpg", content, "image/jpeg")}, timeout=TIMEOUT)
    record = response.json()
    assert record["multipart_complete"] is True
    note, file = record["parts"]
    assert (note["name"], note["filename"], note["value"]) == ("note", None, "héllo")
    assert (file["name"], file["filename"], file["content_type"]) == ("file", "photo.jpg", "image/jpeg")
    assert file["size"] == len(content) and file["sha256"] == hashlib.sha256(content).hexdigest()
    assert file["value"] is None


def test_multipart_parser_byte_by_byte():
    body = (b"preamble\r\n--XyZ\r\nContent-Disposition: form-data; name=\"a\"\r\n\r\n1\r\n--XyZ\r\n"
            b"Content-Disposition: form-data; name=\"b\"; filename=\"b.txt\"\r\n"
            b"Content-Type: text/plain\r\n\r\nline\r\n-XyZ, --XyZ\r\r\n--XyZ--\r\nepilogue")
    parser = MultipartParser.for_content_type('multipart/form-data; boundary="XyZ"')
    for i in range(len(body)):
        parser.feed(body[i:i + 1])
    assert parser.complete
    assert [(p.name, p.filename, p.size) for p in parser.parts] == [("a", None, 1), ("b", "b.txt", 18)]
    assert parser.parts[1].sha256 == hashlib.sha256(b"line\r\n-XyZ, --XyZ\r").hexdigest()
    assert MultipartParser.for_content_type("application/json") is None


def test_upload_refused(origin):
    response = requests.post(origin.url("/upload?status=413"), data=b"x" * 1000, timeout=TIMEOUT)
    assert response.status_code == 413


def test_expect_continue(origin):
    with send_raw(origin, "/upload", "POST", ["Content-Length: 5", "Expect: 100-continue"]) as sock:
        status, _, rest = read_head(sock)
        assert status == 100 and rest == b""
        sock.sendall(b"hello")
        status, _, _ = read_head(sock)
        assert status == 201

    with send_raw(origin, "/upload?status=413", "POST", ["Content-Length: 5", "Expect: 100-continue"]) as sock:
        status, headers, _ = read_head(sock)
        assert status == 413 and headers["connection"] == "close"


def test_upload_reset_after(fresh_origin):
    with pytest.raises(requests.exceptions.ConnectionError):
        requests.put(fresh_origin.url("/upload?reset_after=100000"), data=b"x" * 4_000_000, timeout=TIMEOUT)
    record = fresh_origin.requests[0]
    wait_until(lambda: record.end_time is not None)
    assert record.bytes_received == 100000
    assert fresh_origin.uploads == []


# --- cookies and authentication -------------------------------------------------------------------


def test_cookies(origin):
    session = requests.Session()
    response = session.get(origin.url("/cookies/set?a=1&b=2"), timeout=TIMEOUT)
    assert response.json() == {"set": {"a": "1", "b": "2"}}
    assert session.get(origin.url("/cookies/echo"), timeout=TIMEOUT).json()["cookies"] == {"a": "1", "b": "2"}
    session.get(origin.url("/cookies/set?a=gone&expired=1"), timeout=TIMEOUT)
    assert session.get(origin.url("/cookies/echo"), timeout=TIMEOUT).json()["cookies"] == {"b": "2"}
    scoped = requests.get(origin.url("/cookies/set?c=3&domain=example.test&max_age=60"), timeout=TIMEOUT)
    assert scoped.headers["Set-Cookie"] == "c=3; Path=/; Domain=example.test; Max-Age=60"


def test_basic_auth(origin):
    url = origin.url("/auth/basic?user=u&pass=p")
    denied = requests.get(url, timeout=TIMEOUT)
    assert denied.status_code == 401 and denied.headers["WWW-Authenticate"].startswith("Basic ")
    assert requests.get(url, auth=("u", "wrong"), timeout=TIMEOUT).status_code == 401
    assert requests.get(url, auth=("u", "p"), timeout=TIMEOUT).json()["authenticated"] is True


def test_bearer_auth(origin):
    url = origin.url("/auth/bearer?token=s3cret")
    assert requests.get(url, timeout=TIMEOUT).headers["WWW-Authenticate"] == 'Bearer realm="transferd-test"'
    wrong = requests.get(url, headers={"Authorization": "Bearer nope"}, timeout=TIMEOUT)
    assert wrong.status_code == 401 and 'error="invalid_token"' in wrong.headers["WWW-Authenticate"]
    assert requests.get(url, headers={"Authorization": "Bearer s3cret"}, timeout=TIMEOUT).status_code == 200


def test_digest_auth(origin):
    url = origin.url("/auth/digest?user=alice&pass=wonder")
    challenge = requests.get(url, timeout=TIMEOUT)
    assert challenge.status_code == 401
    assert 'qop="auth"' in challenge.headers["WWW-Authenticate"]
    response = requests.get(url, auth=HTTPDigestAuth("alice", "wonder"), timeout=TIMEOUT)
    assert response.status_code == 200 and response.json()["scheme"] == "digest"
    assert requests.get(url, auth=HTTPDigestAuth("alice", "wrong"), timeout=TIMEOUT).status_code == 401
    forged = 'Digest username="alice", realm="transferd-test", nonce="made-up", uri="/", response="00"'
    assert requests.get(url, headers={"Authorization": forged}, timeout=TIMEOUT).status_code == 401


def test_slow_headers(origin):
    with pytest.raises(requests.exceptions.ReadTimeout):
        requests.get(origin.url("/slow-headers?delay=1"), timeout=0.2)
    assert requests.get(origin.url("/slow-headers?delay=0.1"), timeout=TIMEOUT).json() == {"delayed": 0.1}


def test_unknown_path_and_bad_query(origin):
    assert requests.get(origin.url("/nope"), timeout=TIMEOUT).status_code == 404
    assert requests.get(origin.url("/bytes/10?rate=fast"), timeout=TIMEOUT).status_code == 400


# --- instrumentation and lifecycle ----------------------------------------------------------------


def test_connection_counted_at_accept(fresh_origin):
    assert fresh_origin.connections_opened == 0
    with socket.create_connection(("127.0.0.1", fresh_origin.port)):
        wait_until(lambda: fresh_origin.connections_opened == 1)
        assert fresh_origin.requests == []
    wait_until(lambda: fresh_origin.active_connections == 0)


def test_keep_alive_reuses_connection(fresh_origin):
    with requests.Session() as session:
        for _ in range(3):
            session.get(fresh_origin.url("/bytes/1000"), timeout=TIMEOUT)
    assert fresh_origin.connections_opened == 1
    assert {r.connection_id for r in fresh_origin.requests} == {1}
    assert fresh_origin.bytes_served("/bytes/") == 3000
    assert [r.status for r in fresh_origin.requests] == [200, 200, 200]


def test_concurrency_and_reset_stats(fresh_origin):
    threads = [threading.Thread(target=requests.get, args=(fresh_origin.url("/slow-headers?delay=1.5"),),
                                kwargs={"timeout": TIMEOUT}) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert fresh_origin.max_concurrent_connections == 4
    assert fresh_origin.max_concurrent_requests("/slow-headers") == 4
    assert fresh_origin.max_concurrent_requests("/bytes/") == 0
    fresh_origin.reset_stats()
    assert (fresh_origin.requests, fresh_origin.connections_opened, fresh_origin.bytes_served()) == ([], 0, 0)


def test_stop_aborts_stalled_connections():
    server = Origin().start()
    with send_raw(server, "/bytes/100000?stall_after=10") as sock:
        _, _, body = read_head(sock)
        began = time.monotonic()
        server.stop()
        assert time.monotonic() - began < 2
        assert len(read_to_eof(sock, body)) == 10  # the origin closed its side


# --- TLS ------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def certificates(tmp_path_factory):
    """A CA, a server certificate for 127.0.0.1 and a client certificate, made with openssl."""
    directory = tmp_path_factory.mktemp("pki")

    def openssl(*args):
        subprocess.run(["openssl", *args], cwd=directory, check=True, capture_output=True)

    ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"]
    openssl("req", "-x509", *ec, "-keyout", "ca.key", "-out", "ca.pem", "-days", "2", "-subj", "/CN=test-ca")
    (directory / "server.ext").write_text("subjectAltName=IP:127.0.0.1\n")
    for name in ("server", "client"):
        openssl("req", *ec, "-keyout", f"{name}.key", "-out", f"{name}.csr", "-subj", f"/CN={name}")
        extension = ["-extfile", "server.ext"] if name == "server" else []
        openssl("x509", "-req", "-in", f"{name}.csr", "-CA", "ca.pem", "-CAkey", "ca.key",
                "-CAcreateserial", "-out", f"{name}.pem", "-days", "2", *extension)
    return directory


def test_tls_origin(certificates):
    d = certificates
    with Origin(tls=(str(d / "server.pem"), str(d / "server.key"), None)) as server:
        assert server.url("/echo").startswith("https://127.0.0.1:")
        echo = requests.get(server.url("/echo"), verify=str(d / "ca.pem"), timeout=TIMEOUT).json()
        assert echo["tls"]["version"].startswith("TLS") and echo["tls"]["client_cert"] is None
        body = requests.get(server.url("/bytes/300000"), verify=str(d / "ca.pem"), timeout=TIMEOUT).content
        assert body == Origin.expected_bytes(300000)


def test_tls_client_certificate_required(certificates):
    d = certificates
    with Origin(tls=(str(d / "server.pem"), str(d / "server.key"), str(d / "ca.pem"))) as server:
        with pytest.raises(requests.exceptions.ConnectionError):
            requests.get(server.url("/echo"), verify=str(d / "ca.pem"), timeout=TIMEOUT)
        wait_until(lambda: server.tls_handshake_failures == 1)
        echo = requests.get(server.url("/echo"), verify=str(d / "ca.pem"),
                            cert=(str(d / "client.pem"), str(d / "client.key")), timeout=TIMEOUT).json()
        assert echo["tls"]["client_cert"] == {"commonName": "client"}


# --- webhook receiver -----------------------------------------------------------------------------


@pytest.fixture
def secret():
    return "whsec_" + base64.b64encode(secrets.token_bytes(24)).decode()


def deliver(receiver, secret, payload, tamper=False):
    """POST a delivery signed the way standardwebhooks signs it."""
    body = json.dumps(payload)
    message_id = "msg_" + secrets.token_hex(8)
    now = datetime.now(tz=timezone.utc)
    signature = Webhook(secret).sign(message_id, now, body)
    headers = {"webhook-id": message_id, "webhook-timestamp": str(int(now.timestamp())),
               "webhook-signature": signature, "Content-Type": "application/json"}
    data = body.replace("1", "2") if tamper else body
    return requests.post(receiver.url, data=data.encode(), headers=headers, timeout=TIMEOUT)


def test_receiver_verifies_signatures(secret):
    with WebhookReceiver(secret) as receiver:
        assert deliver(receiver, secret, {"type": "task.completed", "n": 1}).status_code == 200
        deliver(receiver, secret, {"type": "task.completed", "n": 1}, tamper=True)
        good, bad = receiver.deliveries
        assert good.valid is True and good.json == {"type": "task.completed", "n": 1}
        assert good.webhook_id.startswith("msg_") and good.webhook_signature.startswith("v1,")
        assert good.received_wall == pytest.approx(time.time(), abs=5)
        assert bad.valid is False and "signature" in bad.error.lower()


def test_receiver_without_secret_records_unverified():
    with WebhookReceiver() as receiver:
        requests.post(receiver.url, json={"a": 1}, timeout=TIMEOUT)
        assert receiver.deliveries[0].valid is None
        assert requests.get(receiver.url, timeout=TIMEOUT).status_code == 405


def test_receiver_scripted_responses(secret):
    with WebhookReceiver(secret) as receiver:
        receiver.respond_with(500, times=2, retry_after=1)
        receiver.respond_with(429)
        statuses = [deliver(receiver, secret, {"i": i}) for i in range(4)]
        assert [r.status_code for r in statuses] == [500, 500, 429, 200]
        assert statuses[0].headers["Retry-After"] == "1"
        assert [d.status for d in receiver.deliveries] == [500, 500, 429, 200]


def test_receiver_wait_for(secret):
    with WebhookReceiver(secret) as receiver:
        later = threading.Timer(0.2, deliver, (receiver, secret, {"type": "late"}))
        later.start()
        found = receiver.wait_for(lambda ds: [d for d in ds if d.json["type"] == "late"], timeout=TIMEOUT)
        later.join()
        assert found[0].valid
        with pytest.raises(TimeoutError):
            receiver.wait_for(lambda ds: len(ds) > 1, timeout=0.2)

"""Operations: probes, authentication on /v1, Prometheus metrics, JSON logs, problem documents, and
graceful shutdown — all against the real binary over loopback."""

from __future__ import annotations

import re
import signal
import socket
import time
from datetime import datetime

import pytest

from support.metrics import scrape, value
from support.transferd import read_response, read_until_closed, run_transferd

PROBLEM_TYPE = "application/problem+json"


def assert_problem(response, status: int, code: str) -> dict:
    """An RFC 9457 problem document with our stable `code`."""
    assert response.status_code == status, (response.status_code, response.text)
    assert response.headers["Content-Type"].split(";")[0].strip() == PROBLEM_TYPE
    body = response.json()
    for field in ("type", "title", "status", "detail", "code"):
        assert field in body, f"problem without {field}: {body}"
    assert body["status"] == status
    assert body["code"] == code
    assert isinstance(body["title"], str) and body["title"]
    assert isinstance(body["detail"], str) and body["detail"]
    return body


# MARK: probes


@pytest.mark.parametrize("path,status_field", [("/healthz", "ok"), ("/readyz", "ready")])
def test_probes_never_need_the_token(transferd, path, status_field):
    for headers in ({}, {"Authorization": "Bearer wrong"}, {"Authorization": "Basic dXNlcjpwYXNz"}):
        response = transferd.get(path, token=None, headers=headers)
        assert response.status_code == 200, (headers, response.text)
        assert response.headers["Content-Type"].startswith("application/json")
        assert response.json()["status"] == status_field
    head = transferd.head(path, token=None)
    assert head.status_code == 200 and head.content == b""


def test_readyz_lists_its_checks(transferd):
    body = transferd.get("/readyz", token=None).json()
    assert isinstance(body["checks"], dict) and body["checks"]
    assert all(value == "ok" for value in body["checks"].values()), body


# MARK: authentication


def test_v1_without_token_is_401_with_bearer_challenge(transferd):
    response = transferd.get("/v1", token=None)
    assert_problem(response, 401, "unauthorized")
    assert response.headers["WWW-Authenticate"].startswith("Bearer")


@pytest.mark.parametrize("authorization", [
    "Bearer wrong-token",
    "Bearer ",
    "Bearer",
    "Basic dXNlcjpwYXNzd29yZA==",
    "Token {token}",
    "{token}",
    "Bearer {token}x",
    "Bearer x{token}",
    "Bearer {prefix}",
])
def test_v1_with_wrong_credentials_is_401(transferd, authorization):
    value = authorization.format(token=transferd.token, prefix=transferd.token[:-1])
    response = transferd.get("/v1", token=None, headers={"Authorization": value})
    assert_problem(response, 401, "unauthorized")
    assert response.headers["WWW-Authenticate"].startswith("Bearer")


def test_v1_with_right_token_is_200(transferd):
    response = transferd.get("/v1")
    assert response.status_code == 200
    assert response.headers["Content-Type"].startswith("application/json")
    info = response.json()
    assert info["service"] == "transferd"
    assert info["api"] == "v1"
    assert re.fullmatch(r"\d+\.\d+\.\d+.*", info["version"])
    started = datetime.fromisoformat(info["started_at"].replace("Z", "+00:00"))
    assert started.tzinfo is not None


def test_bearer_scheme_is_case_insensitive(transferd):
    # RFC 9110 §11.1: the authentication scheme is case-insensitive.
    response = transferd.get("/v1", token=None, headers={"Authorization": f"bearer {transferd.token}"})
    assert response.status_code == 200


def test_bearer_with_several_spaces_is_accepted(transferd):
    response = transferd.get("/v1", token=None, headers={"Authorization": f"Bearer   {transferd.token}"})
    assert response.status_code == 200


def test_second_of_two_tokens_is_accepted(start_transferd):
    td = start_transferd("--api-token", "first-token,second-token")
    assert td.get("/v1", token="second-token").status_code == 200
    assert td.get("/v1", token="first-token").status_code == 200
    assert td.get("/v1", token="third-token").status_code == 401


def test_without_configured_token_v1_is_open(start_transferd):
    td = start_transferd()
    assert td.get("/v1", token=None).status_code == 200


# MARK: problems


def test_unknown_path_is_404_problem(transferd):
    body = assert_problem(transferd.get("/no/such/thing"), 404, "not_found")
    assert body["type"]
    assert_problem(transferd.get("/v1/no-such-resource"), 404, "not_found")


def test_unknown_v1_path_without_token_is_401_not_404(transferd):
    """Every /v1 call needs the token; a 404 would tell an anonymous client which paths exist."""
    response = transferd.get("/v1/no-such-resource", token=None)
    assert_problem(response, 401, "unauthorized")
    assert response.headers["WWW-Authenticate"].startswith("Bearer")
    assert_problem(transferd.post("/v1/no-such-resource", token=None), 401, "unauthorized")


def test_wrong_method_is_405_problem_with_allow(transferd):
    response = transferd.post("/healthz", token=None)
    assert_problem(response, 405, "method_not_allowed")
    allowed = {m.strip() for m in response.headers["Allow"].split(",")}
    assert "GET" in allowed


# MARK: metrics

def test_metrics_count_requests_by_route_and_status(transferd):
    before, _ = scrape(transferd)
    for _ in range(3):
        assert transferd.get("/v1").status_code == 200
    for _ in range(2):
        assert transferd.get("/v1", token=None).status_code == 401
    assert transferd.get("/does-not-exist").status_code == 404
    expected = [({"route": "/v1", "status": "200"}, 3), ({"route": "/v1", "status": "401"}, 2), ({"status": "404"}, 1)]
    # A request is counted once its response is written, which may trail its arrival at the client.
    deadline = time.monotonic() + 5
    while True:
        after, types = scrape(transferd)
        missing = [(labels, n) for labels, n in expected
                   if value(after, "http_requests_total", **labels) - value(before, "http_requests_total", **labels) < n]
        if not missing or time.monotonic() > deadline:
            break
        time.sleep(0.05)
    assert not missing, f"not counted: {missing}"
    assert types.get("http_requests_total") == "counter"
    for name, labels, _ in after:
        if name == "http_requests_total":
            assert {"route", "status", "method"} <= set(labels), labels


def test_metrics_request_duration_histogram(transferd):
    for _ in range(3):
        transferd.get("/v1")
    deadline = time.monotonic() + 5
    while True:
        samples, types = scrape(transferd)
        count = value(samples, "http_request_duration_seconds_count", route="/v1")
        if count >= 3 or time.monotonic() > deadline:
            break
        time.sleep(0.05)
    assert types.get("http_request_duration_seconds") == "histogram"
    assert count >= 3
    buckets = sorted(((float(l["le"]), v) for n, l, v in samples
                      if n == "http_request_duration_seconds_bucket" and l.get("route") == "/v1"),
                     key=lambda b: b[0])
    assert buckets and buckets[-1][0] == float("inf")
    assert all(a[1] <= b[1] for a, b in zip(buckets, buckets[1:])), "buckets are not cumulative"
    assert buckets[-1][1] == count
    assert any(le < 0.01 for le, _ in buckets), "no bucket finer than 10 ms for sub-millisecond API calls"
    assert value(samples, "http_request_duration_seconds_sum", route="/v1") > 0


def test_metrics_open_connections_and_process_memory(transferd):
    with transferd.connect() as idle:
        idle.sendall(b"GET /healthz HTTP/1.1\r\nHost: t\r\n\r\n")
        assert read_response(idle).status == 200
        samples, types = scrape(transferd)
        # This idle keep-alive connection and the scrape's own.
        assert value(samples, "http_open_connections") >= 2
    assert types.get("http_open_connections") == "gauge"
    rss = value(samples, "process_resident_memory_bytes")
    assert 1 << 20 < rss < 1 << 30, rss
    assert types.get("process_resident_memory_bytes") == "gauge"


# MARK: logs


def test_logs_are_json_lines_with_ts_level_msg(transferd):
    transferd.get("/v1")
    transferd.get("/v1", token=None)
    assert transferd.stop() == 0
    assert transferd.stderr_lines, "nothing logged"
    assert len(transferd.logs) == len(transferd.stderr_lines), \
        "non-JSON lines on stderr:\n" + "\n".join(line for line in transferd.stderr_lines if not line.startswith("{"))
    for record in transferd.logs:
        assert {"ts", "level", "msg"} <= set(record), record
        assert record["level"] in ("trace", "debug", "info", "notice", "warning", "error", "critical"), record
        ts = datetime.fromisoformat(record["ts"].replace("Z", "+00:00"))
        assert ts.tzinfo is not None
    messages = [r["msg"] for r in transferd.logs]
    assert "listening" in messages
    # Shutdown is logged.
    assert any("shutting down" in m for m in messages) and "stopped" in messages


def test_request_log_lines_carry_the_response_request_id(transferd):
    ids = []
    for path, token in (("/v1", transferd.token), ("/v1", None), ("/healthz", None), ("/missing", None)):
        response = transferd.get(path, token=token)
        request_id = response.headers["X-Request-Id"]
        assert request_id
        ids.append((request_id, path, response.status_code))
    assert len({i for i, _, _ in ids}) == len(ids), "request ids are not unique"
    for request_id, path, status in ids:
        record = transferd.wait_for_log(lambda r: r.get("request_id") == request_id)
        assert record["path"] == path
        assert record["status"] == status
        assert record["level"] == "info"


def test_client_request_id_is_echoed_and_logged(transferd):
    response = transferd.get("/v1", headers={"X-Request-Id": "client-id_123.abc"})
    assert response.headers["X-Request-Id"] == "client-id_123.abc"
    transferd.wait_for_log(lambda r: r.get("request_id") == "client-id_123.abc")
    # Something unsafe to log is replaced by a generated id.
    response = transferd.get("/v1", headers={"X-Request-Id": "bad id\"{}"})
    generated = response.headers["X-Request-Id"]
    assert generated and generated != "bad id\"{}"
    transferd.wait_for_log(lambda r: r.get("request_id") == generated)


def test_tokens_are_never_logged(transferd):
    transferd.get("/v1")
    transferd.get("/v1", token="wrong-but-secret-looking-token")
    assert transferd.stop() == 0
    output = transferd.output()
    assert transferd.token not in output
    assert "wrong-but-secret-looking-token" not in output


# MARK: shutdown


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_signal_exits_zero_promptly(transferd, sig):
    started = time.monotonic()
    assert transferd.stop(signal=sig, timeout=5) == 0
    assert time.monotonic() - started < 5


def test_sigterm_with_idle_keepalive_connection(transferd):
    # The server waits up to 10 s for busy connections; an idle one must be closed at once, so the
    # exit comes well before that.
    with transferd.connect() as idle:
        idle.sendall(b"GET /healthz HTTP/1.1\r\nHost: t\r\n\r\n")
        response = read_response(idle)
        assert response.status == 200 and response.headers.get("connection") != "close"
        started = time.monotonic()
        assert transferd.stop(timeout=5) == 0
        assert time.monotonic() - started < 5
        assert read_until_closed(idle) == b""


def test_sigterm_with_request_in_flight(transferd):
    with transferd.connect(timeout=10) as sock:
        # A first request, so the connection surely belongs to a worker before the partial head.
        sock.sendall(b"GET /healthz HTTP/1.1\r\nHost: t\r\n\r\n")
        assert read_response(sock).status == 200
        sock.sendall(b"GET /v1 HTTP/1.1\r\nHost: t\r\nAuthorization: Bearer " + transferd.token.encode())
        # Let the server read these bytes before the signal arrives (a settling pause, not a
        # timing assertion: a connection whose bytes are still unread in the kernel counts as idle).
        time.sleep(0.2)
        transferd.get("/healthz", token=None)
        transferd.process.send_signal(signal.SIGTERM)
        transferd.wait_for_log(lambda r: "shutting down" in r.get("msg", ""))
        # No new connections while draining...
        deadline = time.monotonic() + 5
        while True:
            try:
                socket.create_connection(transferd.address, timeout=1).close()
            except ConnectionRefusedError:
                break
            assert time.monotonic() < deadline, "still accepting connections while shutting down"
            time.sleep(0.05)
        assert transferd.running, "exited with a request in flight"
        # ...but the request that had begun is answered, then the connection closes.
        sock.sendall(b"\r\nX-Late: yes\r\n\r\n")
        response = read_response(sock)
        assert response.status == 200, response
        assert response.json()["service"] == "transferd"
        assert response.headers.get("connection", "").lower() == "close"
        assert read_until_closed(sock) == b""
    assert transferd.wait(timeout=5) == 0


def test_port_refuses_connections_after_shutdown(transferd):
    address = transferd.address
    assert transferd.stop() == 0
    with pytest.raises(ConnectionRefusedError):
        socket.create_connection(address, timeout=2).close()


def test_restart_after_kill9_keeps_port_and_data_dir(transferd):
    port, data_dir = transferd.port, transferd.data_dir
    first_start = transferd.get("/v1").json()["started_at"]
    assert transferd.kill9() == -signal.SIGKILL
    transferd.restart()
    assert (transferd.port, transferd.data_dir) == (port, data_dir)
    assert transferd.get("/v1").json()["started_at"] >= first_start
    transferd.restart()  # after a graceful stop too
    assert transferd.get("/readyz", token=None).status_code == 200


def test_a_second_transferd_on_the_same_data_dir_is_refused(transferd):
    """Two processes on one data directory would both run its tasks: the second one stops at once,
    naming the directory and the holder, and the first one keeps serving."""
    result = run_transferd(["--data-dir", str(transferd.data_dir)])
    assert result.returncode == 1, result
    assert str(transferd.data_dir) in result.stderr and "in use by another transferd" in result.stderr, result.stderr
    assert f"pid {transferd.pid}" in result.stderr, result.stderr
    assert transferd.get("/readyz", token=None).status_code == 200
    assert (transferd.data_dir / "transferd.lock").read_text().strip() == str(transferd.pid)

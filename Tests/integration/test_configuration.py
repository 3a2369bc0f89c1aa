"""Configuration: flags, their TRANSFERD_* environment fallbacks, validation at start, and the
token rules: tokens come from `--api-token` (repeatable, comma-separated), else TRANSFERD_API_TOKEN,
plus `--api-token-file`; they are printable ASCII without spaces or commas; without any token
transferd serves loopback only and refuses a non-loopback `--listen`."""

from __future__ import annotations

import re
import socket
import time

import pytest

from support.transferd import Transferd, free_port, run_transferd

# (flag, environment variable, bad value) — each must stop transferd at start with a message that
# names the flag. Values start with no "-" so the flag parser takes them as values.
BAD_VALUES = [
    ("--listen", "TRANSFERD_LISTEN", "nope"),
    ("--listen", "TRANSFERD_LISTEN", "127.0.0.1"),
    ("--listen", "TRANSFERD_LISTEN", "127.0.0.1:70000"),
    ("--listen", "TRANSFERD_LISTEN", "example.com:8080"),
    ("--listen", "TRANSFERD_LISTEN", "[::1]8080"),
    ("--retention", "TRANSFERD_RETENTION", "forever"),
    ("--retention", "TRANSFERD_RETENTION", "0"),
    ("--retention", "TRANSFERD_RETENTION", "7 days"),
    ("--log-level", "TRANSFERD_LOG_LEVEL", "loud"),
    ("--max-connections", "TRANSFERD_MAX_CONNECTIONS", "0"),
    ("--max-connections", "TRANSFERD_MAX_CONNECTIONS", "ten"),
    ("--max-connections", "TRANSFERD_MAX_CONNECTIONS", "1000001"),
    ("--max-request-line", "TRANSFERD_MAX_REQUEST_LINE", "10"),
    ("--max-header-bytes", "TRANSFERD_MAX_HEADER_BYTES", "1"),
    ("--max-body-bytes", "TRANSFERD_MAX_BODY_BYTES", "1MiB"),
    ("--max-requests-per-connection", "TRANSFERD_MAX_REQUESTS_PER_CONNECTION", "0"),
    ("--http-threads", "TRANSFERD_HTTP_THREADS", "257"),
    ("--header-timeout", "TRANSFERD_HEADER_TIMEOUT", "0"),
    ("--header-timeout", "TRANSFERD_HEADER_TIMEOUT", "soon"),
    ("--body-timeout", "TRANSFERD_BODY_TIMEOUT", "0s"),
    ("--body-timeout", "TRANSFERD_BODY_TIMEOUT", "1 minute"),
    ("--idle-timeout", "TRANSFERD_IDLE_TIMEOUT", "75x"),
    ("--idle-timeout", "TRANSFERD_IDLE_TIMEOUT", "0ms"),
    ("--network-policy", "TRANSFERD_NETWORK_POLICY", "bogus"),
    ("--network-policy", "TRANSFERD_NETWORK_POLICY", "permit=10.0.0.0/8"),
    ("--allow-path", "TRANSFERD_ALLOW_PATHS", "relative/dir"),
    ("--allow-path", "TRANSFERD_ALLOW_PATHS", "/abs/ok,relative"),
    ("--database", "TRANSFERD_DATABASE", "mysql://db.example.com/transferd"),
    ("--database", "TRANSFERD_DATABASE", "postgres://db.example.com:port/transferd"),
    ("--direct-writes", "TRANSFERD_DIRECT_WRITES", "sometimes"),
]


def assert_refused(result, *names: str) -> str:
    """transferd exited by itself, with a non-zero code (not a crash), and said why naming one of
    `names` on stderr."""
    assert result.exited, f"transferd accepted the configuration and kept running; stderr:\n{result.stderr}"
    assert result.returncode > 0, f"exit code {result.returncode} (0 = accepted, < 0 = crashed); stderr:\n{result.stderr}"
    message = result.stderr.strip()
    assert message, "no message on stderr"
    assert any(name.lower() in message.lower() for name in names), f"message does not name {names}: {message!r}"
    assert "Fatal error" not in message and "Stack dump" not in message, message
    return message


@pytest.mark.parametrize("flag,variable,value", BAD_VALUES, ids=[f"{f}={v}" for f, _, v in BAD_VALUES])
def test_bad_flag_value_is_refused_naming_the_flag(flag, variable, value):
    result = run_transferd([flag, value])
    message = assert_refused(result, flag)
    assert value.split(",")[-1] in message, f"message does not quote the bad value: {message!r}"


@pytest.mark.parametrize("flag,variable,value", BAD_VALUES, ids=[f"{v}={val}" for _, v, val in BAD_VALUES])
def test_bad_environment_value_is_refused_naming_the_variable(flag, variable, value):
    result = run_transferd([], env={variable: value})
    assert_refused(result, variable)


@pytest.mark.parametrize("via", ["flag", "env", "file"])
def test_token_with_a_space_is_refused_without_echoing_it(via, tmp_path):
    secret = "s3cret-part"
    bad = f"{secret} other"
    if via == "flag":
        result = run_transferd(["--api-token", bad])
    elif via == "env":
        result = run_transferd([], env={"TRANSFERD_API_TOKEN": bad})
    else:
        path = tmp_path / "tokens"
        path.write_text(f"good-token\n{bad}\n")
        result = run_transferd(["--api-token-file", str(path)])
    message = assert_refused(result, "--api-token", "api token")
    assert secret not in message, f"the refused token is echoed on stderr: {message!r}"


def test_unreadable_token_file_is_refused_naming_the_flag(tmp_path):
    missing = tmp_path / "no-such-file"
    assert_refused(run_transferd(["--api-token-file", str(missing)]), "--api-token-file")
    assert_refused(run_transferd([], env={"TRANSFERD_API_TOKEN_FILE": str(missing)}), "--api-token-file",
                   "TRANSFERD_API_TOKEN_FILE")


def test_unknown_flag_is_refused():
    result = run_transferd(["--no-such-flag", "1"])
    assert_refused(result, "--no-such-flag")


# MARK: non-loopback addresses and tokens


@pytest.mark.parametrize("listen", ["0.0.0.0:{port}", "[::]:{port}"])
def test_non_loopback_listen_without_token_is_refused(listen):
    address = listen.format(port=free_port())
    for result in (run_transferd(["--listen", address]), run_transferd([], env={"TRANSFERD_LISTEN": address})):
        message = assert_refused(result, "token")
        assert "loopback" in message


def test_empty_token_does_not_count_as_a_token():
    address = f"0.0.0.0:{free_port()}"
    assert_refused(run_transferd(["--listen", address, "--api-token", ""]), "token")
    assert_refused(run_transferd(["--listen", address], env={"TRANSFERD_API_TOKEN": " , "}), "token")


def test_a_token_source_given_but_empty_is_refused_even_on_loopback(tmp_path):
    """An explicit but empty source would otherwise turn authentication off without a word."""
    empty = tmp_path / "tokens"
    empty.write_text("# no tokens yet\n\n")
    assert_refused(run_transferd(["--api-token", ""]), "--api-token")
    assert_refused(run_transferd([], env={"TRANSFERD_API_TOKEN": " , "}), "TRANSFERD_API_TOKEN")
    assert_refused(run_transferd(["--api-token-file", str(empty)]), "--api-token-file")


def test_non_loopback_listen_with_token_is_accepted_and_guarded(start_transferd, api_token):
    td = start_transferd(api_token=api_token, host="0.0.0.0")
    assert td.get("/v1").status_code == 200
    assert td.get("/v1", token=None).status_code == 401
    listening = td.wait_for_log(lambda r: r.get("msg") == "listening")  # logged after any warning
    assert listening["address"] == f"0.0.0.0:{td.port}"
    assert not any("without authentication" in r.get("msg", "") for r in td.log_records())


def test_non_loopback_listen_with_token_from_environment_is_accepted(start_transferd):
    td = start_transferd(host="0.0.0.0", token="env-token", env={"TRANSFERD_API_TOKEN": "env-token"})
    assert td.get("/v1").status_code == 200
    assert td.get("/v1", token=None).status_code == 401


def test_without_token_start_log_says_loopback_only_without_authentication(start_transferd):
    td = start_transferd()
    warning = td.wait_for_log(lambda r: "loopback" in r.get("msg", ""))
    assert warning["level"] in ("warning", "notice", "info")
    assert re.search(r"no (api )?token|without authentication", warning["msg"], re.I), warning
    # And indeed /v1 answers without a token.
    assert td.get("/v1", token=None).status_code == 200


def test_with_token_no_unauthenticated_warning(start_transferd, api_token):
    td = start_transferd(api_token=api_token)
    td.wait_for_log(lambda r: r.get("msg") == "listening")
    assert td.stop() == 0
    assert not any("loopback" in r.get("msg", "") for r in td.log_records()), td.output()


# MARK: tokens from every source


def test_token_file_with_several_tokens_comments_and_blank_lines(start_transferd, tmp_path):
    path = tmp_path / "tokens"
    path.write_text("# transferd tokens\n\n  first-token  \n# not-a-token\nsecond-token\n\n\nthird-token")
    td = start_transferd("--api-token-file", str(path))
    for token in ("first-token", "second-token", "third-token"):
        assert td.get("/v1", token=token).status_code == 200, token
    for token in ("# not-a-token", "not-a-token", "transferd", "tokens", "first-tokenx"):
        assert td.get("/v1", token=token).status_code == 401, token
    assert td.get("/v1", token=None).status_code == 401


def test_token_file_with_crlf_line_endings(start_transferd, tmp_path):
    path = tmp_path / "tokens"
    path.write_bytes(b"# tokens\r\ncrlf-one\r\n\r\ncrlf-two\r\n")
    td = start_transferd("--api-token-file", str(path))
    assert td.get("/v1", token="crlf-one").status_code == 200
    assert td.get("/v1", token="crlf-two").status_code == 200
    assert td.get("/v1", token="wrong").status_code == 401
    assert td.get("/v1", token=None).status_code == 401


def test_token_file_from_environment(start_transferd, tmp_path):
    path = tmp_path / "tokens"
    path.write_text("file-token-1\nfile-token-2\n")
    td = start_transferd(env={"TRANSFERD_API_TOKEN_FILE": str(path)})
    assert td.get("/v1", token="file-token-1").status_code == 200
    assert td.get("/v1", token="file-token-2").status_code == 200
    assert td.get("/v1", token="file-token-3").status_code == 401


def test_comma_separated_tokens_in_environment(start_transferd):
    td = start_transferd(env={"TRANSFERD_API_TOKEN": "alpha, beta ,gamma"})
    for token in ("alpha", "beta", "gamma"):
        assert td.get("/v1", token=token).status_code == 200, token
    assert td.get("/v1", token="alpha, beta ,gamma").status_code == 401
    assert td.get("/v1", token="delta").status_code == 401
    assert td.get("/v1", token=None).status_code == 401


def test_repeated_and_comma_separated_token_flags(start_transferd):
    td = start_transferd("--api-token", "one,two", "--api-token", "three")
    for token in ("one", "two", "three"):
        assert td.get("/v1", token=token).status_code == 200, token
    assert td.get("/v1", token="one,two").status_code == 401


def test_token_flag_and_token_file_combine(start_transferd, tmp_path):
    path = tmp_path / "tokens"
    path.write_text("from-file\n")
    td = start_transferd("--api-token-file", str(path), api_token="from-flag")
    assert td.get("/v1", token="from-flag").status_code == 200
    assert td.get("/v1", token="from-file").status_code == 200


# MARK: a flag wins over its variable; variables are fallbacks


def test_listen_flag_wins_over_environment(start_transferd):
    other = free_port()
    td = start_transferd(env={"TRANSFERD_LISTEN": f"127.0.0.1:{other}"})
    assert td.get("/healthz").status_code == 200
    with pytest.raises(OSError):
        socket.create_connection(("127.0.0.1", other), timeout=2).close()


def test_listen_from_environment(start_transferd):
    td = start_transferd(listen_via="env")
    assert "--listen" not in td._argv()
    assert td.get("/healthz").status_code == 200
    listening = td.wait_for_log(lambda r: r.get("msg") == "listening")
    assert listening["address"] == f"127.0.0.1:{td.port}"


def test_token_flag_wins_over_environment(start_transferd):
    td = start_transferd(api_token="flag-token", env={"TRANSFERD_API_TOKEN": "env-token"})
    assert td.get("/v1", token="flag-token").status_code == 200
    assert td.get("/v1", token="env-token").status_code == 401


def test_valid_flag_wins_over_invalid_environment(start_transferd):
    td = start_transferd("--retention", "1d", "--log-level", "info", "--max-connections", "50",
                         "--network-policy", "public-only", "--allow-path", "/tmp",
                         env={"TRANSFERD_RETENTION": "bogus", "TRANSFERD_LOG_LEVEL": "bogus",
                              "TRANSFERD_MAX_CONNECTIONS": "bogus", "TRANSFERD_NETWORK_POLICY": "bogus",
                              "TRANSFERD_ALLOW_PATHS": "relative"})
    assert td.get("/healthz").status_code == 200


def test_log_level_flag_wins_over_environment(start_transferd):
    td = start_transferd("--log-level", "info", env={"TRANSFERD_LOG_LEVEL": "error"})
    response = td.get("/healthz")
    td.wait_for_log(lambda r: r.get("request_id") == response.headers["X-Request-Id"])


def test_log_level_from_environment(start_transferd):
    td = start_transferd(env={"TRANSFERD_LOG_LEVEL": "error"})
    assert td.get("/healthz").status_code == 200
    assert td.get("/nope").status_code == 404
    assert td.stop() == 0  # all output is in once the process has exited
    levels = {r["level"] for r in td.log_records()}
    assert levels <= {"error", "critical"}, td.output()


def test_data_dir_flag_wins_over_environment(start_transferd, tmp_path):
    td = start_transferd(env={"TRANSFERD_DATA_DIR": str(tmp_path / "from-env")})
    listening = td.wait_for_log(lambda r: r.get("msg") == "listening")
    assert listening["data_dir"] == str(td.data_dir)


def test_data_dir_from_environment(start_transferd):
    td = start_transferd(data_dir_via="env")
    assert "--data-dir" not in td._argv()
    listening = td.wait_for_log(lambda r: r.get("msg") == "listening")
    assert listening["data_dir"] == str(td.data_dir)


def _occupy_only_connection(td) -> socket.socket:
    """A connection that got a 200, so it is counted; retried while the server has not yet noticed
    that the helper's readiness probe closed its own connection."""
    deadline = time.monotonic() + 5
    while True:
        sock = td.connect()
        sock.sendall(b"GET /healthz HTTP/1.1\r\nHost: t\r\n\r\n")
        if sock.recv(4096).startswith(b"HTTP/1.1 200"):
            return sock
        sock.close()
        assert time.monotonic() < deadline, "never got the only connection"
        time.sleep(0.05)


def test_max_connections_from_environment(start_transferd):
    td = start_transferd(env={"TRANSFERD_MAX_CONNECTIONS": "1"})
    with _occupy_only_connection(td):
        response = td.get("/healthz")
        assert response.status_code == 503
        assert response.headers["Content-Type"].startswith("application/problem+json")
        assert response.json()["code"] == "too_many_connections"
    # Once the first connection is gone there is room again (closing is noticed asynchronously).
    _occupy_only_connection(td).close()


def test_max_request_line_from_environment(start_transferd):
    td = start_transferd(env={"TRANSFERD_MAX_REQUEST_LINE": "256"})
    assert td.get("/healthz?" + "a" * 100).status_code == 200
    response = td.get("/healthz?" + "a" * 400)
    assert response.status_code == 414
    assert response.json()["code"] == "uri_too_long"


def test_header_timeout_from_environment(start_transferd):
    td = start_transferd(env={"TRANSFERD_HEADER_TIMEOUT": "300ms"})
    with td.connect(timeout=10) as sock:
        sock.sendall(b"GET /healthz HTTP/1.1\r\nHost: t\r\n")  # and never the end of the head
        data = b""
        while chunk := sock.recv(4096):
            data += chunk
    assert data.startswith(b"HTTP/1.1 408"), data
    assert b"request_timeout" in data


def test_version_flag_matches_service_info(start_transferd):
    result = run_transferd(["--version"])
    assert result.returncode == 0
    td = start_transferd()
    assert result.stdout.strip() == td.get("/v1").json()["version"]

"""Runs the real transferd binary for integration tests.

`Transferd` starts the release binary on a free loopback port with a fresh data directory, collects
its JSON log lines from stderr, waits for `/readyz`, and offers `requests`-based helpers that add the
bearer token when one was configured:

    with Transferd(api_token="t0ken") as td:
        assert td.get("/v1").status_code == 200
        assert td.stop() == 0

`td.as_caller(token)` sends another token (a principal of an auth file) through the same helpers.
`run_transferd` runs the binary once for configurations that must make it exit (bad flags).

The binary is `$TRANSFERD_BINARY`, or `.build/release/transferd` under the repository root.
`Transferd.log_level` is the level it logs at when a test chooses none (the integration tests set
the most verbose, `trace`: the secrets a test hands it are looked for in every line, see
`support.secret_watch`).
"""

from __future__ import annotations

import json
import os
import shutil
import signal as signals
import socket
import subprocess
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterable, Mapping, Sequence

import requests

from support.secret_watch import WATCH

REPO_ROOT = Path(__file__).resolve().parents[3]
READY_TIMEOUT = 20.0
REQUEST_TIMEOUT = 10.0

# Sent as the token when a test wants the default: "use the configured token, if any".
_DEFAULT = object()


def binary_path() -> Path:
    """The transferd binary under test."""
    configured = os.environ.get("TRANSFERD_BINARY")
    path = Path(configured) if configured else REPO_ROOT / ".build" / "release" / "transferd"
    if not path.is_absolute():
        path = REPO_ROOT / path
    return path


def free_port(host: str = "127.0.0.1") -> int:
    """A port that was free a moment ago: bind port 0, read the port, close.

    Someone else may take it before transferd binds it; `Transferd.start` retries with another
    port when the bind fails."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as s:
        s.bind((host, 0))
        return s.getsockname()[1]


def clean_environment(extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """The test process's environment without any TRANSFERD_* setting (a developer's shell must not
    change what a test configures), plus `extra`."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("TRANSFERD_")}
    # No proxy may reroute the traffic of transfers the tests start (all of it goes to 127.0.0.1).
    for name in ("http_proxy", "https_proxy", "HTTP_PROXY", "HTTPS_PROXY", "all_proxy", "ALL_PROXY"):
        env.pop(name, None)
    env.update(extra or {})
    return env


@dataclass
class RunResult:
    """The outcome of `run_transferd`: `returncode` is None when the process was still running at
    the deadline (it was killed then)."""

    returncode: int | None
    stdout: str
    stderr: str

    @property
    def exited(self) -> bool:
        return self.returncode is not None


def run_transferd(args: Sequence[str] = (), env: Mapping[str, str] | None = None, *,
                  timeout: float = 5.0, default_listen: bool = True,
                  default_data_dir: bool = True) -> RunResult:
    """Runs transferd once and waits for it to exit, for configurations that must be refused.

    Unless the test passes them itself, `--listen 127.0.0.1:0` and a throw-away `--data-dir` are
    added, so a configuration that is (wrongly) accepted cannot collide with anything on the
    machine; it is then killed at `timeout` and `returncode` is None."""
    argv = [str(binary_path())]
    flags = " ".join(args)
    env_names = set(env or {})
    data_dir = None
    if default_listen and "--listen" not in flags and "TRANSFERD_LISTEN" not in env_names:
        argv += ["--listen", "127.0.0.1:0"]
    if default_data_dir and "--data-dir" not in flags and "TRANSFERD_DATA_DIR" not in env_names:
        data_dir = tempfile.mkdtemp(prefix="transferd-run-")
        argv += ["--data-dir", data_dir]
    argv += list(args)
    WATCH.add_arguments(argv, env or {})
    try:
        process = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                   stderr=subprocess.PIPE, env=clean_environment(env), text=True)
        try:
            out, err = process.communicate(timeout=timeout)
            result = RunResult(process.returncode, out, err)
        except subprocess.TimeoutExpired:
            process.kill()
            out, err = process.communicate()
            result = RunResult(None, out, err)
        WATCH.check_output(result.stdout + result.stderr, "the output of " + " ".join(argv[:1] + list(args)[:2]))
        return result
    finally:
        if data_dir:
            shutil.rmtree(data_dir, ignore_errors=True)


class TransferdStartError(RuntimeError):
    """transferd exited, or did not become ready, while being started."""


class _Verbs:
    """`get`, `post`, … as shorthands of `request`, for `Transferd` and `Caller`."""

    def request(self, method: str, path: str, **kwargs: Any) -> requests.Response:
        raise NotImplementedError

    def get(self, path: str, **kwargs: Any) -> requests.Response:
        return self.request("GET", path, **kwargs)

    def post(self, path: str, **kwargs: Any) -> requests.Response:
        return self.request("POST", path, **kwargs)

    def put(self, path: str, **kwargs: Any) -> requests.Response:
        return self.request("PUT", path, **kwargs)

    def patch(self, path: str, **kwargs: Any) -> requests.Response:
        return self.request("PATCH", path, **kwargs)

    def delete(self, path: str, **kwargs: Any) -> requests.Response:
        return self.request("DELETE", path, **kwargs)

    def head(self, path: str, **kwargs: Any) -> requests.Response:
        return self.request("HEAD", path, **kwargs)


class Transferd(_Verbs):
    """One transferd process, restartable on the same port and data directory.

    Arguments:
      args:       extra command-line arguments.
      env:        extra environment variables (TRANSFERD_* from the test process are dropped first).
      api_token:  passed as `--api-token` and sent by the request helpers.
      token:      sent by the request helpers without being configured (for tokens configured
                  through the environment or a token file); defaults to `api_token`.
      host:       address to listen on; requests always go to loopback.
      port:       port to listen on; a free one by default.
      listen_via: "flag" (`--listen`), "env" (`TRANSFERD_LISTEN`) or None (neither: the test's
                  own args/env decide, and `port` must then be given for the helpers to work).
      data_dir:   a directory to use instead of a fresh temporary one (kept on close).
      data_dir_via: "flag" (`--data-dir`), "env" (`TRANSFERD_DATA_DIR`) or None (neither).
    """

    #: `TRANSFERD_LOG_LEVEL` when neither `args` nor `env` choose a level; None: transferd's default.
    log_level: str | None = None

    def __init__(self, *args: str, api_token: str | None = None, token: str | None = None,
                 env: Mapping[str, str] | None = None, host: str = "127.0.0.1",
                 port: int | None = None, listen_via: str | None = "flag",
                 data_dir: str | os.PathLike | None = None, data_dir_via: str | None = "flag",
                 ready_timeout: float = READY_TIMEOUT,
                 binary: str | os.PathLike | None = None) -> None:
        self.binary = Path(binary) if binary else binary_path()
        self.args = list(args)
        self.env = dict(env or {})
        self.api_token = api_token
        self.token = token if token is not None else api_token
        self.host = host
        self._port_given = port is not None
        self.port = port if port is not None else free_port(self._probe_host(host))
        self.listen_via = listen_via
        self.data_dir_via = data_dir_via
        self.ready_timeout = ready_timeout
        self._owns_data_dir = data_dir is None
        self.data_dir = Path(data_dir) if data_dir else Path(tempfile.mkdtemp(prefix="transferd-test-"))
        self.process: subprocess.Popen | None = None
        self.returncode: int | None = None
        #: Every stderr line of every run, as text.
        self.stderr_lines: list[str] = []
        #: The stderr lines that are JSON objects (the logs), parsed, of every run.
        self.logs: list[dict[str, Any]] = []
        self._lines_lock = threading.Lock()
        self._reader: threading.Thread | None = None
        self._closed = False
        WATCH.add(api_token)
        WATCH.add(self.token)
        WATCH.watch(self)

    # MARK: lifecycle

    def start(self) -> "Transferd":
        """Starts the process and waits until `/readyz` answers 200. When the bind fails because the
        chosen port was taken meanwhile, retries with another port (unless the port was given)."""
        if self.running:
            raise RuntimeError("transferd is already running")
        attempts = 1 if self._port_given else 5
        for attempt in range(attempts):
            try:
                self._spawn()
                self._wait_ready()
                return self
            except TransferdStartError as error:
                if attempt + 1 < attempts and self._bind_failed() and not self.running:
                    self.port = free_port(self._probe_host(self.host))
                    continue
                raise error
        raise AssertionError("unreachable")

    def spawn(self) -> None:
        """Starts the process without waiting for readiness, for a caller that times the start-up
        itself (bench/restart.py)."""
        if self.running:
            raise RuntimeError("transferd is already running")
        self._spawn()

    def restart(self, *, args: Sequence[str] | None = None, env: Mapping[str, str] | None = None,
                signal: int = signals.SIGTERM, timeout: float = 10.0) -> "Transferd":
        """Stops (if running) and starts again on the same port with the same data directory;
        `args` and `env` replace the extra arguments and environment when given. The listening
        socket uses SO_REUSEADDR, so the port is free again at once; a bind failure is retried for a
        few seconds in case another process grabbed the port meanwhile."""
        if self.running:
            self.stop(signal=signal, timeout=timeout)
        if args is not None:
            self.args = list(args)
        if env is not None:
            self.env = dict(env)
        deadline = time.monotonic() + 5
        while True:
            try:
                self._spawn()
                self._wait_ready()
                return self
            except TransferdStartError:
                if self._bind_failed() and not self.running and time.monotonic() < deadline:
                    time.sleep(0.2)
                    continue
                raise

    def stop(self, signal: int = signals.SIGTERM, timeout: float = 10.0) -> int:
        """Sends `signal` and waits up to `timeout` seconds for the exit; returns the exit code
        (negative: killed by that signal). Past the timeout the process is killed with SIGKILL and
        TimeoutError is raised, so a hanging shutdown fails the test instead of hanging it."""
        process = self._require_process()
        if process.poll() is None:
            process.send_signal(signal)
            try:
                process.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
                self._finish()
                raise TimeoutError(f"transferd did not exit within {timeout}s of signal {signal}")
        self._finish()
        return self.returncode  # type: ignore[return-value]

    def kill9(self) -> int:
        """SIGKILL: no chance to clean up. Returns the exit code (-9)."""
        process = self._require_process()
        if process.poll() is None:
            process.kill()
            process.wait()
        self._finish()
        return self.returncode  # type: ignore[return-value]

    def wait(self, timeout: float = 10.0) -> int:
        """Waits for the process to exit on its own; returns the exit code."""
        process = self._require_process()
        process.wait(timeout=timeout)
        self._finish()
        return self.returncode  # type: ignore[return-value]

    def close(self) -> None:
        """Stops the process (SIGTERM, then SIGKILL if it hangs) and removes the data directory if
        this helper made it. Safe to call more than once."""
        if self._closed:
            return
        self._closed = True
        if self.running:
            try:
                self.stop(timeout=10)
            except TimeoutError:
                pass
        elif self.process is not None:
            self._finish()
        if self._owns_data_dir:
            shutil.rmtree(self.data_dir, ignore_errors=True)

    def __enter__(self) -> "Transferd":
        if self.process is None:
            self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def running(self) -> bool:
        return self.process is not None and self.process.poll() is None

    @property
    def pid(self) -> int:
        return self._require_process().pid

    # MARK: HTTP

    @property
    def address(self) -> tuple[str, int]:
        """Where a client connects: loopback of the family listened on."""
        return (self._probe_host(self.host), self.port)

    @property
    def base_url(self) -> str:
        host, port = self.address
        return f"http://[{host}]:{port}" if ":" in host else f"http://{host}:{port}"

    def url(self, path: str) -> str:
        return self.base_url + (path if path.startswith("/") else "/" + path)

    def headers(self, token: Any = _DEFAULT, extra: Mapping[str, str] | None = None) -> dict[str, str]:
        """Request headers with `Authorization: Bearer <token>`: the configured token by default,
        another one when given, none when `token` is None."""
        chosen = self.token if token is _DEFAULT else token
        headers = {"Authorization": f"Bearer {chosen}"} if chosen else {}
        headers.update(extra or {})
        return headers

    def request(self, method: str, path: str, *, token: Any = _DEFAULT, headers: Mapping[str, str] | None = None,
                timeout: float = REQUEST_TIMEOUT, **kwargs: Any) -> requests.Response:
        """One request on a fresh connection, sent with `Connection: close` unless `headers` say
        otherwise: a test that counts connections or stops the server must not be disturbed by a
        socket an earlier call left open (requests/urllib3 keep a finished response's socket open
        until the response object is garbage-collected, even after the session is closed)."""
        all_headers = self.headers(token, headers)
        if not any(name.lower() == "connection" for name in all_headers):
            all_headers["Connection"] = "close"
        WATCH.add_request(all_headers, kwargs.get("json", kwargs.get("data")))
        with requests.Session() as session:
            session.trust_env = False  # no proxies from the environment: loopback only
            response = session.request(method, self.url(path), headers=all_headers, timeout=timeout, **kwargs)
            if not kwargs.get("stream"):
                response.close()
                WATCH.check_reply(method, path, response)
            return response

    def as_caller(self, token: str | None) -> "Caller":
        """The request helpers of this instance sending `token` instead of the configured one
        (a principal of an auth file); `None` sends none."""
        return Caller(self, token)

    def connect(self, timeout: float = 5.0) -> socket.socket:
        """A raw TCP connection to the server (for tests that write HTTP by hand)."""
        return socket.create_connection(self.address, timeout=timeout)

    # MARK: logs

    def log_records(self) -> list[dict[str, Any]]:
        """A snapshot of the JSON log lines seen so far."""
        with self._lines_lock:
            return list(self.logs)

    def output(self) -> str:
        """Everything written to stderr so far."""
        with self._lines_lock:
            return "\n".join(self.stderr_lines)

    def wait_for_log(self, predicate: Callable[[dict[str, Any]], bool], timeout: float = 5.0) -> dict[str, Any]:
        """The first log record matching `predicate`, waiting up to `timeout` seconds for it (a
        request's log line is written after its response, so it may trail the response a little)."""
        deadline = time.monotonic() + timeout
        while True:
            for record in self.log_records():
                if predicate(record):
                    return record
            if time.monotonic() >= deadline:
                raise AssertionError(f"no matching log line within {timeout}s; stderr:\n{self.output()}")
            time.sleep(0.02)

    # MARK: internals

    @staticmethod
    def _probe_host(host: str) -> str:
        host = host.strip("[]")
        if host in ("0.0.0.0", ""):
            return "127.0.0.1"
        if host == "::":
            return "::1"
        if host == "localhost":
            return "127.0.0.1"
        return host

    def _listen_text(self) -> str:
        return f"[{self.host.strip('[]')}]:{self.port}" if ":" in self.host else f"{self.host}:{self.port}"

    def _argv(self) -> list[str]:
        argv = [str(self.binary)]
        if self.listen_via == "flag":
            argv += ["--listen", self._listen_text()]
        if self.data_dir_via == "flag":
            argv += ["--data-dir", str(self.data_dir)]
        if self.api_token is not None:
            argv += ["--api-token", self.api_token]
        return argv + self.args

    def _environment(self) -> dict[str, str]:
        extra = dict(self.env)
        if Transferd.log_level and "--log-level" not in self.args:
            extra.setdefault("TRANSFERD_LOG_LEVEL", Transferd.log_level)
        if self.listen_via == "env":
            extra["TRANSFERD_LISTEN"] = self._listen_text()
        if self.data_dir_via == "env":
            extra["TRANSFERD_DATA_DIR"] = str(self.data_dir)
        return clean_environment(extra)

    def _spawn(self) -> None:
        if not self.binary.exists():
            raise TransferdStartError(f"no transferd binary at {self.binary}: run `make build` first")
        self._run_start = len(self.stderr_lines)
        self.returncode = None
        WATCH.add_arguments(self._argv(), self.env)
        self.process = subprocess.Popen(self._argv(), stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                        stderr=subprocess.PIPE, env=self._environment(), cwd=self.data_dir)
        self._reader = threading.Thread(target=self._read_stderr, args=(self.process.stderr,),
                                        name=f"transferd-stderr-{self.process.pid}", daemon=True)
        self._reader.start()

    def _read_stderr(self, stream: Iterable[bytes]) -> None:
        for raw in stream:
            line = raw.decode("utf-8", "replace").rstrip("\n")
            record = None
            try:
                parsed = json.loads(line)
                if isinstance(parsed, dict):
                    record = parsed
            except ValueError:
                pass
            with self._lines_lock:
                self.stderr_lines.append(line)
                if record is not None:
                    self.logs.append(record)

    def _wait_ready(self) -> None:
        deadline = time.monotonic() + self.ready_timeout
        last = "no answer"
        while time.monotonic() < deadline:
            process = self.process
            assert process is not None
            if process.poll() is not None:
                self._finish()
                raise TransferdStartError(
                    f"transferd exited with {self.returncode} while starting; stderr:\n{self._run_output()}")
            try:
                response = self.get("/readyz", token=None, timeout=1.0)
                if response.status_code == 200:
                    return
                last = f"{response.status_code} {response.text[:200]}"
            except requests.RequestException as error:
                last = str(error)
            time.sleep(0.05)
        self.kill9()
        raise TransferdStartError(
            f"transferd not ready within {self.ready_timeout}s (last /readyz: {last}); stderr:\n{self._run_output()}")

    def _bind_failed(self) -> bool:
        text = self._run_output()
        return "cannot listen" in text or "Address already in use" in text

    def _run_output(self) -> str:
        with self._lines_lock:
            return "\n".join(self.stderr_lines[getattr(self, "_run_start", 0):])

    def _finish(self) -> None:
        process = self.process
        if process is None:
            return
        self.returncode = process.wait()
        if self._reader is not None:
            self._reader.join(timeout=5)
            self._reader = None
        if process.stderr is not None:
            process.stderr.close()

    def _require_process(self) -> subprocess.Popen:
        if self.process is None:
            raise RuntimeError("transferd was never started")
        return self.process


class Caller(_Verbs):
    """Requests to a running `Transferd` with one chosen token — one principal of an auth file:

        alpha = td.as_caller(alpha_token)
        create_session(alpha, "com.alpha.jobs")      # the support helpers take a Caller too
        with EventStream(alpha, "com.alpha.jobs") as stream: ...
    """

    def __init__(self, td: Transferd, token: str | None) -> None:
        self.td = td
        self.token = token

    @property
    def address(self) -> tuple[str, int]:
        return self.td.address

    @property
    def base_url(self) -> str:
        return self.td.base_url

    def url(self, path: str) -> str:
        return self.td.url(path)

    def headers(self, token: Any = _DEFAULT, extra: Mapping[str, str] | None = None) -> dict[str, str]:
        return self.td.headers(self.token if token is _DEFAULT else token, extra)

    def request(self, method: str, path: str, *, token: Any = _DEFAULT, **kwargs: Any) -> requests.Response:
        return self.td.request(method, path, token=self.token if token is _DEFAULT else token, **kwargs)


# MARK: raw HTTP, for tests that need control over the bytes on the wire


@dataclass
class RawResponse:
    status: int
    reason: str
    headers: dict[str, str]  # names lower-cased; repeated fields joined with ", "
    body: bytes

    def json(self) -> Any:
        return json.loads(self.body)


def read_response(sock: socket.socket, *, head_request: bool = False) -> RawResponse:
    """Reads one HTTP/1.1 response with a Content-Length (or no) body from `sock`, leaving any
    following bytes unread in the kernel. Raises ConnectionError on EOF before the response ends."""
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = sock.recv(1)  # byte by byte: never consume what belongs to the next response
        if not chunk:
            raise ConnectionError(f"connection closed before the response head ended: {data!r}")
        data += chunk
    head = data.decode("latin-1").split("\r\n")
    version, status, *reason = head[0].split(" ", 2)
    assert version.startswith("HTTP/1."), head[0]
    headers: dict[str, str] = {}
    for line in head[1:]:
        if not line:
            continue
        name, _, value = line.partition(":")
        key = name.strip().lower()
        headers[key] = f"{headers[key]}, {value.strip()}" if key in headers else value.strip()
    length = 0 if head_request else int(headers.get("content-length", "0"))
    body = b""
    while len(body) < length:
        chunk = sock.recv(length - len(body))
        if not chunk:
            raise ConnectionError(f"connection closed after {len(body)} of {length} body bytes")
        body += chunk
    return RawResponse(int(status), reason[0] if reason else "", headers, body)


def read_until_closed(sock: socket.socket, timeout: float = 5.0) -> bytes:
    """Everything the peer sends until it closes the connection (a reset counts as closed)."""
    sock.settimeout(timeout)
    data = b""
    try:
        while chunk := sock.recv(65536):
            data += chunk
    except ConnectionResetError:
        pass
    return data

"""Fixtures for the integration tests: real transferd processes on loopback.

- `transferd`: a running instance with an API token (`transferd.token`), which the request helpers
  send; stopped and its data directory removed after the test.
- `start_transferd(*args, **kwargs)`: starts more instances (same arguments as `Transferd`); every
  one it started is closed after the test, whatever happened to it.
- `api_token`: a fresh random token.
- `origin`: a running `support.origin.Origin` (plain HTTP on 127.0.0.1), stopped after the test.
- `ietf`, `tus`: a running `support.resumable_origin.ResumableOrigin` of that protocol.

Every test is watched for leaked secrets (`support.secret_watch`): transferd runs at its most
verbose log level, and a test fails when a secret it handed transferd shows up in a log line or in
a reply where it does not belong.
"""

from __future__ import annotations

import secrets
from typing import Callable

import pytest

from support.origin import Origin
from support.resumable_origin import ResumableOrigin
from support.secret_watch import WATCH
from support.transferd import Transferd, binary_path

Transferd.log_level = "trace"


@pytest.fixture(scope="session")
def transferd_binary():
    path = binary_path()
    if not path.exists():
        pytest.fail(f"no transferd binary at {path}: run `make build` (or set TRANSFERD_BINARY)", pytrace=False)
    return path


@pytest.fixture(autouse=True)
def no_leaked_secrets():
    """Fails the test when a secret appeared where it must not: set up before (so torn down after)
    the test's own fixtures, when the processes they started have written their last lines."""
    WATCH.take_findings()
    yield
    WATCH.check_logs()
    findings = WATCH.take_findings()
    if findings:
        pytest.fail("secrets leaked:\n" + "\n".join(findings[:20]), pytrace=False)


@pytest.fixture
def api_token() -> str:
    return "tdt_" + secrets.token_urlsafe(24)


@pytest.fixture
def start_transferd(transferd_binary) -> Callable[..., Transferd]:
    started: list[Transferd] = []

    def start(*args: str, **kwargs) -> Transferd:
        instance = Transferd(*args, binary=transferd_binary, **kwargs)
        started.append(instance)
        return instance.start()

    yield start
    for instance in reversed(started):
        instance.close()


@pytest.fixture
def transferd(start_transferd, api_token) -> Transferd:
    return start_transferd(api_token=api_token)


@pytest.fixture
def origin() -> Origin:
    with Origin() as server:
        yield server


@pytest.fixture
def ietf() -> ResumableOrigin:
    with ResumableOrigin("ietf") as server:
        yield server


@pytest.fixture
def tus() -> ResumableOrigin:
    with ResumableOrigin("tus") as server:
        yield server


@pytest.fixture(scope="module")
def shared_transferd(transferd_binary) -> Transferd:
    """One transferd (with a token) for every test of a module that asks for it: for the many
    small validation cases, which each use their own session and need no fresh process."""
    instance = Transferd(api_token="tdt_" + secrets.token_urlsafe(24), binary=transferd_binary)
    try:
        yield instance.start()
    finally:
        instance.close()

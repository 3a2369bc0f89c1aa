"""Principals for the tenant tests: an auth file (`--auth-file`) written from `Principal`s, the
audit log lines, the RateLimit headers, and the check that what a caller may not see answers
exactly as what does not exist.

    alpha = Principal("alpha", "write", namespaces=["com.alpha."])
    path = write_auth_file(tmp_path / "auth.json", [alpha, Principal("ops", "admin")])
    td = start_transferd("--auth-file", str(path))
    client = td.as_caller(alpha.token)           # every support helper takes it in place of `td`
    create_session(client, "com.alpha.jobs")

The file holds SHA-256 hashes of the tokens, never the tokens; each `Principal` keeps its token
for the test to send.
"""

from __future__ import annotations

import hashlib
import json
import re
import secrets
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Mapping

import requests

from .secret_watch import WATCH
from .transferd import Caller, Transferd

AUDIT = "audit"
# IETF httpapi ratelimit-headers, structured-field form, with the one policy transferd sends.
RATELIMIT_POLICY = re.compile(r'"requests";q=(\d+);w=(\d+)')
RATELIMIT = re.compile(r'"requests";r=(\d+);t=(\d+)')
# Headers that differ between any two responses.
PER_REQUEST_HEADERS = {"x-request-id", "content-length", "date"}


def new_token() -> str:
    return "tdt_" + secrets.token_urlsafe(24)


def token_sha256(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


@dataclass
class Principal:
    """One entry of an auth file, and the token whose hash it holds."""

    name: str
    role: str
    namespaces: list[str] | None = None
    allow_paths: list[str] | None = None
    limits: dict[str, Any] | None = None
    token: str = field(default_factory=new_token)

    def entry(self) -> dict[str, Any]:
        entry: dict[str, Any] = {"name": self.name, "token_sha256": token_sha256(self.token), "role": self.role}
        if self.namespaces is not None:
            entry["namespaces"] = self.namespaces
        if self.allow_paths is not None:
            entry["allow_paths"] = self.allow_paths
        if self.limits is not None:
            entry["limits"] = self.limits
        return entry


def write_auth_file(path: Path, principals: Iterable[Principal]) -> Path:
    """Writes the auth file (replacing it whole, so a reload never reads half a file)."""
    principals = list(principals)
    for principal in principals:
        WATCH.add(principal.token)
    staged = path.with_name(path.name + ".new")
    staged.write_text(json.dumps({"principals": [p.entry() for p in principals]}, indent=2))
    staged.replace(path)
    return path


# MARK: audit


def audit_records(td: Transferd) -> list[dict[str, Any]]:
    """The audit log lines so far."""
    return [r for r in td.log_records() if r.get("msg") == AUDIT]


def wait_audit(td: Transferd, request_id: str) -> dict[str, Any]:
    """The audit line of the request sent with `X-Request-Id: request_id`."""
    return td.wait_for_log(lambda r: r.get("msg") == AUDIT and r.get("request_id") == request_id)


# MARK: rate limits


def ratelimit_headers(response: requests.Response) -> tuple[tuple[int, int], tuple[int, int]]:
    """(quota, window) of `RateLimit-Policy` and (remaining, reset) of `RateLimit`, checking their
    structured-field shape."""
    policy = RATELIMIT_POLICY.fullmatch(response.headers.get("RateLimit-Policy", ""))
    state = RATELIMIT.fullmatch(response.headers.get("RateLimit", ""))
    assert policy and state, (response.status_code, dict(response.headers))
    return (int(policy[1]), int(policy[2])), (int(state[1]), int(state[2]))


# MARK: hidden resources


def renamed(text: str, renames: Mapping[str, str]) -> str:
    for name, counterpart in renames.items():
        text = text.replace(name, counterpart)
    return text


def comparable(response: requests.Response, renames: Mapping[str, str]) -> tuple[int, dict[str, str], str]:
    """Status, headers (but those of every request's own) and body of a response, with each name
    in `renames` replaced by its counterpart: what must match between a hidden resource and one
    that does not exist."""
    headers = {k.lower(): v for k, v in response.headers.items() if k.lower() not in PER_REQUEST_HEADERS}
    text = response.text
    if headers.get("content-type") == "application/problem+json" and text:
        # A problem's `instance` is the request's own id, like X-Request-Id.
        text = json.dumps({k: v for k, v in response.json().items() if k != "instance"})
    return response.status_code, headers, renamed(text, renames)


def assert_hidden(caller: Caller, method: str, path: str, renames: Mapping[str, str], status: int = 404,
                  code: str = "not_found", **kwargs: Any) -> requests.Response:
    """`method path` answers `status` with `code`, exactly as the same request does with the names in
    `renames` (in the path and in a `json` body) replaced by their counterparts — names of things
    that do not exist."""
    hidden = caller.request(method, path, **kwargs)
    assert hidden.status_code == status, (method, path, hidden.status_code, hidden.text)
    if method != "HEAD":
        assert hidden.json()["code"] == code, (method, path, hidden.text)
    if "json" in kwargs:
        kwargs = {**kwargs, "json": json.loads(renamed(json.dumps(kwargs["json"]), renames))}
    missing = caller.request(method, renamed(path, renames), **kwargs)
    assert comparable(hidden, renames) == comparable(missing, {}), (method, path, renames)
    return hidden

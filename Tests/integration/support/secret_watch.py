"""Every secret the integration tests hand to transferd, and the places it must never show up.

transferd promises that request headers such as `Authorization`, credentials, proxy passwords,
delegate secrets and API tokens appear in no log line, problem document, event, metric label or
error message. Rather than a test per place, the harness watches every test:

- the helpers that hand transferd a secret register it here (`Transferd` its API tokens, its
  requests what their bodies and headers carry, `write_auth_file` its principals' tokens, replies
  the delegate secret transferd generated);
- every reply a test receives through `Transferd.request` is searched for the secrets, except
  where one belongs: what an origin sent back (a data task's body, a download's file, a blob) and
  the generated delegate secret in the reply to the `PUT` that made it;
- at the end of each test, every log line a transferd process wrote during it is searched too.

`conftest.py` turns what is found into a failure of the test it happened in.
"""

from __future__ import annotations

import base64
import json
import re
import threading
from typing import Any, Iterable, Mapping
from urllib.parse import unquote, urlsplit

# Shorter values (a test's "pw", "x") would be found in unrelated text; no real secret is that short.
# Nor is one a plain word: a test probing with the token "transferd" would find it in every log line.
MIN_LENGTH = 8

#: Request headers whose values are secrets, whatever a session lists besides.
SENSITIVE_HEADERS = {"authorization", "proxy-authorization", "cookie"}

#: Members of a request body whose string value is a secret (credentials, delegates).
SECRET_MEMBERS = {"password", "token", "secret"}

#: Replies that carry what an origin or a client sent, not what transferd says.
_PASSTHROUGH = re.compile(r"/tasks/[^/]+/(body|file)$|^/v1/blobs/[^/]+$")

_REDACTED = "<redacted>"


class SecretWatch:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._secrets: set[str] = set()
        self._findings: list[str] = []
        # Headers some session listed in `sensitive_headers`: their values are secrets in every
        # later request too (a task of that session names them without the list).
        self._listed: set[str] = set()
        # Values a test itself put where transferd shows what it is given (see `add_request`).
        self._disclosed: set[str] = set()
        # Per watched process: how many of its stderr lines were searched already.
        self._searched: dict[int, tuple[Any, int]] = {}

    # MARK: collecting

    def add(self, value: Any) -> None:
        """Registers a secret (a string; short ones, plain words and `<redacted>` are ignored)."""
        if not isinstance(value, str) or len(value) < MIN_LENGTH or value.isalpha() or value == _REDACTED:
            return
        with self._lock:
            if value not in self._disclosed:
                self._secrets.add(value)

    def add_header(self, value: Any) -> None:
        """An `Authorization`-like value: the whole value and its credentials after the scheme
        (`Bearer <token>`, `Basic <base64>` and the password inside it)."""
        if not isinstance(value, str):
            return
        self.add(value)
        scheme, _, credentials = value.partition(" ")
        credentials = credentials.strip()
        self.add(credentials)
        if scheme.lower() == "basic":
            try:
                self.add(base64.b64decode(credentials, validate=True).decode().partition(":")[2])
            except ValueError:
                pass

    def add_url(self, url: Any) -> None:
        """The password in a URL's userinfo (`http://user:secret@proxy:3128`)."""
        if isinstance(url, str) and "@" in url:
            try:
                password = urlsplit(url).password
            except ValueError:
                return
            if password:
                self.add(password)
                self.add(unquote(password))

    def add_basic(self, username: Any, password: Any) -> None:
        """A username and password transferd sends as `Basic`: the password and the encoding of both."""
        self.add(password)
        if isinstance(username, str) and isinstance(password, str):
            self.add(base64.b64encode(f"{username}:{password}".encode()).decode())

    def add_request(self, headers: Mapping[str, str], body: Any) -> None:
        """What a request to transferd carries: its own `Authorization` and, in a JSON body,
        sensitive headers (those listed in `sensitive_headers` too), credentials, proxy URLs and
        delegate secrets — at any depth (a session, a task, a batch)."""
        for name, value in headers.items():
            if name.lower() in SENSITIVE_HEADERS:
                self.add_header(value)
        if isinstance(body, (bytes, str)):
            try:
                body = json.loads(body)
            except ValueError:
                return
        self._walk(body)
        # A URL is shown as it was given: a secret the test itself put in one (a test origin's
        # `/auth/bearer?token=…` says which token to expect) is no secret there. Its userinfo is
        # another matter (a proxy URL's password is redacted), so only what follows the authority.
        shown = [_after_authority(url) for url in _members(body, "url")]
        with self._lock:
            disclosed = {s for s in self._secrets if any(s in text for text in shown)}
            self._disclosed |= disclosed
            self._secrets -= disclosed

    def _walk(self, value: Any) -> None:
        if isinstance(value, list):
            for item in value:
                self._walk(item)
            return
        if not isinstance(value, dict):
            return
        names = value.get("sensitive_headers")
        if isinstance(names, list):
            with self._lock:
                self._listed |= {n.lower() for n in names if isinstance(n, str)}
        for key, member in value.items():
            if key == "headers" and isinstance(member, dict):
                for name, header in member.items():
                    if isinstance(name, str) and (name.lower() in SENSITIVE_HEADERS or name.lower() in self._listed):
                        self.add_header(header)
            elif key in SECRET_MEMBERS:
                self.add(member)
            elif key == "url":
                self.add_url(member)
            if key == "password" and isinstance(value.get("username"), str):
                self.add_basic(value["username"], member)
            self._walk(member)

    def add_arguments(self, args: Iterable[str], env: Mapping[str, str]) -> None:
        """A process's command line and environment: `--api-token`, database URLs' passwords."""
        args = list(args)
        for flag, value in zip(args, args[1:]):
            if flag == "--api-token":
                self.add(value)
            self.add_url(value)
        for name, value in env.items():
            if name == "TRANSFERD_API_TOKEN":
                for token in value.replace(",", " ").split():
                    self.add(token)
            self.add_url(value)

    # MARK: searching

    def check_reply(self, method: str, path: str, response: Any) -> None:
        """Searches a reply transferd gave (a `requests.Response` whose body was read)."""
        if _PASSTHROUGH.search(path.split("?")[0]):
            return
        text = response.content.decode("utf-8", "replace")
        generated = None
        if "json" in response.headers.get("Content-Type", ""):
            try:
                document = json.loads(text)
            except ValueError:
                document = None
            if isinstance(document, dict):
                # The one place a secret belongs: a generated delegate secret, in the reply to the
                # request that set the delegate (it is never shown again).
                delegate = document.get("delegate")
                if method in ("PUT", "PATCH", "POST") and isinstance(delegate, dict) and "secret" in delegate:
                    generated = delegate.pop("secret")
                text = json.dumps(document, ensure_ascii=False)
        self._search(text, f"the reply to {method} {path} ({response.status_code})")
        self.add(generated)

    def watch(self, process: Any) -> None:
        """A `Transferd` whose `stderr_lines` are searched at the end of every test."""
        with self._lock:
            self._searched.setdefault(id(process), (process, 0))

    def check_logs(self) -> None:
        with self._lock:
            watched = list(self._searched.items())
        for key, (process, done) in watched:
            lines = process.stderr_lines[done:]
            with self._lock:
                # A closed process writes no more: searched once more, then let go.
                if getattr(process, "_closed", False):
                    self._searched.pop(key, None)
                else:
                    self._searched[key] = (process, done + len(lines))
            for line in lines:
                self._search(line, "a transferd log line")

    def check_output(self, text: str, where: str) -> None:
        self._search(text, where)

    def _search(self, text: str, where: str) -> None:
        with self._lock:
            found: list[str] = []
            # Longest first: `Bearer <token>` is one finding, not one for it and one for the token.
            for secret in sorted((s for s in self._secrets if s in text), key=len, reverse=True):
                if not any(secret in other for other in found):
                    found.append(secret)
                    self._findings.append(f"secret {_shown(secret)} in {where}: {_around(text, secret)}")

    def take_findings(self) -> list[str]:
        """What was found since the last call (the current test's)."""
        with self._lock:
            findings, self._findings = self._findings, []
        return findings


def _members(value: Any, name: str) -> list[str]:
    """Every string member called `name`, at any depth."""
    if isinstance(value, list):
        return [found for item in value for found in _members(item, name)]
    if not isinstance(value, dict):
        return []
    own = [value[name]] if isinstance(value.get(name), str) else []
    return own + [found for member in value.values() for found in _members(member, name)]


def _after_authority(url: str) -> str:
    try:
        parts = urlsplit(url)
    except ValueError:
        return url
    return parts.path + "?" + parts.query + "#" + parts.fragment


def _shown(secret: str) -> str:
    """Enough of a secret to recognise it in the test's code, not the whole of it."""
    return repr(secret[:4] + "…")


def _around(text: str, secret: str) -> str:
    at = text.find(secret)
    excerpt = text[max(0, at - 120): at + len(secret) + 60]
    return excerpt.replace(secret, "<SECRET>")


#: One watch for the whole run: a secret of one test found in another's log is a leak too.
WATCH = SecretWatch()

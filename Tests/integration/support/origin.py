"""A real HTTP/1.1 origin server on 127.0.0.1 for the integration tests, scriptable through the URL.

    with Origin() as origin:
        url = origin.url("/bytes/1048576?seed=a&rate=200000")
        ...  # hand `url` to transferd, then check:
        assert origin.bytes_served("/bytes/") == 1048576

`Origin(tls=(certfile, keyfile, client_ca_or_None))` serves HTTPS instead (client certificates are
required when a CA file is given). The server is a threading server: keep-alive, one daemon thread per
connection, TCP_NODELAY; `stop()` (or leaving the `with`) aborts every open connection, stalled ones
included, and waits for their threads.

Scenarios (flags take `1`; sizes and offsets are byte counts)
-----------------------------------------------------------
`/bytes/{n}` — n deterministic pseudo-random bytes: a 1 MiB block derived from `seed` (default "0")
and `etag`, repeated. `Origin.expected_sha256(n, seed, etag)` / `Origin.expected_bytes(...)` give the
content; `Origin.validators(n, seed, etag)` the `(ETag, Last-Modified)` it sends. GET and HEAD.
  - `Range: bytes=a-b`, `a-`, `-suffix` → 206 with Content-Range; unsatisfiable → 416 with
    `Content-Range: bytes */n`; several ranges or a malformed header are ignored (200).
  - `If-Range` with the ETag (strong comparison) or the Last-Modified date: a mismatch serves 200 full.
  - `etag=V` — another version of the resource: different content, ETag and (later) Last-Modified.
  - `validators=both|etag|last_modified|none` — which validators are sent (default both).
  - `ignore_range=1` — always 200 with the whole body, no Accept-Ranges.
  - `no_length=1` — chunked transfer coding, no Content-Length.
  - `rate=B` — drip at about B bytes per second (ten writes a second).
  - `rate_until=K` — with `rate`: drip only the content before offset K, send the rest at full
    speed (a download slow where a test interrupts it and quick where it is continued).
  - `stall_after=K` — send K body bytes, then send nothing more but keep the connection open until
    the client closes it or 60 s pass.
  - `reset_after=K` — send K body bytes, then reset the connection (RST via SO_LINGER 0) once
    the client has acknowledged them (and 50 ms more), so a client that keeps reading gets all K.
    K is clamped to the body length for both.
  - `wrong_length=L` — advertise Content-Length L, send the real body, then close.
  - `content_type=T` (default application/octet-stream), `disposition=NAME` →
    `Content-Disposition: attachment; filename="NAME"` (plus `filename*` when not ASCII).
  - `declare=D,D…` — digests declared in headers, of the whole content (`repr-sha-256`,
    `repr-sha-512` → `Repr-Digest`; `goog` → `x-goog-hash: crc32c=…, md5=…`) or of this response's
    bytes (`content-sha-256`, `content-sha-512` → `Content-Digest`; `content-md5` → `Content-MD5`);
    `declare_wrong=1` declares them of other bytes (the content with its first byte changed).
`/status/{code}?retry_after=S&body=TEXT` — that status (200–599), optional Retry-After, TEXT as a
  text/plain body or a small JSON body.
`/redirect/{n}?status=302&relative=1` — n hops through /redirect/{n-1} (absolute Location unless
  `relative=1`; the query is kept). /redirect/0 answers like /echo, or like /bytes/{N} with `bytes=N`.
`/redirect-to?url=U&status=302` — Location: U verbatim (file://, gopher://, anything).
`/redirect-loop` — 302 to itself, forever.
`/flaky/{name}?fail=N&status=503&retry_after=S&bytes=1024` — the first N requests for `name` (default
  1) fail with `status` (JSON body, Retry-After if given), later ones serve like /bytes/{bytes} with
  the same query options. `origin.flaky_hits(name)` counts requests.
`/versioned/{name}?bytes=N` — like /bytes/{N} with the same query options, its `etag=` the version the
  test set with `origin.set_version(name, V)` (default ""): a resource that changes between requests.
`/echo` and `/echo/...` — any method; JSON: method, target, path, query, http_version, headers
  (lower-cased names, repeated ones joined with ", "), header_list, chunked, body_length, body_sha256,
  body_text (UTF-8 with replacement when under 64 KiB, else null), tls (version, cipher,
  client_cert subject) or null. Request bodies may be chunked or have a Content-Length.
`/upload` and `/upload/...` — any method; streams the body (never held in memory), records an
  `UploadRecord` (in `origin.uploads`) and answers 201 with it as JSON; multipart/form-data bodies
  are parsed into `parts` (name, filename, content_type, size, sha256, value for text fields under
  64 KiB). `status=413` (any code) refuses with that status; `reset_after=K` resets after reading K
  body bytes (if the body is longer).
`/once/{id}` — any method; reads the whole request body and records it under `id`
  (`origin.bodies(id)`: every body received for it, in order), then answers 200 JSON
  `{"id", "count", "body_length"}` (count: bodies received for `id` so far). `reset=1` reads the
  request and resets the connection instead of answering; `reset_reused=1` does so only for a
  request that came on a connection that already carried one (a kept-alive connection the origin
  closes under the next request, after reading it); `hold=S` keeps the first request for `id`
  waiting S seconds after reading it before it answers (a request caught in flight).
`/cookies/set?name=value&...` — one Set-Cookie per pair, `Path=/`; reserved keys `path`, `domain`,
  `max_age` and `expired=1` (Max-Age=0 and an Expires in 1970) add attributes to all of them;
  `redirect=U` answers 302 with `Location: U` (the cookies set on the redirect).
`/cookies/echo` — JSON `{"cookies": {name: value}, "header": raw Cookie header or null}`.
`/auth/basic?user=u&pass=p`, `/auth/bearer?token=t`, `/auth/digest?user=u&pass=p` (RFC 7616, MD5,
  qop=auth, realm "transferd-test") — 200 JSON `{"authenticated": true, ...}` when the credentials
  match, else 401 JSON with the WWW-Authenticate challenge.
`/slow-headers?delay=S` — waits S seconds before the status line, then 200 JSON.
`/endless-headers?one_line=1` — a 200 status line, then header fields that never end (a new
  1 KiB `X-Filler-N` field every write, or with `one_line=1` a single field whose value never
  ends), until the client closes or 64 MiB are sent; never an empty line, never a body.
`/not-http` — `hello, this is no HTTP response` and a newline, no status line, then closes.
`/gzip-bomb?size=N&no_length=1` — `Content-Encoding: gzip` of N zero bytes (default 10 GiB): gzip
  members of 64 MiB of zeros each (about 64 KiB compressed), so 10 GiB is about 10 MiB on the wire;
  Content-Length is sent unless `no_length=1` (then the body ends when the connection closes).
Anything else is 404; a bad query value is 400.

`SilentListener()` is not an HTTP server: a TCP listener on 127.0.0.1 that accepts connections and
never sends a byte (a TLS handshake to it never completes, a request never gets a status line);
`url(path, scheme="https")`, `connections_accepted`.

Request bodies a route does not read are drained, except when the client waits for
`100 Continue`: then the route answers at once and closes the connection. Routes that read the body
send `100 Continue` when they start reading.

Instrumentation (thread-safe; `reset_stats()` clears it): `requests` (`RequestRecord`s, in arrival
order), `uploads`, `connections_opened` (counted at accept, before any byte is read),
`active_connections`, `max_concurrent_connections`, `max_concurrent_requests(path_prefix)`,
`bytes_served(path_prefix)` (response body bytes, framing excluded), `flaky_hits(name)`,
`tls_handshake_failures`. Scenario state (not cleared by `reset_stats()`): `set_version(name, V)`.
"""

from __future__ import annotations

import base64
import fcntl
import functools
import gzip
import hashlib
import hmac
import itertools
import json
import logging
import re
import secrets
import select
import socket
import socketserver
import ssl
import struct
import sys
import termios
import threading
import time
from collections import Counter
from dataclasses import asdict, dataclass, field
from email.message import Message
from email.parser import HeaderParser
from email.utils import formatdate, parsedate_to_datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Callable, Iterator
from urllib.parse import parse_qsl, quote, urlsplit

import crc32c

_log = logging.getLogger("transferd.tests.origin")

BLOCK = 1 << 20  # the repeated content block of /bytes
CHUNK = 256 << 10  # largest single write or read
TEXT_LIMIT = 64 << 10  # bodies and form fields shorter than this are reported as text
STALL_SECONDS = 60.0
RESET_ACK_WAIT = 1.0  # before a reset: longest wait for the peer to acknowledge what was sent
RESET_READ_WAIT = 0.05  # and then for it to read that
BASE_LAST_MODIFIED = 1_700_000_000  # Last-Modified of the unversioned /bytes resources
DIGEST_REALM = "transferd-test"
_RANGE = re.compile(r"bytes=(\d*)-(\d*)")
_AUTH_PARAM = re.compile(r'([\w-]+)\s*=\s*(?:"((?:[^"\\]|\\.)*)"|([^,\s]*))')


class BadRequest(Exception):
    """A query value a route cannot use; answered with 400."""


# --- /bytes content -------------------------------------------------------------------------------


@functools.lru_cache(maxsize=32)
def _pattern_window(seed: str, etag: str) -> memoryview:
    """The content block followed by its first CHUNK bytes, so any piece of up to CHUNK bytes at
    any offset is one contiguous, zero-copy slice."""
    block = hashlib.shake_256(f"transferd-origin\0{seed}\0{etag}".encode()).digest(BLOCK)
    return memoryview(block + block[:CHUNK])


def expected_bytes(n: int, seed: str = "0", etag: str = "") -> bytes:
    """The body of /bytes/{n}?seed=S&etag=V (builds it in memory: for small n)."""
    block = bytes(_pattern_window(seed, etag)[:BLOCK])
    full, rest = divmod(n, BLOCK)
    return block * full + block[:rest]


@functools.lru_cache(maxsize=64)
def expected_sha256(n: int, seed: str = "0", etag: str = "") -> str:
    """Hex sha256 of the body of /bytes/{n}?seed=S&etag=V, without building it."""
    block = _pattern_window(seed, etag)[:BLOCK]
    digest = hashlib.sha256()
    full, rest = divmod(n, BLOCK)
    for _ in range(full):
        digest.update(block)
    digest.update(block[:rest])
    return digest.hexdigest()


def validators(n: int, seed: str = "0", etag: str = "") -> tuple[str, str]:
    """The strong ETag and the Last-Modified date of /bytes/{n}?seed=S&etag=V."""
    tag = hashlib.sha256(f"{n}:{seed}:{etag}".encode()).hexdigest()[:24]
    modified = BASE_LAST_MODIFIED
    if etag:
        modified += 60 * (1 + int(hashlib.sha256(etag.encode()).hexdigest()[:8], 16) % 100_000)
    return f'"{tag}"', formatdate(modified, usegmt=True)


def parse_range(header: str, n: int) -> range | None:
    """The byte span a single-range `Range` header asks of an n-byte body: None to ignore the header
    (malformed or several ranges), an empty range when unsatisfiable."""
    match = _RANGE.fullmatch(header.strip())
    if not match or not (match[1] or match[2]):
        return None
    if not match[1]:
        return range(max(0, n - int(match[2])), n)
    start = int(match[1])
    end = min(int(match[2]), n - 1) if match[2] else n - 1
    if match[2] and int(match[2]) < start:
        return None
    return range(start, end + 1) if start < n else range(0)


def _if_range_matches(value: str, etag: str | None, last_modified: str | None) -> bool:
    """RFC 9110 If-Range: strong ETag comparison, or the exact Last-Modified date."""
    value = value.strip()
    if value.startswith(('"', "W/")):
        return etag is not None and value == etag
    if last_modified is None:
        return False
    try:
        return parsedate_to_datetime(value) == parsedate_to_datetime(last_modified)
    except (TypeError, ValueError):
        return False


def _content_disposition(filename: str) -> str:
    quoted = filename.replace("\\", "\\\\").replace('"', '\\"')
    if quoted.isascii():
        return f'attachment; filename="{quoted}"'
    fallback = quoted.encode("ascii", "replace").decode()
    return f"attachment; filename=\"{fallback}\"; filename*=UTF-8''{quote(filename)}"


# --- multipart/form-data --------------------------------------------------------------------------


@dataclass
class MultipartPart:
    """One part of a multipart/form-data body."""

    name: str | None
    filename: str | None
    content_type: str | None
    size: int
    sha256: str
    value: str | None  # text of a field without filename that is under TEXT_LIMIT bytes
    headers: dict[str, str]


class _PartBuilder:
    """Accumulates one part: hashes its content, keeps the start of text fields."""

    def __init__(self, header_block: bytes):
        self.headers = HeaderParser().parsestr(header_block.decode("utf-8", "replace"))
        self.digest = hashlib.sha256()
        self.size = 0
        self.head = bytearray()

    def add(self, data: bytes) -> None:
        self.digest.update(data)
        self.size += len(data)
        if len(self.head) <= TEXT_LIMIT:
            self.head += data[: TEXT_LIMIT + 1 - len(self.head)]

    def finish(self) -> MultipartPart:
        filename = self.headers.get_filename()
        is_text = filename is None and self.size < TEXT_LIMIT
        return MultipartPart(
            name=self.headers.get_param("name", header="content-disposition"),
            filename=filename,
            content_type=self.headers.get("content-type"),
            size=self.size,
            sha256=self.digest.hexdigest(),
            value=self.head.decode("utf-8", "replace") if is_text else None,
            headers={name.lower(): value for name, value in self.headers.items()},
        )


class MultipartParser:
    """Incremental multipart/form-data parser (RFC 7578 / RFC 2046) that hashes parts instead of
    keeping them. `feed()` the body in pieces of any size; read `parts`, and `complete` (the closing
    delimiter was seen)."""

    def __init__(self, boundary: str):
        self._dash_boundary = b"--" + boundary.encode("latin-1")
        self._delimiter = b"\r\n" + self._dash_boundary
        self._buffer = bytearray()
        self._state: Callable[[], bool] = self._in_preamble
        self._part: _PartBuilder | None = None
        self.parts: list[MultipartPart] = []
        self.complete = False

    @classmethod
    def for_content_type(cls, content_type: str) -> MultipartParser | None:
        """A parser when `content_type` is multipart/form-data with a boundary, else None."""
        header = Message()
        header["content-type"] = content_type
        boundary = header.get_param("boundary")
        if header.get_content_type() != "multipart/form-data" or not isinstance(boundary, str):
            return None
        return cls(boundary)

    def feed(self, data: bytes) -> None:
        self._buffer += data
        while self._state():
            pass

    # Each state consumes what it can from the buffer and returns True when the next state may
    # continue at once, False when it needs more data.

    def _in_preamble(self) -> bool:
        at = self._buffer.find(self._dash_boundary)
        if at < 0:
            del self._buffer[: max(0, len(self._buffer) - len(self._dash_boundary) + 1)]
            return False
        del self._buffer[: at + len(self._dash_boundary)]
        self._state = self._after_boundary
        return True

    def _after_boundary(self) -> bool:
        if self._buffer.startswith(b"--"):
            self.complete = True
            self._state = self._in_epilogue
            return True
        end = self._buffer.find(b"\r\n")
        if end < 0:
            return False
        del self._buffer[: end + 2]  # transport padding before the CRLF is ignored
        self._state = self._in_headers
        return True

    def _in_headers(self) -> bool:
        if self._buffer.startswith(b"\r\n"):
            end, skip = 0, 2  # a part without header fields
        else:
            end, skip = self._buffer.find(b"\r\n\r\n"), 4
            if end < 0:
                return False
        self._part = _PartBuilder(bytes(self._buffer[:end]))
        del self._buffer[: end + skip]
        self._state = self._in_body
        return True

    def _in_body(self) -> bool:
        at = self._buffer.find(self._delimiter)
        if at < 0:
            safe = len(self._buffer) - len(self._delimiter) + 1  # keep a possible partial delimiter
            if safe > 0:
                self._part.add(bytes(self._buffer[:safe]))
                del self._buffer[:safe]
            return False
        self._part.add(bytes(self._buffer[:at]))
        self.parts.append(self._part.finish())
        del self._buffer[: at + len(self._delimiter)]
        self._state = self._after_boundary
        return True

    def _in_epilogue(self) -> bool:
        self._buffer.clear()
        return False


def _unacknowledged_bytes(sock: socket.socket) -> int:
    """Bytes in the socket's send queue that the peer has not acknowledged (Linux SIOCOUTQ)."""
    return struct.unpack("i", fcntl.ioctl(sock.fileno(), termios.TIOCOUTQ, b"\0\0\0\0"))[0]


# --- the loopback server, shared with receiver.py --------------------------------------------------


@dataclass(eq=False)
class Connection:
    """One accepted client connection."""

    id: int
    sock: socket.socket  # the socket the handler uses (the TLS one after wrapping)
    thread: threading.Thread | None = None
    requests: int = 0  # requests read on it so far

    def abort(self) -> None:
        """Shut the socket down so a thread blocked on it wakes up."""
        try:
            socket.socket.shutdown(self.sock, socket.SHUT_RDWR)
        except OSError:
            pass


class LoopbackHTTPServer(ThreadingHTTPServer):
    """ThreadingHTTPServer on 127.0.0.1, port 0, that tracks every connection from accept to close
    (and wraps it in TLS in its own thread when given a context) and can abort them all on stop."""

    daemon_threads = True
    block_on_close = False  # stop() aborts and joins the connection threads itself
    request_queue_size = 128

    def __init__(self, handler_class: type[LoopbackHandler], service: LoopbackService,
                 tls_context: ssl.SSLContext | None = None, port: int = 0):
        self.service = service
        self.tls_context = tls_context
        self.stopping = threading.Event()
        self._lock = threading.Lock()
        self._open: dict[socket.socket, Connection] = {}  # keyed by the accepted socket
        self._ids = itertools.count(1)
        self.connections_opened = 0
        self.max_concurrent_connections = 0
        self.tls_handshake_failures = 0
        super().__init__(("127.0.0.1", port), handler_class)

    def server_bind(self) -> None:
        """Bind without HTTPServer's reverse DNS lookup of the host name."""
        socketserver.TCPServer.server_bind(self)
        self.server_name, self.server_port = self.server_address[:2]

    @property
    def active_connections(self) -> int:
        with self._lock:
            return len(self._open)

    def reset_connection_stats(self) -> None:
        with self._lock:
            self.connections_opened = 0
            self.max_concurrent_connections = len(self._open)
            self.tls_handshake_failures = 0

    def get_request(self) -> tuple[socket.socket, tuple]:
        sock, address = super().get_request()
        with self._lock:
            self._open[sock] = Connection(next(self._ids), sock)
            self.connections_opened += 1
            self.max_concurrent_connections = max(self.max_concurrent_connections, len(self._open))
        return sock, address

    def finish_request(self, request: socket.socket, client_address: tuple) -> None:
        with self._lock:
            conn = self._open.get(request)
        if conn is None:
            return
        conn.thread = threading.current_thread()
        try:
            if self.tls_context is None or self._handshake(conn):
                self.RequestHandlerClass(conn.sock, client_address, self, conn)
        finally:
            with self._lock:
                self._open.pop(request, None)
            if conn.sock is not request:
                conn.sock.close()

    def _handshake(self, conn: Connection) -> bool:
        conn.sock = self.tls_context.wrap_socket(conn.sock, server_side=True,
                                                 do_handshake_on_connect=False)
        try:
            if self.stopping.is_set():
                return False
            conn.sock.do_handshake()
            return True
        except OSError:  # ssl.SSLError included
            with self._lock:
                self.tls_handshake_failures += 1
            return False

    def handle_error(self, request, client_address) -> None:
        """Stay quiet about clients that went away, resets and aborted connections; print the rest."""
        if not isinstance(sys.exc_info()[1], OSError):
            super().handle_error(request, client_address)

    def stop(self, timeout: float = 5.0) -> None:
        """Stop accepting, abort every open connection and wait up to `timeout` for their threads."""
        self.stopping.set()
        self.shutdown()
        with self._lock:
            conns = list(self._open.values())
        for conn in conns:
            conn.abort()
        self.server_close()
        deadline = time.monotonic() + timeout
        for conn in conns:
            if conn.thread is not None:
                conn.thread.join(max(0.0, deadline - time.monotonic()))


class LoopbackHandler(BaseHTTPRequestHandler):
    """Request handler base: HTTP/1.1 keep-alive, any method routed to `respond()`, deferred
    `100 Continue`, streamed request bodies (Content-Length or chunked), quiet logging."""

    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True
    rbufsize = CHUNK  # with the default 8 KiB, read1() returns 8 KiB pieces and uploads crawl
    server: LoopbackHTTPServer

    def __init__(self, request, client_address, server, conn: Connection):
        self.conn = conn
        super().__init__(request, client_address, server)

    def respond(self) -> None:
        raise NotImplementedError

    def __getattr__(self, name: str):
        if name.startswith("do_"):
            return self._handle
        raise AttributeError(name)

    def _handle(self) -> None:
        try:
            self.respond()
        finally:
            if self._body_pending:
                self.close_connection = True  # unread body bytes are still on the wire

    def parse_request(self) -> bool:
        self._continue_pending = False
        self._body_pending = False
        self.body_bytes_read = 0
        if not super().parse_request():
            return False
        self._chunked = "chunked" in self.headers.get("Transfer-Encoding", "").lower()
        try:
            self._body_length = int(self.headers.get("Content-Length", "0"))
        except ValueError:
            self._body_length = -1
        if not self._chunked and self._body_length < 0:
            self.close_connection = True
            self.send_error(400, "Bad Content-Length")
            return False
        self._body_pending = self._chunked or self._body_length > 0
        return True

    def handle_expect_100(self) -> bool:
        self._continue_pending = True  # sent by iter_body(), if the body is ever read
        return True

    def log_message(self, format: str, *args) -> None:
        _log.debug("%s " + format, self.address_string(), *args)

    # request bodies

    def iter_body(self, limit: int | None = None) -> Iterator[bytes]:
        """Yield the request body (de-chunked) in pieces of up to CHUNK bytes, at most `limit` bytes
        in all; sends `100 Continue` first when the client waits for it."""
        if not self._body_pending:
            return
        if self._continue_pending:
            self._continue_pending = False
            self.wfile.write(b"HTTP/1.1 100 Continue\r\n\r\n")
        budget = sys.maxsize if limit is None else limit
        pieces = self._chunked_pieces() if self._chunked else self._sized_pieces(self._body_length)
        for piece in pieces:
            if self.body_bytes_read >= budget:
                return  # more body follows: it stays pending
            piece = piece[:budget - self.body_bytes_read]
            self.body_bytes_read += len(piece)
            yield piece
        self._body_pending = False

    def discard_body(self) -> None:
        """Read and drop the request body, unless the client waits for `100 Continue`: then leave it
        unsent and close the connection after the response."""
        if self._body_pending and self._continue_pending:
            self.close_connection = True
            return
        for _ in self.iter_body():
            pass

    def _sized_pieces(self, length: int) -> Iterator[bytes]:
        while length:
            piece = self.rfile.read1(min(CHUNK, length))
            if not piece:
                raise ConnectionAbortedError("client closed the connection mid-body")
            length -= len(piece)
            yield piece

    def _chunked_pieces(self) -> Iterator[bytes]:
        while size := self._chunk_size():
            yield from self._sized_pieces(size)
            self.rfile.readline(16)  # the CRLF after the chunk data
        while self.rfile.readline(8192).strip():  # trailer fields
            pass

    def _chunk_size(self) -> int:
        line = self.rfile.readline(1024)
        if not line:
            raise ConnectionAbortedError("client closed the connection mid-body")
        return int(line.split(b";")[0].strip(), 16)

    # responses

    def write_body(self, data: bytes | memoryview) -> None:
        """Send response body bytes (not framing) to the client."""
        self.connection.sendall(data)

    def send_body(self, status: int, body: bytes = b"", content_type: str | None = None,
                  headers: list[tuple[str, str]] | tuple = ()) -> None:
        """A complete response with a Content-Length body (none for 204 and 304, nor for HEAD);
        says `Connection: close` when the connection will close after it."""
        self.send_response(status)
        for name, value in headers:
            self.send_header(name, value)
        if self.close_connection:
            self.send_header("Connection", "close")
        if status not in (204, 304):
            if content_type:
                self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if body and self.command != "HEAD" and status not in (204, 304):
            self.write_body(body)

    def send_json(self, document, status: int = 200, headers: list[tuple[str, str]] | tuple = ()) -> None:
        self.send_body(status, json.dumps(document).encode(), "application/json", headers)

    def pause(self, seconds: float) -> None:
        """Sleep, but give up at once (aborting the request) when the server stops."""
        if seconds > 0 and self.server.stopping.wait(seconds):
            raise ConnectionAbortedError("server stopping")

    def reset_connection(self) -> None:
        """Close the connection with a TCP RST (SO_LINGER 0) instead of a FIN.

        Linux drops data the peer has received but not yet read when the RST arrives, so this first
        waits for the peer to acknowledge everything sent, then a moment for it to read: a client
        that keeps reading gets every byte sent before the reset."""
        self.close_connection = True
        deadline = time.monotonic() + RESET_ACK_WAIT
        while _unacknowledged_bytes(self.connection) and time.monotonic() < deadline:
            self.pause(0.005)
        self.pause(RESET_READ_WAIT)
        self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        self.rfile.close()  # drop the makefile reference, or close() would not close the socket
        self.connection.close()


class LoopbackService:
    """A LoopbackHTTPServer running on a background thread; context manager; base of Origin and
    WebhookReceiver. Statistics stay readable after stop()."""

    handler_class: type[LoopbackHandler]
    scheme = "http"

    def __init__(self, tls_context: ssl.SSLContext | None = None, port: int = 0):
        self._tls_context = tls_context
        self._requested_port = port  # 0: any free port
        self._server: LoopbackHTTPServer | None = None
        self._thread: threading.Thread | None = None

    def start(self):
        if self._thread is not None:
            raise RuntimeError(f"{type(self).__name__} is already running")
        self._server = LoopbackHTTPServer(self.handler_class, self, self._tls_context, self._requested_port)
        self._thread = threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.05},
                                        name=f"{type(self).__name__}:{self.port}", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._thread is None:
            return
        self._server.stop()
        self._thread.join()
        self._thread = None

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc_info) -> None:
        self.stop()

    @property
    def port(self) -> int:
        return self._server.server_port

    @property
    def base_url(self) -> str:
        return f"{self.scheme}://127.0.0.1:{self.port}"


# --- the origin -------------------------------------------------------------------------------------


@dataclass(eq=False)
class RequestRecord:
    """One request as the origin saw it; `bytes_sent` grows while the response body streams."""

    method: str
    target: str  # the request-target as sent: path and query
    path: str
    query: dict[str, str]
    headers: Message  # case-insensitive: record.headers["Range"], .get_all("Cookie")
    connection_id: int
    time: float  # time.monotonic() when the request head was read
    wall_time: float
    status: int | None = None
    bytes_sent: int = 0
    bytes_received: int = 0
    end_time: float | None = None  # time.monotonic() when the origin was done with it


@dataclass
class UploadRecord:
    """One body received by /upload."""

    method: str
    target: str
    headers: dict[str, str]
    content_type: str | None
    length: int
    sha256: str
    parts: list[MultipartPart] | None = None  # for multipart/form-data bodies
    multipart_complete: bool | None = None
    received_at: float = field(default_factory=time.time)


def _header_dict(headers: Message) -> dict[str, str]:
    """Lower-cased names; repeated fields joined with ", "."""
    joined: dict[str, str] = {}
    for name, value in headers.items():
        name = name.lower()
        joined[name] = f"{joined[name]}, {value}" if name in joined else value
    return joined


def _server_tls_context(certfile: str, keyfile: str, client_ca: str | None) -> ssl.SSLContext:
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(certfile, keyfile)
    if client_ca:
        context.verify_mode = ssl.CERT_REQUIRED
        context.load_verify_locations(client_ca)
    return context


def _query_flag(query: dict[str, str], name: str) -> bool:
    return query.get(name, "").lower() in ("1", "true", "yes")


def _query_number(query: dict[str, str], name: str, default=None, kind: type = int):
    if name not in query:
        return default
    try:
        value = kind(query[name])
    except ValueError:
        raise BadRequest(f"{name}={query[name]!r} is not a valid {kind.__name__}") from None
    if value < 0:
        raise BadRequest(f"{name} must not be negative")
    return value


@dataclass
class _BytesOptions:
    """The query options of a /bytes response (see the module docstring)."""

    seed: str
    version: str  # the etag= parameter
    validators: str
    ignore_range: bool
    chunked: bool
    rate: int | None
    rate_until: int | None
    stall_after: int | None
    reset_after: int | None
    wrong_length: int | None
    content_type: str
    disposition: str | None
    declare: list[str]
    declare_wrong: bool

    @classmethod
    def from_query(cls, query: dict[str, str]) -> _BytesOptions:
        options = cls(
            seed=query.get("seed", "0"), version=query.get("etag", ""),
            validators=query.get("validators", "both"),
            ignore_range=_query_flag(query, "ignore_range"), chunked=_query_flag(query, "no_length"),
            rate=_query_number(query, "rate"), rate_until=_query_number(query, "rate_until"),
            stall_after=_query_number(query, "stall_after"),
            reset_after=_query_number(query, "reset_after"),
            wrong_length=_query_number(query, "wrong_length"),
            content_type=query.get("content_type", "application/octet-stream"),
            disposition=query.get("disposition"),
            declare=[d for d in query.get("declare", "").split(",") if d],
            declare_wrong=_query_flag(query, "declare_wrong"))
        unknown = set(options.declare) - set(DECLARABLE)
        if unknown:
            raise BadRequest(f"declare: unknown {sorted(unknown)}; known: {sorted(DECLARABLE)}")
        if options.validators not in ("both", "etag", "last_modified", "none"):
            raise BadRequest("validators must be both, etag, last_modified or none")
        return options

    def sent_validators(self, n: int) -> tuple[str | None, str | None]:
        """The (ETag, Last-Modified) the response carries; None for one not sent."""
        etag, last_modified = validators(n, self.seed, self.version)
        return (etag if self.validators in ("both", "etag") else None,
                last_modified if self.validators in ("both", "last_modified") else None)

    def headers(self, n: int, span: range, partial: bool) -> list[tuple[str, str]]:
        """The representation and framing headers of a 200 or 206 response."""
        headers = [("Content-Type", self.content_type)]
        if not self.ignore_range:
            headers.append(("Accept-Ranges", "bytes"))
        if partial:
            headers.append(("Content-Range", f"bytes {span.start}-{span.stop - 1}/{n}"))
        if self.disposition is not None:
            headers.append(("Content-Disposition", _content_disposition(self.disposition)))
        headers += self.declared_digests(n, span)
        if self.chunked:
            headers.append(("Transfer-Encoding", "chunked"))
        else:
            length = len(span) if self.wrong_length is None else self.wrong_length
            headers.append(("Content-Length", str(length)))
        return headers


    def declared_digests(self, n: int, span: range) -> list[tuple[str, str]]:
        """The digest headers `declare` asks for (builds the content in memory: for small n)."""
        if not self.declare:
            return []
        content = bytearray(expected_bytes(n, self.seed, self.version))
        if self.declare_wrong and content:
            content[0] ^= 0xFF
        whole, part = bytes(content), bytes(content[span.start:span.stop])
        b64 = lambda raw: base64.b64encode(raw).decode()
        fields: dict[str, list[str]] = {}
        for d in self.declare:
            header, algorithm, subject = DECLARABLE[d]
            body = whole if header in ("Repr-Digest", "x-goog-hash") else part
            if header == "x-goog-hash":
                fields.setdefault(header, []).extend([f"crc32c={b64(crc32c.crc32c(body).to_bytes(4, 'big'))}",
                                                      f"md5={b64(hashlib.md5(body).digest())}"])
            elif header == "Content-MD5":
                fields.setdefault(header, []).append(b64(hashlib.md5(body).digest()))
            else:
                digest = hashlib.new(algorithm, body).digest()
                fields.setdefault(header, []).append(f"{subject}=:{b64(digest)}:")
        return [(name, ", ".join(values)) for name, values in fields.items()]


# declare= names → (header, hashlib algorithm, the field's key for it)
DECLARABLE = {
    "repr-sha-256": ("Repr-Digest", "sha256", "sha-256"),
    "repr-sha-512": ("Repr-Digest", "sha512", "sha-512"),
    "content-sha-256": ("Content-Digest", "sha256", "sha-256"),
    "content-sha-512": ("Content-Digest", "sha512", "sha-512"),
    "content-md5": ("Content-MD5", "md5", ""),
    "goog": ("x-goog-hash", "", ""),
}


class _OriginHandler(LoopbackHandler):
    """Routes requests to the scenarios described in the module docstring."""

    ROUTES = (  # (path pattern, method name, whether the route reads the request body itself)
        (re.compile(r"/bytes/(\d+)"), "_route_bytes", False),
        (re.compile(r"/status/(\d{3})"), "_route_status", False),
        (re.compile(r"/redirect/(\d+)"), "_route_redirect", True),
        (re.compile(r"/redirect-to"), "_route_redirect_to", False),
        (re.compile(r"/redirect-loop"), "_route_redirect_loop", False),
        (re.compile(r"/flaky/([^/]+)"), "_route_flaky", False),
        (re.compile(r"/versioned/([^/]+)"), "_route_versioned", False),
        (re.compile(r"/echo(/.*)?"), "_route_echo", True),
        (re.compile(r"/upload(/.*)?"), "_route_upload", True),
        (re.compile(r"/once/([^/]+)"), "_route_once", True),
        (re.compile(r"/cookies/set"), "_route_cookies_set", False),
        (re.compile(r"/cookies/echo"), "_route_cookies_echo", False),
        (re.compile(r"/auth/basic"), "_route_auth_basic", False),
        (re.compile(r"/auth/bearer"), "_route_auth_bearer", False),
        (re.compile(r"/auth/digest"), "_route_auth_digest", False),
        (re.compile(r"/slow-headers"), "_route_slow_headers", False),
        (re.compile(r"/endless-headers"), "_route_endless_headers", False),
        (re.compile(r"/gzip-bomb"), "_route_gzip_bomb", False),
        (re.compile(r"/not-http"), "_route_not_http", False),
    )

    record: RequestRecord | None = None  # of the request being handled

    @property
    def origin(self) -> Origin:
        return self.server.service

    def respond(self) -> None:
        target = urlsplit(self.path)
        self.query_pairs = parse_qsl(target.query, keep_blank_values=True)
        self.query = dict(self.query_pairs)
        self.conn.requests += 1
        self.record = self.origin._record_request(self, target.path)
        try:
            route, match, reads_body = self._route(target.path)
            if not reads_body:
                self.discard_body()
            route(match)
        except BadRequest as error:
            self.send_json({"error": str(error)}, 400)
        finally:
            self.record.bytes_received = self.body_bytes_read
            self.record.end_time = time.monotonic()
            self.record = None

    def _route(self, path: str):
        for pattern, name, reads_body in self.ROUTES:
            if match := pattern.fullmatch(path):
                return getattr(self, name), match, reads_body
        return self._route_not_found, None, False

    def send_response(self, code: int, message: str | None = None) -> None:
        if self.record is not None:
            self.record.status = code
        super().send_response(code, message)

    def write_body(self, data: bytes | memoryview) -> None:
        super().write_body(data)
        self.record.bytes_sent += len(data)

    def _route_not_found(self, _match) -> None:
        self.send_json({"error": "no such scenario", "path": self.path}, 404)

    # /bytes and friends

    def _route_bytes(self, match: re.Match) -> None:
        self._serve_bytes(int(match[1]))

    def _serve_bytes(self, n: int) -> None:
        options = _BytesOptions.from_query(self.query)  # validated before the status line
        etag, last_modified = options.sent_validators(n)
        span = self._requested_span(n, options, etag, last_modified)
        headers = [("ETag", etag)] if etag else []
        if last_modified:
            headers.append(("Last-Modified", last_modified))
        if span is not None and not span:
            self.send_body(416, headers=headers + [("Content-Range", f"bytes */{n}")])
            return
        partial = span is not None
        self.send_response(206 if partial else 200)
        span = span if partial else range(n)
        for name, value in headers + options.headers(n, span, partial):
            self.send_header(name, value)
        self.end_headers()
        if self.command != "HEAD":
            self._stream_content(options, span)

    def _requested_span(self, n: int, options: _BytesOptions, etag: str | None,
                        last_modified: str | None) -> range | None:
        header = self.headers.get("Range")
        if header is None or options.ignore_range:
            return None
        if_range = self.headers.get("If-Range")
        if if_range is not None and not _if_range_matches(if_range, etag, last_modified):
            return None
        return parse_range(header, n)

    def _stream_content(self, options: _BytesOptions, span: range) -> None:
        """Send the span of the content, misbehaving as the options say."""
        cut = next((k for k in (options.stall_after, options.reset_after) if k is not None), len(span))
        self._send_pattern(options, span.start, min(cut, len(span)))
        if options.stall_after is not None:
            self._stall()
        elif options.reset_after is not None:
            self.reset_connection()
        else:
            if options.chunked:
                self.connection.sendall(b"0\r\n\r\n")
            if options.wrong_length is not None:
                self.close_connection = True

    def _send_pattern(self, options: _BytesOptions, start: int, count: int) -> None:
        window = _pattern_window(options.seed, options.version)
        rate = options.rate
        piece_size = CHUNK if not rate else max(1, min(CHUNK, rate // 10))
        slow_until = count if options.rate_until is None else max(0, options.rate_until - start)
        began, sent = time.monotonic(), 0
        while sent < count:
            if rate and sent < slow_until:
                self.pause(began + sent / rate - time.monotonic())
            size = min(piece_size if sent < slow_until else CHUNK, count - sent)
            at = (start + sent) % BLOCK
            if options.chunked:
                self.connection.sendall(b"%x\r\n" % size)
            self.write_body(window[at:at + size])
            if options.chunked:
                self.connection.sendall(b"\r\n")
            sent += size

    def _stall(self) -> None:
        """Send nothing more; return when the client closes (or resets) or after STALL_SECONDS."""
        self.close_connection = True
        deadline = time.monotonic() + STALL_SECONDS
        while (left := deadline - time.monotonic()) > 0:
            if select.select([self.connection], [], [], left)[0]:
                try:
                    if not self.connection.recv(CHUNK):
                        return
                except OSError:
                    return

    # status, redirects, flaky

    def _route_status(self, match: re.Match) -> None:
        code = int(match[1])
        if not 200 <= code <= 599:
            raise BadRequest("status must be 200-599")
        headers = [("Retry-After", self.query["retry_after"])] if "retry_after" in self.query else []
        if "body" in self.query:
            self.send_body(code, self.query["body"].encode(), "text/plain; charset=utf-8", headers)
        else:
            self.send_json({"status": code}, code, headers)

    def _redirect(self, location: str) -> None:
        status = _query_number(self.query, "status", 302)
        if not 300 <= status <= 399:
            raise BadRequest("status must be 3xx")
        self.send_body(status, headers=[("Location", location)])

    def _route_redirect(self, match: re.Match) -> None:
        hops = int(match[1])
        if hops == 0:
            if "bytes" in self.query:
                self.discard_body()
                self._serve_bytes(_query_number(self.query, "bytes"))
            else:
                self._route_echo(match)
            return
        self.discard_body()
        query = urlsplit(self.path).query
        location = f"/redirect/{hops - 1}" + (f"?{query}" if query else "")
        self._redirect(location if _query_flag(self.query, "relative") else self.origin.url(location))

    def _route_redirect_to(self, _match) -> None:
        if "url" not in self.query:
            raise BadRequest("url= is required")
        self._redirect(self.query["url"])

    def _route_redirect_loop(self, _match) -> None:
        self._redirect(self.origin.url(self.path))

    def _route_flaky(self, match: re.Match) -> None:
        failures = _query_number(self.query, "fail", 1)
        status = _query_number(self.query, "status", 503)
        attempt = self.origin._flaky_hit(match[1])
        if attempt > failures:
            self._serve_bytes(_query_number(self.query, "bytes", 1024))
            return
        headers = [("Retry-After", self.query["retry_after"])] if "retry_after" in self.query else []
        self.send_json({"flaky": match[1], "attempt": attempt}, status, headers)

    def _route_versioned(self, match: re.Match) -> None:
        self.query["etag"] = self.origin.version(match[1])
        self._serve_bytes(_query_number(self.query, "bytes", 1024))

    # request bodies

    def _route_echo(self, _match) -> None:
        digest, length, head = hashlib.sha256(), 0, bytearray()
        for piece in self.iter_body():
            digest.update(piece)
            length += len(piece)
            if len(head) <= TEXT_LIMIT:
                head += piece[: TEXT_LIMIT + 1 - len(head)]
        self.send_json({
            "method": self.command,
            "target": self.path,
            "path": urlsplit(self.path).path,
            "query": self.query,
            "http_version": self.request_version,
            "headers": _header_dict(self.headers),
            "header_list": list(self.headers.items()),
            "chunked": self._chunked,
            "body_length": length,
            "body_sha256": digest.hexdigest(),
            "body_text": head.decode("utf-8", "replace") if length < TEXT_LIMIT else None,
            "tls": self._tls_description(),
        })

    def _tls_description(self) -> dict | None:
        if not isinstance(self.connection, ssl.SSLSocket):
            return None
        peer = self.connection.getpeercert()
        subject = {key: value for rdn in peer.get("subject", ()) for key, value in rdn} if peer else None
        return {"version": self.connection.version(), "cipher": self.connection.cipher()[0],
                "client_cert": subject}

    def _route_upload(self, _match) -> None:
        refuse_with = _query_number(self.query, "status")
        if refuse_with is not None:
            if not 200 <= refuse_with <= 599:
                raise BadRequest("status must be 200-599")
            self.discard_body()
            self.send_json({"error": "upload refused"}, refuse_with)
            return
        reset_after = _query_number(self.query, "reset_after")
        content_type = self.headers.get("Content-Type")
        parser = MultipartParser.for_content_type(content_type or "")
        digest, length = hashlib.sha256(), 0
        for piece in self.iter_body(limit=reset_after):
            digest.update(piece)
            length += len(piece)
            if parser:
                parser.feed(piece)
        if self._body_pending:  # stopped at reset_after
            self.reset_connection()
            return
        record = UploadRecord(self.command, self.path, _header_dict(self.headers), content_type,
                              length, digest.hexdigest(), parser and parser.parts,
                              parser and parser.complete)
        self.origin._add_upload(record)
        self.send_json(asdict(record), 201)

    def _route_once(self, match: re.Match) -> None:
        body = b"".join(self.iter_body())
        count = self.origin._body_received(match[1], body)
        if _query_flag(self.query, "reset") or (_query_flag(self.query, "reset_reused") and self.conn.requests > 1):
            self.reset_connection()
            return
        if count == 1 and "hold" in self.query:
            self.pause(_query_number(self.query, "hold", kind=float))
        self.send_json({"id": match[1], "count": count, "body_length": len(body)})

    # cookies

    COOKIE_ATTRIBUTES = ("path", "domain", "max_age", "expired", "redirect")

    def _route_cookies_set(self, _match) -> None:
        attributes = f"; Path={self.query.get('path', '/')}"
        if "domain" in self.query:
            attributes += f"; Domain={self.query['domain']}"
        if "max_age" in self.query:
            attributes += f"; Max-Age={_query_number(self.query, 'max_age')}"
        if _query_flag(self.query, "expired"):
            attributes += "; Max-Age=0; Expires=Thu, 01 Jan 1970 00:00:00 GMT"
        cookies = [(k, v) for k, v in self.query_pairs if k not in self.COOKIE_ATTRIBUTES]
        headers = [("Set-Cookie", f"{name}={value}{attributes}") for name, value in cookies]
        if "redirect" in self.query:
            headers.append(("Location", self.query["redirect"]))
        self.send_json({"set": dict(cookies)}, 302 if "redirect" in self.query else 200, headers=headers)

    def _route_cookies_echo(self, _match) -> None:
        header = "; ".join(self.headers.get_all("Cookie") or []) or None
        pairs = (part.strip().partition("=") for part in (header or "").split(";") if part.strip())
        self.send_json({"cookies": {name: value for name, _, value in pairs}, "header": header})

    # authentication

    def _authorization(self, scheme: str) -> str | None:
        """The credentials of an Authorization header of that scheme, else None."""
        given, _, credentials = self.headers.get("Authorization", "").partition(" ")
        return credentials.strip() if given.lower() == scheme else None

    def _auth_reply(self, authorized: bool, scheme: str, challenge: str) -> None:
        if authorized:
            self.send_json({"authenticated": True, "scheme": scheme,
                            "user": self.query.get("user")})
        else:
            self.send_json({"authenticated": False}, 401, [("WWW-Authenticate", challenge)])

    def _route_auth_basic(self, _match) -> None:
        expected = f"{self.query.get('user', '')}:{self.query.get('pass', '')}"
        credentials = self._authorization("basic")
        try:
            authorized = credentials is not None and base64.b64decode(credentials, validate=True) == expected.encode()
        except ValueError:
            authorized = False
        self._auth_reply(authorized, "basic", f'Basic realm="{DIGEST_REALM}"')

    def _route_auth_bearer(self, _match) -> None:
        credentials = self._authorization("bearer")
        authorized = credentials is not None and hmac.compare_digest(credentials, self.query.get("token", ""))
        challenge = f'Bearer realm="{DIGEST_REALM}"' + (', error="invalid_token"' if credentials else "")
        self._auth_reply(authorized, "bearer", challenge)

    def _route_auth_digest(self, _match) -> None:
        credentials = self._authorization("digest")
        authorized = credentials is not None and self._digest_valid(_parse_auth_params(credentials))
        challenge = (f'Digest realm="{DIGEST_REALM}", qop="auth", algorithm=MD5, '
                     f'nonce="{self.origin._new_nonce()}", opaque="{self.origin.digest_opaque}"')
        self._auth_reply(authorized, "digest", challenge)

    def _digest_valid(self, params: dict[str, str]) -> bool:
        """RFC 7616 section 3.4.1 with algorithm MD5 and qop=auth."""
        required = ("username", "realm", "nonce", "uri", "response", "qop", "nc", "cnonce")
        if any(name not in params for name in required):
            return False
        if (params["username"] != self.query.get("user", "") or params["realm"] != DIGEST_REALM
                or params["qop"] != "auth" or params.get("algorithm", "MD5").upper() != "MD5"
                or params.get("opaque") != self.origin.digest_opaque or params["uri"] != self.path
                or not self.origin._nonce_issued(params["nonce"])):
            return False
        ha1 = _md5(f"{params['username']}:{DIGEST_REALM}:{self.query.get('pass', '')}")
        ha2 = _md5(f"{self.command}:{params['uri']}")
        expected = _md5(f"{ha1}:{params['nonce']}:{params['nc']}:{params['cnonce']}:auth:{ha2}")
        return hmac.compare_digest(expected, params["response"].lower())

    def _route_slow_headers(self, _match) -> None:
        delay = _query_number(self.query, "delay", 1.0, float)
        self.pause(delay)
        self.send_json({"delayed": delay})

    # hostile responses

    def _route_endless_headers(self, _match) -> None:
        """A head that never ends: as much as the client will read, up to ENDLESS_HEADER_LIMIT."""
        self.close_connection = True
        one_line = _query_flag(self.query, "one_line")
        sent = 0
        try:
            self.connection.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\n" + (b"X-Endless: " if one_line else b""))
            while sent < ENDLESS_HEADER_LIMIT and not self.server.stopping.is_set():
                piece = b"a" * 1024 if one_line else b"X-Filler-%d: %s\r\n" % (sent, b"a" * 1000)
                self.connection.sendall(piece)
                sent += len(piece)
        except OSError:
            pass  # the client gave up: what the scenario is for
        self.record.bytes_sent = sent

    def _route_not_http(self, _match) -> None:
        self.close_connection = True
        self.connection.sendall(b"hello, this is no HTTP response\r\n")

    def _route_gzip_bomb(self, _match) -> None:
        size = _query_number(self.query, "size", 10 << 30)
        member = _gzip_zeros_member()
        count = max(1, -(-size // GZIP_MEMBER_ZEROS))
        headers = [("Content-Encoding", "gzip"), ("Content-Type", "application/octet-stream")]
        self.send_response(200)
        for name, value in headers:
            self.send_header(name, value)
        if _query_flag(self.query, "no_length"):
            self.close_connection = True
            self.send_header("Connection", "close")
        else:
            self.send_header("Content-Length", str(count * len(member)))
        self.end_headers()
        if self.command == "HEAD":
            return
        try:
            for _ in range(count):
                self.write_body(member)
        except OSError:
            self.close_connection = True


ENDLESS_HEADER_LIMIT = 64 << 20
GZIP_MEMBER_ZEROS = 64 << 20


@functools.cache
def _gzip_zeros_member() -> bytes:
    """One gzip member holding GZIP_MEMBER_ZEROS zero bytes; members concatenate (RFC 1952 §2.2)."""
    return gzip.compress(bytes(GZIP_MEMBER_ZEROS), compresslevel=9, mtime=0)


class SilentListener:
    """Accepts TCP connections on 127.0.0.1 and never sends a byte; see the module docstring."""

    __test__ = False

    def __init__(self) -> None:
        self._socket = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self._socket.bind(("127.0.0.1", 0))
        self._socket.listen(16)
        self._accepted: list[socket.socket] = []
        self._stopping = threading.Event()
        self._thread = threading.Thread(target=self._accept, daemon=True)

    @property
    def port(self) -> int:
        return self._socket.getsockname()[1]

    def url(self, path: str = "/", scheme: str = "https") -> str:
        return f"{scheme}://127.0.0.1:{self.port}{path}"

    @property
    def connections_accepted(self) -> int:
        return len(self._accepted)

    def _accept(self) -> None:
        self._socket.settimeout(0.05)
        while not self._stopping.is_set():
            try:
                connection, _ = self._socket.accept()
            except (TimeoutError, OSError):
                continue
            self._accepted.append(connection)  # held open, unread and unanswered

    def __enter__(self) -> "SilentListener":
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stopping.set()
        self._thread.join()
        for connection in self._accepted:
            connection.close()
        self._socket.close()


def _md5(text: str) -> str:
    return hashlib.md5(text.encode()).hexdigest()


def _parse_auth_params(text: str) -> dict[str, str]:
    """`k=v, k="quoted \\" v"` auth-params (RFC 9110 section 11.2) into a dict."""
    return {name.lower(): re.sub(r"\\(.)", r"\1", quoted) if quoted else token
            for name, quoted, token in _AUTH_PARAM.findall(text)}


class Origin(LoopbackService):
    """The scriptable origin server; see the module docstring for the scenarios."""

    handler_class = _OriginHandler
    expected_bytes = staticmethod(expected_bytes)
    expected_sha256 = staticmethod(expected_sha256)
    validators = staticmethod(validators)

    def __init__(self, tls: tuple[str, str, str | None] | None = None, port: int = 0):
        """`tls=(certfile, keyfile, client_ca)` serves HTTPS; with a client_ca file, clients must
        present a certificate it signed. `port` binds that port (a test that brings an origin up
        where a client already knocks); by default any free one."""
        super().__init__(_server_tls_context(*tls) if tls else None, port)
        self.scheme = "https" if tls else "http"
        self.digest_opaque = secrets.token_hex(8)
        self._lock = threading.Lock()
        self._requests: list[RequestRecord] = []
        self._uploads: list[UploadRecord] = []
        self._flaky: Counter[str] = Counter()
        self._versions: dict[str, str] = {}
        self._bodies: dict[str, list[bytes]] = {}
        self._nonces: set[str] = set()

    def url(self, path: str = "/") -> str:
        """The full URL of `path` (which starts with "/") on this origin."""
        return self.base_url + path

    # instrumentation

    @property
    def requests(self) -> list[RequestRecord]:
        with self._lock:
            return list(self._requests)

    @property
    def uploads(self) -> list[UploadRecord]:
        with self._lock:
            return list(self._uploads)

    @property
    def connections_opened(self) -> int:
        return self._server.connections_opened

    @property
    def active_connections(self) -> int:
        return self._server.active_connections

    @property
    def max_concurrent_connections(self) -> int:
        return self._server.max_concurrent_connections

    @property
    def tls_handshake_failures(self) -> int:
        return self._server.tls_handshake_failures

    def bytes_served(self, path_prefix: str = "/") -> int:
        """Response body bytes sent for requests whose path starts with `path_prefix`."""
        return sum(r.bytes_sent for r in self.requests if r.path.startswith(path_prefix))

    def max_concurrent_requests(self, path_prefix: str = "/") -> int:
        """The most requests under `path_prefix` that were being handled at the same moment."""
        edges = []
        for record in self.requests:
            if record.path.startswith(path_prefix):
                edges += [(record.time, 1), (record.end_time or float("inf"), -1)]
        running = peak = 0
        for _, step in sorted(edges):  # at equal times, ends (-1) sort before starts
            running += step
            peak = max(peak, running)
        return peak

    def flaky_hits(self, name: str) -> int:
        """How many requests /flaky/{name} has received."""
        with self._lock:
            return self._flaky[name]

    def set_version(self, name: str, version: str) -> None:
        """What /versioned/{name} serves from now on: the content, ETag and Last-Modified of /bytes
        with `etag=version`."""
        with self._lock:
            self._versions[name] = version

    def version(self, name: str) -> str:
        with self._lock:
            return self._versions.get(name, "")

    def bodies(self, request_id: str) -> list[bytes]:
        """Every request body /once/{request_id} has received, in arrival order."""
        with self._lock:
            return list(self._bodies.get(request_id, ()))

    def reset_stats(self) -> None:
        """Forget recorded requests, uploads, flaky and body counters and connection statistics."""
        with self._lock:
            self._requests.clear()
            self._uploads.clear()
            self._flaky.clear()
            self._bodies.clear()
        self._server.reset_connection_stats()

    # called by the handler

    def _record_request(self, handler: _OriginHandler, path: str) -> RequestRecord:
        record = RequestRecord(handler.command, handler.path, path, handler.query, handler.headers,
                               handler.conn.id, time.monotonic(), time.time())
        with self._lock:
            self._requests.append(record)
        return record

    def _add_upload(self, record: UploadRecord) -> None:
        with self._lock:
            self._uploads.append(record)

    def _flaky_hit(self, name: str) -> int:
        with self._lock:
            self._flaky[name] += 1
            return self._flaky[name]

    def _body_received(self, request_id: str, body: bytes) -> int:
        with self._lock:
            self._bodies.setdefault(request_id, []).append(body)
            return len(self._bodies[request_id])

    def _new_nonce(self) -> str:
        nonce = secrets.token_hex(16)
        with self._lock:
            self._nonces.add(nonce)
        return nonce

    def _nonce_issued(self, nonce: str) -> bool:
        with self._lock:
            return nonce in self._nonces

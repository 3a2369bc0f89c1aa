"""An upload origin that speaks a resumable upload protocol, for tests and benches.

Protocols (`--protocol`):
- `ietf`: the IETF resumable upload draft (draft-ietf-httpbis-resumable-upload, interop version 8).
  A POST or PUT outside `/uploads/` that carries `Upload-Draft-Interop-Version: 8` and
  `Upload-Complete` creates an upload resource, announced at once in a `104` interim response's
  `Location`; `HEAD` on it gives `Upload-Offset`, `PATCH` (`application/partial-upload`, the
  matching `Upload-Offset`) appends, `DELETE` removes it. A request without the interop version is
  taken as a plain upload, as the draft's "fall back to a non-resumable upload" says.
- `tus`: tus 1.0.0 core with the creation, termination and checksum extensions: `OPTIONS`
  announces them, `POST` with `Upload-Length` creates, `HEAD` and `PATCH`
  (`application/offset+octet-stream`) as the core protocol says; `Tus-Resumable: 1.0.0` required
  on every request but `OPTIONS` (412 otherwise).
- `plain`: a PUT/POST sink.

Every protocol counts the body bytes it read (`bytes_received`), over all requests, so a test or
bench can tell what a client sent twice. Faults, each taken once (set on the object, or over HTTP
with `POST /_control` and a JSON object of the same names; `GET /_stats` reads the counters):
- `cut_at`: once an upload holds this many bytes, the connection is reset mid-body;
- `fail_at`: once an upload holds this many bytes, the request is answered 503 and closed;
- `lose`: the next `HEAD` on an upload resource finds nothing (404) and the resource is gone;
- `rewind_to`: the next `HEAD` finds the upload cut back to this offset (what the origin kept);
- `conflict`: the next append is answered 409 with the origin's offset, its body unread;
- `final_status`: the next IETF upload that completes is answered with this status and
  `Upload-Complete: ?1` (a final answer no resumption changes).
`read_rate` (bytes a second, kept until changed) slows reading request bodies, so a test can act
mid-upload.

Run standalone: `python3 resumable_origin.py --protocol ietf|tus|plain --port N --dir D`.
"""

from __future__ import annotations

import argparse
import base64
import hashlib
import json
import os
import secrets
import socket
import struct
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

INTEROP_VERSION = "8"
TUS_VERSION = "1.0.0"
TUS_EXTENSIONS = "creation,termination,checksum"
TUS_CHECKSUMS = {"sha1": hashlib.sha1, "sha256": hashlib.sha256, "md5": hashlib.md5}
PIECE = 256 * 1024


class CutConnection(Exception):
    """A fault ended the request: the connection goes without a response."""


@dataclass
class Upload:
    """One upload resource: its bytes on disk, how many, and whether the last one came."""

    path: str
    length: int | None = None
    offset: int = 0
    complete: bool = False
    # Bumped by each request on the resource: an older request still appending stops there, as
    # the draft asks of a server that gets a new request for an upload whose append is in flight.
    generation: int = 0


@dataclass
class Faults:
    cut_at: int | None = None
    fail_at: int | None = None
    lose: bool = False
    rewind_to: int | None = None
    conflict: bool = False
    final_status: int | None = None


@dataclass
class Stats:
    bytes_received: int = 0
    requests: list = field(default_factory=list)  # (method, path, selected headers)
    completed: list = field(default_factory=list)  # {"size", "sha256"} of each finished upload


class ResumableOrigin:
    """The server, in a thread of its own: `with ResumableOrigin("ietf") as origin: origin.url`."""

    def __init__(self, protocol: str = "ietf", port: int = 0, directory: str | None = None, host: str = "127.0.0.1"):
        if protocol not in ("ietf", "tus", "plain"):
            raise ValueError(f"unknown protocol {protocol}")
        self.protocol = protocol
        self._tempdir = None if directory else tempfile.TemporaryDirectory(prefix="resumable-origin-")
        self.directory = directory or self._tempdir.name
        os.makedirs(self.directory, exist_ok=True)
        self.lock = threading.Lock()
        self.faults = Faults()
        self.read_rate: int | None = None
        self.stats = Stats()
        self.uploads: dict[str, Upload] = {}
        self.httpd = ThreadingHTTPServer((host, port), _Handler)
        self.httpd.daemon_threads = True
        self.httpd.origin = self
        self.port = self.httpd.server_address[1]
        self._thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def __enter__(self) -> ResumableOrigin:
        self._thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
        if self._tempdir:
            self._tempdir.cleanup()

    def set_faults(self, **values) -> None:
        with self.lock:
            if "read_rate" in values:
                self.read_rate = values.pop("read_rate")
            for name, value in values.items():
                if not hasattr(self.faults, name):
                    raise ValueError(f"unknown fault {name}")
                setattr(self.faults, name, value)

    def snapshot(self) -> dict:
        with self.lock:
            return {"bytes_received": self.stats.bytes_received, "completed": list(self.stats.completed),
                    "requests": [list(r) for r in self.stats.requests],
                    "uploads": {k: {"offset": u.offset, "length": u.length, "complete": u.complete}
                                for k, u in self.uploads.items()}}

    def methods(self) -> list[str]:
        """The methods of the requests so far, in order (`_control`/`_stats` left out)."""
        with self.lock:
            return [r[0] for r in self.stats.requests]

    def new_upload(self, prefix: str, length: int | None) -> tuple[str, Upload]:
        name = secrets.token_hex(8)
        upload = Upload(path=os.path.join(self.directory, name), length=length)
        open(upload.path, "wb").close()
        with self.lock:
            self.uploads[name] = upload
        return f"{prefix}{name}", upload

    def take_over(self, name: str) -> Upload | None:
        """The upload resource, its older requests told to stop appending."""
        with self.lock:
            upload = self.uploads.get(name)
            if upload is not None:
                upload.generation += 1
            return upload

    def take_fault(self, name: str):
        """A fault's value, cleared: each fault acts once."""
        with self.lock:
            value = getattr(self.faults, name)
            setattr(self.faults, name, Faults.__dataclass_fields__[name].default)
            return value

    def finish(self, upload: Upload) -> dict:
        digest = hashlib.sha256()
        with open(upload.path, "rb") as f:
            while piece := f.read(1 << 20):
                digest.update(piece)
        summary = {"size": upload.offset, "sha256": digest.hexdigest()}
        with self.lock:
            upload.complete = True
            self.stats.completed.append(summary)
        return summary


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    rbufsize = PIECE  # read1() returns at most a buffer's worth: 8 KiB pieces would crawl
    server: ThreadingHTTPServer

    def log_message(self, *args) -> None:
        pass

    @property
    def origin(self) -> ResumableOrigin:
        return self.server.origin

    def do_OPTIONS(self): self._dispatch()
    def do_HEAD(self): self._dispatch()
    def do_GET(self): self._dispatch()
    def do_POST(self): self._dispatch()
    def do_PUT(self): self._dispatch()
    def do_PATCH(self): self._dispatch()
    def do_DELETE(self): self._dispatch()

    def _dispatch(self) -> None:
        path = self.path.split("?", 1)[0]
        if path in ("/_control", "/_stats"):
            return self._control(path)
        kept = {k: v for k, v in self.headers.items()
                if k.lower().startswith(("upload-", "tus-")) or k.lower() == "content-type"}
        with self.origin.lock:
            self.origin.stats.requests.append((self.command, path, kept))
        try:
            getattr(self, f"_{self.origin.protocol}")(path)
        except CutConnection:
            self._reset()

    # --- the protocols ---------------------------------------------------------------------------

    def _plain(self, path: str) -> None:
        if self.command not in ("POST", "PUT"):
            return self._reply(405, headers={"Allow": "POST, PUT"})
        _, upload = self.origin.new_upload("/", None)
        self._receive(upload)
        self._reply(200, json.dumps(self.origin.finish(upload)).encode(), {"Content-Type": "application/json"})

    def _ietf(self, path: str) -> None:
        if path.startswith("/uploads/"):
            return self._ietf_resource(path, path[len("/uploads/"):])
        if self.command == "OPTIONS":
            return self._reply(204, headers={"Accept-Patch": "application/partial-upload"})
        if self.command not in ("POST", "PUT"):
            return self._reply(405, headers={"Allow": "POST, PUT, OPTIONS"})
        complete = self.headers.get("Upload-Complete")
        if self.headers.get("Upload-Draft-Interop-Version") != INTEROP_VERSION or complete not in ("?0", "?1"):
            return self._plain(path)
        length = _int(self.headers.get("Upload-Length"))
        location, upload = self.origin.new_upload("/uploads/", length)
        # 104 (Upload Resumption Supported), before the body is read: the client learns where to
        # resume even when the connection breaks before any final response.
        self.send_response_only(104)
        self.send_header("Location", location)
        self.send_header("Upload-Draft-Interop-Version", INTEROP_VERSION)
        self.end_headers()
        self._receive(upload)
        self._ietf_after_append(upload, complete == "?1", created=location)

    def _ietf_resource(self, path: str, name: str) -> None:
        upload = self.origin.take_over(name)
        if upload is None:
            return self._problem(404, "no such upload")
        if self.command == "HEAD":
            if self.origin.take_fault("lose"):
                with self.origin.lock:
                    self.origin.uploads.pop(name, None)
                return self._reply(404)
            self._rewind(upload)
            headers = {"Upload-Offset": str(upload.offset), "Upload-Complete": "?1" if upload.complete else "?0",
                       "Cache-Control": "no-store"}
            if upload.length is not None:
                headers["Upload-Length"] = str(upload.length)
            return self._reply(204, headers=headers)
        if self.command == "DELETE":
            with self.origin.lock:
                self.origin.uploads.pop(name, None)
            return self._reply(204)
        if self.command != "PATCH":
            return self._reply(405, headers={"Allow": "HEAD, PATCH, DELETE"})
        if self.headers.get("Content-Type") != "application/partial-upload":
            return self._problem(415, "appends are application/partial-upload")
        complete = self.headers.get("Upload-Complete")
        if upload.complete:
            return self._problem(400, "the upload is complete", "completed-upload")
        offset = _int(self.headers.get("Upload-Offset"))
        if offset != upload.offset or self.origin.take_fault("conflict"):
            return self._problem(409, "mismatching upload offset", "mismatching-upload-offset",
                                 {"Upload-Offset": str(upload.offset), "Upload-Complete": "?0"}, close=True)
        self._receive(upload)
        self._ietf_after_append(upload, complete == "?1")

    def _ietf_after_append(self, upload: Upload, complete: bool, created: str | None = None) -> None:
        if upload.length is not None and upload.offset > upload.length:
            return self._problem(400, "more than Upload-Length", "inconsistent-upload-length")
        if not complete:
            headers = {"Upload-Offset": str(upload.offset), "Upload-Complete": "?0"}
            if created:
                headers["Location"] = created
            return self._reply(201 if created else 204, headers=headers)
        # The final response is what the target resource answers for the whole representation.
        body = json.dumps(self.origin.finish(upload)).encode()
        status = self.origin.take_fault("final_status") or 200
        self._reply(status, body, {"Content-Type": "application/json", "Upload-Complete": "?1"})

    def _tus(self, path: str) -> None:
        if self.command == "OPTIONS":
            return self._reply(204, headers={"Tus-Version": TUS_VERSION, "Tus-Extension": TUS_EXTENSIONS,
                                             "Tus-Checksum-Algorithm": ",".join(TUS_CHECKSUMS)})
        if self.headers.get("Tus-Resumable") != TUS_VERSION:
            return self._reply(412, headers={"Tus-Version": TUS_VERSION})
        if path.startswith("/files/"):
            return self._tus_resource(path[len("/files/"):])
        if self.command != "POST":
            return self._reply(405, headers={"Allow": "POST, OPTIONS", "Tus-Resumable": TUS_VERSION})
        length = _int(self.headers.get("Upload-Length"))
        if length is None:
            return self._reply(400, b"Upload-Length required\n", {"Tus-Resumable": TUS_VERSION})
        location, _ = self.origin.new_upload("/files/", length)
        self._reply(201, headers={"Location": location, "Tus-Resumable": TUS_VERSION, "Upload-Offset": "0"})

    def _tus_resource(self, name: str) -> None:
        upload = self.origin.take_over(name)
        tus = {"Tus-Resumable": TUS_VERSION}
        if upload is None:
            return self._reply(404, headers=tus)
        if self.command == "HEAD":
            if self.origin.take_fault("lose"):
                with self.origin.lock:
                    self.origin.uploads.pop(name, None)
                return self._reply(404, headers=tus)
            self._rewind(upload)
            return self._reply(200, headers={**tus, "Upload-Offset": str(upload.offset),
                                             "Upload-Length": str(upload.length), "Cache-Control": "no-store"})
        if self.command == "DELETE":
            with self.origin.lock:
                self.origin.uploads.pop(name, None)
            return self._reply(204, headers=tus)
        if self.command != "PATCH":
            return self._reply(405, headers={**tus, "Allow": "HEAD, PATCH, DELETE"})
        if self.headers.get("Content-Type") != "application/offset+octet-stream":
            return self._reply(415, headers=tus)
        offset = _int(self.headers.get("Upload-Offset"))
        if offset != upload.offset or self.origin.take_fault("conflict"):
            return self._reply(409, headers=tus, close=True)
        checksum = self._tus_checksum()
        if checksum is False:
            return self._reply(400, b"unsupported checksum algorithm\n", tus, close=True)
        start = upload.offset
        self._receive(upload, checksum[1] if checksum else None)
        if checksum and checksum[1].digest() != checksum[0]:
            # tus checksum extension: the bytes of a PATCH whose checksum does not match are dropped.
            _truncate(upload, start)
            return self._reply(460, headers=tus)
        if upload.offset == upload.length:
            self.origin.finish(upload)
        self._reply(204, headers={**tus, "Upload-Offset": str(upload.offset)})

    def _tus_checksum(self):
        """(expected digest, hasher) for an `Upload-Checksum`, None without one, False if unknown."""
        value = self.headers.get("Upload-Checksum")
        if value is None:
            return None
        algorithm, _, encoded = value.partition(" ")
        if algorithm not in TUS_CHECKSUMS:
            return False
        return base64.b64decode(encoded), TUS_CHECKSUMS[algorithm]()

    # --- bodies, faults and replies --------------------------------------------------------------

    def _receive(self, upload: Upload, hasher=None) -> None:
        """Appends the request body to the upload, counting each byte read, acting on `cut_at` and
        `fail_at` as the upload passes them."""
        remaining = _int(self.headers.get("Content-Length")) or 0
        with self.origin.lock:
            generation = upload.generation
        with open(upload.path, "r+b") as f:
            f.seek(upload.offset)
            while remaining > 0:
                piece = self.rfile.read1(min(PIECE, remaining))
                if not piece:
                    raise CutConnection()
                remaining -= len(piece)
                if hasher:
                    hasher.update(piece)
                with self.origin.lock:
                    if upload.generation != generation:
                        raise CutConnection()
                    f.write(piece)
                    f.flush()
                    upload.offset += len(piece)
                    self.origin.stats.bytes_received += len(piece)
                    cut = self.origin.faults.cut_at
                    fail = self.origin.faults.fail_at
                    rate = self.origin.read_rate
                if rate:
                    time.sleep(len(piece) / rate)
                if cut is not None and upload.offset >= cut:
                    self.origin.take_fault("cut_at")
                    raise CutConnection()
                if fail is not None and upload.offset >= fail:
                    self.origin.take_fault("fail_at")
                    self._reply(503, b"try again\n", {"Retry-After": "0"}, close=True)
                    raise _Answered()

    def _rewind(self, upload: Upload) -> None:
        rewind = self.origin.take_fault("rewind_to")
        if rewind is not None and rewind < upload.offset:
            _truncate(upload, rewind)

    def _problem(self, status: int, title: str, kind: str | None = None, headers=None, close=False) -> None:
        document = {"title": title, "status": status}
        if kind:
            document["type"] = f"https://iana.org/assignments/http-problem-types#{kind}"
        self._reply(status, json.dumps(document).encode(), {"Content-Type": "application/problem+json", **(headers or {})},
                    close=close)

    def _reply(self, status: int, body: bytes = b"", headers=None, close: bool = False) -> None:
        self.send_response(status)
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        if status not in (204, 304) and not (100 <= status < 200):
            self.send_header("Content-Length", str(len(body)))
        if close:
            self.send_header("Connection", "close")
            self.close_connection = True
        self.end_headers()
        if self.command != "HEAD" and body:
            self.wfile.write(body)

    def _reset(self) -> None:
        """Ends the connection with a reset, as a cut link or a crashed origin would."""
        self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        self.close_connection = True

    def _control(self, path: str) -> None:
        if path == "/_control" and self.command == "POST":
            values = json.loads(self.rfile.read(_int(self.headers.get("Content-Length")) or 0) or b"{}")
            try:
                self.origin.set_faults(**values)
            except ValueError as error:
                return self._reply(400, str(error).encode())
            return self._reply(204)
        body = json.dumps(self.origin.snapshot()).encode()
        self._reply(200, body, {"Content-Type": "application/json"})

    def handle_one_request(self) -> None:
        try:
            super().handle_one_request()
        except _Answered:
            self.close_connection = True


class _Answered(Exception):
    """A fault answered the request already."""


def _int(value: str | None) -> int | None:
    try:
        return int(value) if value is not None and value.isdigit() else None
    except ValueError:
        return None


def _truncate(upload: Upload, offset: int) -> None:
    with open(upload.path, "r+b") as f:
        f.truncate(offset)
    upload.offset = offset


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--protocol", choices=("ietf", "tus", "plain"), default="ietf")
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--dir", default=None, help="where upload bytes are kept (a temporary directory if not given)")
    parser.add_argument("--host", default="127.0.0.1")
    args = parser.parse_args()
    origin = ResumableOrigin(args.protocol, args.port, args.dir, args.host)
    print(f"listening {args.host}:{origin.port} protocol {args.protocol}", flush=True)
    try:
        origin.httpd.serve_forever()
    except KeyboardInterrupt:
        pass


if __name__ == "__main__":
    sys.exit(main())

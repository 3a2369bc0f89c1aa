"""A small HTTP proxy on 127.0.0.1 for the integration tests: forward proxying of absolute-form
requests (`GET http://127.0.0.1:8000/x HTTP/1.1`) and `CONNECT` tunnels, to 127.0.0.1 only.

    with TestProxy() as proxy:
        ...  # a session with {"proxy": {"url": proxy.url}}
        assert proxy.requests[0].method == "GET"

`TestProxy(hosts={"www.example.co.uk"})` also forwards requests for those names to 127.0.0.1 (the
port kept): a test reaches the origin under any host name, without DNS, as through a real proxy.

Each client connection carries one request (the forwarded request says `Connection: close`, so
the origin closes after its response and the proxy then closes the client side). A target other
than 127.0.0.1 is answered `403` without connecting anywhere. `requests` records every request
head the proxy received (method, target, headers), thread-safely.
"""

from __future__ import annotations

import select
import socket
import socketserver
import threading
from dataclasses import dataclass, field
from urllib.parse import urlsplit

HEAD_LIMIT = 64 << 10


@dataclass
class ProxyRecord:
    method: str
    target: str
    headers: dict[str, str] = field(default_factory=dict)  # lower-case names


class _Handler(socketserver.BaseRequestHandler):
    server: "_Server"

    def handle(self) -> None:
        client: socket.socket = self.request
        client.settimeout(30)
        head = b""
        while b"\r\n\r\n" not in head:
            chunk = client.recv(4096)
            if not chunk or len(head) > HEAD_LIMIT:
                return
            head += chunk
        head, _, rest = head.partition(b"\r\n\r\n")
        lines = head.decode("latin-1").split("\r\n")
        method, target, version = lines[0].split(" ", 2)
        headers = {}
        for line in lines[1:]:
            name, _, value = line.partition(":")
            headers[name.strip().lower()] = value.strip()
        self.server.proxy._record(ProxyRecord(method, target, headers))
        if method == "CONNECT":
            host, _, port = target.rpartition(":")
            upstream = self._connect(client, host, int(port))
            if upstream:
                client.sendall(b"HTTP/1.1 200 Connection established\r\n\r\n")
                self._relay(client, upstream, rest)
            return
        url = urlsplit(target)
        upstream = self._connect(client, url.hostname or "", url.port or 80)
        if not upstream:
            return
        path = (url.path or "/") + (f"?{url.query}" if url.query else "")
        kept = [line for line in lines[1:] if not line.lower().startswith(("proxy-", "connection:", "keep-alive:"))]
        forwarded = "\r\n".join([f"{method} {path} {version}", *kept, "Connection: close", "", ""]).encode("latin-1")
        self._relay(client, upstream, forwarded + rest)

    def _connect(self, client: socket.socket, host: str, port: int) -> socket.socket | None:
        if host in self.server.proxy.hosts:
            host = "127.0.0.1"
        if host != "127.0.0.1":
            client.sendall(b"HTTP/1.1 403 Forbidden\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
            return None
        try:
            return socket.create_connection((host, port), timeout=10)
        except OSError:
            client.sendall(b"HTTP/1.1 502 Bad Gateway\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
            return None

    @staticmethod
    def _relay(client: socket.socket, upstream: socket.socket, first: bytes) -> None:
        """Copies bytes both ways until one side closes (or nothing moves for 30 s)."""
        with upstream:
            if first:
                upstream.sendall(first)
            sockets = [client, upstream]
            while True:
                ready, _, _ = select.select(sockets, [], [], 30)
                if not ready:
                    return
                for source in ready:
                    data = source.recv(65536)
                    if not data:
                        return
                    (upstream if source is client else client).sendall(data)


class _Server(socketserver.ThreadingTCPServer):
    daemon_threads = True
    allow_reuse_address = True

    def __init__(self, proxy: "TestProxy") -> None:
        self.proxy = proxy
        super().__init__(("127.0.0.1", 0), _Handler)


class TestProxy:
    __test__ = False  # not a pytest test class

    def __init__(self, hosts: set[str] | frozenset[str] = frozenset()) -> None:
        self.hosts = frozenset(hosts)
        self._server = _Server(self)
        self._thread = threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
        self._lock = threading.Lock()
        self._requests: list[ProxyRecord] = []

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    @property
    def requests(self) -> list[ProxyRecord]:
        with self._lock:
            return list(self._requests)

    def _record(self, record: ProxyRecord) -> None:
        with self._lock:
            self._requests.append(record)

    def __enter__(self) -> "TestProxy":
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join()

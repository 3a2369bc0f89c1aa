"""A session behind a proxy (the session configuration's `proxy`, openapi.yaml): requests go through it (forward for
http, CONNECT for https), `no_proxy` hosts are reached directly, and the network policy applies to
the address actually connected to — the proxy's."""

from __future__ import annotations

from support.api import (assert_success, assert_task_error, create_session, data, download, get_session, run_task,
                         session_path)
from support.certs import TestPKI
from support.origin import Origin
from support.proxy import TestProxy


def test_http_requests_go_through_the_proxy(transferd, origin):
    with TestProxy() as proxy:
        sid = create_session(transferd, configuration={"proxy": {"url": proxy.url}})
        task = assert_success(run_task(transferd, sid, download(origin.url("/bytes/4096"))))
        assert task["result"]["sha256"] == Origin.expected_sha256(4096)
        assert [(r.method, r.target) for r in proxy.requests] == [("GET", origin.url("/bytes/4096"))]
        assert len(origin.requests) == 1
        # The metrics name the address connected to: the proxy.
        assert task["metrics"]["remote_address"] == proxy.url.removeprefix("http://")


def test_https_requests_tunnel_through_the_proxy(start_transferd, api_token, tmp_path):
    pki = TestPKI(tmp_path)
    ca = pki.authority("Proxy Test CA")
    server = pki.issue(ca, "127.0.0.1", server=True)
    td = start_transferd("--allow-path", str(tmp_path), api_token=api_token)
    with TestProxy() as proxy, Origin(tls=(server.cert, server.key, None)) as origin:
        sid = create_session(td, configuration={"proxy": {"url": proxy.url}, "tls": {"ca_file": ca.cert}})
        task = assert_success(run_task(td, sid, data(origin.url("/echo"))))
        assert [(r.method, r.target) for r in proxy.requests] == [("CONNECT", f"127.0.0.1:{origin.port}")]
        # The proxy's "200 Connection established" is not taken for the origin's response.
        assert task["response"]["status"] == 200
        assert td.get(session_path(sid) + f"/tasks/{task['id']}/body").json()["tls"] is not None


def test_no_proxy_hosts_are_reached_directly(transferd, origin):
    with TestProxy() as proxy:
        sid = create_session(transferd, configuration={"proxy": {"url": proxy.url, "no_proxy": "localhost, 127.0.0.1"}})
        assert_success(run_task(transferd, sid, download(origin.url("/bytes/100"))))
        assert proxy.requests == []
        assert len(origin.requests) == 1


def test_the_network_policy_applies_to_the_proxy_address(start_transferd, api_token):
    """public-only refuses loopback: a loopback proxy is refused before any byte goes to it, even
    for a URL whose host transferd never resolves (the proxy would)."""
    td = start_transferd("--network-policy", "public-only", api_token=api_token)
    with TestProxy() as proxy:
        sid = create_session(td, configuration={"proxy": {"url": proxy.url}})
        task = run_task(td, sid, data("http://origin.example/"), timeout=15)
        assert_task_error(task, "blocked_by_policy")
        assert "127.0.0.1" in task["error"]["message"]
        assert proxy.requests == []


def test_proxy_credentials_are_redacted(transferd):
    sid = create_session(transferd, configuration={"proxy": {"url": "http://user:pr0xy-pass@127.0.0.1:3128",
                                                             "no_proxy": "internal.example"}})
    proxy = get_session(transferd, sid)["configuration"]["proxy"]
    assert proxy == {"url": "http://user:<redacted>@127.0.0.1:3128", "no_proxy": "internal.example"}
    assert "pr0xy-pass" not in transferd.output()

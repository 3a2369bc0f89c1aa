"""Security of transfers (README "Security"): the network policy, checked on the address
actually connected to (direct and through a redirect), and environment proxies that must not
reroute traffic."""

from __future__ import annotations

import socket

import pytest

from support.api import (assert_success, assert_task_error, create_session, data, download, run_task)
from support.origin import Origin


def test_public_only_blocks_loopback_without_connecting(start_transferd, origin, api_token):
    td = start_transferd("--network-policy", "public-only", api_token=api_token)
    sid = create_session(td)
    for body in (download(origin.url("/bytes/100")), data(origin.url("/echo")),
                 download(f"http://localhost:{origin.port}/bytes/100"),
                 download(f"http://[::ffff:127.0.0.1]:{origin.port}/bytes/100")):
        task = run_task(td, sid, body, timeout=15)
        assert_task_error(task, "blocked_by_policy")
        assert task["result"] is None and task["response"] is None
    assert origin.connections_opened == 0
    assert origin.requests == []


def test_public_only_from_the_environment(start_transferd, origin, api_token):
    td = start_transferd(api_token=api_token, env={"TRANSFERD_NETWORK_POLICY": "public-only"})
    sid = create_session(td)
    assert_task_error(run_task(td, sid, download(origin.url("/bytes/100"))), "blocked_by_policy")
    assert origin.connections_opened == 0


def test_default_policy_allows_loopback(transferd, origin):
    sid = create_session(transferd)
    assert_success(run_task(transferd, sid, download(origin.url("/bytes/100"))))
    assert origin.connections_opened == 1


@pytest.mark.parametrize("host", ["169.254.169.254", "0.0.0.0", "[::ffff:169.254.169.254]", "[fe80::1]"])
def test_default_policy_blocks_link_local_and_unspecified(transferd, host):
    sid = create_session(transferd)
    task = run_task(transferd, sid, download(f"http://{host}:80/latest/meta-data/"), timeout=15)
    assert_task_error(task, "blocked_by_policy")


def test_custom_deny_list(start_transferd, origin, api_token):
    td = start_transferd("--network-policy", "deny=127.0.0.1/32", api_token=api_token)
    sid = create_session(td)
    assert_task_error(run_task(td, sid, download(origin.url("/bytes/100"))), "blocked_by_policy")
    assert origin.connections_opened == 0


def test_custom_allow_opens_an_address_a_deny_closes(start_transferd, origin, api_token):
    td = start_transferd("--network-policy", "allow=127.0.0.1/32;deny=127.0.0.0/8", api_token=api_token)
    sid = create_session(td)
    assert_success(run_task(td, sid, download(origin.url("/bytes/100"))))
    assert origin.connections_opened == 1


def test_policy_applies_to_redirect_targets(start_transferd, origin, api_token):
    """The first hop (127.0.0.1) is allowed; the redirect goes to 127.0.0.2, which is denied: the
    task fails `blocked_by_policy` without connecting there (were it only unreachable, it would be
    `cannot_connect_to_host`)."""
    td = start_transferd("--network-policy", "deny=127.0.0.2/32", api_token=api_token)
    sid = create_session(td)
    with socket.socket() as listener:  # something listening on 127.0.0.2, that must never be reached
        listener.bind(("127.0.0.2", 0))
        listener.listen(8)
        listener.settimeout(0.1)
        target = f"http://127.0.0.2:{listener.getsockname()[1]}/bytes/10"
        task = run_task(td, sid, download(origin.url(f"/redirect-to?url={target}")))
        assert_task_error(task, "blocked_by_policy")
        with pytest.raises(socket.timeout):
            listener.accept()
    assert len(origin.requests) == 1


@pytest.mark.parametrize("names", [
    ("http_proxy", "https_proxy", "all_proxy"),
    ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY"),
])
def test_environment_proxies_do_not_reroute(start_transferd, origin, api_token, names):
    # A port that refuses connections: were the proxy used, every task would fail to connect.
    with Origin() as gone:
        dead = gone.port
    env = {name: f"http://127.0.0.1:{dead}" for name in names}
    env["no_proxy"] = ""
    env["NO_PROXY"] = ""
    td = start_transferd(api_token=api_token, env=env)
    assert td.process is not None
    with open(f"/proc/{td.pid}/environ", "rb") as f:  # the harness really passed them on
        environment = f.read().split(b"\0")
    assert f"{names[0]}=http://127.0.0.1:{dead}".encode() in environment
    sid = create_session(td)
    task = assert_success(run_task(td, sid, download(origin.url("/bytes/1000?seed=direct"))))
    assert task["result"]["sha256"] == Origin.expected_sha256(1000, "direct")
    echo = run_task(td, sid, data(origin.url("/echo")))
    assert_success(echo)
    assert len(origin.requests) == 2
    assert origin.requests[0].target == "/bytes/1000?seed=direct"  # origin-form: not sent via a proxy

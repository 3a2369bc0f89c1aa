"""Cookies per session (the session configuration's `cookies`, `POST …/reset|flush`,
`GET …/cookies`): kept per session and never shared, durable for default and background sessions,
memory only for ephemeral ones, by the session's accept and send policy; a Domain that is a public
suffix (by the Public Suffix List, libpsl) is refused."""

from __future__ import annotations

import sqlite3
import time

import pytest

from support.api import (assert_problem, assert_success, create_session, data, get_session, run_task, session_path,
                         wait_for)
from support.origin import Origin
from support.proxy import TestProxy


def echo(td, sid, url) -> dict:
    """The cookies a request of the session carried to `url` (an /cookies/echo URL)."""
    task = assert_success(run_task(td, sid, data(url)))
    response = td.get(session_path(sid) + f"/tasks/{task['id']}/body")
    assert response.status_code == 200, response.text
    return response.json()["cookies"]


def set_cookies(td, sid, url) -> dict:
    return assert_success(run_task(td, sid, data(url)))


def listing(td, sid, query: str = "") -> list[dict]:
    response = td.get(session_path(sid) + "/cookies" + query)
    assert response.status_code == 200, response.text
    return response.json()["cookies"]


def stored_cookie_rows(td, sid) -> int:
    with sqlite3.connect(td.data_dir / "transferd.sqlite") as db:
        return db.execute("SELECT count(*) FROM session_cookies WHERE session = ?", (sid,)).fetchone()[0]


def test_a_sessions_cookies_never_reach_another_session(transferd, origin):
    a = create_session(transferd)
    b = create_session(transferd)
    set_cookies(transferd, a, origin.url("/cookies/set?sid=alpha"))
    assert echo(transferd, a, origin.url("/cookies/echo")) == {"sid": "alpha"}
    assert echo(transferd, b, origin.url("/cookies/echo")) == {}
    set_cookies(transferd, b, origin.url("/cookies/set?sid=beta"))
    assert echo(transferd, a, origin.url("/cookies/echo")) == {"sid": "alpha"}
    assert echo(transferd, b, origin.url("/cookies/echo")) == {"sid": "beta"}


def test_a_cookie_set_on_a_redirect_is_sent_on_the_next_hop(transferd, origin):
    sid = create_session(transferd)
    task = set_cookies(transferd, sid, origin.url("/cookies/set?hop=1&redirect=/cookies/echo"))
    body = transferd.get(session_path(sid) + f"/tasks/{task['id']}/body").json()
    assert body["cookies"] == {"hop": "1"}
    assert [c["name"] for c in listing(transferd, sid)] == ["hop"]


@pytest.mark.parametrize("mode", ["default", "background"])
def test_cookies_of_a_durable_session_survive_a_kill(start_transferd, origin, api_token, mode):
    td = start_transferd(api_token=api_token)
    sid = create_session(td, mode=mode)
    set_cookies(td, sid, origin.url("/cookies/set?keep=1&long=2&max_age=3600"))
    # The jar is committed no later than the task's completion: a kill -9 right after loses nothing.
    td.kill9()
    td.start()
    assert echo(td, sid, origin.url("/cookies/echo")) == {"keep": "1", "long": "2"}


def test_cookies_of_an_ephemeral_session_are_never_written(start_transferd, origin, api_token):
    td = start_transferd(api_token=api_token)
    sid = create_session(td, mode="ephemeral")
    set_cookies(td, sid, origin.url("/cookies/set?eph=1&max_age=3600"))
    assert echo(td, sid, origin.url("/cookies/echo")) == {"eph": "1"}
    assert td.post(session_path(sid) + "/flush").status_code == 200
    assert stored_cookie_rows(td, sid) == 0
    assert td.stop() == 0
    td.start()
    assert td.get(session_path(sid)).status_code == 404
    create_session(td, sid, mode="ephemeral")
    assert echo(td, sid, origin.url("/cookies/echo")) == {}


def test_accept_never_keeps_nothing(transferd, origin):
    sid = create_session(transferd, configuration={"cookies": {"accept": "never"}})
    set_cookies(transferd, sid, origin.url("/cookies/set?a=1"))
    assert listing(transferd, sid) == []
    # Not even along the redirects of one task.
    task = set_cookies(transferd, sid, origin.url("/cookies/set?b=2&redirect=/cookies/echo"))
    assert transferd.get(session_path(sid) + f"/tasks/{task['id']}/body").json()["header"] is None
    assert echo(transferd, sid, origin.url("/cookies/echo")) == {}


def test_send_false_keeps_cookies_but_sends_none(transferd, origin):
    sid = create_session(transferd, configuration={"cookies": {"send": False}})
    # Along a redirect too: the Set-Cookie of the first hop is not sent on the second.
    task = set_cookies(transferd, sid, origin.url("/cookies/set?a=1&redirect=/cookies/echo"))
    assert transferd.get(session_path(sid) + f"/tasks/{task['id']}/body").json()["header"] is None
    assert [c["name"] for c in listing(transferd, sid)] == ["a"]
    assert echo(transferd, sid, origin.url("/cookies/echo")) == {}


@pytest.mark.parametrize("accept,kept", [("always", ["first", "second"]), ("same_domain", ["first"])])
def test_same_domain_keeps_only_the_tasks_own_hosts_cookies(transferd, origin, accept, kept):
    """A task to 127.0.0.1 redirected to localhost: with same_domain, what localhost sets is dropped."""
    sid = create_session(transferd, configuration={"cookies": {"accept": accept}})
    second = f"http://localhost:{origin.port}/cookies/set?second=2"
    set_cookies(transferd, sid, origin.url(f"/cookies/set?first=1&redirect={second.replace('&', '%26')}"))
    assert sorted(c["name"] for c in listing(transferd, sid)) == kept
    hosts = {c["name"]: c["domain"] for c in listing(transferd, sid)}
    assert hosts["first"] == "127.0.0.1"


def test_listing_redacts_values_unless_asked(transferd, origin):
    sid = create_session(transferd)
    set_cookies(transferd, sid, origin.url("/cookies/set?token=s3cr3t&max_age=600"))
    (cookie,) = listing(transferd, sid)
    assert cookie["value"] == "<redacted>"
    assert cookie["name"] == "token" and cookie["domain"] == "127.0.0.1" and cookie["host_only"] is True
    assert cookie["path"] == "/" and cookie["secure"] is False and cookie["expires_at"].endswith("Z")
    assert "s3cr3t" not in transferd.get(session_path(sid) + "/cookies").text
    (revealed,) = listing(transferd, sid, "?values=true")
    assert revealed["value"] == "s3cr3t"
    assert_problem(transferd.get(session_path(sid) + "/cookies?values=yes"), 422, field="values")
    assert_problem(transferd.get(session_path(sid) + "/cookies?color=red"), 422, "unknown_parameter")
    assert_problem(transferd.get(session_path("no-such-session") + "/cookies"), 404)


def test_listing_pages(transferd, origin):
    sid = create_session(transferd)
    names = [f"c{i:02d}" for i in range(7)]
    set_cookies(transferd, sid, origin.url("/cookies/set?" + "&".join(f"{n}=v" for n in names)))
    seen, after = [], None
    for _ in range(10):
        params = {"limit": 3, **({"after": after} if after else {})}
        page = transferd.get(session_path(sid) + "/cookies", params=params).json()
        seen += [c["name"] for c in page["cookies"]]
        after = page["next"]
        if after is None:
            break
    assert seen == names


def test_expired_cookies_are_dropped(transferd, origin):
    sid = create_session(transferd)
    set_cookies(transferd, sid, origin.url("/cookies/set?short=1&max_age=1"))
    set_cookies(transferd, sid, origin.url("/cookies/set?stay=1"))
    wait_for(lambda: [c["name"] for c in listing(transferd, sid)] == ["stay"], timeout=10,
             message="the cookie with Max-Age=1 to expire")
    assert echo(transferd, sid, origin.url("/cookies/echo")) == {"stay": "1"}
    # An expired Set-Cookie deletes the cookie it names.
    set_cookies(transferd, sid, origin.url("/cookies/set?stay=x&expired=1"))
    assert listing(transferd, sid) == []


def test_reset_forgets_cookies_in_memory_and_on_disk(start_transferd, origin, api_token):
    td = start_transferd(api_token=api_token)
    sid = create_session(td)
    set_cookies(td, sid, origin.url("/cookies/set?gone=1&max_age=3600"))
    assert stored_cookie_rows(td, sid) == 1
    response = td.post(session_path(sid) + "/reset")
    assert response.status_code == 200 and response.json()["identifier"] == sid
    assert stored_cookie_rows(td, sid) == 0
    assert echo(td, sid, origin.url("/cookies/echo")) == {}
    td.kill9()
    td.start()
    assert listing(td, sid) == []


def test_flush_writes_cookies_and_uses_new_connections(transferd, origin):
    sid = create_session(transferd)
    set_cookies(transferd, sid, origin.url("/cookies/set?f=1"))
    before = origin.connections_opened
    assert_success(run_task(transferd, sid, data(origin.url("/cookies/echo"))))
    assert origin.connections_opened == before  # kept alive
    response = transferd.post(session_path(sid) + "/flush")
    assert response.status_code == 200 and response.json()["identifier"] == sid
    assert stored_cookie_rows(transferd, sid) == 1
    assert echo(transferd, sid, origin.url("/cookies/echo")) == {"f": "1"}
    assert origin.connections_opened == before + 1


def test_deleting_a_session_deletes_its_stored_cookies(transferd, origin):
    sid = create_session(transferd)
    set_cookies(transferd, sid, origin.url("/cookies/set?d=1"))
    assert stored_cookie_rows(transferd, sid) == 1
    assert transferd.delete(session_path(sid)).status_code == 202
    wait_for(lambda: transferd.get(session_path(sid)).status_code == 404 or
             get_session(transferd, sid)["state"] == "invalidated", timeout=10, message="the session to be invalidated")
    # Re-creating the identifier removes the old session for good and starts an empty jar.
    create_session(transferd, sid)
    assert stored_cookie_rows(transferd, sid) == 0
    assert echo(transferd, sid, origin.url("/cookies/echo")) == {}


# Host names under public suffixes, reached through a proxy that forwards them to the origin.
SUFFIX_HOSTS = {"www.example.co.uk", "www.elsewhere.co.uk", "user.github.io", "other.github.io"}


@pytest.mark.parametrize("host,suffix,elsewhere", [("www.example.co.uk", "co.uk", "www.elsewhere.co.uk"),
                                                   ("user.github.io", "github.io", "other.github.io")])
def test_a_cookie_for_a_public_suffix_is_refused(transferd, origin, host, suffix, elsewhere):
    """RFC 6265 §5.3 step 5: `Domain=co.uk` would reach every site under co.uk; the session's jar
    refuses it (and keeps a cookie for the registrable domain under it)."""
    with TestProxy(hosts=SUFFIX_HOSTS) as proxy:
        sid = create_session(transferd, configuration={"proxy": {"url": proxy.url}})
        base = f"http://{host}:{origin.port}"
        set_cookies(transferd, sid, f"{base}/cookies/set?wide=1&domain={suffix}")
        set_cookies(transferd, sid, f"{base}/cookies/set?site=1&domain={host}")
        assert {(c["name"], c["domain"], c["host_only"]) for c in listing(transferd, sid)} == {("site", host, False)}
        assert echo(transferd, sid, f"http://{elsewhere}:{origin.port}/cookies/echo") == {}
        assert echo(transferd, sid, f"{base}/cookies/echo") == {"site": "1"}


def test_a_public_suffix_cookie_set_on_a_redirect_is_not_sent_on_the_next_hop(transferd, origin):
    """Within one transfer curl's cookie engine carries cookies along redirects; Debian's libcurl
    links libpsl and refuses a public-suffix Domain there too."""
    with TestProxy(hosts=SUFFIX_HOSTS) as proxy:
        sid = create_session(transferd, configuration={"proxy": {"url": proxy.url}})
        target = f"http://www.elsewhere.co.uk:{origin.port}/cookies/echo"
        task = set_cookies(transferd, sid, f"http://www.example.co.uk:{origin.port}/cookies/set?wide=1&domain=co.uk&redirect={target}")
        assert transferd.get(session_path(sid) + f"/tasks/{task['id']}/body").json()["cookies"] == {}
        assert listing(transferd, sid) == []

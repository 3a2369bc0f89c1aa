"""The web console (`GET /ui/`) in a real headless Chromium: how its files are served (no token,
CSP, entity tags, nothing outside its own files), then the page as an operator uses it: token
entry, sessions, a download's progress moving, suspend/resume/cancel, deliveries and Redeliver, a
read-only principal, the back button, 10,000 tasks, API errors shown; and no console errors."""

from __future__ import annotations

from pathlib import Path

import pytest
import requests
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import Select

from support.api import create_batch, create_session, create_task, data, download, get_task, unique, wait_for, wait_task
from support.browser import Browser
from support.events import create_delegated_session
from support.receiver import WebhookReceiver
from support.tenants import Principal, write_auth_file

CONSOLE_FILES = Path(__file__).resolve().parents[2] / "Sources" / "TransferAPI" / "Console"
SLOW = "/bytes/4000000?rate=200000"  # about 20 s: long enough to watch and to act on


@pytest.fixture(scope="module")
def chromium():
    with Browser() as b:
        yield b


@pytest.fixture
def browser(chromium):
    """The module's browser on a blank page, with what earlier tests' pages logged (the polling of
    a server that test stopped) discarded. Each test ends by checking that its page logged no error
    (`no_errors`): a script error, a CSP violation, a file that failed to load."""
    chromium.driver.get("about:blank")
    chromium.console_errors()
    return chromium


def no_errors(browser, *expected: str) -> None:
    """The page logged no error, except the failed API calls a test caused on purpose."""
    assert browser.console_errors(expected) == []


def cells(row) -> list[str]:
    return [c.text for c in row.find_elements(By.CSS_SELECTOR, "th, td")]


def progress_value(browser, task_id: str) -> float:
    bar = browser.row("task", task_id).find_element(By.TAG_NAME, "progress")
    value = bar.get_attribute("value")
    return float(value) if bar.get_dom_attribute("value") is not None else 0.0


def state_of(browser, task_id: str) -> str:
    return browser.row("task", task_id).find_element(By.CSS_SELECTOR, "td.state").text


# MARK: serving


def test_the_page_and_its_files_are_served_without_a_token_under_a_strict_policy(transferd):
    page = requests.get(transferd.url("/ui/"), timeout=10)
    assert page.status_code == 200
    assert page.headers["Content-Type"] == "text/html; charset=utf-8"
    policy = page.headers["Content-Security-Policy"]
    for directive in ("default-src 'self'", "script-src 'self'", "style-src 'self'", "connect-src 'self'",
                      "object-src 'none'", "frame-ancestors 'none'"):
        assert directive in policy
    assert "unsafe-inline" not in policy and "unsafe-eval" not in policy
    assert page.headers["X-Content-Type-Options"] == "nosniff"
    assert page.headers["Cache-Control"] == "no-cache"
    # Revalidation: the same tag answers 304 without a body.
    again = requests.get(transferd.url("/ui/"), headers={"If-None-Match": page.headers["ETag"]}, timeout=10)
    assert again.status_code == 304 and again.content == b""
    # Every file of the console's folder is served, with its type (a file left out of the table
    # in ConsoleAssets.swift fails here).
    types = {".js": "text/javascript; charset=utf-8", ".css": "text/css; charset=utf-8",
             ".svg": "image/svg+xml", ".html": "text/html; charset=utf-8"}
    for file in sorted(CONSOLE_FILES.iterdir()):
        response = requests.get(transferd.url(f"/ui/{file.name}"), timeout=10)
        assert response.status_code == 200, file.name
        assert response.content == file.read_bytes(), file.name
        assert response.headers["Content-Type"] == types[file.suffix], file.name
        assert response.headers["Content-Security-Policy"] == policy
    head = requests.head(transferd.url("/ui/main.js"), timeout=10)
    assert head.status_code == 200 and head.content == b""
    # /ui has no slash for relative module URLs to resolve against: it sends the browser to /ui/.
    bare = requests.get(transferd.url("/ui"), allow_redirects=False, timeout=10)
    assert bare.status_code == 308 and bare.headers["Location"] == "/ui/"


@pytest.mark.parametrize("path", ["/ui/nothing.js", "/ui/..%2F..%2Fetc%2Fpasswd", "/ui/%2e%2e", "/ui/../v1",
                                  "/ui/Console%2Fmain.js", "/ui/js/main.js", "/ui/.%2Fmain.js", "/ui/main.js%00"])
def test_nothing_but_the_console_files_is_reachable(transferd, path):
    # Sent as written: requests would normalise the dots away.
    session = requests.Session()
    prepared = requests.Request("GET", transferd.url("/ui/")).prepare()
    prepared.url = transferd.url(path)
    response = session.send(prepared, timeout=10)
    assert response.status_code in (400, 404), (path, response.status_code)
    assert "root:" not in response.text and "import" not in response.text


# MARK: the page


def test_token_entry_sessions_and_sign_out(browser, transferd):
    sid = create_session(transferd, unique("com.example.console"))
    create_task(transferd, sid, {**data("http://127.0.0.1:9/nothing"), "start": False})
    browser.open(transferd)
    field = browser.wait_for(lambda d: d.find_element(By.ID, "token"))
    # The field is labelled "Token" (what a person, and a screen reader, calls it).
    assert browser.driver.find_element(By.CSS_SELECTOR, "label[for=token]").text == "Token"
    field.send_keys("not-the-token")
    browser.button("Sign in").click()
    error = browser.wait_for(lambda d: d.find_element(By.ID, "token-error").text)
    assert "Unauthorized" in error and "bearer token" in error
    browser.sign_in(transferd.token)
    row = browser.wait_for(lambda d: d.find_element(By.XPATH, f"//table//a[text()='{sid}']/ancestor::tr"))
    headers = [th.text for th in browser.driver.find_elements(By.CSS_SELECTOR, "thead th")]
    counts = dict(zip(headers, cells(row)))
    assert counts["Suspended"] == "1" and counts["Total"] == "1" and counts["Mode"] == "default"
    assert browser.driver.execute_script("return sessionStorage.getItem('transferd.token')") == transferd.token
    # A reload keeps the token (same tab), so the sessions come back without asking again.
    browser.driver.refresh()
    browser.wait_for(lambda d: d.find_elements(By.XPATH, f"//table//a[text()='{sid}']"))
    browser.button("Sign out").click()
    browser.wait_for(lambda d: d.find_element(By.ID, "token"))
    assert browser.driver.execute_script("return sessionStorage.getItem('transferd.token')") is None
    no_errors(browser, "/v1/whoami - Failed to load resource")



def test_a_live_download_shows_its_progress_moving(browser, transferd, origin):
    sid = create_session(transferd, unique("com.example.live"))
    task = create_task(transferd, sid, download(origin.url(SLOW)))
    browser.open(transferd, transferd.token, f"#/sessions/{sid}")
    browser.wait_for(lambda d: progress_value(browser, task["id"]) > 0, message="no progress shown")
    first = progress_value(browser, task["id"])
    # The bar moves while the page stays as it is: the event stream feeds it.
    browser.wait_for(lambda d: progress_value(browser, task["id"]) > first, message="the progress did not move")
    row = browser.row("task", task["id"])
    assert row.find_element(By.CSS_SELECTOR, "td.rate").text.endswith("/s")
    assert row.find_element(By.TAG_NAME, "progress").accessible_name == f"Progress of {task['id']}"
    assert "connected" in browser.driver.find_element(By.CLASS_NAME, "connection").text
    no_errors(browser)



def test_suspend_resume_and_cancel_from_the_page(browser, transferd, origin):
    sid = create_session(transferd, unique("com.example.actions"))
    task = create_task(transferd, sid, download(origin.url(SLOW)))
    tid = task["id"]
    browser.open(transferd, transferd.token, f"#/sessions/{sid}")
    browser.wait_for(lambda d: state_of(browser, tid) == "running")
    browser.click_in_row("task", tid, "Suspend")
    browser.wait_for(lambda d: state_of(browser, tid) == "suspended")
    assert get_task(transferd, sid, tid)["state"] == "suspended"
    assert "suspended" in browser.driver.find_element(By.ID, "status").text
    browser.click_in_row("task", tid, "Resume")
    browser.wait_for(lambda d: state_of(browser, tid) == "running")
    assert get_task(transferd, sid, tid)["state"] == "running"
    browser.click_in_row("task", tid, "Cancel")
    browser.wait_for(lambda d: state_of(browser, tid) == "completed")
    assert wait_task(transferd, sid, tid)["error"]["code"] == "cancelled"
    assert "cancelled" in browser.row("task", tid).text
    # A completed task offers no action.
    assert browser.row("task", tid).find_elements(By.TAG_NAME, "button") == []
    no_errors(browser)



def test_deliveries_and_redeliver(browser, transferd, origin):
    with WebhookReceiver() as receiver:
        receiver.respond_with(500, times=1)
        sid = create_delegated_session(transferd, receiver, sid=unique("com.example.hooks"), events=["task.completed"])
        task = wait_task(transferd, sid, create_task(transferd, sid, data(origin.url("/bytes/10")))["id"])
        receiver.wait_for(lambda ds: ds and ds[0].status == 500)
        browser.open(transferd, transferd.token, f"#/sessions/{sid}/deliveries")
        failed = browser.wait_for(lambda d: [r for r in d.find_elements(By.CSS_SELECTOR, "tr[data-event]")
                                             if cells(r)[2] == "1" and cells(r)[4] == "500"])[0]
        event = failed.get_attribute("data-event")
        browser.button("Redeliver", within=failed).click()
        # The manual attempt is attempt 0 in the list.
        browser.wait_for(lambda d: [r for r in d.find_elements(By.CSS_SELECTOR, f'tr[data-event="{event}"]')
                                    if cells(r)[2] == "0" and cells(r)[4] == "200"], message="no redelivery shown")
        assert "queued for redelivery" in browser.driver.find_element(By.ID, "status").text
        assert receiver.wait_for(lambda ds: [d for d in ds if d.status == 200 and d.webhook_id == event])
        assert task["state"] == "completed"
    no_errors(browser)



def test_a_read_only_principal_sees_its_sessions_and_no_action(browser, start_transferd, origin, tmp_path):
    ops = Principal("ops", "admin")
    dashboard = Principal("dashboard", "read", namespaces=["com.example."])
    td = start_transferd("--auth-file", str(write_auth_file(tmp_path / "auth.json", [ops, dashboard])))
    admin = td.as_caller(ops.token)
    mine = create_session(admin, "com.example.watched")
    theirs = create_session(admin, "org.other.hidden")
    with WebhookReceiver() as receiver:
        hooked = create_delegated_session(admin, receiver, sid="com.example.hooked", events=["task.completed"])
        wait_task(admin, hooked, create_task(admin, hooked, data(origin.url("/bytes/10")))["id"])
        receiver.wait_for(lambda ds: ds)
    task = create_task(admin, mine, download(origin.url(SLOW)))
    browser.open(td, dashboard.token)
    browser.wait_for(lambda d: d.find_elements(By.XPATH, f"//table//a[text()='{mine}']"))
    assert browser.driver.find_elements(By.XPATH, f"//a[text()='{theirs}']") == []
    assert "dashboard · read" in browser.driver.find_element(By.ID, "principal").text
    browser.driver.get(td.url("/ui/") + f"#/sessions/{mine}")
    browser.wait_for(lambda d: browser.row("task", task["id"]))
    assert "Actions" not in [th.text for th in browser.driver.find_elements(By.CSS_SELECTOR, "thead th")]
    browser.driver.get(td.url("/ui/") + f"#/sessions/{hooked}/deliveries")
    browser.wait_for(lambda d: d.find_elements(By.CSS_SELECTOR, "tr[data-event]"))
    for name in ("Suspend", "Resume", "Cancel", "Redeliver"):
        assert browser.buttons(name) == []
    # A session outside its namespaces is, to it, a session that does not exist.
    browser.driver.get(td.url("/ui/") + f"#/sessions/{theirs}")
    assert "Not Found" in browser.wait_for(lambda d: browser.problem())
    no_errors(browser, "org.other.hidden")



def test_the_fragment_holds_the_view_and_back_returns(browser, transferd):
    sid = create_session(transferd, unique("com.example.nav"))
    task = create_task(transferd, sid, {**data("http://127.0.0.1:9/x"), "start": False})
    browser.open(transferd, transferd.token)
    browser.wait_for(lambda d: d.find_element(By.XPATH, f"//table//a[text()='{sid}']")).click()
    browser.wait_for(lambda d: browser.row("task", task["id"]))
    assert browser.driver.execute_script("return location.hash") == f"#/sessions/{sid}"
    Select(browser.driver.find_element(By.ID, "state-filter")).select_by_value("running")
    browser.wait_for(lambda d: d.execute_script("return location.hash") == f"#/sessions/{sid}?state=running")
    browser.wait_for(lambda d: "No tasks here." in d.find_element(By.ID, "view").text)
    # The filter, drawn anew for the new view, keeps the keyboard focus.
    assert browser.driver.switch_to.active_element.get_attribute("id") == "state-filter"
    browser.driver.find_element(By.LINK_TEXT, "Event log").click()
    browser.wait_for(lambda d: d.find_elements(By.XPATH, "//table//th[text()='task.created']"))
    assert browser.driver.execute_script("return location.hash") == f"#/sessions/{sid}/events"
    browser.driver.back()
    browser.wait_for(lambda d: d.execute_script("return location.hash") == f"#/sessions/{sid}?state=running")
    browser.wait_for(lambda d: "No tasks here." in d.find_element(By.ID, "view").text)
    assert Select(browser.driver.find_element(By.ID, "state-filter")).first_selected_option.text == "running"
    browser.driver.back()
    browser.wait_for(lambda d: browser.row("task", task["id"]))
    browser.driver.back()
    browser.wait_for(lambda d: d.find_element(By.TAG_NAME, "h1").text == "Sessions")
    no_errors(browser)



def test_the_event_stream_reconnects_after_a_restart_without_losing_or_repeating_events(browser, transferd):
    sid = create_session(transferd, unique("com.example.restart"), mode="background")
    before = create_task(transferd, sid, {**data("http://127.0.0.1:9/a"), "start": False})
    browser.open(transferd, transferd.token, f"#/sessions/{sid}/events")
    browser.wait_for(lambda d: "connected" in d.find_element(By.CLASS_NAME, "connection").text)
    live = create_task(transferd, sid, {**data("http://127.0.0.1:9/b"), "start": False})
    browser.wait_for(lambda d: live["id"] in d.find_element(By.TAG_NAME, "tbody").text)
    transferd.restart()
    # Committed while the page waits to reconnect (a second at least): it reaches the page only
    # through the replay that Last-Event-ID asks for.
    missed = create_task(transferd, sid, {**data("http://127.0.0.1:9/c"), "start": False})
    browser.wait_for(lambda d: missed["id"] in d.find_element(By.TAG_NAME, "tbody").text, message="missed event not shown")
    browser.wait_for(lambda d: "connected" in d.find_element(By.CLASS_NAME, "connection").text)
    rows = [cells(r) for r in browser.driver.find_elements(By.CSS_SELECTOR, "tbody tr")]
    seqs = [row[0] for row in rows]
    assert len(seqs) == len(set(seqs)), f"an event shown twice: {rows}"
    assert [row[3] for row in rows if row[2] == "task.created"] == [missed["id"], live["id"], before["id"]]
    no_errors(browser, "Failed to load resource", "ERR_")


def test_ten_thousand_tasks_draw_one_page(browser, transferd):
    sid = create_session(transferd, unique("com.example.bulk"))
    create_batch(transferd, sid, [{**data(f"http://127.0.0.1:9/{i}"), "id": f"t{i:05}", "start": False}
                                  for i in range(10_000)], timeout=120)
    browser.open(transferd, transferd.token, f"#/sessions/{sid}")
    browser.wait_for(lambda d: browser.row("task", "t00000"))
    assert len(browser.driver.find_elements(By.CSS_SELECTOR, "tr[data-task]")) == 100
    assert "10000" in browser.driver.find_element(By.CLASS_NAME, "counts").text
    browser.button("Next page").click()
    browser.wait_for(lambda d: browser.row("task", "t00100"))
    assert len(browser.driver.find_elements(By.CSS_SELECTOR, "tr[data-task]")) == 100
    assert "after=" in browser.driver.execute_script("return location.hash")
    no_errors(browser)



def test_every_control_has_a_name_and_the_page_has_landmarks(browser, transferd, origin):
    sid = create_session(transferd, unique("com.example.a11y"))
    create_task(transferd, sid, download(origin.url(SLOW)))
    browser.open(transferd, transferd.token, f"#/sessions/{sid}")
    browser.wait_for(lambda d: d.find_elements(By.CSS_SELECTOR, "tr[data-task] button"))
    driver = browser.driver
    for selector in ("header", "nav", "main", "footer [role=status]"):
        assert driver.find_elements(By.CSS_SELECTOR, selector), selector
    controls = driver.find_elements(By.CSS_SELECTOR, "button, a, select, input, progress")
    unnamed = [c.get_attribute("outerHTML") for c in controls if c.is_displayed() and not c.accessible_name.strip()]
    assert unnamed == []
    # Keyboard: Tab reaches the task's Suspend button, and Enter presses it.
    suspend = browser.buttons("Suspend")[0]
    for _ in range(60):
        if driver.switch_to.active_element == suspend:
            break
        driver.switch_to.active_element.send_keys("\t")
    assert driver.switch_to.active_element == suspend
    # The keyboard's place is visible.
    outline = driver.execute_script("const s = getComputedStyle(arguments[0]); return [s.outlineStyle, s.outlineWidth]", suspend)
    assert outline == ["solid", "3px"]
    suspend.send_keys("\n")
    browser.wait_for(lambda d: "suspended" in d.find_element(By.ID, "status").text)
    no_errors(browser)



def test_an_api_error_is_shown_with_its_title_and_detail(browser, transferd):
    browser.open(transferd, transferd.token, "#/sessions/com.example.nothing-here")
    shown = browser.wait_for(lambda d: browser.problem())
    assert "Not Found" in shown and "com.example.nothing-here" in shown
    no_errors(browser, "com.example.nothing-here")

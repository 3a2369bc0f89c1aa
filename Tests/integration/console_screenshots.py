"""`make screenshots`: the web console's main views as PNGs under docs/ (console-*.png), taken by
the same headless Chromium harness as test_console.py against a real transferd with a few sessions
doing real transfers from a local origin.

    TRANSFERD_BINARY=.build/release/transferd python3 Tests/integration/console_screenshots.py docs
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

from selenium.webdriver.common.by import By

from support.api import create_batch, create_session, create_task, data, download, wait_task
from support.browser import Browser
from support.events import create_delegated_session
from support.origin import Origin
from support.receiver import WebhookReceiver
from support.tenants import new_token
from support.transferd import Transferd

MEDIA = "com.example.media.ingest"
BILLING = "com.example.billing.invoices"
REPORTS = "com.example.reports.nightly"


def populate(td: Transferd, origin: Origin, receiver: WebhookReceiver) -> None:
    """Sessions an operator might find: downloads moving at different rates, one suspended, some
    done, one retrying against an origin that is down; a delegate whose first deliveries failed."""
    create_session(td, MEDIA, mode="background")
    for name, size, rate in (("camera-0412.mov", 60_000_000, 900_000), ("camera-0413.mov", 40_000_000, 450_000),
                             ("render-final.mp4", 30_000_000, 250_000)):
        create_task(td, MEDIA, {**download(origin.url(f"/bytes/{size}?rate={rate}&seed={name}")), "id": name})
    create_task(td, MEDIA, {**download(origin.url("/bytes/20000000?rate=100000")), "id": "archive-2025.tar", "start": False})
    for i in range(3):
        wait_task(td, MEDIA, create_task(td, MEDIA, {**download(origin.url(f"/bytes/{200_000 * (i + 1)}")),
                                                     "id": f"thumbnail-{i + 1}.jpg"})["id"])
    create_task(td, MEDIA, {**data("http://127.0.0.1:9/offline"), "id": "probe-offline"})  # retrying

    receiver.respond_with(503, times=2)
    create_delegated_session(td, receiver, sid=BILLING, mode="background", events=["task.completed"])
    for i in range(3):
        wait_task(td, BILLING, create_task(td, BILLING, {**data(origin.url(f"/bytes/{512 * (i + 1)}")),
                                                         "id": f"invoice-{1001 + i}.pdf"})["id"])
    receiver.wait_for(lambda ds: len([d for d in ds if d.status == 200]) >= 1, timeout=30)

    create_session(td, REPORTS)
    create_batch(td, REPORTS, [{**data(f"http://127.0.0.1:9/{i}"), "id": f"report-{i:04}", "start": False}
                               for i in range(250)])


def main(out: Path) -> None:
    token = new_token()
    with Origin() as origin, WebhookReceiver() as receiver, Transferd("--webhook-retry-schedule", "0,1s,2s,3s", api_token=token) as td, Browser(1280, 860) as browser:
        populate(td, origin, receiver)
        driver = browser.driver

        browser.open(td)
        browser.wait_for(lambda d: d.find_element(By.ID, "token"))
        browser.screenshot(str(out / "console-sign-in.png"))

        browser.sign_in(token)
        browser.wait_for(lambda d: d.find_elements(By.XPATH, f"//table//a[text()='{MEDIA}']"))
        # A dozen samples for the throughput chart, with one more download joining half-way.
        time.sleep(6)
        create_task(td, MEDIA, {**download(origin.url("/bytes/50000000?rate=700000&seed=late")), "id": "camera-0414.mov"})
        time.sleep(8)
        browser.screenshot(str(out / "console-sessions.png"))

        driver.find_element(By.LINK_TEXT, MEDIA).click()
        browser.wait_for(lambda d: browser.row("task", "camera-0412.mov"))
        driver.execute_script("window.scrollTo(0, 0)")
        time.sleep(4)  # progress from the event stream
        browser.screenshot(str(out / "console-tasks.png"))

        driver.find_element(By.LINK_TEXT, "Event log").click()
        browser.wait_for(lambda d: d.find_elements(By.XPATH, "//table//th[text()='task.created']"))
        browser.screenshot(str(out / "console-events.png"))

        driver.get(td.url("/ui/") + f"#/sessions/{BILLING}/deliveries")
        browser.wait_for(lambda d: d.find_elements(By.CSS_SELECTOR, "tr[data-event]"))
        browser.screenshot(str(out / "console-deliveries.png"))
        errors = browser.console_errors()
        if errors:
            sys.exit(f"the page logged errors: {errors}")


if __name__ == "__main__":
    main(Path(sys.argv[1] if len(sys.argv) > 1 else "docs").resolve())

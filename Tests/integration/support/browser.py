"""A real headless Chromium (Debian's `chromium` and `chromium-driver`) driven by selenium, for the
web console's tests and for `make screenshots`.

    with Browser() as browser:
        browser.open(td, token=td.token)                  # /ui/, signed in
        browser.wait_for(lambda d: d.find_elements(By.CSS_SELECTOR, "table"))
        assert browser.console_errors() == []

The system browser and driver are named explicitly, so selenium never looks for (or downloads)
another. Chromium runs as root here, which its sandbox refuses: hence `--no-sandbox`.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from typing import Any, Callable, TypeVar

from selenium import webdriver
from selenium.common.exceptions import NoSuchElementException, StaleElementReferenceException
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import WebDriverWait

from .transferd import Transferd

T = TypeVar("T")

CHROMIUM = os.environ.get("CHROMIUM_BINARY", "/usr/bin/chromium")
CHROMEDRIVER = os.environ.get("CHROMEDRIVER_BINARY", "/usr/bin/chromedriver")
WAIT = 20.0


class Browser:
    def __init__(self, width: int = 1280, height: int = 900):
        self.profile = tempfile.mkdtemp(prefix="transferd-chromium-")
        options = webdriver.ChromeOptions()
        options.binary_location = CHROMIUM
        for argument in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu",
                         f"--window-size={width},{height}", f"--user-data-dir={self.profile}",
                         "--no-first-run", "--no-default-browser-check", "--disable-extensions",
                         "--proxy-server=direct://", "--proxy-bypass-list=*"):
            options.add_argument(argument)
        options.set_capability("goog:loggingOptions", {"browser": "ALL"})
        self.driver = webdriver.Chrome(options=options, service=Service(executable_path=CHROMEDRIVER))
        self.driver.set_page_load_timeout(WAIT)

    def close(self) -> None:
        try:
            self.driver.quit()
        finally:
            shutil.rmtree(self.profile, ignore_errors=True)

    def __enter__(self) -> "Browser":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def open(self, td: Transferd, token: str | None = None, fragment: str = "") -> None:
        """Loads the console of `td` (a fresh origin per server, so a fresh sessionStorage), signs
        in with `token` when given, and waits for the view."""
        self.driver.get(td.url("/ui/") + fragment)
        if token is not None:
            self.sign_in(token)

    def sign_in(self, token: str) -> None:
        field = self.wait_for(lambda d: d.find_element(By.ID, "token"))
        field.clear()
        field.send_keys(token)
        self.button("Sign in").click()
        self.wait_for(lambda d: d.find_element(By.ID, "principal").is_displayed())

    def wait_for(self, condition: Callable[[Any], T], timeout: float = WAIT, message: str = "") -> T:
        """`condition(driver)` once truthy; selenium's TimeoutException after `timeout` seconds.
        An element the console replaced while the condition read it (a live view re-renders its
        rows as events arrive) is looked for again at the next poll, not an error."""
        return WebDriverWait(self.driver, timeout, poll_frequency=0.1,
                             ignored_exceptions=(NoSuchElementException, StaleElementReferenceException)).until(condition, message)

    def button(self, name: str, within: Any = None) -> Any:
        """The one `<button>` whose visible name is `name` (within an element if given)."""
        buttons = self.buttons(name, within)
        assert len(buttons) == 1, f"{len(buttons)} buttons named {name!r}"
        return buttons[0]

    def buttons(self, name: str, within: Any = None) -> list[Any]:
        scope = within if within is not None else self.driver
        return [b for b in scope.find_elements(By.TAG_NAME, "button") if b.text.strip() == name]

    def click_in_row(self, attribute: str, value: str, name: str) -> None:
        """Clicks the one button named `name` in a table row. The live view re-renders a row as
        its task's events arrive, so a row (or button) replaced between finding and clicking is
        found again at the next poll."""
        def clicked(_: Any) -> bool:
            self.button(name, within=self.row(attribute, value)).click()
            return True
        self.wait_for(clicked, message=f"no {name!r} button to click in the row")

    def row(self, attribute: str, value: str) -> Any:
        """The table row carrying `data-{attribute}="value"` (a task's or a delivery's)."""
        return self.driver.find_element(By.CSS_SELECTOR, f'tr[data-{attribute}="{value}"]')

    def problem(self) -> str:
        """The text of the page's error box, empty while hidden."""
        box = self.driver.find_element(By.ID, "problem")
        return box.text if box.is_displayed() else ""

    def console_errors(self, allowed: tuple[str, ...] = ()) -> list[str]:
        """Messages of level SEVERE the page logged (script errors, CSP violations, failed loads)
        since the last call, less those containing one of `allowed`."""
        entries = self.driver.get_log("browser")
        return [e["message"] for e in entries
                if e["level"] == "SEVERE" and not any(text in e["message"] for text in allowed)]

    def screenshot(self, path: str) -> None:
        self.driver.save_screenshot(path)

"""The example chat page (examples/chat_app) in a real headless Chromium, against its real
server on loopback: Debian's ``chromium`` and ``chromium-driver`` through Selenium.

Waits are WebDriverWait conditions on what the page shows. Without the browser, its
driver, selenium or uvicorn the tests skip, or fail when ``CI`` is ``true`` or
``TOOLCALL_TRACKER_REQUIRE_BROWSER`` is set (``.ci/run`` installs them and sets it).
"""

from __future__ import annotations

import os
import shutil
import socket
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

APP = Path(__file__).parent.parent / "examples" / "chat_app"
CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
DRIVER = shutil.which("chromedriver") or "/usr/bin/chromedriver"
WAIT = 30  # seconds: the longest any condition may take before the test fails


def _unavailable() -> str | None:
    for module in ("selenium", "uvicorn", "fastapi"):
        try:
            __import__(module)
        except ImportError:
            return f"{module} is not installed (pip install -e '.[browser]')"
    for path, package in ((CHROMIUM, "chromium"), (DRIVER, "chromium-driver")):
        if not os.access(path, os.X_OK):
            return f"{path} is missing (apt-get install {package})"
    return None


_WHY = _unavailable()
if _WHY is not None:
    if os.environ.get("CI") == "true" or os.environ.get("TOOLCALL_TRACKER_REQUIRE_BROWSER"):
        pytest.fail(f"the browser tests cannot run in CI: {_WHY}", pytrace=False)
    pytest.skip(_WHY, allow_module_level=True)

import uvicorn  # noqa: E402
from selenium import webdriver  # noqa: E402
from selenium.webdriver.common.by import By  # noqa: E402
from selenium.webdriver.support import expected_conditions as ec  # noqa: E402
from selenium.webdriver.support.ui import WebDriverWait  # noqa: E402

sys.path.insert(0, str(APP))
from server import create_app  # noqa: E402


@pytest.fixture(scope="module")
def url() -> Iterator[str]:
    """The real server on a free loopback port, in a thread; listening before it starts
    (the socket is bound and listening here, so no wait for it is needed)."""
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(64)
    port = sock.getsockname()[1]
    config = uvicorn.Config(create_app(pace=0.05), log_level="warning", lifespan="off")
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{port}/"
    finally:
        server.should_exit = True
        thread.join(WAIT)
        sock.close()


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for flag in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage"):
        options.add_argument(flag)
    options.add_argument("--window-size=900,1000")
    driver = webdriver.Chrome(options=options, service=webdriver.ChromeService(DRIVER))
    try:
        yield driver
    finally:
        driver.quit()


def _state_is(call_id: str, state: str) -> Any:
    return ec.text_to_be_present_in_element_attribute(
        (By.ID, f"call-{call_id}"), "data-state", state
    )


def _turn(browser: Any, url: str) -> WebDriverWait[Any]:
    """Load the page, send the prompt, and wait for the call awaiting approval."""
    browser.get(url)
    wait = WebDriverWait(browser, WAIT)
    browser.find_element(By.ID, "send").click()
    wait.until(_state_is("call_delete", "approval-requested"))
    return wait


def test_a_call_streams_in_before_its_result_and_its_progress_bar_moves(
    browser: Any, url: str
) -> None:
    wait = _turn(browser, url)
    wait.until(_state_is("call_weather", "output-available"))
    card = browser.find_element(By.ID, "call-call_weather")
    states = card.get_attribute("data-states").split()
    assert states == ["input-streaming", "input-available", "output-available"]
    bar = card.find_element(By.CLASS_NAME, "bar")
    seen = [float(value) for value in bar.get_attribute("data-seen").split()]
    assert seen == sorted(seen)
    assert seen[-1] == 1
    assert any(0 < value < 1 for value in seen)  # it moved through values in between
    assert '"degrees":21' in card.find_element(By.CLASS_NAME, "outcome").text.replace(" ", "")


def test_approve_shows_the_tools_result(browser: Any, url: str) -> None:
    wait = _turn(browser, url)
    card = browser.find_element(By.ID, "call-call_delete")
    card.find_element(By.CLASS_NAME, "approve").click()
    wait.until(_state_is("call_delete", "output-available"))
    assert "deleted /tmp/report.txt" in card.find_element(By.CLASS_NAME, "outcome").text
    assert card.find_elements(By.TAG_NAME, "button") == []


def test_deny_shows_the_denial(browser: Any, url: str) -> None:
    wait = _turn(browser, url)
    card = browser.find_element(By.ID, "call-call_delete")
    card.find_element(By.CLASS_NAME, "deny").click()
    wait.until(_state_is("call_delete", "output-denied"))
    assert "Denied" in card.find_element(By.CLASS_NAME, "outcome").text

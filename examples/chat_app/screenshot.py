"""Screenshots of the chat page for the docs (not compared in CI).

``python examples/chat_app/screenshot.py`` starts the server on a free loopback port,
drives Debian's headless Chromium through a turn and writes
``docs/images/chat-app-approval.png`` (a call awaiting approval, the other done with its
progress bar full) and ``docs/images/chat-app-approved.png`` (after Approve).
"""

from __future__ import annotations

import socket
import threading
from pathlib import Path

import uvicorn
from selenium import webdriver
from selenium.webdriver.common.by import By
from selenium.webdriver.support import expected_conditions as ec
from selenium.webdriver.support.ui import WebDriverWait
from server import create_app

IMAGES = Path(__file__).resolve().parents[2] / "docs" / "images"


def main() -> None:
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(16)
    server = uvicorn.Server(uvicorn.Config(create_app(), log_level="warning", lifespan="off"))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    options = webdriver.ChromeOptions()
    options.binary_location = "/usr/bin/chromium"
    for flag in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage"):
        options.add_argument(flag)
    options.add_argument("--window-size=820,760")
    driver = webdriver.Chrome(
        options=options, service=webdriver.ChromeService("/usr/bin/chromedriver")
    )
    try:
        driver.get(f"http://127.0.0.1:{sock.getsockname()[1]}/")
        wait = WebDriverWait(driver, 30)
        driver.find_element(By.ID, "send").click()
        for call_id, state in (
            ("call_weather", "output-available"),
            ("call_delete", "approval-requested"),
        ):
            locator = (By.ID, f"call-{call_id}")
            wait.until(ec.text_to_be_present_in_element_attribute(locator, "data-state", state))
        IMAGES.mkdir(parents=True, exist_ok=True)
        driver.save_screenshot(str(IMAGES / "chat-app-approval.png"))
        driver.find_element(By.CSS_SELECTOR, "#call-call_delete .approve").click()
        locator = (By.ID, "call-call_delete")
        wait.until(
            ec.text_to_be_present_in_element_attribute(locator, "data-state", "output-available")
        )
        driver.save_screenshot(str(IMAGES / "chat-app-approved.png"))
    finally:
        driver.quit()
        server.should_exit = True
        thread.join(30)
        sock.close()
    print(f"wrote {IMAGES / 'chat-app-approval.png'} and {IMAGES / 'chat-app-approved.png'}")


if __name__ == "__main__":
    main()

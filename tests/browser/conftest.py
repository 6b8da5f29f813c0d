from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

CHROMIUM = os.environ.get("CHROMIUM_PATH", "/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
SCREENSHOTS = Path(__file__).resolve().parents[2] / "var" / "screenshots"


@pytest.fixture(scope="session")
def browser():
    if not shutil.which(CHROMIUM):
        pytest.fail(f"Debian's Chromium is required at {CHROMIUM} (apt-get install chromium)")
    # Playwright's sync API runs an event loop in this thread; the ORM calls the tests make are synchronous.
    os.environ.setdefault("DJANGO_ALLOW_ASYNC_UNSAFE", "true")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield browser
        browser.close()


@pytest.fixture
def page(browser, live_server):
    context = browser.new_context(base_url=live_server.url, viewport={"width": 1280, "height": 900})
    page = context.new_page()
    yield page
    context.close()


def screenshot_path(name: str) -> Path:
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    return SCREENSHOTS / f"{name}.png"


@pytest.fixture
def screenshot(page):
    def take(name: str) -> Path:
        path = screenshot_path(name)
        page.screenshot(path=str(path), full_page=True)
        return path

    return take


def log_in(page, username: str, password: str = "pw-12345678") -> None:
    page.goto("/login/")
    page.fill("input[name=username]", username)
    page.fill("input[name=password]", password)
    with page.expect_navigation():
        page.click("button[type=submit]")
    assert "/login/" not in page.url, f"login as {username} failed"


def submit(page, selector: str = "main button[type=submit]") -> None:
    with page.expect_navigation():
        page.click(selector)


def shoot_widths(page, name: str, *, full_page: bool = True) -> None:
    """Screenshots `<name>_1280.png` and `<name>_768.png` (laptop and tablet widths): the full page, or only its
    first screen when the full page is too long to read (a run page with its items table)."""
    for width in (1280, 768):
        page.set_viewport_size({"width": width, "height": 900})
        page.screenshot(path=str(screenshot_path(f"{name}_{width}")), full_page=full_page)
    page.set_viewport_size({"width": 1280, "height": 900})

"""The API tokens page and the API docs in a real browser: create (shown once), use, revoke; docs render offline."""

from __future__ import annotations

import httpx
import pytest

from tests.browser.conftest import log_in, screenshot_path

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_create_use_and_revoke_a_token(page, live_server, make_user):
    make_user("rita", role="reviewer")
    log_in(page, "rita")
    page.click("text=API tokens")
    assert page.url.endswith("/account/tokens/")
    page.fill("input[name=name]", "nightly CI")
    page.click("main button[type=submit]")
    key = page.locator("#token-value").inner_text().strip()
    assert key.startswith("es_")
    for width, name in ((1280, "api_tokens"), (768, "api_tokens_tablet")):
        page.set_viewport_size({"width": width, "height": 900})
        page.screenshot(path=str(screenshot_path(name)), full_page=True)
    response = httpx.get(f"{live_server.url}/api/runs/", headers={"Authorization": f"Token {key}"})
    assert response.status_code == 200
    page.goto("/account/tokens/")
    assert key not in page.content()
    page.click("text=Revoke")
    assert "revoked" in page.locator("main").inner_text()
    response = httpx.get(f"{live_server.url}/api/runs/", headers={"Authorization": f"Token {key}"})
    assert response.status_code == 401


def test_swagger_ui_renders_from_local_files(page, make_user):
    make_user("vic", role="viewer")
    log_in(page, "vic")
    external: list[str] = []
    # Redoc's bundle asks for a logo on a CDN; the pages' Content-Security-Policy stops it leaving the browser.
    page.on("response", lambda response: external.append(response.url) if "localhost" not in response.url else None)
    page.goto("/api/docs/")
    page.wait_for_selector("text=/api/runs/", timeout=15000)
    page.set_viewport_size({"width": 1280, "height": 900})
    page.screenshot(path=str(screenshot_path("api_docs")), full_page=False)
    page.goto("/api/redoc/")
    page.wait_for_selector("text=evalsite API", timeout=15000)
    page.screenshot(path=str(screenshot_path("api_redoc")), full_page=False)
    assert not [url for url in external if not url.startswith("data:")], external

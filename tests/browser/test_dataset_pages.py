"""The dataset pages in a real browser: log in, upload, see errors inline, browse items."""

from __future__ import annotations

from pathlib import Path

import pytest

from datasets.models import Dataset
from tests.browser.conftest import log_in, screenshot_path, submit

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]
DEMO = Path(__file__).resolve().parents[2] / "datasets" / "demo" / "stip-governance.jsonl"


def test_anonymous_visitor_lands_on_login(page):
    page.goto("/datasets/")

    assert "/login/" in page.url
    assert page.locator("h1").inner_text() == "Log in"


def test_admin_uploads_the_demo_dataset_and_browses_it(page, make_user, screenshot, tmp_path):
    make_user("ada", role="admin")
    log_in(page, "ada")

    page.goto("/datasets/upload/")
    page.fill("input[name=name]", "stip")
    page.set_input_files("input[type=file]", str(DEMO))
    submit(page)

    assert Dataset.objects.get(name="stip").latest_version().item_count == 7
    body = page.locator("main").inner_text()
    assert "query-004-hallucinated" in body
    assert "scenario-d-partial" in body
    screenshot("dataset_detail")

    page.goto("/datasets/")
    assert "stip" in page.locator("table").inner_text()
    screenshot("dataset_list")


def test_upload_errors_are_shown_inline_and_nothing_is_stored(page, make_user, screenshot, tmp_path):
    make_user("ada", role="admin")
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"id": "a", "query": "q?"}\n{"id": "b"}\nnot json\n')
    log_in(page, "ada")

    page.goto("/datasets/upload/")
    page.fill("input[name=name]", "broken")
    page.set_input_files("input[type=file]", str(bad))
    submit(page)

    text = page.locator("main").inner_text()
    assert "line 2" in text and "query" in text
    assert "line 3" in text
    assert not Dataset.objects.filter(name="broken").exists()
    screenshot("dataset_upload_errors")


@pytest.mark.parametrize("width", [390, 768, 1280])
def test_a_narrow_screen_scrolls_the_items_table_in_its_box_and_items_open(
    browser, live_server, make_user, width, tmp_path
):
    from datasets.services import dataset_import

    make_user("vic", role="viewer")
    with DEMO.open("rb") as demo:
        version = dataset_import(name="stip", file=demo, filename=DEMO.name, fmt="jsonl").version
    context = browser.new_context(base_url=live_server.url, viewport={"width": width, "height": 844})
    page = context.new_page()
    try:
        log_in(page, "vic")

        page.goto(f"/datasets/{version.dataset_id}/")
        assert page.evaluate("document.documentElement.scrollWidth") <= width
        box = page.locator(".ds-examples").locator("xpath=..")
        if width == 390:  # the table is wider than the screen: it scrolls inside its box instead of the page
            assert box.evaluate("el => el.scrollWidth > el.clientWidth")
        page.screenshot(path=str(screenshot_path(f"dataset_detail_{width}")), full_page=True)

        with page.expect_navigation():
            page.click("text=query-004-hallucinated")
        main = page.locator("main").inner_text()
        assert "vetoed by the Security Council [stip-council]" in main  # the full response
        assert "stip-snapshot" in main and "score 0.87" in main
        assert "Expected context ids" in main and "status" in main
        assert page.evaluate("document.documentElement.scrollWidth") <= width
        page.screenshot(path=str(screenshot_path(f"example_detail_{width}")), full_page=True)
    finally:
        context.close()

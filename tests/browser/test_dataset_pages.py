"""The dataset pages in a real browser: log in, upload, see errors inline, browse items."""

from __future__ import annotations

from pathlib import Path

import pytest

from datasets.models import Dataset
from tests.browser.conftest import log_in, submit

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

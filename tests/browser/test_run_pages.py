"""The run and judge pages in Chromium: start a run and watch it finish on a real worker, read it, stay safe.

Screenshots of every page at 1280 and 768 px go to var/screenshots/.
"""

from __future__ import annotations

import io
from pathlib import Path

import pytest

from bench.seed import seed_finished_run
from datasets.services import dataset_import
from evaluations.models import Run, RunItem, RunStatus
from judges.services import judge_default_offline
from tests.browser.conftest import SCREENSHOTS, log_in, submit
from tests.evaluations.conftest import celery_worker  # noqa: F401 - the real worker fixture

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]
DEMO = Path(__file__).resolve().parents[2] / "datasets" / "demo" / "stip-governance.jsonl"
XSS = '<script>window.pwned = 1</script><img src="x" onerror="window.pwned = 1">'


def shoot(page, name: str) -> None:
    """Full-page screenshots at laptop and tablet width."""
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    for width in (1280, 768):
        page.set_viewport_size({"width": width, "height": 900})
        page.evaluate("window.scrollTo(0, 0)")  # the sticky header stays on top in a full-page shot
        page.wait_for_timeout(150)  # let Plotly's responsive charts resize
        page.screenshot(path=str(SCREENSHOTS / f"{name}-{width}.png"), full_page=True)
    page.set_viewport_size({"width": 1280, "height": 900})


def test_a_reviewer_starts_a_run_and_watches_it_finish(page, make_user, celery_worker):  # noqa: F811
    celery_worker(concurrency=4)
    make_user("rita", role="reviewer")
    dataset_import(name="stip", file=io.BytesIO(DEMO.read_bytes()), filename="stip.jsonl", fmt="jsonl")
    judge_default_offline()
    log_in(page, "rita")

    page.goto("/runs/")
    assert "No runs yet" in page.locator("main").inner_text()
    shoot(page, "run_list_empty")
    page.click("text=Start your first run")
    assert page.url.endswith("/runs/new/")
    assert "heuristic, not an LLM" in page.locator("select[name=judge_config] option:checked").inner_text()
    page.fill("input[name=name]", "demo")
    page.check("input[value=rubric]")
    shoot(page, "run_new")
    submit(page, "main button[type=submit]")

    run = Run.objects.get(name="demo")
    assert page.url.endswith(f"/runs/{run.pk}/")
    if page.locator("#run-progress").count():  # unless the worker was faster than the redirect
        assert page.locator("#run-progress [role=progressbar]").get_attribute("aria-valuemax") == "7"
        page.screenshot(path=str(SCREENSHOTS / "run_detail_running-1280.png"))
    # The progress bar polls until the run ends, then the page reloads with its final figures.
    page.wait_for_selector("h1 .status-completed, h1 .status-completed_with_errors", timeout=90_000)
    run.refresh_from_db()
    assert run.status == RunStatus.COMPLETED and run.items_done == 7
    assert page.locator("#run-progress").count() == 0
    assert page.locator(".plotly-graph-div .main-svg").count() >= 2  # the charts drew (plotly.min.js is ours)
    assert "over 7 of 7 items" in page.locator(".stats").inner_text()
    shoot(page, "run_detail")

    page.click("text=Worst first")
    page.wait_for_url("**sort=overall**")
    worst = RunItem.objects.filter(run=run, overall_score__isnull=False).order_by("overall_score", "id").first()
    # the item page carries the table's sort on (its previous / next follow it)
    assert page.locator("a.item-link").first.get_attribute("href") == f"/runs/{run.pk}/items/{worst.pk}/?sort=overall"
    shoot(page, "run_detail_worst_first")


def test_the_items_table_filters_without_reloading_and_keeps_the_url(page, make_user):
    run = seed_finished_run(120, name="nightly")
    make_user("vic")
    log_in(page, "vic")
    page.goto(f"/runs/{run.pk}/")
    page.evaluate("window.notReloaded = true")

    page.select_option("select[name=failing]", "faithfulness")
    page.wait_for_url("**failing=faithfulness**")
    page.click("th a.sort:text('rubric')")
    page.wait_for_url("**sort=rubric**")

    assert page.evaluate("window.notReloaded") is True
    assert "failing=faithfulness" in page.url and "sort=rubric" in page.url
    failing = RunItem.objects.filter(run=run, results__metric="faithfulness", results__passed=False).count()
    assert f"{failing} items match" in page.locator("#items .card-head").inner_text()
    page.reload()
    assert page.locator("select[name=failing]").input_value() == "faithfulness"
    shoot(page, "run_detail_filtered")


def test_a_viewer_sees_no_run_controls(page, make_user):
    run = seed_finished_run(20, name="nightly")
    Run.objects.filter(pk=run.pk).update(status=RunStatus.RUNNING)
    make_user("vic")
    failed: list[str] = []
    page.on("response", lambda response: response.status >= 400 and failed.append(f"{response.status} {response.url}"))
    page.goto("/login/")
    shoot(page, "login")
    log_in(page, "vic")

    page.goto("/runs/")
    assert page.locator("text=New run").count() == 0
    shoot(page, "run_list")
    page.goto(f"/runs/{run.pk}/")

    assert page.locator(".run-controls").count() == 0
    assert page.locator("#run-progress").count() == 1
    assert page.locator("button:text('Cancel run')").count() == 0
    page.wait_for_timeout(1500)  # a poll or two
    assert not failed, failed  # no 404 (favicon, static files) and no failing poll


def test_dataset_text_executes_nothing(page, make_user):
    run = seed_finished_run(3, name="xss", text=lambda n: {"query": XSS, "response": XSS})
    make_user("vic")
    log_in(page, "vic")
    dialogs: list[str] = []
    page.on("dialog", lambda dialog: (dialogs.append(dialog.message), dialog.dismiss()))

    page.goto(f"/runs/{run.pk}/")
    page.wait_for_timeout(300)

    assert page.evaluate("window.pwned") is None and not dialogs
    assert "<script>window.pwned = 1</script>" in page.locator(".items-table").inner_text()
    assert page.locator(".items-table img").count() == 0


def test_the_judges_page_checks_a_judge_in_place(page, make_user):
    judge_default_offline()
    make_user("ada", role="admin")
    log_in(page, "ada")

    page.goto("/judges/")
    page.click("button:text('Check')")
    result = page.wait_for_selector(".check-result")

    assert "OK" in result.inner_text() and " ms" in result.inner_text()
    assert "heuristic, not an LLM" in page.locator("main").inner_text()
    shoot(page, "judges")
    page.click("text=+ New judge")
    page.fill("input[name=name]", "gpt")
    page.select_option("select[name=provider]", "openai")
    page.fill("input[name=model]", "gpt-4.1-mini")
    page.fill("input[name=api_key_env]", "sk-live-secret-key")
    submit(page)
    assert "is not an environment variable name" in page.locator("main").inner_text()
    assert page.locator("input[name=api_key_env]").input_value() == ""
    shoot(page, "judge_form_errors")


def test_the_new_run_form_shows_errors_next_to_fields(page, make_user):
    seed_finished_run(3, name="seed")
    make_user("rita", role="reviewer")
    log_in(page, "rita")

    page.goto("/runs/new/")
    page.fill("input[name=thresholds__rubric]", "3")
    submit(page)

    field = page.locator(".field-error").filter(has=page.locator("input[name=thresholds__rubric]"))
    assert "must be between 0 and 1" in field.inner_text()
    shoot(page, "run_new_errors")

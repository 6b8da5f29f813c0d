"""The target pages and a run with a live target in Chromium: create a target, check it, start a run that calls it.

Screenshots at 1280 and 768 px go to var/screenshots/ (target_*.png).
"""

from __future__ import annotations

import io

import pytest

from datasets.services import dataset_import
from evaluations.models import Run, RunStatus
from judges.services import judge_default_offline
from targets.models import Target
from tests.browser.conftest import log_in, submit
from tests.browser.test_run_pages import DEMO, shoot
from tests.evaluations.conftest import celery_worker  # noqa: F401 - the real worker fixture
from tests.evaluations.helpers import wait_for_run
from tests.targets.conftest import demo_rag  # noqa: F401 - the demo RAG server fixture

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_an_admin_creates_checks_and_runs_a_live_target(page, make_user, demo_rag, celery_worker):  # noqa: F811
    server = demo_rag("--latency-ms", "30")
    celery_worker(concurrency=4)
    make_user("ada", role="admin")
    dataset_import(name="stip", file=io.BytesIO(DEMO.read_bytes()), filename="stip.jsonl", fmt="jsonl")
    judge_default_offline()
    log_in(page, "ada")

    # the empty list, then the form with its errors next to the fields
    page.goto("/targets/")
    assert "No targets yet" in page.locator("main").inner_text()
    page.click("text=Create a target")
    page.fill("input[name=name]", "demo")
    page.fill("input[name=url]", "localhost:8100")
    page.fill("input[name=answer]", "answer..text")
    submit(page)
    assert "is not an http(s) URL" in page.locator(".field-error", has=page.locator("#id_url")).inner_text()
    assert "unexpected '.' at column" in page.locator(".field-error", has=page.locator("#id_answer")).inner_text()
    shoot(page, "target_form_errors")

    # fixed: created, then checked from its page
    page.fill("input[name=url]", server.url)
    page.fill("input[name=answer]", "answer")
    page.fill("input[name=contexts]", "sources")
    submit(page)
    target = Target.objects.get(name="demo")
    assert page.url.endswith(f"/targets/{target.pk}/")
    page.fill("#check-query", "How much ARB did the STIP allocate?")
    page.click("form.check-form button")
    page.wait_for_selector("#check-report")
    report = page.locator("#check-report").inner_text()
    assert "HTTP 200" in report and "stip-forum" in report
    shoot(page, "target_detail_checked")
    page.goto("/targets/")
    shoot(page, "target_list")

    # a run that calls it, watched to the end on a worker
    page.goto("/runs/new/")
    page.select_option("select[name=target]", label="demo")
    page.check("input[value=retrieval]")
    submit(page, "form.form button[type=submit]")
    run = wait_for_run(Run.objects.get(target=target), timeout=90)
    assert run.status == RunStatus.COMPLETED, run.error
    page.goto(f"/runs/{run.pk}/")
    card = page.locator("#target-latency").inner_text()
    assert "LATENCY P50" in card.upper() and "ms" in card
    shoot(page, "target_run")
    page.click("table a[href*='/items/']")
    page.wait_for_selector("#target-call")
    assert "WHAT THE TARGET RETURNED" in page.locator("#target-call").inner_text().upper()
    page.click("#target-call details.raw >> nth=1")
    shoot(page, "target_run_item")

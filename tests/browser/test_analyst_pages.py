"""The analyst's pages in a real browser: the dashboard (trends, live progress, latest comparison), a run
comparison (scatter, click a regression, see the diff; click a point) and judge agreement after reviews made
through the review service. Screenshots at 1280 and 768 px in var/screenshots/analyst_*.png."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import pytest
from django.utils import timezone

from datasets.services import dataset_import
from evaluations.models import Claim, Run, RunStatus
from evaluations.services.overrides import claim_confirm, claim_override
from evaluations.services.runs import run_aggregates_refresh
from judges.services import judge_default_offline
from tests.browser.conftest import SCREENSHOTS, log_in
from tests.evaluations.scored_runs import scored_run

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]
DEMO = Path(__file__).resolve().parents[2] / "datasets" / "demo" / "stip-governance.jsonl"
IDS = [
    "query-004",
    "query-004-hallucinated",
    "scenario-a-deadline",
    "scenario-b-off-topic",
    "scenario-c-retrieval-miss",
    "scenario-d-partial",
    "gcp-faithful-irrelevant",
]
S, P, C, N = "SUPPORTED", "PARTIALLY_SUPPORTED", "CONTRADICTED", "NOT_ENOUGH_INFO"


def shoot(page, name: str) -> None:
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    for width in (1280, 768):
        page.set_viewport_size({"width": width, "height": 900})
        page.wait_for_timeout(300)  # Plotly resizes its charts to the new width
        page.screenshot(path=str(SCREENSHOTS / f"analyst_{name}_{width}.png"), full_page=True)
    page.set_viewport_size({"width": 1280, "height": 900})


def finished(run: Run, minutes_ago: int) -> Run:
    Run.objects.filter(pk=run.pk).update(started_at=timezone.now() - timedelta(minutes=minutes_ago))
    run.refresh_from_db()
    run_aggregates_refresh(run=run)
    run.refresh_from_db()
    return run


def scores(drop: float, verdict_of_first: str) -> dict[str, dict]:
    """Per example: faithfulness, relevancy and three claims; `drop` lowers the later examples more."""
    items = {}
    for n, external_id in enumerate(IDS):
        faithfulness = round(max(0.0, 0.95 - drop * n), 3)
        items[external_id] = {
            "faithfulness": faithfulness,
            "relevancy": 1.0 if n % 3 else 0.0,
            "claims": [
                (f"The {external_id} answer's first claim.", verdict_of_first, verdict_of_first),
                (f"The {external_id} answer cites the Tally vote.", S, S),
                (f"The {external_id} answer gives a date.", P if n % 2 else S, P if n % 2 else S),
            ],
        }
    return items


@pytest.fixture
def analyst_data(make_user):
    make_user("ana", role="reviewer")
    with DEMO.open("rb") as file:
        version = dataset_import(name="stip-governance", file=file, filename="demo.jsonl").version
    judge = judge_default_offline()
    base = finished(scored_run(version, judge, scores(0.0, S), name="prompt v1"), 60)
    candidate = finished(scored_run(version, judge, scores(0.12, S), name="prompt v2"), 30)
    live = scored_run(version, judge, {"query-004": {"faithfulness": 1.0}}, name="nightly")
    Run.objects.filter(pk=live.pk).update(
        status=RunStatus.RUNNING, items_total=7, items_done=2, started_at=timezone.now()
    )
    return base, candidate, live


def test_dashboard_comparison_and_agreement_pages(page, analyst_data) -> None:
    base, candidate, live = analyst_data
    log_in(page, "ana")

    # Dashboard: recent runs with live progress, trend chart, latest comparison
    page.goto("/")
    page.evaluate("window.__sameDocument = true")
    assert page.locator(f'tr[data-run="{live.pk}"] [data-status="running"]').is_visible()
    assert page.locator(".dash-trend .js-plotly-plot").count() == 1
    assert page.locator(".dash-trend .js-plotly-plot .scatterlayer .trace").count() == 2  # faithfulness, relevancy
    assert page.locator(f'tr[data-run="{candidate.pk}"] a.to-review').inner_text() == "7 to review"
    shoot(page, "dashboard")
    # the running run finishes: the list updates in place (polling), then polling stops
    Run.objects.filter(pk=live.pk).update(status=RunStatus.COMPLETED, items_done=7)
    page.locator(f'tr[data-run="{live.pk}"] [data-status="completed"]').wait_for(timeout=8000)
    assert page.evaluate("window.__sameDocument") is True
    assert page.locator("#recent-runs[hx-trigger]").count() == 0

    # The latest comparison: candidate v2 against base v1
    with page.expect_navigation():
        page.click("a.latest-comparison")
    assert f"base={base.pk}" in page.url and f"candidate={candidate.pk}" in page.url
    faithfulness = page.locator('tr[data-metric="faithfulness"]')
    assert "significant drop" in faithfulness.inner_text()
    page.locator("#compare-scatter .scatterlayer .point").first.wait_for()
    assert page.locator("#compare-scatter .scatterlayer .point").count() == 7
    shoot(page, "compare")

    # click the largest regression: the diff of that example
    first_regression = page.locator("#regressions a.change-link").first
    assert first_regression.inner_text() == "gcp-faithful-irrelevant"  # dropped by the most
    with page.expect_navigation():
        first_regression.click()
    assert "/runs/compare/item/" in page.url and "example=gcp-faithful-irrelevant" in page.url
    assert (
        page.locator("#side-base .diff-answer").is_visible()
        and page.locator("#side-candidate .diff-answer").is_visible()
    )
    assert page.locator("#side-candidate .diff-claim").count() == 3
    assert page.locator("#side-candidate .badge.verdict-SUPPORTED").first.inner_text() == "supported"
    assert "−0.720" in page.locator('#score-changes tr[data-metric="faithfulness"]').inner_text()
    shoot(page, "compare_item")

    # clicking a scatter point opens its diff too
    page.go_back()
    point = page.locator("#compare-scatter .scatterlayer .point").first
    point.wait_for()
    point.scroll_into_view_if_needed()
    box = point.bounding_box()
    x, y = box["x"] + box["width"] / 2, box["y"] + box["height"] / 2
    page.mouse.move(x, y)
    page.locator(".hoverlayer .hovertext").wait_for()  # Plotly's click acts on the hovered point
    with page.expect_navigation():
        page.mouse.click(x, y)
    assert "/runs/compare/item/" in page.url and "example=" in page.url

    # Agreement, after reviews through the review service
    reviewer = page.context  # noqa: F841  (the browser is logged in as ana; the service call names her)
    from django.contrib.auth.models import User

    ana = User.objects.get(username="ana")
    claims = list(Claim.objects.filter(item__run=candidate).order_by("item_id", "position"))
    claim_override(claim=claims[0], reviewer=ana, new_verdict=C, reason="the context says the opposite")
    claim_override(claim=claims[1], reviewer=ana, new_verdict=N, reason="no context mentions it")
    claim_override(claim=claims[3], reviewer=ana, new_verdict=C, reason="contradicted by the forum post")
    for claim in claims[4:9]:
        claim_confirm(claim=claim, reviewer=ana)
    page.goto("/judges/")
    with page.expect_navigation():
        page.click("#judge-agreement-link")
    entry = page.locator("section.agreement").first
    assert entry.locator(".stat-value.reviewed").inner_text() == "8"
    assert entry.locator(".stat-value.override-rate").inner_text() == "37.5%"
    assert "fewer than 30" in entry.locator(".note").inner_text()
    assert entry.locator(".js-plotly-plot").count() == 1
    assert entry.locator("a.claim-link").count() == 3
    shoot(page, "agreement")
    with page.expect_navigation():
        entry.locator("a.claim-link").first.click()
    assert f"/runs/{candidate.pk}/items/" in page.url


def test_a_fresh_install_dashboard_says_what_to_do_first(page, make_user) -> None:
    make_user("ana", role="reviewer")
    log_in(page, "ana")

    page.goto("/")

    assert page.locator("#getting-started").is_visible()
    assert page.locator("#getting-started a.btn-primary").inner_text() == "Import a dataset"
    shoot(page, "dashboard_empty")
    page.goto("/judges/agreement/")
    assert "No reviewed claims yet" in page.locator("main").inner_text()
    page.goto("/runs/compare/")
    assert "No runs to compare yet" in page.locator("main").inner_text()

"""Claim review in a real browser: override / undo / confirm in place, the review queue, viewers, inert payloads."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest

from datasets.services import dataset_import
from evaluations.models import Claim, Run, RunItem, VerdictOverride
from evaluations.review_selectors import review_queue_head
from evaluations.services import executor, runs
from judges.services import judge_default_offline
from tests.browser.conftest import SCREENSHOTS, log_in

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]
DEMO = Path(__file__).resolve().parents[2] / "datasets" / "demo" / "stip-governance.jsonl"
PAYLOAD = '<script>window.__xss = 1; alert("script")</script><img src=x onerror="window.__xss = 2; alert(\'img\')">'


def demo_run(content: bytes | None = None, name: str = "demo") -> Run:
    """A finished run of the demo dataset (or `content`) with the offline judge, executed in this process."""
    file = io.BytesIO(content) if content is not None else DEMO.open("rb")
    with file:
        version = dataset_import(name=name, file=file, filename=f"{name}.jsonl").version
    run = runs.run_create(
        dataset_version=version,
        judge_config=judge_default_offline(),
        metrics=["faithfulness", "relevancy", "rubric", "correctness", "retrieval"],
        name=f"{name} run",
        enqueue=False,
    )
    return executor.run_execute_in_process(run=run)


def item_path(item: RunItem) -> str:
    return f"/runs/{item.run_id}/items/{item.pk}/"


def shoot(page, name: str) -> None:
    """Full-page screenshots at laptop (1280) and tablet (768) widths."""
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    for width in (1280, 768):
        page.set_viewport_size({"width": width, "height": 900})
        page.screenshot(path=str(SCREENSHOTS / f"{name}_{width}.png"), full_page=True)
    page.set_viewport_size({"width": 1280, "height": 900})


def text_of(page, selector: str) -> str:
    return " ".join(page.locator(selector).inner_text().split())


def test_a_reviewer_overrides_undoes_and_confirms_in_place_and_the_queue_follows(page, make_user) -> None:
    run = demo_run()
    assert run.status == "completed", run.error
    make_user("rita", role="reviewer")
    worst = RunItem.objects.filter(run=run, overall_score__isnull=False).order_by("overall_score", "id").first()
    claims = list(Claim.objects.filter(item=worst).order_by("position"))
    assert len(claims) >= 2, "the demo's worst item should have several claims"
    log_in(page, "rita")

    page.goto(item_path(worst))
    page.evaluate("window.__sameDocument = true")
    shoot(page, "review_item")
    item_overall, run_overall = text_of(page, "#item-overall"), text_of(page, "#run-overall")

    # selecting a claim lights up the contexts it rests on
    with_contexts = next((claim for claim in claims if claim.context_ids), None)
    if with_contexts is not None:
        page.click(f"#claim-{with_contexts.pk} .claim-text")
        highlighted = page.locator(".context.highlighted")
        assert highlighted.count() == len(set(with_contexts.context_ids))
        assert highlighted.first.get_attribute("data-context-id") in with_contexts.context_ids

    # override: pick a verdict that lowers the score, give a reason
    target = (
        next(claim for claim in claims if claim.current_verdict == "SUPPORTED")
        if any(claim.current_verdict == "SUPPORTED" for claim in claims)
        else claims[0]
    )
    new_verdict = "CONTRADICTED" if target.current_verdict != "CONTRADICTED" else "SUPPORTED"
    card = f"#claim-{target.pk}"
    page.select_option(f"{card} select[name=verdict]", new_verdict)
    page.fill(f"{card} input[name=reason]", "The context says the opposite.")
    page.click(f"{card} .override-form button")
    page.wait_for_selector(f"{card}.{'v-' + new_verdict.lower().replace('_', '-')}")

    assert page.evaluate("window.__sameDocument") is True  # no reload
    assert text_of(page, "#item-overall") != item_overall
    assert text_of(page, "#run-overall") != run_overall
    assert "judge" in text_of(page, "#run-overall-judge")
    assert "The context says the opposite." in page.locator(f"{card} .history").text_content()
    shoot(page, "review_item_overridden")

    # undo: back to the judge's verdict and scores
    page.click(f"{card} button:has-text('Undo')")
    page.wait_for_selector(f"{card}.{'v-' + target.judge_verdict.lower().replace('_', '-')}")
    assert text_of(page, "#item-overall") == item_overall
    assert text_of(page, "#run-overall") == run_overall
    assert VerdictOverride.objects.filter(claim=target).count() == 2

    # confirm every claim: the item is reviewed and leaves the queue
    for claim in claims:
        page.click(f"#claim-{claim.pk} button:has-text('Confirm')")
        page.wait_for_selector(f"#claim-{claim.pk} .reviewed-mark")
    assert "Reviewed" in text_of(page, "#review-state")
    assert page.evaluate("window.__sameDocument") is True

    page.goto(f"/runs/{run.pk}/review/")
    rows = page.locator("tr[data-item]")
    listed = {int(rows.nth(i).get_attribute("data-item")) for i in range(rows.count())}
    assert worst.pk not in listed and len(listed) == RunItem.objects.filter(run=run).count() - 1
    assert "Reviewed 1" in text_of(page, "#queue-counts")
    shoot(page, "review_queue")

    # keyboard: n opens the head of the queue
    page.goto(item_path(worst))
    with page.expect_navigation():
        page.keyboard.press("n")
    assert f"/runs/{run.pk}/items/{review_queue_head(run.pk)}/" in page.url


def test_a_viewer_sees_verdicts_but_no_controls_and_a_forged_post_is_refused(page, make_user) -> None:
    run = demo_run()
    make_user("vic", role="viewer")
    item = RunItem.objects.filter(run=run).order_by("id").first()
    claim = Claim.objects.filter(item=item).first()
    log_in(page, "vic")

    page.goto(item_path(item))

    assert page.locator(".claim .verdict").count() == Claim.objects.filter(item=item).count()
    assert page.locator(".review-controls, .override-form").count() == 0
    token = next(cookie["value"] for cookie in page.context.cookies() if cookie["name"] == "csrftoken")
    response = page.request.post(
        f"{item_path(item)}claims/{claim.pk}/review/",
        form={"action": "override", "verdict": "CONTRADICTED", "reason": "forged"},
        headers={"X-CSRFToken": token, "HX-Request": "true", "Referer": page.url},
    )
    assert response.status == 403
    assert not VerdictOverride.objects.exists()


def test_dataset_payloads_execute_nothing_on_the_item_page(page, make_user) -> None:
    row = {
        "id": "xss-1",
        "query": f"What happened? {PAYLOAD}",
        "response": f"The proposal passed {PAYLOAD} [c1]. It was executed on chain [c1].",
        "contexts": [{"id": "c1", "text": f"The proposal passed and was executed. {PAYLOAD}", "score": 0.9}],
        "reference_answer": PAYLOAD,
        "tags": ["<b>tag</b>"],
    }
    run = demo_run(json.dumps(row).encode() + b"\n", name="xss")
    make_user("rita", role="reviewer")
    item = RunItem.objects.get(run=run)
    dialogs: list[str] = []
    errors: list[str] = []
    page.on("dialog", lambda dialog: (dialogs.append(dialog.message), dialog.dismiss()))
    page.on("console", lambda message: errors.append(message.text) if message.type == "error" else None)
    log_in(page, "rita")

    page.goto(item_path(item))
    page.wait_for_load_state("networkidle")
    if Claim.objects.filter(item=item).exists():  # and after an in-place swap
        claim = Claim.objects.filter(item=item).first()
        page.click(f"#claim-{claim.pk} button:has-text('Confirm')")
        page.wait_for_selector(f"#claim-{claim.pk} .reviewed-mark")

    assert dialogs == []
    assert page.evaluate("window.__xss") is None
    assert page.locator("main script:not([src]), main img").count() == 0
    assert "<script>" in page.locator(".question").inner_text()  # shown as text
    assert not [error for error in errors if "xss" in error.lower()]
    shoot(page, "review_item_payloads")

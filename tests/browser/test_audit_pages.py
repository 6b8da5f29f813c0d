"""Audits in a real browser: start one on the run page, review drawn items through the item page, see the
calibrated figure appear once 30 items are audited."""

from __future__ import annotations

import re

import pytest

from bench.seed_review import seed_finished_run
from evaluations.models import Audit, AuditItem, Claim
from evaluations.services import overrides as review_services
from tests.browser.conftest import log_in, shoot_widths

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def text_of(page, selector: str) -> str:
    return " ".join(page.locator(selector).inner_text().split())


def test_start_an_audit_review_drawn_items_and_see_the_calibrated_figure(page, make_user) -> None:
    # given: a finished run of 80 items, one claim each (a few have two), and a reviewer
    run = seed_finished_run(items=80, claims=1, name="audit-browser")
    reviewer = make_user("rita", role="reviewer")
    log_in(page, "rita")

    # the run page offers an audit; start one of 40 items
    page.goto(f"/runs/{run.pk}/")
    assert page.locator("#audit-start input[name=size]").input_value() == "150"
    shoot_widths(page, "audit_run_page_start", full_page=False)
    page.fill("#audit-start input[name=size]", "40")
    with page.expect_navigation():
        page.click("#audit-start button[type=submit]")
    assert page.url.endswith(f"/runs/{run.pk}/audit/")
    assert "Audited 0 / 40" in text_of(page, "#audit-counts")
    assert page.locator("tr[data-item]").count() == 40
    audit = Audit.objects.get(run=run)

    # people audit 28 drawn items outside the browser: they overturn the judge on every third one
    entries = list(AuditItem.objects.filter(audit=audit).order_by("position"))
    for number, entry in enumerate(entries[:28]):
        for claim in Claim.objects.filter(item_id=entry.item_id):
            if number % 3 == 0 and claim.current_verdict == "SUPPORTED":
                review_services.claim_override(
                    claim=claim, reviewer=reviewer, new_verdict="CONTRADICTED", reason="the context does not say so"
                )
            else:
                review_services.claim_confirm(claim=claim, reviewer=reviewer)

    # below 30: progress, no figure
    page.goto(f"/runs/{run.pk}/")
    assert "28 / 40 audited" in text_of(page, "#audit-progress")
    assert "2 to go" in text_of(page, "#calibration-progress")
    assert page.locator(".calibrated-line").count() == 0
    shoot_widths(page, "audit_run_page_progress", full_page=False)

    # the last two in the browser: continue the audit, confirm each claim in place, then the next with "a"
    with page.expect_navigation():
        page.click("#continue-audit")
    for step in range(2):
        entry = entries[28 + step]
        assert f"/items/{entry.item_id}/" in page.url
        assert f"Audit {29 + step} / 40" in text_of(page, "#audit-state")
        for claim in Claim.objects.filter(item_id=entry.item_id).order_by("position"):
            page.click(f"#claim-{claim.pk} button:has-text('Confirm')")
            page.wait_for_selector(f"#claim-{claim.pk} .reviewed-mark")
        page.wait_for_selector("#audit-state .reviewed-mark")
        assert "Audited by rita" in text_of(page, "#audit-state")
        if step == 0:
            shoot_widths(page, "audit_item_page")
            with page.expect_navigation():
                page.keyboard.press("a")

    # 30 audited: the calibrated figure appears beside the judge's
    page.goto(f"/runs/{run.pk}/")
    assert "30 / 40 audited" in text_of(page, "#audit-progress")
    line = text_of(page, "#calibrated-faithfulness .calibrated-line")
    match = re.fullmatch(
        r"judge (\d\.\d\d); calibrated (\d\.\d\d) \[(\d\.\d\d), (\d\.\d\d)\] from 30 audited items", line
    )
    assert match, line
    judge, calibrated = float(match[1]), float(match[2])
    assert calibrated < judge  # people overturned supported claims: the calibrated faithfulness is lower
    assert page.locator("#calibrated-faithfulness_pass_rate").count() == 1
    shoot_widths(page, "audit_run_page_calibrated", full_page=False)

    page.goto(f"/runs/{run.pk}/audit/")
    assert "Audited 30 / 40" in text_of(page, "#audit-counts")
    assert page.locator("tr.is-audited").count() == 30
    shoot_widths(page, "audit_queue")

"""Human-calibrated scores in the API: GET /api/runs/{id}/ carries the run's audit figures and
GET /api/compare/ the calibrated comparison, the same dicts `evaluations.audit_estimates` gives the pages."""

from __future__ import annotations

import pytest

from bench.seed_review import seed_finished_run
from evaluations.audit_estimates import calibrated_comparison, run_calibration
from evaluations.models import AuditItem, Claim
from evaluations.services import audits
from evaluations.services import overrides as review_services

pytestmark = [pytest.mark.django_db, pytest.mark.sqlite]


def audit(run, reviewer, *, audited: int, size: int = 40) -> None:
    audits.audit_start(run=run, size=size, seed=7, user=reviewer)
    for entry in AuditItem.objects.filter(audit__run=run).order_by("position")[:audited]:
        for claim in Claim.objects.filter(item_id=entry.item_id):
            review_services.claim_confirm(claim=claim, reviewer=reviewer)


def test_a_run_without_an_audit_is_not_calibrated(viewer_api, finished_run) -> None:
    body = viewer_api.get(f"/api/runs/{finished_run.pk}/").json()
    assert body["calibrated"] is None


def test_below_30_audited_items_the_run_read_shows_progress_only(viewer_api, reviewer) -> None:
    run = seed_finished_run(items=40, claims=1, name="cal")
    audit(run, reviewer, audited=12)

    calibrated = viewer_api.get(f"/api/runs/{run.pk}/").json()["calibrated"]

    assert calibrated["status"] == "in_progress"
    assert calibrated["audit"]["audited"] == 12 and calibrated["audit"]["size"] == 40
    assert calibrated["estimates"] == {}


def test_a_calibrated_run_read_carries_the_figures_of_the_pages(viewer_api, reviewer) -> None:
    run = seed_finished_run(items=40, claims=1, name="cal")
    audit(run, reviewer, audited=30)

    calibrated = viewer_api.get(f"/api/runs/{run.pk}/").json()["calibrated"]

    expected = run_calibration(run.pk)
    assert calibrated["status"] == "calibrated" and calibrated["audit"]["audited"] == 30
    faithfulness = calibrated["estimates"]["faithfulness"]
    want = expected["estimates"]["faithfulness"]
    assert faithfulness["calibrated"]["mean"] == pytest.approx(want["calibrated"]["mean"])
    assert faithfulness["calibrated"]["lambda"] == pytest.approx(want["calibrated"]["lambda"])
    low, high = faithfulness["calibrated"]["ci_low"], faithfulness["calibrated"]["ci_high"]
    assert low <= faithfulness["calibrated"]["mean"] <= high
    assert faithfulness["n_audited"] == 30 and faithfulness["judge"]["mean"] == pytest.approx(want["judge"]["mean"])
    assert "lambda" not in faithfulness["ppi"]


def test_the_comparison_compares_calibrated_means_once_both_runs_are_calibrated(viewer_api, reviewer) -> None:
    base = seed_finished_run(items=40, claims=1, name="cal")
    candidate = seed_finished_run(items=40, claims=1, name="cal", judge=base.judge_config)
    url = f"/api/compare/?base={base.pk}&candidate={candidate.pk}"
    audit(base, reviewer, audited=30)
    assert viewer_api.get(url).json()["calibrated"] is None  # the candidate has no audit yet

    audit(candidate, reviewer, audited=30)
    body = viewer_api.get(url).json()

    expected = calibrated_comparison(base.pk, candidate.pk)["metrics"]["faithfulness"]
    got = body["calibrated"]["metrics"]["faithfulness"]
    assert got["delta"] == pytest.approx(expected["delta"])
    assert got["ci_low"] <= got["delta"] <= got["ci_high"]
    assert got["significant"] is expected["significant"]

"""Items (the run page's table: filters, pinned queries), one item (everything the item page shows),
claim reviews (recomputed item and run scores), and run comparison."""

from __future__ import annotations

import pytest
from rest_framework.test import APIClient

from bench.seed_review import seed_finished_run
from evaluations.comparison import run_compare
from evaluations.models import Claim, MetricResult, RunItem, VerdictOverride
from tests.api.conftest import assert_error
from tests.evaluations.scored_runs import scored_run

# sqlite: the API also works on the embedded default (make test's second pass).
pytestmark = [pytest.mark.django_db, pytest.mark.sqlite]

ITEM_PAGE_QUERIES = 5  # the run, the page of items, their count, their results, their claims' verdicts
ITEM_DETAIL_QUERIES = 5  # the item with its run and example, results, claims, their history, judge calls


def test_items_are_the_run_pages_rows_with_its_filters(viewer_api, finished_run) -> None:
    url = f"/api/runs/{finished_run.pk}/items/"
    page = viewer_api.get(url).json()
    assert page["count"] == 6 and [row["position"] for row in page["results"]] == [1, 2, 3, 4, 5, 6]
    row = page["results"][0]
    assert {score["metric"] for score in row["scores"]} >= {"faithfulness", "rubric"}
    assert row["url"] == f"http://testserver/api/runs/{finished_run.pk}/items/{row['id']}/"
    assert sum(row["verdicts"].values()) == 2
    failing = viewer_api.get(f"{url}?failing=any").json()
    expected = RunItem.objects.filter(run=finished_run, results__passed=False).distinct().count()
    assert failing["count"] == expected
    assert viewer_api.get(f"{url}?reviewed=yes").json()["count"] == 0
    assert viewer_api.get(f"{url}?status=done").json()["count"] == 6
    tagged = viewer_api.get(f"{url}?tag=nope").json()
    assert tagged["count"] == 0
    ordered = viewer_api.get(f"{url}?sort=-overall").json()["results"]
    overall = [row["overall"] for row in ordered if row["overall"] is not None]
    assert overall == sorted(overall, reverse=True)


@pytest.mark.parametrize(
    "query, field",
    [("failing=nope", "failing"), ("status=x", "status"), ("reviewed=maybe", "reviewed"), ("sort=x", "sort")],
)
def test_bad_item_filters_are_400_naming_the_parameter(viewer_api, finished_run, query, field) -> None:
    assert_error(viewer_api.get(f"/api/runs/{finished_run.pk}/items/?{query}"), 400, "invalid", field)


def test_items_and_item_reads_use_a_fixed_number_of_queries(viewer, django_assert_num_queries) -> None:
    client = APIClient()
    client.force_authenticate(viewer)
    for size in (3, 12):
        run = seed_finished_run(items=size, claims=3, name=f"size-{size}")
        with django_assert_num_queries(ITEM_PAGE_QUERIES):
            assert client.get(f"/api/runs/{run.pk}/items/").status_code == 200
        item = run.items.order_by("-id").first()
        VerdictOverride.objects.create(
            claim=item.claims.first(), reviewer=viewer, old_verdict="SUPPORTED", new_verdict="SUPPORTED"
        )
        with django_assert_num_queries(ITEM_DETAIL_QUERIES):
            assert client.get(f"/api/runs/{run.pk}/items/{item.pk}/").status_code == 200


def test_one_item_has_results_claims_audit_and_judge_calls(viewer_api, finished_run) -> None:
    item = finished_run.items.order_by("id").first()
    body = viewer_api.get(f"/api/runs/{finished_run.pk}/items/{item.pk}/").json()
    assert body["id"] == item.pk and body["external_id"] == item.example.external_id
    assert body["query"] == item.example.query and body["contexts"][0]["id"]
    assert "faithfulness" in [r["metric"] for r in body["results"]]
    claim = body["claims"][0]
    assert {"judge_verdict", "current_verdict", "evidence", "context_ids", "history"} <= set(claim)
    assert "hallucination_detected" in body["citation_audit"] and isinstance(body["citation_audit"]["sentences"], list)
    assert isinstance(body["judge_calls"], list)
    assert_error(viewer_api.get(f"/api/runs/{finished_run.pk}/items/999999/"), 404)
    assert_error(viewer_api.get(f"/api/runs/999999/items/{item.pk}/"), 404)


def test_an_override_returns_the_recomputed_item_and_run(reviewer_api, finished_run) -> None:
    item = finished_run.items.order_by("id").first()
    claim = item.claims.order_by("position").first()
    new = "CONTRADICTED" if claim.current_verdict != "CONTRADICTED" else "SUPPORTED"
    response = reviewer_api.post(
        f"/api/claims/{claim.pk}/override/", {"verdict": new, "reason": "the context says otherwise"}, format="json"
    )
    assert response.status_code == 200, response.content
    body = response.json()
    assert body["claim"]["current_verdict"] == new and body["claim"]["history"][0]["reason"]
    assert body["claim"]["history"][0]["reviewer"] == "rita"
    faithfulness = MetricResult.objects.get(item=item, metric="faithfulness")
    item.refresh_from_db()
    assert body["item"]["overall_score"] == item.overall_score
    assert next(r for r in body["item"]["results"] if r["metric"] == "faithfulness")["score"] == faithfulness.score
    finished_run.refresh_from_db()
    assert body["run"]["aggregates"]["review"] == finished_run.aggregates["review"]
    assert body["run"]["summary"][0]["metric"] == "faithfulness"


def test_override_errors_confirm_and_undo(reviewer_api, finished_run) -> None:
    claim = Claim.objects.filter(item__run=finished_run).order_by("id").first()
    url = f"/api/claims/{claim.pk}/"
    other = "CONTRADICTED" if claim.current_verdict != "CONTRADICTED" else "SUPPORTED"
    assert_error(reviewer_api.post(f"{url}override/", {"verdict": other}, format="json"), 400, "invalid", "reason")
    assert_error(reviewer_api.post(f"{url}override/", {"verdict": "MAYBE"}, format="json"), 400, "invalid", "verdict")
    assert_error(reviewer_api.post(f"{url}undo/"), 409, "conflict")
    confirmed = reviewer_api.post(f"{url}confirm/", {}, format="json")
    assert confirmed.status_code == 200 and confirmed.json()["claim"]["reviewed_at"]
    reviewer_api.post(f"{url}override/", {"verdict": other, "reason": "no"}, format="json")
    undone = reviewer_api.post(f"{url}undo/")
    assert undone.status_code == 200 and undone.json()["claim"]["current_verdict"] == claim.current_verdict
    assert_error(reviewer_api.post("/api/claims/999999/confirm/", {}, format="json"), 404)


def test_compare_gives_the_services_numbers(viewer_api, small_dataset, offline) -> None:
    version = small_dataset("rivers", count=3)
    base = scored_run(version, offline, {f"q-{n}": {"faithfulness": 0.9, "relevancy": 1.0} for n in (1, 2, 3)})
    candidate = scored_run(version, offline, {f"q-{n}": {"faithfulness": 0.5, "relevancy": 1.0} for n in (1, 2)})
    response = viewer_api.get(f"/api/compare/?base={base.pk}&candidate={candidate.pk}")
    assert response.status_code == 200, response.content
    body = response.json()
    expected = run_compare(base.pk, candidate.pk)
    assert body["matched"] == expected.matched == 2 and body["only_in_base"] == ["q-3"]
    faith = next(m for m in body["metrics"] if m["metric"] == "faithfulness")
    assert faith["delta"] == pytest.approx(expected.metric("faithfulness").delta)
    assert faith["ci_low"] == expected.metric("faithfulness").ci_low
    assert len(body["points"]) == 2 and body["settings"]["rows"]


def test_compare_errors(viewer_api, small_dataset, offline) -> None:
    base = scored_run(small_dataset("rivers"), offline, {"q-1": {"relevancy": 1.0}})
    other = scored_run(small_dataset("lakes"), offline, {"q-1": {"relevancy": 1.0}})
    assert_error(viewer_api.get(f"/api/compare/?base={base.pk}"), 400, "invalid", "candidate")
    assert_error(viewer_api.get(f"/api/compare/?base=x&candidate={base.pk}"), 400, "invalid", "base")
    assert_error(viewer_api.get(f"/api/compare/?base={base.pk}&candidate=999999"), 404, "not_found")
    error = assert_error(viewer_api.get(f"/api/compare/?base={base.pk}&candidate={other.pk}"), 400, "invalid")
    assert "different datasets" in error["message"]

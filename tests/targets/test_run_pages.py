"""A run with a live target on the pages: the new-run form, the run page, the item page; and run comparison."""

from __future__ import annotations

import pytest
from django.urls import reverse

from evaluations.comparison import compare_item, run_compare
from evaluations.models import Run, RunItem
from evaluations.services.executor import run_execute_in_process
from evaluations.services.runs import run_create
from targets.models import TargetSnapshot
from tests.targets.test_target_runs import demo_version

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow]  # starts the demo RAG server
METRICS = ["faithfulness", "relevancy", "rubric", "retrieval"]


@pytest.fixture
def runs_of_both_kinds(demo_rag, make_target, offline_judge):
    """Two finished runs of the demo dataset: the dataset's stored answers, and the demo target's."""
    version = demo_version()
    target = make_target(demo_rag("--fail-ids", "scenario-b-off-topic").url, name="demo")
    stored = run_create(dataset_version=version, judge_config=offline_judge, metrics=METRICS, enqueue=False)
    live = run_create(
        dataset_version=version, judge_config=offline_judge, metrics=METRICS, target=target, enqueue=False
    )
    return run_execute_in_process(run=stored), run_execute_in_process(run=live)


def login(client, make_user, role: str | None = None):
    client.force_login(make_user(role or "viewer", role=role))
    return client


def test_the_run_page_shows_the_target_and_its_latency(client, make_user, runs_of_both_kinds):
    _, live = runs_of_both_kinds

    html = login(client, make_user).get(reverse("evaluations:run_detail", args=[live.pk])).content.decode()

    summary = live.aggregates["target"]
    assert summary["errors"] == 1 and summary["calls"] == live.items_total
    assert 'id="target-latency"' in html and "Latency p95" in html
    assert f"{summary['latency_ms']['p50']:.0f} ms" in html
    assert "answers from target" in html and reverse("targets:detail", args=[live.target_id]) in html
    snapshot = TargetSnapshot.objects.filter(item__run=live, status="ok").first()
    assert snapshot.answer[:40] in html  # the table shows the target's answer, not the dataset's


def test_the_item_page_shows_what_the_target_returned(client, make_user, runs_of_both_kinds):
    _, live = runs_of_both_kinds
    snapshot = TargetSnapshot.objects.filter(item__run=live, status="ok").select_related("item").first()

    html = (
        login(client, make_user)
        .get(reverse("evaluations:item_review", args=[live.pk, snapshot.item_id]))
        .content.decode()
    )

    assert "What the target returned" in html and 'id="run-target-latency"' in html
    assert f"{snapshot.latency_ms} ms" in html
    assert '<details class="raw"><summary>Raw body' in html and "&quot;sources&quot;" in html
    assert snapshot.retrieved_ids[0] in html
    assert snapshot.item.example.response[:60] not in html  # the dataset's stored answer is not the one shown


def test_the_item_page_of_a_target_failure_says_the_target_failed(client, make_user, runs_of_both_kinds):
    _, live = runs_of_both_kinds
    item = RunItem.objects.get(run=live, example__external_id="scenario-b-off-topic")

    html = login(client, make_user).get(reverse("evaluations:item_review", args=[live.pk, item.pk])).content.decode()

    assert "The target failed on this item:" in html and "HTTP 500" in html
    assert "internal error answering scenario-b-off-topic" in html


def test_comparing_stored_answers_with_a_target_run_reads_each_runs_answers(runs_of_both_kinds):
    stored, live = runs_of_both_kinds

    comparison = run_compare(stored, live)
    diff = compare_item(stored, live, "query-004")

    assert comparison.matched >= live.items_done - 1
    snapshot = TargetSnapshot.objects.get(item__run=live, item__example__external_id="query-004")
    assert diff.base.answered_by == "dataset" and diff.candidate.answered_by == "target demo"
    assert diff.candidate.response == snapshot.answer != diff.base.response
    assert diff.candidate.contexts == snapshot.contexts
    answers = next(row for row in diff.settings.rows if row.key == "answers")
    assert answers.differs and answers.base == "dataset" and answers.candidate.startswith("target demo (")


def test_the_new_run_form_starts_a_run_with_a_target(client, make_user, make_target, offline_judge):
    version = demo_version()
    target = make_target("http://127.0.0.1:9/query", name="demo")
    client = login(client, make_user, "reviewer")

    page = client.get(reverse("evaluations:run_new")).content.decode()
    assert "None: score the dataset&#x27;s stored answers" in page and ">demo</option>" in page

    data = {
        "dataset_version": version.pk, "judge_config": offline_judge.pk, "target": target.pk,
        "metrics": ["relevancy"], "repeats": 1, "partial_weight": 0.5,
        "weights__faithfulness": 0.35, "weights__relevance": 0.25, "weights__completeness": 0.25,
        "weights__reasoning_quality": 0.15,
    }  # fmt: skip
    response = client.post(reverse("evaluations:run_new"), data)

    assert response.status_code == 302, response.context["form"].errors
    run = Run.objects.get()
    assert response.status_code == 302 and run.target_id == target.pk
    assert run.target_config["url"] == "http://127.0.0.1:9/query"


def test_the_target_page_lists_the_runs_that_called_it(client, make_user, runs_of_both_kinds):
    stored, live = runs_of_both_kinds

    html = login(client, make_user).get(reverse("targets:detail", args=[live.target_id])).content.decode()

    assert reverse("evaluations:run_detail", args=[live.pk]) in html
    assert reverse("evaluations:run_detail", args=[stored.pk]) not in html
    assert f"{live.aggregates['target']['latency_ms']['p50']:.0f} ms" in html

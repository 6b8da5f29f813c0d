"""The evaluations admin reads well: items named by run and example id, claims cut at a word, aggregates as a table."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import User
from django.urls import reverse

from evaluations.aggregates import ItemSummary, MetricScore, run_aggregates
from evaluations.models import Claim, MetricResult, Run, RunItem, VerdictOverride, shorten

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def admin_client(client):
    client.force_login(User.objects.create_superuser("root", "root@example.com", "pw-12345678"))
    return client


def score_item(run: Run, example) -> RunItem:
    item = RunItem.objects.create(run=run, example=example, status="done")
    MetricResult.objects.create(item=item, metric="retrieval", score=1.0, passed=True, threshold=0.5)
    claim = Claim.objects.create(
        item=item,
        position=1,
        text="The river level rose by two centimetres in the spring according to the daily gauges.",
        judge_verdict="SUPPORTED",
        current_verdict="SUPPORTED",
    )
    VerdictOverride.objects.create(claim=claim, old_verdict="SUPPORTED", new_verdict="CONTRADICTED")
    return item


@pytest.fixture
def scored_item(make_dataset, offline_judge) -> RunItem:
    version = make_dataset(2)
    run = Run.objects.create(name="nightly", dataset_version=version, judge_config=offline_judge, metrics=["retrieval"])
    return score_item(run, version.examples.get(external_id="q-2"))


def test_results_claims_and_overrides_are_labelled_with_the_run_and_the_example_id(admin_client, scored_item):
    for model in ("metricresult", "claim", "verdictoverride"):
        html = admin_client.get(reverse(f"admin:evaluations_{model}_changelist")).content.decode()
        assert "nightly · q-2" in html, model
        assert f"{scored_item.run_id}/{scored_item.example_id}" not in html, model


@pytest.mark.parametrize("model", ["metricresult", "claim", "verdictoverride"])
def test_the_labels_cost_no_query_per_row(admin_client, scored_item, model, django_assert_max_num_queries):
    version, judge = scored_item.run.dataset_version, scored_item.run.judge_config
    for number in range(8):
        run = Run.objects.create(name=f"run-{number}", dataset_version=version, judge_config=judge)
        score_item(run, scored_item.example)
    with django_assert_max_num_queries(10):
        assert admin_client.get(reverse(f"admin:evaluations_{model}_changelist")).status_code == 200


def test_a_claim_label_is_cut_at_a_word_boundary(scored_item):
    label = str(Claim.objects.get(item=scored_item))

    assert label == "The river level rose by two centimetres in the spring…"
    assert len(label) <= 60


@pytest.mark.parametrize(
    ("text", "label"),
    [
        ("Short claim.", "Short claim."),
        ("word " * 11 + "end", "word word word word word word word word word word word end"),  # 59: fits
        ("a" * 30 + " " + "b" * 40, "a" * 30 + "…"),
        ("x" * 80, "x" * 59 + "…"),  # one word longer than the limit: nowhere else to cut
        (
            "alpha, beta, gamma, delta, epsilon, zeta, eta, theta, iota, kappa",
            "alpha, beta, gamma, delta, epsilon, zeta, eta, theta, iota…",
        ),
        ("spaced   out\n\ntext", "spaced out text"),
    ],
)
def test_shorten(text, label):
    assert shorten(text, 60) == label


def test_run_aggregates_show_as_a_table(admin_client, make_dataset, offline_judge):
    items = [
        ItemSummary(status="done", tags=("factual",), overall=0.8, results={"retrieval": MetricScore(1.0, True)}),
        ItemSummary(status="done", tags=(), overall=0.4, results={"retrieval": MetricScore(0.25, False)}),
        ItemSummary(status="error"),
    ]
    run = Run.objects.create(
        dataset_version=make_dataset(1),
        judge_config=offline_judge,
        metrics=["retrieval"],
        aggregates=run_aggregates(items, ["retrieval"]),
    )

    html = admin_client.get(reverse("admin:evaluations_run_change", args=[run.pk])).content.decode()

    assert "All items</strong>: 3 items, 2 done, 1 errored, 0 unfinished" in html
    assert "<th>Mean</th><th>Median</th><th>Pass rate</th>" in html
    assert (
        '<th scope="row">retrieval</th><td>0.625</td><td>0.625</td><td>0.500</td><td>1</td><td>2</td><td>0</td><td>1</td><td>–</td>'
        in html
    )
    assert '<th scope="row">overall</th><td>0.600</td>' in html
    assert "Tag “factual”</strong>: 1 items" in html
    assert '"mean": 0.625' not in html  # no raw JSON blob


def test_a_run_without_aggregates_says_so(admin_client, make_dataset, offline_judge):
    run = Run.objects.create(dataset_version=make_dataset(1), judge_config=offline_judge, metrics=["retrieval"])

    html = admin_client.get(reverse("admin:evaluations_run_change", args=[run.pk])).content.decode()

    assert "No aggregates yet" in html


def test_a_result_without_a_threshold_shows_a_dash_not_a_pass(admin_client, scored_item):
    MetricResult.objects.create(item=scored_item, metric="citation_audit", score=0.0, passed=None, threshold=None)

    listing = admin_client.get(reverse("admin:evaluations_metricresult_changelist")).content.decode()
    result = MetricResult.objects.get(metric="citation_audit")
    detail = admin_client.get(reverse("admin:evaluations_metricresult_change", args=[result.pk])).content.decode()

    assert '<td class="field-passed_mark">–</td>' in listing
    assert '<td class="field-passed_mark">✓ passed</td>' in listing  # the retrieval result
    assert "icon-unknown" not in listing and "icon-unknown" not in detail
    assert '<div class="readonly">–</div>' in detail

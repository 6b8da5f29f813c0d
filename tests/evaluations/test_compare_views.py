"""The comparison pages: /runs/compare/ (pick form, table, scatter, changes, settings) and /runs/compare/item/."""

from __future__ import annotations

import html
import re

import pytest
from django.test import Client

from judges.services import judge_config_create
from tests.evaluations.helpers import example
from tests.evaluations.scored_runs import ERROR, scored_run

# The analyst pages serve the embedded path too (make run): they also run in the SQLite pass.
pytestmark = [pytest.mark.sqlite]

COMPARE = "/runs/compare/"
ITEM = "/runs/compare/item/"


@pytest.fixture
def viewer(make_user) -> Client:
    client = Client()
    client.force_login(make_user("vera", role="viewer"))
    return client


@pytest.fixture
def version(make_dataset):
    return make_dataset(12, name="river")


@pytest.fixture
def runs(version, offline_judge):
    """Base: every faithfulness 0.9; candidate: q-1..q-8 dropped (q-8 by the most), q-12 errored."""
    base = scored_run(
        version,
        offline_judge,
        {f"q-{n}": {"faithfulness": 0.9, "relevancy": 1.0, "claims": [(f"Claim {n}.", "SUPPORTED", "SUPPORTED")]}
         for n in range(1, 13)},
        name="before",
    )  # fmt: skip
    candidate_scores = {
        f"q-{n}": {
            "faithfulness": 0.9 - 0.05 * n if n <= 8 else 0.9,
            "relevancy": 1.0,
            "claims": [(f"Claim {n}.", "SUPPORTED", "CONTRADICTED" if n == 8 else "SUPPORTED")],
        }
        for n in range(1, 12)
    }
    candidate_scores["q-12"] = ERROR
    candidate = scored_run(version, offline_judge, candidate_scores, name="after")
    return base, candidate


def text(response) -> str:
    return html.unescape(" ".join(re.sub(r"<[^>]+>", " ", response.content.decode()).split()))


def test_the_comparison_shows_each_metric_with_its_interval_significance_flips_and_exclusions(viewer, runs) -> None:
    base, candidate = runs

    response = viewer.get(COMPARE, {"base": base.pk, "candidate": candidate.pk})

    assert response.status_code == 200
    page = response.content.decode()
    faithfulness = re.search(r'<tr data-metric="faithfulness".*?</tr>', page, re.S).group(0)
    assert "0.900" in faithfulness and "significant drop" in faithfulness
    assert re.search(r"\[−0\.\d+, −0\.\d+\]", faithfulness)  # the interval, both ends below 0
    relevancy = re.search(r'<tr data-metric="relevancy".*?</tr>', page, re.S).group(0)
    assert "not significant" in relevancy
    # errored q-12 left out and counted; 11 pairs
    assert re.search(r">11</td>\s*<td class=\"num\"><span class=\"error\">1</span>", faithfulness)
    assert 'id="compare-scatter"' in page and "js/compare.js" in page and "vendor/plotly.min.js" in page
    assert "cdn.plot.ly" not in page
    # regressions sorted by size, linking to the item diff
    links = re.findall(r'class="change-link" href="([^"]+)"', page)
    assert links[0] == f"/runs/compare/item/?base={base.pk}&amp;candidate={candidate.pk}&amp;example=q-8"
    assert 'id="settings-warning"' not in page  # same judge, same prompts


def test_a_comparison_across_judges_says_so_at_the_top_with_the_settings_diff(viewer, version, offline_judge) -> None:
    other = judge_config_create(name="other-judge", provider="offline", model="heuristic-v2")
    scores = {f"q-{n}": {"faithfulness": 0.8} for n in range(1, 6)}
    base = scored_run(version, offline_judge, scores, metrics=("faithfulness",))
    candidate = scored_run(version, other, scores, metrics=("faithfulness",), prompt_versions={"faithfulness": "2"})

    page = viewer.get(COMPARE, {"base": base.pk, "candidate": candidate.pk}).content.decode()

    warning = re.search(r'id="settings-warning">(.*?)</div>', page, re.S).group(1)
    assert "different judges or prompts" in warning and "judge" in warning and "prompt.faithfulness" in warning
    assert re.search(r'<tr class="differs" data-setting="model">.*?heuristic-v1.*?heuristic-v2', page, re.S)


def test_unmatched_examples_are_counted_and_listed(viewer, make_dataset, offline_judge) -> None:
    old = make_dataset([example(n) for n in range(1, 6)], name="river")
    new = make_dataset([example(n) for n in range(2, 8)], name="river")
    base = scored_run(old, offline_judge, {f"q-{n}": {"faithfulness": 1.0} for n in range(1, 6)})
    candidate = scored_run(new, offline_judge, {f"q-{n}": {"faithfulness": 0.5} for n in range(2, 8)})

    response = viewer.get(COMPARE, {"base": base.pk, "candidate": candidate.pk})

    page = response.content.decode()
    assert re.search(r'id="matched">4<', page)
    assert re.search(r'id="only-in-base">1<', page) and re.search(r'id="only-in-candidate">2<', page)
    unmatched = re.search(r'id="unmatched">.*?</section>', page, re.S).group(0)
    assert "<code>q-1</code>" in unmatched and "<code>q-6</code>" in unmatched and "<code>q-7</code>" in unmatched


def test_runs_of_different_datasets_are_refused_with_a_clear_message(viewer, make_dataset, offline_judge) -> None:
    river, lake = make_dataset(3, name="river"), make_dataset(3, name="lake")
    base = scored_run(river, offline_judge, {"q-1": {"faithfulness": 1.0}})
    candidate = scored_run(lake, offline_judge, {"q-1": {"faithfulness": 1.0}})

    response = viewer.get(COMPARE, {"base": base.pk, "candidate": candidate.pk})

    assert response.status_code == 400
    assert "different datasets" in text(response) and "'river'" in text(response) and "'lake'" in text(response)
    assert 'name="base"' in response.content.decode()  # the form to pick again

    item = viewer.get(ITEM, {"base": base.pk, "candidate": candidate.pk, "example": "q-1"})
    assert item.status_code == 400 and "different datasets" in text(item)


def test_without_both_runs_the_page_is_a_form_and_a_base_alone_offers_its_datasets_runs(
    viewer, runs, make_dataset, offline_judge
) -> None:
    base, candidate = runs
    other = scored_run(make_dataset(2, name="lake"), offline_judge, {"q-1": {"faithfulness": 1.0}})

    blank = viewer.get(COMPARE)
    with_base = viewer.get(COMPARE, {"base": base.pk})

    assert blank.status_code == 200 and with_base.status_code == 200
    assert f'<option value="{other.pk}"' in blank.content.decode()
    page = with_base.content.decode()
    candidate_select = re.search(r'<select id="compare-candidate".*?</select>', page, re.S).group(0)
    assert f'<option value="{candidate.pk}"' in candidate_select
    assert (
        f'<option value="{other.pk}"' not in candidate_select and f'<option value="{base.pk}"' not in candidate_select
    )
    assert re.search(rf'<option value="{base.pk}" selected>', page)


@pytest.mark.parametrize(
    ("params", "status", "message"),
    [
        ({"base": "abc", "candidate": "1"}, 400, "base: 'abc' is not a run id"),
        ({"base": "1", "candidate": "1 OR 1=1"}, 400, "candidate: '1 OR 1=1' is not a run id"),
        ({"base": "999999", "candidate": "999998"}, 404, "base: no run with id 999999"),
    ],
)
def test_bad_and_unknown_run_ids_get_a_clear_message(viewer, db, params, status, message) -> None:
    response = viewer.get(COMPARE, params)

    assert response.status_code == status
    assert message in text(response)


def test_an_unknown_metric_is_refused_naming_the_parameter(viewer, runs) -> None:
    base, candidate = runs

    response = viewer.get(COMPARE, {"base": base.pk, "candidate": candidate.pk, "metric": "nope"})

    assert response.status_code == 400
    assert "metric: &#x27;nope&#x27; is not one of faithfulness, relevancy" in response.content.decode()


def test_the_metric_parameter_switches_the_scatter_and_the_changes(viewer, runs) -> None:
    base, candidate = runs

    page = viewer.get(COMPARE, {"base": base.pk, "candidate": candidate.pk, "metric": "relevancy"}).content.decode()

    assert "relevancy: base vs candidate per example" in page
    assert "No example dropped." in page and "No example rose." in page


def test_the_item_diff_shows_both_answers_claims_with_verdicts_and_score_changes(viewer, runs) -> None:
    base, candidate = runs

    response = viewer.get(ITEM, {"base": base.pk, "candidate": candidate.pk, "example": "q-8"})

    assert response.status_code == 200
    page = response.content.decode()
    assert "What did report 8 find about the river?" in page
    base_side = re.search(r'id="side-base".*?</section>', page, re.S).group(0)
    candidate_side = re.search(r'id="side-candidate".*?</section>', page, re.S).group(0)
    assert "Report 8 found the river level rose by 8 cm" in base_side
    assert 'class="badge verdict-SUPPORTED"' in base_side and ">supported<" in base_side
    assert 'class="badge verdict-CONTRADICTED"' in candidate_side and ">contradicted<" in candidate_side
    assert "judge said supported" in candidate_side  # the reviewer's verdict differs from the judge's
    faithfulness = re.search(r'<tr data-metric="faithfulness">.*?</tr>', page, re.S).group(0)
    assert "0.900" in faithfulness and "0.500" in faithfulness and "−0.400" in faithfulness
    assert "badge-pass" in faithfulness and "badge-fail" in faithfulness
    assert "the runs share every setting" in page


@pytest.mark.parametrize(
    ("params", "status", "message"),
    [
        ({"base": "1", "candidate": "2"}, 400, "example: name the example"),
        ({"candidate": "2", "example": "q-1"}, 400, "base: pick a run"),
        ({"base": "x", "candidate": "2", "example": "q-1"}, 400, "base: 'x' is not a run id"),
    ],
)
def test_the_item_diff_names_a_missing_or_bad_parameter(viewer, db, params, status, message) -> None:
    response = viewer.get(ITEM, params)

    assert response.status_code == status
    assert message in text(response)


def test_the_item_diff_of_an_unknown_example_or_run_is_404(viewer, runs) -> None:
    base, candidate = runs

    unknown_example = viewer.get(ITEM, {"base": base.pk, "candidate": candidate.pk, "example": "q-404"})
    unknown_run = viewer.get(ITEM, {"base": base.pk, "candidate": 999999, "example": "q-1"})

    assert unknown_example.status_code == 404 and "q-404" in text(unknown_example)
    assert unknown_run.status_code == 404 and "candidate: no run with id 999999" in text(unknown_run)


@pytest.mark.parametrize("url", [COMPARE, f"{COMPARE}?base=1&candidate=2", f"{ITEM}?base=1&candidate=2&example=q-1"])
def test_anonymous_visitors_are_sent_to_the_login(client, db, url) -> None:
    response = client.get(url)

    assert response.status_code == 302 and response["Location"].startswith("/login/")


def test_the_comparison_page_query_count_does_not_grow_with_the_runs(viewer, runs, django_assert_num_queries) -> None:
    base, candidate = runs
    # session, user, run_compare's 3 queries (runs, items, results), each run's audit (none here)
    with django_assert_num_queries(7):
        response = viewer.get(COMPARE, {"base": base.pk, "candidate": candidate.pk})
    assert response.status_code == 200
    with django_assert_num_queries(7):  # compare_item's 5
        assert viewer.get(ITEM, {"base": base.pk, "candidate": candidate.pk, "example": "q-3"}).status_code == 200


def test_the_run_page_offers_compare_with_and_a_base_alone_must_exist(viewer, runs, db) -> None:
    base, _ = runs

    run_page = viewer.get(f"/runs/{base.pk}/").content.decode()
    unknown = viewer.get(COMPARE, {"base": 999999})

    assert f'id="compare-with" href="/runs/compare/?base={base.pk}"' in run_page
    assert unknown.status_code == 404 and "base: no run with id 999999" in text(unknown)


def test_the_calibrated_comparison_shows_each_audits_progress_then_the_calibrated_delta(make_user) -> None:
    from bench.seed_review import seed_finished_run
    from evaluations.audit_estimates import calibrated_comparison
    from evaluations.models import AuditItem, Claim
    from evaluations.services import audits
    from evaluations.services import overrides as review_services

    # given two finished runs of one dataset, the base audited on 30 items, the candidate on 12
    reviewer = make_user("rita", role="reviewer")
    base = seed_finished_run(items=40, claims=1, name="cal")
    candidate = seed_finished_run(items=40, claims=1, name="cal", judge=base.judge_config)

    def audit(run, audited: int) -> None:
        audits.audit_start(run=run, size=40, seed=3, user=reviewer)
        for entry in AuditItem.objects.filter(audit__run=run).order_by("position")[:audited]:
            for claim in Claim.objects.filter(item_id=entry.item_id):
                review_services.claim_confirm(claim=claim, reviewer=reviewer)

    client = Client()
    client.force_login(reviewer)
    params = {"base": base.pk, "candidate": candidate.pk}
    audit(base, 30)
    audit(candidate, 12)

    # when the candidate's audit is not far enough, then the card shows progress, not a figure
    page = text(client.get(COMPARE, params))
    assert f"base #{base.pk}: 30 / 40 audited" in page and f"candidate #{candidate.pk}: 12 / 40 audited" in page
    assert "Base, calibrated" not in page

    # when both are calibrated, then the calibrated delta and its interval are shown
    for entry in AuditItem.objects.filter(audit__run=candidate).order_by("position")[12:30]:
        for claim in Claim.objects.filter(item_id=entry.item_id):
            review_services.claim_confirm(claim=claim, reviewer=reviewer)
    response = client.get(COMPARE, params)
    page = text(response)
    expected = calibrated_comparison(base.pk, candidate.pk)["metrics"]["faithfulness"]
    row = re.search(r'<tr data-calibrated="faithfulness">(.*?)</tr>', response.content.decode(), re.S)
    assert row, page
    assert f"{expected['base']['mean']:.3f}" in row[1] and f"{expected['candidate']['mean']:.3f}" in row[1]
    assert ("significant" in row[1]) and "Base, calibrated" in page

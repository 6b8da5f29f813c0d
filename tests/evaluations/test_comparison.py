"""run_compare / compare_item: pairing by external id, deltas and flips, exclusions, settings diff, query counts."""

from __future__ import annotations

import json
from dataclasses import asdict

import pytest

from evaluations.comparison import ComparisonError, compare_item, run_compare
from judges.services import judge_config_create
from tests.evaluations.helpers import example
from tests.evaluations.scored_runs import ERROR, scored_run


def ids(*numbers: int) -> list[str]:
    return [f"q-{number}" for number in numbers]


@pytest.fixture
def version(make_dataset):
    return make_dataset(40, name="river")


def test_identical_runs_have_delta_0_and_nothing_significant(version, offline_judge) -> None:
    scores = {f"q-{n}": {"faithfulness": (n % 5) / 4, "relevancy": float(n % 2)} for n in range(1, 41)}
    base, candidate = scored_run(version, offline_judge, scores), scored_run(version, offline_judge, scores)

    comparison = run_compare(base, candidate)

    assert comparison.matched == 40 and comparison.only_in_base == [] == comparison.only_in_candidate
    assert [entry.metric for entry in comparison.metrics] == ["faithfulness", "relevancy"]
    for entry in comparison.metrics:
        assert entry.n_pairs == 40 and entry.delta == 0 and not entry.significant
        assert entry.flips.pass_to_fail == entry.flips.fail_to_pass == 0 and entry.flips.p_value == 1.0
        assert entry.regressions == [] == entry.improvements
    assert not comparison.settings.judges_or_prompts_differ and comparison.settings.warning == ""


def test_a_planted_regression_is_flagged_with_its_flips_and_sorted_changes(version, offline_judge) -> None:
    base = scored_run(version, offline_judge, {f"q-{n}": {"faithfulness": 0.9, "relevancy": 1.0} for n in range(1, 41)})
    dropped = {f"q-{n}": {"faithfulness": 0.9 - 0.01 * n if n <= 30 else 0.9, "relevancy": 1.0} for n in range(1, 41)}
    candidate = scored_run(version, offline_judge, dropped)

    comparison = run_compare(base.pk, candidate.pk)

    faithfulness = comparison.metric("faithfulness")
    assert faithfulness.significant and faithfulness.delta < 0 and faithfulness.ci_high < 0
    assert faithfulness.base_mean == pytest.approx(0.9)
    assert faithfulness.delta == pytest.approx(-sum(0.01 * n for n in range(1, 31)) / 40)
    assert faithfulness.regressed == 30 and faithfulness.improved == 0
    assert [change.external_id for change in faithfulness.regressions[:3]] == ids(30, 29, 28)  # largest drop first
    assert faithfulness.regressions[0].delta == pytest.approx(-0.3)
    # threshold 0.8: items 11..30 went from pass to fail
    assert (faithfulness.flips.pass_to_fail, faithfulness.flips.fail_to_pass) == (20, 0)
    assert faithfulness.flips.p_value == pytest.approx(2 / 2**20)
    assert not comparison.metric("relevancy").significant


def test_examples_are_matched_by_external_id_across_versions(make_dataset, offline_judge) -> None:
    old = make_dataset([example(n) for n in range(1, 6)], name="river")
    new = make_dataset([example(n) for n in range(2, 8)], name="river")
    base = scored_run(old, offline_judge, {f"q-{n}": {"faithfulness": 1.0} for n in range(1, 6)})
    candidate = scored_run(new, offline_judge, {f"q-{n}": {"faithfulness": 0.5} for n in range(2, 8)})

    comparison = run_compare(base, candidate)

    assert comparison.matched == 4
    assert comparison.only_in_base == ids(1) and comparison.only_in_candidate == ids(6, 7)
    assert comparison.metric("faithfulness").n_pairs == 4
    assert {point.external_id for point in comparison.points} == set(ids(2, 3, 4, 5))
    version_row = next(row for row in comparison.settings.rows if row.key == "dataset_version")
    assert (version_row.base, version_row.candidate, version_row.differs) == (1, 2, True)


def test_errored_and_unscored_items_are_left_out_and_counted(make_dataset, offline_judge) -> None:
    version = make_dataset(6)
    base = scored_run(
        version,
        offline_judge,
        {"q-1": {"faithfulness": 1.0}, "q-2": ERROR, "q-3": {"faithfulness": 1.0}, "q-4": {"faithfulness": None},
         "q-5": {"faithfulness": 0.5}, "q-6": {"faithfulness": 0.5}},
    )  # fmt: skip
    candidate = scored_run(
        version,
        offline_judge,
        {"q-1": {"faithfulness": 0.5}, "q-2": {"faithfulness": 1.0}, "q-3": ERROR, "q-4": {"faithfulness": 1.0},
         "q-5": {"faithfulness": 0.5}, "q-6": {}},
    )  # fmt: skip

    faithfulness = run_compare(base, candidate).metric("faithfulness")

    assert faithfulness.n_pairs == 2  # q-1, q-5
    assert faithfulness.errored == 2  # q-2, q-3
    assert faithfulness.unscored == 2  # q-4 skipped in base, q-6 without a row in the candidate
    assert faithfulness.delta == pytest.approx(-0.25)


def test_scatter_points_carry_question_item_ids_and_scores(version, offline_judge) -> None:
    base = scored_run(version, offline_judge, {"q-1": {"faithfulness": 0.4, "relevancy": 1.0}})
    candidate = scored_run(version, offline_judge, {"q-1": {"faithfulness": 0.8, "relevancy": 0.0}})

    [point] = run_compare(base, candidate).points

    assert point.external_id == "q-1" and point.question == "What did report 1 find about the river?"
    assert point.base_item_id == base.items.get().pk and point.candidate_item_id == candidate.items.get().pk
    assert point.base == {"faithfulness": 0.4, "relevancy": 1.0}
    assert point.candidate == {"faithfulness": 0.8, "relevancy": 0.0}


def test_overall_is_compared_when_the_rubric_ran(version, offline_judge) -> None:
    metrics = ("rubric",)
    base = scored_run(version, offline_judge, {"q-1": {"rubric": 0.9, "overall": 0.9}}, metrics=metrics)
    candidate = scored_run(version, offline_judge, {"q-1": {"rubric": 0.7, "overall": 0.6}}, metrics=metrics)

    comparison = run_compare(base, candidate)

    assert [entry.metric for entry in comparison.metrics] == ["citation_audit", "rubric", "overall"]
    overall = comparison.metric("overall")
    assert overall.delta == pytest.approx(-0.3) and overall.flips is None
    assert comparison.metric("citation_audit").unscored == 1


def test_runs_of_different_datasets_are_refused(make_dataset, offline_judge) -> None:
    base = scored_run(make_dataset(2, name="river"), offline_judge, {"q-1": {"faithfulness": 1.0}})
    candidate = scored_run(make_dataset(2, name="lake"), offline_judge, {"q-1": {"faithfulness": 1.0}})

    with pytest.raises(ComparisonError, match=r"different datasets \('river' and 'lake'\)"):
        run_compare(base, candidate)


def test_an_unknown_run_is_named(version, offline_judge) -> None:
    base = scored_run(version, offline_judge, {"q-1": {"faithfulness": 1.0}})

    with pytest.raises(ComparisonError, match="candidate: no run with id 999999"):
        run_compare(base, 999_999)


def test_settings_diff_flags_other_judges_and_prompts(version, offline_judge) -> None:
    other = judge_config_create(name="gpt", provider="openai", model="gpt-x", api_key_env="OPENAI_API_KEY")
    scores = {"q-1": {"faithfulness": 1.0, "relevancy": 1.0}}
    base = scored_run(version, offline_judge, scores, prompt_versions={"faithfulness": "2"})
    candidate = scored_run(
        version, other, scores, prompt_versions={"faithfulness": "3"}, settings={"thresholds": {"faithfulness": 0.9}}
    )

    settings = run_compare(base, candidate).settings

    differing = {row.key: (row.base, row.candidate) for row in settings.rows if row.differs}
    assert differing == {
        "judge": ("offline-test", "gpt"),
        "provider": ("offline", "openai"),
        "model": ("heuristic-v1", "gpt-x"),
        "prompt.faithfulness": ("2", "3"),
        "thresholds.faithfulness": (0.8, 0.9),
    }
    assert settings.judges_or_prompts_differ
    assert "different judges or prompts (judge, provider, model, prompt.faithfulness)" in settings.warning
    assert any(row.key == "weights.relevance" and not row.differs for row in settings.rows)


def test_the_comparison_is_json_serialisable(version, offline_judge) -> None:
    base = scored_run(version, offline_judge, {"q-1": {"faithfulness": 1.0}, "q-2": ERROR})
    candidate = scored_run(version, offline_judge, {"q-1": {"faithfulness": 0.5}, "q-2": {"faithfulness": 0.5}})

    document = json.loads(json.dumps(asdict(run_compare(base, candidate))))

    assert document["metrics"][0]["regressions"][0]["external_id"] == "q-1"
    assert document["base"]["dataset"] == "river"


@pytest.mark.parametrize("size", [3, 30])
def test_run_compare_makes_three_queries_whatever_the_size(
    version, offline_judge, django_assert_num_queries, size
) -> None:
    scores = {f"q-{n}": {"faithfulness": 0.5, "relevancy": 1.0} for n in range(1, size + 1)}
    base, candidate = scored_run(version, offline_judge, scores), scored_run(version, offline_judge, scores)

    with django_assert_num_queries(3):
        run_compare(base.pk, candidate.pk)


# --- compare_item ----------------------------------------------------------------------------


@pytest.fixture
def item_runs(version, offline_judge):
    base = scored_run(
        version,
        offline_judge,
        {"q-1": {"faithfulness": 1.0, "relevancy": 1.0,
                 "claims": [("The river rose.", "SUPPORTED", "SUPPORTED"), ("Gauges were daily.", "SUPPORTED", "SUPPORTED")]},
         "q-2": {"faithfulness": 1.0}},
    )  # fmt: skip
    candidate = scored_run(
        version,
        offline_judge,
        {"q-1": {"faithfulness": 0.5, "relevancy": 1.0,
                 "claims": [("The river rose.", "SUPPORTED", "SUPPORTED"), ("It flooded.", "SUPPORTED", "CONTRADICTED")]}},
    )  # fmt: skip
    return base, candidate


def test_compare_item_shows_both_answers_claims_and_score_changes(item_runs, django_assert_num_queries) -> None:
    base, candidate = item_runs

    with django_assert_num_queries(5):
        diff = compare_item(base, candidate, "q-1")

    assert diff.base.query == "What did report 1 find about the river?" and "[c1]" in diff.candidate.response
    assert [claim.text for claim in diff.base.claims] == ["The river rose.", "Gauges were daily."]
    flooded = diff.candidate.claims[1]
    assert (flooded.judge_verdict, flooded.current_verdict, flooded.overridden) == ("SUPPORTED", "CONTRADICTED", True)
    assert [claim.in_other_run for claim in diff.candidate.claims] == [True, False]
    faithfulness = next(change for change in diff.scores if change.metric == "faithfulness")
    assert (faithfulness.base_score, faithfulness.candidate_score, faithfulness.delta) == (1.0, 0.5, -0.5)
    assert (faithfulness.base_passed, faithfulness.candidate_passed) == (True, False)
    assert diff.settings.rows and not diff.settings.judges_or_prompts_differ
    json.dumps(asdict(diff))


def test_compare_item_of_an_example_in_one_run_only(item_runs) -> None:
    base, candidate = item_runs

    diff = compare_item(base, candidate, "q-2")

    assert diff.base.results["faithfulness"]["score"] == 1.0 and diff.candidate is None
    assert all(change.delta is None for change in diff.scores)


def test_compare_item_of_an_unknown_example_is_refused(item_runs) -> None:
    with pytest.raises(ComparisonError, match="'q-99' is in neither run"):
        compare_item(*item_runs, "q-99")


def test_runs_of_the_same_prompts_compare_equal_when_some_items_called_fewer_of_them(version, offline_judge) -> None:
    # given two runs of the same prompts, where one item of the candidate found no claim to verify
    from evaluations.models import MetricResult

    scores = {"q-1": {"faithfulness": 1.0, "relevancy": 1.0}, "q-2": {"faithfulness": 1.0, "relevancy": 1.0}}
    both = {"faithfulness": "claim_extraction@1,claim_verification@1"}
    base = scored_run(version, offline_judge, scores, prompt_versions=both)
    candidate = scored_run(version, offline_judge, scores, prompt_versions=both)
    MetricResult.objects.filter(item__run=candidate, item__example__external_id="q-2", metric="faithfulness").update(
        prompt_version="claim_extraction@1"
    )

    # when they are compared
    settings = run_compare(base, candidate).settings

    # then no prompt differs; a real change of version still does
    assert not settings.judges_or_prompts_differ, settings.warning
    MetricResult.objects.filter(item__run=candidate, metric="faithfulness").update(
        prompt_version="claim_extraction@2,claim_verification@1"
    )
    changed = run_compare(base, candidate).settings
    assert changed.judges_or_prompts_differ
    row = next(row for row in changed.rows if row.key == "prompt.faithfulness")
    assert (row.base, row.candidate) == (
        "claim_extraction@1,claim_verification@1",
        "claim_extraction@2,claim_verification@1",
    )

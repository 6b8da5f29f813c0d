"""The run pages through Django's test client: list, new-run form, run page, progress, controls, items table."""

from __future__ import annotations

import re

import pytest
from django.urls import reverse

from bench.seed import seed_finished_run
from evaluations.models import Claim, Run, RunItem, RunStatus, Verdict
from judges.models import JudgeConfig

pytestmark = [pytest.mark.django_db, pytest.mark.sqlite]


@pytest.fixture
def run():
    return seed_finished_run(30, name="nightly", error_every=10)


@pytest.fixture
def viewer(client, make_user):
    client.force_login(make_user("vic"))
    return client


@pytest.fixture
def reviewer(client, make_user):
    client.force_login(make_user("rita", role="reviewer"))
    return client


def items_fragment(client, run: Run, **params):
    return client.get(
        reverse("evaluations:run_detail", args=[run.pk]), params, HTTP_HX_REQUEST="true", HTTP_HX_TARGET="items"
    )


def item_ids(response) -> list[int]:
    """The run item ids linked from the table, in table order."""
    return [
        int(found)
        for found in re.findall(
            r'class="item-link" href="/runs/\d+/items/(\d+)/(?:\?[^"]*)?"', response.content.decode()
        )
    ]


def tagged(items, tag: str) -> list[int]:
    """Ids of the items whose example carries `tag` (computed in Python: no JSON containment on SQLite)."""
    return [pk for pk, tags in items.values_list("pk", "example__tags") if tag in tags]


# --- Access --------------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["run_list", "run_new", "run_detail", "run_export_csv", "run_export_json"])
def test_every_run_page_requires_login(client, run, name):
    args = [] if name in ("run_list", "run_new") else [run.pk]

    response = client.get(reverse(f"evaluations:{name}", args=args))

    assert response.status_code == 302 and response["Location"].startswith("/login/")


@pytest.mark.parametrize("name", ["run_detail", "run_export_csv", "run_cancel"])
def test_an_unknown_run_is_a_404(reviewer, name):
    method = reviewer.post if name == "run_cancel" else reviewer.get

    assert method(reverse(f"evaluations:{name}", args=[999999])).status_code == 404


# --- Runs list -------------------------------------------------------------------------------


def test_the_list_shows_each_run_with_its_dataset_judge_status_and_overall(viewer, run):
    response = viewer.get(reverse("evaluations:run_list"))

    html = response.content.decode()
    assert f'href="/runs/{run.pk}/"' in html
    assert f"{run.dataset_version.dataset.name}" in html and "@v1" in html
    assert "heuristic" in html  # the offline judge is labelled
    assert "Completed With Errors" in html
    assert f"{run.aggregates['overall']['mean']:.2f}" in html


def test_the_list_filters_by_dataset_judge_and_status(viewer, run):
    other = seed_finished_run(3, name="other", error_every=0)
    url = reverse("evaluations:run_list")

    by_dataset = viewer.get(url, {"dataset": other.dataset_version.dataset_id}).content.decode()
    by_status = viewer.get(url, {"status": RunStatus.COMPLETED}).content.decode()
    by_judge = viewer.get(url, {"judge": JudgeConfig.objects.create(name="j2", provider="offline", model="m").pk})

    assert f'href="/runs/{other.pk}/"' in by_dataset and f'href="/runs/{run.pk}/"' not in by_dataset
    assert f'href="/runs/{other.pk}/"' in by_status and f'href="/runs/{run.pk}/"' not in by_status
    assert "No run matches these filters" in by_judge.content.decode()


def test_no_runs_yet_offers_reviewers_a_button_to_start_one(reviewer):
    html = reviewer.get(reverse("evaluations:run_list")).content.decode()

    assert "No runs yet" in html and 'href="/runs/new/"' in html


def test_a_viewer_is_not_offered_to_start_a_run(viewer):
    html = viewer.get(reverse("evaluations:run_list")).content.decode()

    assert "No runs yet" in html and 'href="/runs/new/"' not in html


# --- New run ---------------------------------------------------------------------------------


def test_the_form_preselects_the_latest_version_and_the_offline_judge(reviewer, run):
    html = reviewer.get(reverse("evaluations:run_new")).content.decode()

    assert re.search(rf'<option value="{run.dataset_version.pk}"[^>]*selected', html)
    assert re.search(rf'<option value="{run.judge_config.pk}" selected>[^<]*heuristic, not an LLM', html)
    assert 'value="0.8"' in html  # the faithfulness threshold's default is shown


def new_run_data(run: Run, **changes) -> dict:
    data = {
        "dataset_version": run.dataset_version.pk,
        "judge_config": run.judge_config.pk,
        "metrics": ["faithfulness", "relevancy"],
        "repeats": 1,
        "partial_weight": 0.5,
        "thresholds__faithfulness": 0.8,
        "thresholds__relevancy": 1.0,
        "thresholds__rubric": 0.7,
        "thresholds__correctness": 4.0,
        "thresholds__retrieval": 0.0,
        "weights__faithfulness": 0.35,
        "weights__relevance": 0.25,
        "weights__completeness": 0.25,
        "weights__reasoning_quality": 0.15,
        "name": "try",
    }
    return data | changes


def test_submitting_the_form_creates_the_run_and_lands_on_its_page(reviewer, run):
    response = reviewer.post(reverse("evaluations:run_new"), new_run_data(run, thresholds__faithfulness=0.9))

    created = Run.objects.get(name="try")
    assert response.status_code == 302 and response["Location"] == f"/runs/{created.pk}/"
    assert created.metrics == ["faithfulness", "relevancy"]
    assert created.settings["thresholds"]["faithfulness"] == 0.9
    assert created.status == RunStatus.QUEUED and created.created_by.username == "rita"


@pytest.mark.parametrize(
    ("changes", "field", "message"),
    [
        ({"thresholds__rubric": 2}, "thresholds__rubric", "must be between 0 and 1, got 2.0"),
        ({"repeats": 50}, "repeats", "must be between 1 and 10, got 50"),
        ({"weights__relevance": -1}, "weights__relevance", "must be at least 0"),
        ({"metrics": []}, "metrics", "This field is required"),
        ({"partial_weight": "abc"}, "partial_weight", "Enter a number"),
    ],
)
def test_invalid_settings_are_shown_next_to_their_field(reviewer, run, changes, field, message):
    response = reviewer.post(reverse("evaluations:run_new"), new_run_data(run, **changes))

    assert response.status_code == 200
    assert message in str(response.context["form"].errors[field])
    html = response.content.decode()
    field_block = html[html.index(f'name="{field}"') :][:2000]
    assert message in field_block or field == "metrics" and message in html
    assert not Run.objects.filter(name="try").exists()


def test_a_viewer_cannot_start_a_run(viewer, run):
    assert viewer.get(reverse("evaluations:run_new")).status_code == 403
    assert viewer.post(reverse("evaluations:run_new"), new_run_data(run)).status_code == 403
    assert not Run.objects.filter(name="try").exists()


# --- Run page ---------------------------------------------------------------------------------


def test_the_run_page_shows_aggregates_histograms_and_items(viewer, run):
    response = viewer.get(reverse("evaluations:run_detail", args=[run.pk]))

    html = response.content.decode()
    stats = run.aggregates["metrics"]["faithfulness"]
    assert f"{stats['mean']:.2f}" in html and f"{stats['median']:.2f}" in html
    assert f"over {run.aggregates['overall']['covered']} of 30 items, 3 errors" in html
    assert "By tag" in html and "factual" in html
    assert html.count('class="plotly-graph-div"') == 1 + 5  # overall + each metric with scores
    assert "/static/vendor/plotly.min.js" in html and "cdn" not in html.lower()
    assert len(item_ids(response)) == 30
    assert "Reviewed" in html and "30 to review" in html


def test_a_finished_run_does_not_poll(viewer, run):
    html = viewer.get(reverse("evaluations:run_detail", args=[run.pk])).content.decode()

    assert 'hx-trigger="every 1s"' not in html


def test_a_running_run_polls_its_progress_until_it_finishes(viewer, run):
    Run.objects.filter(pk=run.pk).update(status=RunStatus.RUNNING, items_done=12, items_failed=1)
    url = reverse("evaluations:run_detail", args=[run.pk])

    page = viewer.get(url).content.decode()
    polled = viewer.get(url, HTTP_HX_REQUEST="true", HTTP_HX_TARGET="run-progress")
    Run.objects.filter(pk=run.pk).update(status=RunStatus.COMPLETED)
    last = viewer.get(url, HTTP_HX_REQUEST="true", HTTP_HX_TARGET="run-progress")

    assert 'id="run-progress"' in page and 'hx-trigger="every 1s"' in page
    assert polled.status_code == 200 and "<main>" not in polled.content.decode()
    assert "13</strong> of 30 items" in polled.content.decode() and 'hx-trigger="every 1s"' in polled.content.decode()
    assert last.status_code == 286 and last["HX-Refresh"] == "true"


def test_controls_appear_only_when_they_apply_and_only_for_reviewers(client, make_user, run):
    client.force_login(make_user("rita", role="reviewer"))
    url = reverse("evaluations:run_detail", args=[run.pk])

    finished_with_errors = client.get(url).content.decode()
    Run.objects.filter(pk=run.pk).update(status=RunStatus.RUNNING)
    running = client.get(url).content.decode()
    Run.objects.filter(pk=run.pk).update(status=RunStatus.CANCELLED)
    cancelled = client.get(url).content.decode()
    client.force_login(make_user("vic"))
    as_viewer = client.get(url).content.decode()

    assert "Re-run 3 failed" in finished_with_errors and "Cancel run" not in finished_with_errors
    assert "Cancel run" in running and "Resume" not in running and "Re-run" not in running
    assert "Resume" in cancelled and "Cancel run" not in cancelled
    assert "run-controls" not in as_viewer


def test_a_reviewer_cancels_a_running_run(reviewer, run):
    Run.objects.filter(pk=run.pk).update(status=RunStatus.RUNNING)

    response = reviewer.post(reverse("evaluations:run_cancel", args=[run.pk]))

    assert response.status_code == 302
    run.refresh_from_db()
    assert run.status in (RunStatus.CANCELLING, RunStatus.CANCELLED)


def test_a_reviewer_resumes_a_cancelled_run_and_reruns_failures(reviewer, run, django_capture_on_commit_callbacks):
    Run.objects.filter(pk=run.pk).update(status=RunStatus.CANCELLED)
    reviewer.post(reverse("evaluations:run_resume", args=[run.pk]))
    run.refresh_from_db()
    assert run.status == RunStatus.RUNNING

    Run.objects.filter(pk=run.pk).update(status=RunStatus.COMPLETED_WITH_ERRORS)
    response = reviewer.post(reverse("evaluations:run_rerun_failed", args=[run.pk]), follow=True)
    assert "Re-running 3 failed items" in response.content.decode()
    assert RunItem.objects.filter(run=run, status="pending").count() == 3


def test_a_control_that_does_not_apply_says_why(reviewer, run):
    response = reviewer.post(reverse("evaluations:run_resume", args=[run.pk]), follow=True)

    assert "only a cancelled run can be resumed" in response.content.decode()


@pytest.mark.parametrize("name", ["run_cancel", "run_resume", "run_rerun_failed"])
def test_a_viewer_cannot_control_a_run(viewer, run, name):
    before = run.status

    assert viewer.post(reverse(f"evaluations:{name}", args=[run.pk])).status_code == 403
    run.refresh_from_db()
    assert run.status == before


def test_controls_need_post(reviewer, run):
    assert reviewer.get(reverse("evaluations:run_cancel", args=[run.pk])).status_code == 405


# --- Items table -------------------------------------------------------------------------------


def test_the_fragment_is_only_the_table_and_links_each_item_to_its_review_page(viewer, run):
    response = items_fragment(viewer, run)

    html = response.content.decode()
    assert "<main>" not in html and "items-table" in html
    first = RunItem.objects.filter(run=run).order_by("example__position").first()
    assert item_ids(response)[0] == first.pk
    assert f'href="/runs/{run.pk}/items/{first.pk}/"' in html


def test_sort_by_overall_puts_the_worst_item_first_and_unscored_items_last(viewer, run):
    ascending = item_ids(items_fragment(viewer, run, sort="overall"))
    descending = item_ids(items_fragment(viewer, run, sort="-overall"))

    scored = list(
        RunItem.objects.filter(run=run, overall_score__isnull=False)
        .order_by("overall_score")
        .values_list("pk", flat=True)
    )
    assert ascending[: len(scored)] == scored
    assert descending[: len(scored)] == scored[::-1]
    assert set(ascending[len(scored) :]) == set(
        RunItem.objects.filter(run=run, overall_score__isnull=True).values_list("pk", flat=True)
    )


def test_sort_by_a_metric(viewer, run):
    ids = item_ids(items_fragment(viewer, run, sort="-correctness"))

    scores = dict(
        Run.objects.get(pk=run.pk).items.filter(results__metric="correctness").values_list("pk", "results__score")
    )
    ranked = [item_id for item_id in ids if item_id in scores]
    assert [scores[item_id] for item_id in ranked] == sorted(scores.values(), reverse=True)


@pytest.mark.parametrize(
    ("params", "expected"),
    [
        (
            {"failing": "faithfulness"},
            lambda items: items.filter(results__metric="faithfulness", results__passed=False),
        ),
        ({"failing": "any"}, lambda items: items.filter(results__passed=False).distinct()),
        ({"status": "error"}, lambda items: items.filter(status="error")),
        ({"tag": "numeric"}, lambda items: items.filter(pk__in=tagged(items, "numeric"))),
        ({"verdict": "CONTRADICTED"}, lambda items: items.filter(claims__current_verdict="CONTRADICTED").distinct()),
        ({"reviewed": "yes"}, lambda items: items.filter(reviewed_at__isnull=False)),
        ({"reviewed": "no"}, lambda items: items.filter(reviewed_at__isnull=True)),
        ({"q": "report 7 "}, lambda items: items.filter(example__query__icontains="report 7 ")),
        ({"q": "rose by 12 cm"}, lambda items: items.filter(example__response__icontains="rose by 12 cm")),
    ],
)
def test_each_filter_keeps_exactly_the_matching_items(viewer, run, params, expected):
    RunItem.objects.filter(pk__in=RunItem.objects.filter(run=run).order_by("id")[:4].values("pk")).update(
        reviewed_at="2026-01-01T00:00Z"
    )

    ids = item_ids(items_fragment(viewer, run, **params))

    wanted = set(expected(RunItem.objects.filter(run=run)).values_list("pk", flat=True))
    assert wanted and set(ids) == wanted


def test_filters_combine(viewer, run):
    ids = item_ids(items_fragment(viewer, run, tag="factual", failing="rubric", sort="rubric"))

    items = RunItem.objects.filter(pk__in=tagged(RunItem.objects.filter(run=run), "factual"))
    wanted = set(items.filter(results__metric="rubric", results__passed=False).values_list("pk", flat=True))
    assert set(ids) == wanted


def test_the_table_paginates_server_side(viewer):
    big = seed_finished_run(120, name="big", error_every=0)

    first = item_ids(items_fragment(viewer, big))
    third = items_fragment(viewer, big, page=3)

    assert len(first) == 50 and len(item_ids(third)) == 20
    assert "Page 3 of 3" in third.content.decode()


def test_pagination_and_sort_links_keep_the_filters(viewer):
    big = seed_finished_run(120, name="big", error_every=0)

    html = items_fragment(viewer, big, q="river", sort="-rubric").content.decode()

    assert re.search(r'href="\?sort=-rubric&q=river&page=2"', html.replace("&amp;", "&"))
    assert 'href="?sort=rubric&amp;q=river"' in html  # clicking the sorted column flips the order


@pytest.mark.parametrize(
    ("params", "name"),
    [
        ({"sort": "nope"}, "sort"),
        ({"failing": "x"}, "failing"),
        ({"status": "x"}, "status"),
        ({"verdict": "x"}, "verdict"),
        ({"reviewed": "x"}, "reviewed"),
    ],
)
def test_a_bad_parameter_is_a_400_naming_it(viewer, run, params, name):
    response = viewer.get(reverse("evaluations:run_detail", args=[run.pk]), params)

    assert response.status_code == 400 and response.content.decode().startswith(f"{name}:")


def test_dataset_text_renders_inert(viewer):
    payload = '<script>window.pwned=1</script><img src=x onerror="window.pwned=1">'
    run = seed_finished_run(3, name="xss", text=lambda n: {"query": payload, "response": payload})
    Claim.objects.filter(item__run=run).update(text=payload, current_verdict=Verdict.CONTRADICTED)

    html = viewer.get(reverse("evaluations:run_detail", args=[run.pk])).content.decode()

    assert payload not in html and "<img src=x" not in html
    assert "&lt;script&gt;window.pwned=1&lt;/script&gt;" in html


# --- Query counts (fixed whatever the run size) ----------------------------------------------------


@pytest.mark.parametrize("size", [20, 80])
def test_the_run_page_runs_a_fixed_number_of_queries(viewer, django_assert_num_queries, size):
    run = seed_finished_run(size, name=f"n{size}")
    url = reverse("evaluations:run_detail", args=[run.pk])
    viewer.get(url)  # the session and user are loaded either way; warm nothing else

    # session, user, role (groups), run, review counts, count, page, results, verdicts, the run's audit;
    # charts come from aggregates
    with django_assert_num_queries(10):
        viewer.get(url, {"sort": "overall", "tag": "factual"})


@pytest.mark.parametrize("size", [20, 80])
def test_the_items_fragment_runs_a_fixed_number_of_queries(viewer, django_assert_num_queries, size):
    run = seed_finished_run(size, name=f"n{size}")

    # session, user, run, count, page, results, verdicts
    with django_assert_num_queries(7):
        items_fragment(viewer, run, sort="-rubric", failing="faithfulness", q="report")


def test_a_dataset_page_offers_reviewers_a_run_of_it_with_its_version_preselected(client, make_user, run):
    other = seed_finished_run(2, name="other")  # the most recent upload: preselected without ?dataset=
    client.force_login(make_user("rita", role="reviewer"))

    detail = client.get(reverse("datasets:detail", args=[run.dataset_version.dataset_id])).content.decode()
    form = client.get(reverse("evaluations:run_new"), {"dataset": run.dataset_version.dataset_id}).content.decode()
    default = client.get(reverse("evaluations:run_new")).content.decode()

    assert f'href="/runs/new/?dataset={run.dataset_version.dataset_id}"' in detail
    assert re.search(rf'<option value="{run.dataset_version.pk}"[^>]*selected', form)
    assert re.search(rf'<option value="{other.dataset_version.pk}"[^>]*selected', default)


def test_a_viewer_is_not_offered_a_run_from_the_dataset_page(viewer, run):
    detail = viewer.get(reverse("datasets:detail", args=[run.dataset_version.dataset_id])).content.decode()

    assert "/runs/new/" not in detail


def test_a_blank_threshold_means_no_pass_fail_for_that_metric(reviewer, run):
    reviewer.post(reverse("evaluations:run_new"), new_run_data(run, thresholds__relevancy=""))

    created = Run.objects.get(name="try")
    assert created.settings["thresholds"]["relevancy"] is None
    assert created.settings["thresholds"]["faithfulness"] == 0.8

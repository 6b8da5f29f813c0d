"""The item review page, in-place reviews over HTMX, the review queue: content, roles, CSRF, escaping, query counts."""

from __future__ import annotations

import re

import pytest
from django.db import connection
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from bench.seed_review import example_row, seed_finished_run
from evaluations.models import Claim, ItemStatus, MetricResult, RunItem, VerdictOverride
from evaluations.services import overrides as review_services
from judges.models import JudgeCall

# sqlite: the pages and reviews also work on the embedded default (its recompute rebuilds in full).
pytestmark = [pytest.mark.django_db, pytest.mark.sqlite]
HTMX = {"HTTP_HX_REQUEST": "true"}


@pytest.fixture
def run():
    return seed_finished_run(items=8, claims=3)


@pytest.fixture
def reviewer_client(make_user) -> Client:
    client = Client()
    client.force_login(make_user("rita", role="reviewer"))
    return client


@pytest.fixture
def viewer_client(make_user) -> Client:
    client = Client()
    client.force_login(make_user("vic", role="viewer"))
    return client


def items_of(run) -> list[RunItem]:
    return list(RunItem.objects.filter(run=run).order_by("id"))


def item_url(item: RunItem, query: str = "") -> str:
    url = reverse("evaluations:item_review", args=[item.run_id, item.pk])
    return f"{url}?{query}" if query else url


def review_url(claim: Claim) -> str:
    return reverse("evaluations:claim_review", args=[claim.item.run_id, claim.item_id, claim.pk])


def test_the_item_page_shows_the_item_its_claims_contexts_and_scores(run, reviewer_client) -> None:
    item = items_of(run)[6]  # position 7: an invalid citation, so a clamp fires
    claims = list(Claim.objects.filter(item=item).order_by("position"))

    html = reviewer_client.get(item_url(item)).content.decode()

    assert item.example.query in html and "The river rose by" in html  # question, reference answer
    for claim in claims:
        assert f'id="claim-{claim.pk}"' in html
        assert claim.text in html
    assert "Not enough info" in html or "Contradicted" in html or "Partly supported" in html
    assert 'data-context-id="c1"' in html and "0.91" in html  # contexts with their retrieval scores
    assert "invalid citation c9" in html  # from the citation audit
    assert "invalid_citation_ids" in html and "clamped" in html  # the clamp that fired, raw vs used
    assert 'data-metric="faithfulness"' in html and 'data-metric="rubric"' in html
    assert "Override" in html and "Confirm" in html
    assert "<kbd>j</kbd>" in html and "js/item_review.js" in html


def test_another_runs_item_is_a_404(run, reviewer_client) -> None:
    other = seed_finished_run(items=1, name="other")
    item = items_of(other)[0]

    response = reviewer_client.get(reverse("evaluations:item_review", args=[run.pk, item.pk]))

    assert response.status_code == 404


def test_anonymous_visitors_are_sent_to_log_in(run) -> None:
    response = Client().get(item_url(items_of(run)[0]))
    assert response.status_code == 302 and "/login/" in response["Location"]


def test_an_override_over_htmx_returns_the_claim_and_the_score_panel(run, reviewer_client) -> None:
    item = items_of(run)[0]
    claim = Claim.objects.filter(item=item).exclude(current_verdict="CONTRADICTED").order_by("position").first()

    response = reviewer_client.post(
        review_url(claim), {"action": "override", "verdict": "CONTRADICTED", "reason": "c1 says otherwise"}, **HTMX
    )

    assert response.status_code == 200
    html = response.content.decode()
    assert html.lstrip().startswith(f'<article class="claim v-contradicted" id="claim-{claim.pk}"')
    assert 'id="scores"' in html and 'hx-swap-oob="true"' in html
    assert "c1 says otherwise" in html and "Undo Contradicted" in html
    item.refresh_from_db()
    assert f'<span id="item-overall" class="stat-value">{item.overall_score:.3f}</span>' in html
    assert 'id="item-overall-judge"' in html


def test_confirm_and_undo_over_htmx(run, reviewer_client) -> None:
    claim = Claim.objects.filter(item=items_of(run)[0]).order_by("position").first()
    reviewer_client.post(review_url(claim), {"action": "override", "verdict": "NOT_ENOUGH_INFO", "reason": "x"}, **HTMX)

    reviewer_client.post(review_url(claim), {"action": "undo"}, **HTMX)
    html = reviewer_client.post(review_url(claim), {"action": "confirm"}, **HTMX).content.decode()

    claim.refresh_from_db()
    assert claim.current_verdict == claim.judge_verdict
    assert VerdictOverride.objects.filter(claim=claim).count() == 3
    assert "confirmed" in html and "History (3)" in html


def test_a_form_error_is_shown_in_the_claim(run, reviewer_client) -> None:
    claim = Claim.objects.filter(item=items_of(run)[0]).exclude(current_verdict="CONTRADICTED").first()

    html = reviewer_client.post(
        review_url(claim), {"action": "override", "verdict": "CONTRADICTED", "reason": ""}, **HTMX
    ).content.decode()

    assert 'role="alert"' in html and "reason" in html
    assert not VerdictOverride.objects.exists()


def test_without_htmx_a_review_redirects_back_to_the_item(run, reviewer_client) -> None:
    claim = Claim.objects.filter(item=items_of(run)[0]).first()

    response = reviewer_client.post(review_url(claim) + "?sort=-overall", {"action": "confirm"})

    assert response.status_code == 302
    assert response["Location"] == item_url(claim.item, "sort=-overall")


def test_a_viewer_sees_verdicts_without_controls_and_a_forged_post_is_refused(run, viewer_client) -> None:
    item = items_of(run)[0]
    claim = Claim.objects.filter(item=item).first()

    html = viewer_client.get(item_url(item)).content.decode()
    response = viewer_client.post(review_url(claim), {"action": "override", "verdict": "CONTRADICTED", "reason": "x"})

    assert claim.text in html and "Override" not in html and "<form" not in html.split("<main>")[1]
    assert response.status_code == 403
    assert not VerdictOverride.objects.exists()


def test_a_post_without_the_csrf_token_is_refused(run, make_user) -> None:
    client = Client(enforce_csrf_checks=True)
    client.force_login(make_user("rita", role="reviewer"))
    claim = Claim.objects.filter(item=items_of(run)[0]).first()

    response = client.post(review_url(claim), {"action": "confirm"}, **HTMX)

    assert response.status_code == 403
    assert not VerdictOverride.objects.exists()


def test_dataset_text_and_judge_replies_render_inert(reviewer_client, db) -> None:
    payload = '<script>alert(1)</script><img src=x onerror="alert(2)">'
    row = example_row(1, claims=1) | {"query": f"Who? {payload}", "reference_answer": payload}
    row["contexts"][0]["text"] = payload
    run = seed_finished_run(rows=[row], name="xss")
    item = items_of(run)[0]
    Claim.objects.filter(item=item).update(text=payload, evidence=payload)
    MetricResult.objects.filter(item=item, metric="rubric").update(feedback=payload)
    JudgeCall.objects.create(
        config=run.judge_config, run_id=run.pk, run_item_id=item.pk, cache_key="k", prompt_name="rubric",
        prompt_version="1", request={"messages": [payload]}, raw_reply=payload,
    )  # fmt: skip

    html = reviewer_client.get(item_url(item)).content.decode()

    assert "<script>alert" not in html and "<img src=x" not in html
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html


def test_previous_and_next_follow_the_list_sort_and_filters(run, reviewer_client) -> None:
    items = items_of(run)
    by_overall = sorted(items, key=lambda item: (-item.overall_score, item.pk))
    middle = by_overall[3]

    html = reviewer_client.get(item_url(middle, "sort=-overall")).content.decode()

    previous = re.search(r'id="prev-item" href="([^"]+)"', html).group(1)
    following = re.search(r'id="next-item" href="([^"]+)"', html).group(1)
    assert previous == item_url(by_overall[2], "sort=-overall").replace("&", "&amp;")
    assert following == item_url(by_overall[4], "sort=-overall")


def test_next_to_review_is_the_head_of_the_queue(run, reviewer_client) -> None:
    items = items_of(run)
    RunItem.objects.filter(pk=items[5].pk).update(status=ItemStatus.ERROR)

    html = reviewer_client.get(item_url(items[0], "sort=-overall")).content.decode()
    link = re.search(r'id="next-review" href="([^"]+)"', html).group(1).replace("&amp;", "&")
    response = reviewer_client.get(link)

    assert response.status_code == 302 and response["Location"] == item_url(items[5], "sort=-overall")
    # the item just left is skipped; with nothing left to review the queue opens
    assert reviewer_client.get(link.replace(f"after={items[0].pk}", f"after={items[5].pk}"))["Location"] != item_url(
        items[5], "sort=-overall"
    )
    RunItem.objects.filter(run=run).update(reviewed_at=timezone.now())
    assert reviewer_client.get(link)["Location"] == reverse("evaluations:review_queue", args=[run.pk])


def test_the_queue_orders_by_need_counts_and_drops_reviewed_items(run, reviewer_client, make_user) -> None:
    items = items_of(run)
    RunItem.objects.filter(pk=items[4].pk).update(status=ItemStatus.ERROR, overall_score=None)
    Claim.objects.filter(item__run=run).update(current_verdict="SUPPORTED", judge_verdict="SUPPORTED")
    Claim.objects.filter(item=items[2], position=0).update(current_verdict="CONTRADICTED")
    reviewer = make_user("rex", role="reviewer")
    for claim in Claim.objects.filter(item=items[7]):
        review_services.claim_confirm(claim=claim, reviewer=reviewer)

    response = reviewer_client.get(reverse("evaluations:review_queue", args=[run.pk]))

    html = response.content.decode()
    order = [int(pk) for pk in re.findall(r'<tr data-item="(\d+)">', html)]
    assert order[:2] == [items[4].pk, items[2].pk]  # the judge error, then the contradicted claim
    rest = [item for item in items if item.pk not in (items[4].pk, items[2].pk, items[7].pk)]
    assert order[2:] == [item.pk for item in sorted(rest, key=lambda item: (item.overall_score, item.pk))]
    assert items[7].pk not in order
    assert "Reviewed <strong>1</strong>" in html and "To review <strong>7</strong>" in html


def test_item_page_query_count_is_fixed_whatever_the_run_size(reviewer_client, django_assert_num_queries) -> None:
    small = seed_finished_run(items=3, claims=2, name="small")
    large = seed_finished_run(items=60, claims=6, name="large")
    for claim in Claim.objects.filter(item__run__in=[small, large], position=0):
        VerdictOverride.objects.create(claim=claim, old_verdict="SUPPORTED", new_verdict="SUPPORTED")

    for run in (small, large):
        item = items_of(run)[1]
        with django_assert_num_queries(ITEM_PAGE_QUERIES):
            assert reviewer_client.get(item_url(item, "sort=-faithfulness&tag=factual")).status_code == 200


def test_override_query_count_is_fixed_whatever_the_run_size(reviewer_client, django_assert_num_queries) -> None:
    if connection.vendor != "postgresql":
        pytest.skip("on SQLite the recompute rebuilds the aggregates in full (small local runs)")
    small = seed_finished_run(items=3, claims=2, name="small")
    large = seed_finished_run(items=60, claims=6, name="large")

    for run in (small, large):
        claim = Claim.objects.select_related("item").filter(item=items_of(run)[1]).order_by("position").first()
        with django_assert_num_queries(OVERRIDE_QUERIES):
            response = reviewer_client.post(
                review_url(claim), {"action": "override", "verdict": "NOT_ENOUGH_INFO", "reason": "why"}, **HTMX
            )
        assert response.status_code == 200


# Session + user, the reviewer's groups, the item (with run, judge, dataset, example), results,
# claims + their history, judge calls, 2 for previous / next, the item's place in the run's audit.
ITEM_PAGE_QUERIES = 11
# Session + user, claim; the service: groups, savepoint, lock claim+item, lock run, insert, update
# claim, claims, results, update faithfulness, update item, aggregation, review counts, update run,
# release; the fragments: item, claims + history, results, groups, the item's place in the audit.
OVERRIDE_QUERIES = 23


def test_with_repeats_the_page_shows_the_judge_mean_std_and_samples_beside_the_reviewed_score(
    reviewer_client, make_user
) -> None:
    run = seed_finished_run(items=2, claims=2, repeats=3, name="repeats")
    item = items_of(run)[0]
    faithfulness = MetricResult.objects.get(item=item, metric="faithfulness")
    claim = Claim.objects.filter(item=item).exclude(current_verdict="CONTRADICTED").first()
    review_services.claim_override(
        claim=claim, reviewer=make_user("rex", role="reviewer"), new_verdict="CONTRADICTED", reason="no"
    )

    html = reviewer_client.get(item_url(item)).content.decode()

    shown = re.findall(r'<span class="sample">([\d.]+)</span>', html)
    assert shown == [f"{sample:.2f}" for sample in faithfulness.details["samples"]]
    assert f"judge mean {faithfulness.score:.3f} ± {faithfulness.details['std']:.3f} over 3 samples" in html
    assert '<span class="tag-reviewed">reviewed</span>' in html


def test_an_errored_item_shows_the_judge_error_and_can_be_marked_reviewed(run, reviewer_client) -> None:
    item = items_of(run)[0]
    Claim.objects.filter(item=item).delete()
    MetricResult.objects.filter(item=item).delete()
    RunItem.objects.filter(pk=item.pk).update(status=ItemStatus.ERROR, overall_score=None, error="HTTP 500 <b>x</b>")

    html = reviewer_client.get(item_url(item)).content.decode()
    response = reviewer_client.post(reverse("evaluations:item_mark_reviewed", args=[run.pk, item.pk]))

    assert "The judge failed on this item" in html and "HTTP 500 &lt;b&gt;x&lt;/b&gt;" in html
    assert "Mark reviewed" in html
    assert response.status_code == 302
    item.refresh_from_db()
    assert item.reviewed_at is not None


@pytest.mark.parametrize("params", ["", "sort=faithfulness&tag=factual", "sort=-rubric", "sort=overall&failing=any"])
def test_neighbours_walk_the_items_table_in_its_exact_order(run, params) -> None:
    from urllib.parse import parse_qsl

    from evaluations.item_table import ItemQuery, item_queryset
    from evaluations.review_selectors import item_neighbours

    RunItem.objects.filter(pk=items_of(run)[2].pk).update(overall_score=None)  # a missing score sorts last
    query = ItemQuery.from_params(dict(parse_qsl(params)), run.metrics)
    order = list(item_queryset(run.pk, query).values_list("id", flat=True))
    assert len(order) >= 2

    walked = [
        (neighbours.previous_id, neighbours.next_id)
        for neighbours in (item_neighbours(run.pk, RunItem(pk=item_id), query) for item_id in order)
    ]

    assert walked == [(([None] + order)[i], (order[1:] + [None])[i]) for i in range(len(order))]


def test_the_run_page_shows_the_overall_before_and_after_review_and_links_items_with_its_query(
    run, reviewer_client, make_user
) -> None:
    item = items_of(run)[0]
    claim = Claim.objects.filter(item=item).exclude(current_verdict="CONTRADICTED").first()
    review_services.claim_override(
        claim=claim, reviewer=make_user("rex", role="reviewer"), new_verdict="CONTRADICTED", reason="no"
    )
    run.refresh_from_db()

    html = reviewer_client.get(reverse("evaluations:run_detail", args=[run.pk]) + "?sort=-overall").content.decode()

    judged, reviewed = run.aggregates["review"]["overall"]["judge"], run.aggregates["overall"]
    assert f"judge before review: {judged['mean']:.2f} → after review: {reviewed['mean']:.2f}" in html
    assert f'href="/runs/{run.pk}/items/{item.pk}/?sort=-overall"' in html

"""Reads of the review pages: one item with everything a reviewer checks, its neighbours, the review queue.

Every function runs a fixed number of queries whatever the run's size (the tests pin them).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlencode

from django.db import connection
from django.db.models import (
    Case,
    Count,
    Exists,
    F,
    FilteredRelation,
    FloatField,
    IntegerField,
    Max,
    OuterRef,
    Prefetch,
    Q,
    QuerySet,
    Subquery,
    Value,
    When,
)
from django.db.models.fields.json import KeyTextTransform
from django.db.models.functions import Cast, Coalesce
from django.shortcuts import get_object_or_404

from evaluations.engine import item_input_from_example
from evaluations.metrics import METRIC_NAMES
from evaluations.metrics.citation_audit import CitationAudit, audit_item
from evaluations.metrics.run_settings import resolve_settings
from evaluations.models import Claim, ItemStatus, MetricResult, RunItem, Verdict, VerdictOverride
from judges.selectors import judge_calls_for_item

# Verdicts that make an item worth a person's look before the others.
DOUBTFUL_VERDICTS = (Verdict.CONTRADICTED, Verdict.NOT_ENOUGH_INFO, Verdict.PARTIALLY_SUPPORTED)
FINISHED_ITEM_STATUSES = (ItemStatus.DONE, ItemStatus.ERROR)
# Sort value of an item without the score: below every score (scores are 0..1, correctness 1..5).
MISSING_SCORE = -1.0
# Query-string parameters of the items list that the item page carries to its neighbours.
LIST_PARAMS = ("sort", "status", "failing", "tag", "verdict", "reviewed", "q")


# --- Counts and queue ------------------------------------------------------------------------


@dataclass(frozen=True)
class ReviewCounts:
    reviewed: int
    to_review: int


def run_review_counts(run_id: int) -> ReviewCounts:
    """Finished items reviewed / still to review."""
    counts = RunItem.objects.filter(run_id=run_id, status__in=FINISHED_ITEM_STATUSES).aggregate(
        reviewed=Count("id", filter=Q(reviewed_at__isnull=False)),
        to_review=Count("id", filter=Q(reviewed_at__isnull=True)),
    )
    return ReviewCounts(**counts)


def review_queue(run_id: int) -> QuerySet[RunItem]:
    """Unreviewed finished items, most in need of a person first: judge errors, then items with a
    contradicted / not-enough-info / partially supported claim, then low scores (overall, else
    faithfulness), then high spread across repeats (the largest within-item std of any metric).

    Joins and one GROUP BY rather than subqueries per item: 10,000 items sort in tens of ms.
    """
    return (
        RunItem.objects.filter(run_id=run_id, status__in=FINISHED_ITEM_STATUSES, reviewed_at__isnull=True)
        .annotate(
            doubtful=FilteredRelation("claims", condition=Q(claims__current_verdict__in=DOUBTFUL_VERDICTS)),
            faithfulness=FilteredRelation("results", condition=Q(results__metric="faithfulness")),
            repeated=FilteredRelation("results", condition=Q(results__details__has_key="std")),
        )
        .annotate(
            doubts=Count("doubtful__id", distinct=True),
            need=Case(
                When(status=ItemStatus.ERROR, then=Value(0)),
                When(doubts__gt=0, then=Value(1)),
                default=Value(2),
                output_field=IntegerField(),
            ),
            need_score=Coalesce(F("overall_score"), Max("faithfulness__score")),
            spread=Max(Cast(KeyTextTransform("std", "repeated__details"), FloatField())),
        )
        .select_related("example")
        .only("id", "run_id", "status", "overall_score", "example__external_id", "example__query")
        .order_by("need", F("need_score").asc(nulls_last=True), F("spread").desc(nulls_last=True), "id")
    )


# --- The items list's filter and sort (carried from the run page to the item page) ------------


@dataclass(frozen=True)
class ListParams:
    """The run page's items filters and sort, parsed; `query` is what links carry on."""

    sort: str = "id"
    filters: Mapping[str, str] = field(default_factory=dict)
    query: str = ""


def list_params(params: Mapping[str, str]) -> ListParams:
    """Read `sort` (id, overall, a metric name; a leading '-' for descending) and the filters; unknown values are ignored."""
    sort = params.get("sort", "") or "id"
    if sort.lstrip("-") not in ("id", "overall", *METRIC_NAMES):
        sort = "id"
    filters = {name: params[name] for name in LIST_PARAMS[1:] if params.get(name)}
    kept = {name: value for name, value in (("sort", sort if sort != "id" else ""), *filters.items()) if value}
    return ListParams(sort=sort, filters=filters, query=urlencode(kept))


def run_items_filtered(run_id: int, params: ListParams) -> QuerySet[RunItem]:
    """The run's items under the list's filters, annotated with `sort_value`; order with `params.sort`."""
    items = RunItem.objects.filter(run_id=run_id)
    filters = params.filters
    if filters.get("status") in ItemStatus.values:
        items = items.filter(status=filters["status"])
    if filters.get("failing") in METRIC_NAMES:
        items = items.filter(results__metric=filters["failing"], results__passed=False)
    if filters.get("tag"):
        items = items.filter(_has_tag(filters["tag"]))
    if filters.get("verdict") in Verdict.values:
        items = items.filter(Exists(Claim.objects.filter(item_id=OuterRef("pk"), current_verdict=filters["verdict"])))
    if filters.get("reviewed") in ("yes", "no"):
        items = items.filter(reviewed_at__isnull=filters["reviewed"] == "no")
    if filters.get("q"):
        text = filters["q"]
        items = items.filter(Q(example__query__icontains=text) | Q(example__response__icontains=text))
    key = params.sort.lstrip("-")
    if key == "id":
        value: Any = Cast("id", FloatField())
    elif key == "overall":
        value = Coalesce(F("overall_score"), Value(MISSING_SCORE))
    else:
        items = items.annotate(sorted_result=FilteredRelation("results", condition=Q(results__metric=key)))
        value = Coalesce(F("sorted_result__score"), Value(MISSING_SCORE))
    return items.annotate(sort_value=value)


def _has_tag(tag: str) -> Q:
    if connection.vendor == "postgresql":
        return Q(example__tags__contains=[tag])
    return Q(example__tags__icontains=json.dumps(tag))  # SQLite has no JSON containment: the array's text


@dataclass(frozen=True)
class Neighbours:
    previous_id: int | None
    next_id: int | None


def item_neighbours(run_id: int, item: RunItem, params: ListParams) -> Neighbours:
    """Previous / next item in the list's filter and sort (by sort value, then id)."""
    items = run_items_filtered(run_id, params)
    descending = params.sort.startswith("-")
    current = run_items_filtered(run_id, ListParams(sort=params.sort)).filter(pk=item.pk).values("sort_value")
    current_value = Subquery(current[:1])
    after = "sort_value__lt" if descending else "sort_value__gt"
    before = "sort_value__gt" if descending else "sort_value__lt"
    forward = ("-sort_value" if descending else "sort_value", "id")
    backward = ("sort_value" if descending else "-sort_value", "-id")
    next_id = (
        items.filter(Q(**{after: current_value}) | Q(sort_value=current_value, id__gt=item.pk))
        .order_by(*forward)
        .values_list("id", flat=True)
        .first()
    )
    previous_id = (
        items.filter(Q(**{before: current_value}) | Q(sort_value=current_value, id__lt=item.pk))
        .order_by(*backward)
        .values_list("id", flat=True)
        .first()
    )
    return Neighbours(previous_id, next_id)


def review_queue_head(run_id: int, *, skip: int | None = None) -> int | None:
    """The id of the item most in need of review (other than `skip`), or None when all are reviewed."""
    return review_queue(run_id).exclude(pk=skip).values_list("id", flat=True).first()


# --- One item ----------------------------------------------------------------------------------


@dataclass
class AnswerSentence:
    text: str
    cited_ids: Sequence[str]
    invalid_ids: Sequence[str]
    uncited: bool
    claims: list[Claim] = field(default_factory=list)


@dataclass
class ItemReview:
    item: RunItem
    results: dict[str, MetricResult]
    claims: list[Claim]
    sentences: list[AnswerSentence]
    unplaced_claims: list[Claim]  # claims that match no sentence of the answer
    audit: CitationAudit
    contexts: list[dict[str, Any]]
    judge_calls: list[Any]


def item_for_review(run_id: int, item_id: int) -> RunItem:
    """The item with its run, judge, dataset and example; 404 when it is not one of the run's items."""
    return get_object_or_404(
        RunItem.objects.select_related("run__judge_config", "run__dataset_version__dataset", "example", "reviewed_by"),
        pk=item_id,
        run_id=run_id,
    )


def item_claims(item_id: int) -> list[Claim]:
    """The item's claims in order, each with its review history (newest first) and reviewers."""
    history = VerdictOverride.objects.select_related("reviewer").order_by("-created_at", "-id")
    return list(
        Claim.objects.filter(item_id=item_id).order_by("position").prefetch_related(Prefetch("overrides", history))
    )


def item_results(item_id: int) -> dict[str, MetricResult]:
    return {result.metric: result for result in MetricResult.objects.filter(item_id=item_id)}


def item_review(item: RunItem) -> ItemReview:
    """Everything the item page shows, from four queries (results, claims, their history, judge calls)."""
    example = item.example
    contexts = [context for context in example.contexts if isinstance(context, dict)]
    context_ids = [str(context.get("id", "")) for context in contexts]
    audit = audit_item(item_input_from_example(example), resolve_settings(item.run.settings))
    claims = item_claims(item.pk)
    sentences = [
        AnswerSentence(
            text=sentence.text,
            cited_ids=sentence.cited_ids,
            invalid_ids=sentence.invalid_ids,
            uncited=sentence.uncited,
        )
        for sentence in audit.sentences
    ]
    unplaced = place_claims(claims, sentences)
    cited = set(audit.cited_ids)
    expected = {str(value) for value in example.expected_context_ids}
    claimed = {str(cid) for claim in claims for cid in claim.context_ids}
    shown_contexts = [
        {
            "id": cid,
            "text": str(context.get("text", "")),
            "score": context.get("score"),
            "cited": cid in cited,
            "expected": cid in expected,
            "claimed": cid in claimed,
        }
        for cid, context in zip(context_ids, contexts, strict=True)
    ]
    return ItemReview(
        item=item,
        results=item_results(item.pk),
        claims=claims,
        sentences=sentences,
        unplaced_claims=unplaced,
        audit=audit,
        contexts=shown_contexts,
        judge_calls=list(judge_calls_for_item(run_item_id=item.pk)),
    )


_WORD = re.compile(r"\w+")
# A claim sits under the sentence sharing most of its words, if that is at least this share.
MIN_CLAIM_OVERLAP = 0.34


def place_claims(claims: Sequence[Claim], sentences: Sequence[AnswerSentence]) -> list[Claim]:
    """Put each claim under the answer sentence it restates (word overlap); returns the claims placed nowhere."""
    sentence_words = [set(_WORD.findall(sentence.text.lower())) for sentence in sentences]
    unplaced = []
    for claim in claims:
        words = set(_WORD.findall(claim.text.lower()))
        best, best_share = None, 0.0
        for index, candidate in enumerate(sentence_words):
            share = len(words & candidate) / len(words) if words else 0.0
            if share > best_share:
                best, best_share = index, share
        if best is None or best_share < MIN_CLAIM_OVERLAP:
            unplaced.append(claim)
        else:
            sentences[best].claims.append(claim)
    return unplaced

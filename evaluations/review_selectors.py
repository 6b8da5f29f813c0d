"""Reads of the review pages: one item with everything a reviewer checks, its neighbours, the review queue.

Every function runs a fixed number of queries whatever the run's size (the tests pin them).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from django.db.models import (
    Case,
    Count,
    F,
    FilteredRelation,
    FloatField,
    IntegerField,
    Max,
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

from evaluations.engine import item_input_from_example, item_input_from_snapshot
from evaluations.item_table import ItemQuery, ItemQueryError, item_queryset, sort_key
from evaluations.metrics.citation_audit import CitationAudit, audit_item
from evaluations.metrics.run_settings import resolve_settings
from evaluations.models import Claim, ItemStatus, MetricResult, RunItem, Verdict, VerdictOverride
from judges.selectors import judge_calls_for_item
from targets.models import SnapshotStatus, TargetSnapshot
from targets.selectors import snapshot_for_item

# Verdicts that make an item worth a person's look before the others.
DOUBTFUL_VERDICTS = (Verdict.CONTRADICTED, Verdict.NOT_ENOUGH_INFO, Verdict.PARTIALLY_SUPPORTED)
FINISHED_ITEM_STATUSES = (ItemStatus.DONE, ItemStatus.ERROR)


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


# --- Previous / next in the run page's items table ----------------------------------------------


def list_query(params: Mapping[str, str], metrics: Sequence[str]) -> ItemQuery:
    """The items table's filters and sort carried in the item page's query string; unusable ones are dropped."""
    try:
        return ItemQuery.from_params(params, metrics)
    except ItemQueryError:
        return ItemQuery()


@dataclass(frozen=True)
class Neighbours:
    previous_id: int | None
    next_id: int | None


# Where a missing score sorts in the keyset comparisons: last, whichever the direction (as the table does).
_NULL_LAST_ASCENDING, _NULL_LAST_DESCENDING = float("inf"), float("-inf")


def item_neighbours(run_id: int, item: RunItem, query: ItemQuery) -> Neighbours:
    """The items before and after `item` in the table's filter and sort (`item_table.item_queryset`), by keyset:
    two indexed LIMIT 1 queries whatever the run's size, never a scan of the rows in between."""
    items = item_queryset(run_id, query)
    key = sort_key(query)
    if key is None:
        following = items.filter(id__gt=item.pk).order_by("id")
        preceding = items.filter(id__lt=item.pk).order_by("-id")
    else:
        missing = _NULL_LAST_DESCENDING if query.descending else _NULL_LAST_ASCENDING
        items = items.annotate(sort_value=Coalesce(key, Value(missing), output_field=FloatField()))
        current = Subquery(items.filter(pk=item.pk).values("sort_value")[:1])
        after, before = ("lt", "gt") if query.descending else ("gt", "lt")
        following = items.filter(
            Q(**{f"sort_value__{after}": current}) | Q(sort_value=current, id__gt=item.pk)
        ).order_by(F("sort_value").desc() if query.descending else F("sort_value").asc(), "id")
        preceding = items.filter(
            Q(**{f"sort_value__{before}": current}) | Q(sort_value=current, id__lt=item.pk)
        ).order_by(F("sort_value").asc() if query.descending else F("sort_value").desc(), "-id")
    return Neighbours(
        previous_id=preceding.values_list("id", flat=True).first(),
        next_id=following.values_list("id", flat=True).first(),
    )


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
    response: str  # the answer that was scored: the dataset's, or the live target's ("" when it did not answer)
    sentences: list[AnswerSentence]
    unplaced_claims: list[Claim]  # claims that match no sentence of the answer
    audit: CitationAudit
    contexts: list[dict[str, Any]]
    judge_calls: list[Any]
    # A live target's snapshot of this item (what it answered), None when the run scores stored answers.
    target_snapshot: TargetSnapshot | None = None


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
    """Everything the item page shows, from four queries (results, claims, their history, judge calls) and,
    for a run with a live target, a fifth (the item's snapshot: its answer and contexts are the ones shown)."""
    example = item.example
    snapshot = snapshot_for_item(item.pk) if item.run.target_config else None
    if item.run.target_config:
        answered = snapshot is not None and snapshot.status == SnapshotStatus.OK
        contexts = list(snapshot.contexts) if answered else []
        item_input = (
            item_input_from_snapshot(example, snapshot)
            if answered
            else replace(item_input_from_example(example), response="", contexts=())
        )
    else:
        contexts = [context for context in example.contexts if isinstance(context, dict)]
        item_input = item_input_from_example(example)
    context_ids = [str(context.get("id", "")) for context in contexts]
    audit = audit_item(item_input, resolve_settings(item.run.settings))
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
        response=item_input.response,
        sentences=sentences,
        unplaced_claims=unplaced,
        audit=audit,
        contexts=shown_contexts,
        judge_calls=list(judge_calls_for_item(run_item_id=item.pk)),
        target_snapshot=snapshot,
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

"""Reads behind a run's items table: filters and sort from the query string, one page of rows, export rows.

Every read is a fixed number of queries whatever the run's size: the page (or an export chunk)
is one query over RunItem joined to its Example, then one query for those items' metric results
and one for their claims' verdict counts. Sorting by a metric orders by a correlated subquery on
MetricResult's (item, metric) unique index.
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime
from itertools import islice
from typing import Any
from urllib.parse import urlencode

from django.core.paginator import Page, Paginator
from django.db import connection
from django.db.models import Count, Exists, F, OuterRef, Q, QuerySet, Subquery
from django.db.models.functions import Coalesce
from django.utils.functional import cached_property

from evaluations.aggregates import SCORE_SCALES
from evaluations.metrics import execution_order
from evaluations.models import Claim, ItemStatus, MetricResult, RunItem, Verdict

PAGE_SIZE = 50
# Items per export chunk: one RunItem query and one MetricResult query each; 1,000 rows keep a
# 10,000-item export at ~20 queries and a few MB of memory at most.
EXPORT_CHUNK_SIZE = 1000
OVERALL = "overall"
ANY_METRIC = "any"
VERDICT_LABELS = {
    Verdict.SUPPORTED: "supported",
    Verdict.PARTIALLY_SUPPORTED: "partial",
    Verdict.CONTRADICTED: "contradicted",
    Verdict.NOT_ENOUGH_INFO: "no info",
}
VERDICT_SYMBOLS = {
    Verdict.SUPPORTED: "✓",
    Verdict.PARTIALLY_SUPPORTED: "◐",
    Verdict.CONTRADICTED: "✗",
    Verdict.NOT_ENOUGH_INFO: "?",
}
REVIEWED_CHOICES = ("yes", "no")


class ItemQueryError(ValueError):
    """A filter or sort parameter the table cannot use; the message starts with the parameter's name."""


@dataclass(frozen=True)
class ItemQuery:
    """The table's filters and sort, as they appear in the query string (empty string: no filter)."""

    sort: str = ""  # "", "overall", "-overall", "<metric>", "-<metric>"
    failing: str = ""  # a metric name or "any"
    tag: str = ""
    status: str = ""
    verdict: str = ""
    reviewed: str = ""  # "yes" / "no"
    q: str = ""
    FIELDS = ("sort", "failing", "tag", "status", "verdict", "reviewed", "q")

    @classmethod
    def from_params(cls, params: Mapping[str, str], metrics: Sequence[str]) -> ItemQuery:
        """Read and validate the query string; ItemQueryError names the bad parameter."""
        values = {name: (params.get(name) or "").strip() for name in cls.FIELDS}
        query = cls(**values)
        columns = sortable_columns(metrics)
        if query.sort and query.sort.removeprefix("-") not in columns:
            raise ItemQueryError(
                f"sort: unknown column {query.sort!r} (one of {', '.join(columns)}, '-' for descending)"
            )
        if query.failing and query.failing not in (ANY_METRIC, *metrics):
            raise ItemQueryError(f"failing: unknown metric {query.failing!r} (one of any, {', '.join(metrics)})")
        if query.status and query.status not in ItemStatus.values:
            raise ItemQueryError(f"status: unknown status {query.status!r} (one of {', '.join(ItemStatus.values)})")
        if query.verdict and query.verdict not in Verdict.values:
            raise ItemQueryError(f"verdict: unknown verdict {query.verdict!r} (one of {', '.join(Verdict.values)})")
        if query.reviewed and query.reviewed not in REVIEWED_CHOICES:
            raise ItemQueryError(f"reviewed: must be yes or no, not {query.reviewed!r}")
        return query

    @property
    def sort_column(self) -> str:
        return self.sort.removeprefix("-")

    @property
    def descending(self) -> bool:
        return self.sort.startswith("-")

    @property
    def is_filtered(self) -> bool:
        return any(getattr(self, name) for name in self.FIELDS if name != "sort")

    def params(self, **changes: str) -> str:
        """The query string of this query with `changes` applied, empty values left out."""
        changed = replace(self, **changes) if changes else self
        return urlencode({name: getattr(changed, name) for name in self.FIELDS if getattr(changed, name)})

    def sort_params(self, column: str) -> str:
        """The query string that sorts by `column`: ascending first (worst first), then descending."""
        return self.params(sort=f"-{column}" if self.sort == column else column)


def sortable_columns(metrics: Sequence[str]) -> list[str]:
    return [OVERALL, *execution_order(metrics)]


def item_queryset(run_id: int, query: ItemQuery) -> QuerySet[RunItem]:
    """The run's items matching the query, in its order (position when unsorted); nulls sort last."""
    items = RunItem.objects.filter(run_id=run_id)
    if query.status:
        items = items.filter(status=query.status)
    if query.reviewed:
        items = items.filter(reviewed_at__isnull=query.reviewed == "no")
    if query.failing:
        failing = MetricResult.objects.filter(item=OuterRef("pk"), passed=False)
        if query.failing != ANY_METRIC:
            failing = failing.filter(metric=query.failing)
        items = items.filter(Exists(failing))
    if query.verdict:
        items = items.filter(Exists(Claim.objects.filter(item=OuterRef("pk"), current_verdict=query.verdict)))
    if query.tag:
        items = items.filter(_tag_filter(query.tag))
    if query.q:
        items = items.filter(Q(example__query__icontains=query.q) | Q(example__response__icontains=query.q))
    return items.order_by(*_ordering(query))


def _tag_filter(tag: str) -> Q:
    if connection.vendor == "postgresql":
        return Q(example__tags__contains=[tag])  # jsonb containment
    # SQLite has no JSON containment lookup: match the quoted tag in the array's JSON text.
    return Q(example__tags__icontains=json.dumps(tag))


def sort_key(query: ItemQuery) -> Any:
    """The value the table sorts by (then by id, nulls last either way); None when unsorted (by id alone)."""
    if not query.sort:
        return None
    if query.sort_column == OVERALL:
        return F("overall_score")
    score = MetricResult.objects.filter(item=OuterRef("pk"), metric=query.sort_column).values("score")[:1]
    return Subquery(score)


def _ordering(query: ItemQuery) -> list[Any]:
    # Items are created in their examples' file order, so the id is the position order without a join.
    key = sort_key(query)
    if key is None:
        return ["id"]
    ordered = key.desc(nulls_last=True) if query.descending else key.asc(nulls_last=True)
    return [ordered, "id"]


# --- Rows ----------------------------------------------------------------------------------


@dataclass
class ItemRow:
    id: int
    position: int
    external_id: str
    query: str
    response: str
    tags: list[str]
    status: str
    error: str
    overall: float | None
    reviewed_at: datetime | None
    scores: dict[str, MetricResult | None] = field(default_factory=dict)  # metric -> result (score, passed)
    verdicts: dict[str, int] = field(default_factory=dict)  # current verdict -> claims

    def verdict_badges(self) -> list[tuple[str, str]]:
        """(verdict, "✗ 2 contradicted") per verdict present: colour and word, never colour alone."""
        return [
            (verdict, f"{VERDICT_SYMBOLS[verdict]} {n} {VERDICT_LABELS[verdict]}")
            for verdict, n in self.verdicts.items()
        ]

    def score_cells(self) -> list[ScoreCell]:
        """The overall then each metric, ready to print (the table's hot loop, kept out of the template)."""
        cells = [ScoreCell.of(OVERALL, self.overall, None)]
        for name, result in self.scores.items():
            cells.append(ScoreCell.of(name, result.score if result else None, result.passed if result else None))
        return cells


@dataclass(frozen=True)
class ScoreCell:
    text: str  # "" when there is no score
    state: str  # "pass", "fail" or ""
    share: str  # the score's share of its scale, for the bar under it

    @classmethod
    def of(cls, metric: str, score: float | None, passed: bool | None) -> ScoreCell:
        if score is None:
            return cls("", "", "0")
        low, high = SCORE_SCALES.get(metric, (0.0, 1.0))
        share = min(max((score - low) / (high - low), 0.0), 1.0)
        state = "pass" if passed else "fail" if passed is False else ""
        return cls(f"{score:.2f}", state, f"{share:.3f}")


_ROW_FIELDS = (
    "id",
    "example__position",
    "example__external_id",
    "example__query",
    "shown_response",
    "example__tags",
    "status",
    "error",
    "overall_score",
    "reviewed_at",
)


def item_page(run_id: int, metrics: Sequence[str], query: ItemQuery, page_number: Any) -> Page:
    """One page of the table: Page.object_list is a list of ItemRow (three queries plus the count)."""
    items = item_queryset(run_id, query)
    paginator = _CountedPaginator(
        _with_response(items).values_list(*_ROW_FIELDS), PAGE_SIZE, count=items.order_by().count
    )
    page = paginator.get_page(page_number)
    page.object_list = _rows(list(page.object_list), metrics, with_verdicts=True)
    return page


class _CountedPaginator(Paginator):
    """A paginator counting with its own query: COUNT over a values() queryset keeps its joins."""

    def __init__(self, object_list: Any, per_page: int, *, count: Callable[[], int]) -> None:
        super().__init__(object_list, per_page)
        self._count = count

    @cached_property
    def count(self) -> int:
        return self._count()


def item_export_rows(run_id: int, metrics: Sequence[str], query: ItemQuery) -> Iterator[ItemRow]:
    """Every matching item, in the table's order, fetched EXPORT_CHUNK_SIZE at a time (for streaming)."""
    raw = _with_response(item_queryset(run_id, query)).values_list(*_ROW_FIELDS).iterator(chunk_size=EXPORT_CHUNK_SIZE)
    while chunk := list(islice(raw, EXPORT_CHUNK_SIZE)):
        yield from _rows(chunk, metrics, with_verdicts=False)


def _with_response(items: QuerySet[RunItem]) -> QuerySet[RunItem]:
    """The answer each row shows: a live target's (the item's snapshot) when the run called one, else the dataset's."""
    return items.annotate(shown_response=Coalesce("target_snapshot__answer", "example__response"))


def _rows(raw: list[tuple], metrics: Sequence[str], *, with_verdicts: bool) -> list[ItemRow]:
    rows = [
        ItemRow(
            id=item_id,
            position=position,
            external_id=external_id,
            query=query,
            response=response,
            tags=[str(tag) for tag in tags or ()],
            status=status,
            error=error,
            overall=overall,
            reviewed_at=reviewed_at,
        )
        for item_id, position, external_id, query, response, tags, status, error, overall, reviewed_at in raw
    ]
    ids = [row.id for row in rows]
    results: dict[int, dict[str, MetricResult]] = defaultdict(dict)
    for result in MetricResult.objects.filter(item_id__in=ids).only("item_id", "metric", "score", "passed"):
        results[result.item_id][result.metric] = result
    columns = execution_order(metrics)
    for row in rows:
        row.scores = {name: results[row.id].get(name) for name in columns}
    if with_verdicts:
        verdicts: dict[int, dict[str, int]] = defaultdict(dict)
        counts = Claim.objects.filter(item_id__in=ids).values_list("item_id", "current_verdict").annotate(n=Count("id"))
        for item_id, verdict, n in counts.order_by():
            verdicts[item_id][verdict] = n
        for row in rows:
            row.verdicts = {
                verdict: verdicts[row.id][verdict] for verdict in Verdict.values if verdict in verdicts[row.id]
            }
    return rows

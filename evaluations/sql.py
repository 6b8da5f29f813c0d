"""Hand-written SQL of the run engine: the statements that run for every item.

Plain SQL (PostgreSQL and SQLite >= 3.35 alike, see evalsite/db.py, except where a function says
PostgreSQL only) because the ORM's query
compilation cost 1-3 ms of CPU each, against ~0.3 ms raw: at hundreds of items a second that was
a third of a worker's CPU (bench/throughput.py). Every identifier is quoted; values go through
`evalsite.db.to_db`.
"""

from __future__ import annotations

import json
import statistics
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

from django.db import connection
from django.db.models import Model
from django.utils import timezone

from datasets.models import Example
from datasets.sql import example_from_columns, example_input_columns
from evalsite.db import insert_rows_sql, quote, table, to_db
from evaluations.models import ItemStatus, MetricResult, Run, RunItem, RunStatus

_ITEMS = table(RunItem)
_RUNS = table(Run)
_ID, _RUN_ID, _EXAMPLE_ID = quote("id"), quote("run_id"), quote("example_id")
_STATUS, _ATTEMPTS, _ENQUEUED_AT = quote("status"), quote("attempts"), quote("enqueued_at")
_LEASE = quote("lease_expires_at")

_CLAIM_SQL = f"""
    UPDATE {_ITEMS} SET {_STATUS} = %s, {_ATTEMPTS} = {_ATTEMPTS} + 1, {_LEASE} = %s,
        {quote("started_at")} = %s, {quote("error")} = ''
    WHERE {_ID} = %s AND {_STATUS} = %s
      AND EXISTS (SELECT 1 FROM {_RUNS} WHERE {_RUNS}.{_ID} = {_ITEMS}.{_RUN_ID} AND {_RUNS}.{_STATUS} = %s)
    RETURNING {_RUN_ID}, {_ATTEMPTS}, {example_input_columns(f"{_ITEMS}.{_EXAMPLE_ID}")}
"""


def item_claim(item_id: int, *, now: datetime, lease_until: datetime) -> tuple[int, int, Example] | None:
    """pending → running with a lease, only while the run is running: (run id, attempt, example), or None.

    The status condition is on the updated row itself, so PostgreSQL re-checks it after waiting
    for a concurrent claim's row lock: of two deliveries exactly one wins.
    """
    params = [ItemStatus.RUNNING, to_db(lease_until), to_db(now), item_id, ItemStatus.PENDING, RunStatus.RUNNING]
    with connection.cursor() as cursor:
        cursor.execute(_CLAIM_SQL, params)
        row = cursor.fetchone()
    if row is None:
        return None
    run_id, attempt, *values = row
    return run_id, attempt, example_from_columns(values)


def item_finish(item_id: int, attempt: int, values: Mapping[str, Any]) -> bool:
    """Write the item's final columns if this execution still owns it (running, same attempt)."""
    columns = ", ".join(f"{quote(name)} = %s" for name in values)
    sql = f"UPDATE {_ITEMS} SET {columns} WHERE {_ID} = %s AND {_STATUS} = %s AND {_ATTEMPTS} = %s"
    with connection.cursor() as cursor:
        cursor.execute(sql, [*map(to_db, values.values()), item_id, ItemStatus.RUNNING, attempt])
        return cursor.rowcount == 1


RUN_COUNTERS = ("items_done", "items_failed", "judge_calls", "cache_hits", "input_tokens", "output_tokens", "cost")
_BUMP_SQL = (
    f"UPDATE {_RUNS} SET "
    + ", ".join(f"{quote(name)} = {quote(name)} + %s" for name in RUN_COUNTERS)
    + f" WHERE {_ID} = %s"
)


def item_complete_in_one_statement(
    item_id: int,
    attempt: int,
    values: Mapping[str, Any],
    rows: Sequence[Sequence[Model]],
    run_id: int,
    counters: Mapping[str, Any],
) -> bool:
    """PostgreSQL: `item_finish` to done, the item's result rows and the run's counters in one statement
    (data-modifying CTEs: atomic by itself, so no BEGIN and COMMIT either). The rows are inserted and
    `items_done` bumped only if this execution still owned the item; True if it did.
    """
    columns = ", ".join(f"{quote(name)} = %s" for name in values)
    parts = [
        f"{quote('finished')} AS (UPDATE {_ITEMS} SET {columns} "
        f"WHERE {_ID} = %s AND {_STATUS} = %s AND {_ATTEMPTS} = %s RETURNING {_ID})"
    ]
    params: list[Any] = [*map(to_db, values.values()), item_id, ItemStatus.RUNNING, attempt]
    owned = f"EXISTS (SELECT 1 FROM {quote('finished')})"
    for number, group in enumerate(group for group in rows if group):
        insert, insert_params = insert_rows_sql(group, where=owned)
        parts.append(f"{quote(f'inserted_{number}')} AS ({insert})")
        params += insert_params
    bumps = [
        f"{quote(name)} = {quote(name)} + "
        + (f"(SELECT COUNT(*) FROM {quote('finished')})" if name == "items_done" else "%s")
        for name in RUN_COUNTERS
    ]
    parts.append(f"{quote('bumped')} AS (UPDATE {_RUNS} SET {', '.join(bumps)} WHERE {_ID} = %s)")
    params += [to_db(counters.get(name, 0)) for name in RUN_COUNTERS if name != "items_done"] + [run_id]
    sql = "WITH " + ", ".join(parts) + f" SELECT COUNT(*) FROM {quote('finished')}"
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        return cursor.fetchone()[0] == 1


def run_counters_add(run_id: int, amounts: Mapping[str, Any]) -> None:
    """Add to the run's counters in place (`calls = calls + n`): concurrent items never lose an update."""
    with connection.cursor() as cursor:
        cursor.execute(_BUMP_SQL, [*(to_db(amounts.get(name, 0)) for name in RUN_COUNTERS), run_id])


def items_lease(item_ids: list[int], *, until: datetime, statuses: tuple[str, ...]) -> int:
    """Set the lease of those items that are in one of `statuses` (evaluations/leases.py); rows changed."""
    if not item_ids:
        return 0
    ids = ", ".join(["%s"] * len(item_ids))
    states = ", ".join(["%s"] * len(statuses))
    sql = f"UPDATE {_ITEMS} SET {_LEASE} = %s WHERE {_ID} IN ({ids}) AND {_STATUS} IN ({states})"
    with connection.cursor() as cursor:
        cursor.execute(sql, [to_db(until), *item_ids, *statuses])
        return cursor.rowcount


def items_mark_enqueued(run_id: int, count: int) -> list[int]:
    """Mark the run's next `count` unqueued pending items as queued (only while it is running); their ids.

    SKIP LOCKED (PostgreSQL): concurrent feeders of one run take different items. SQLite runs
    one write transaction at a time, so the plain UPDATE is enough there.
    """
    skip_locked = " FOR UPDATE SKIP LOCKED" if connection.features.has_select_for_update_skip_locked else ""
    sql = f"""
        UPDATE {_ITEMS} SET {_ENQUEUED_AT} = %s WHERE {_ID} IN (
            SELECT {_ID} FROM {_ITEMS}
            WHERE {_RUN_ID} = %s AND {_STATUS} = %s AND {_ENQUEUED_AT} IS NULL
              AND EXISTS (SELECT 1 FROM {_RUNS} WHERE {_ID} = %s AND {_STATUS} = %s)
            ORDER BY {_ID} LIMIT %s{skip_locked}
        ) RETURNING {_ID}
    """
    params = [to_db(timezone.now()), run_id, ItemStatus.PENDING, run_id, RunStatus.RUNNING, count]
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        return sorted(row[0] for row in cursor.fetchall())


# --- Reviews: the run statistics a review can change (PostgreSQL only) ------------------------

# One pass over the run's items (no GROUP BY, no sort but the medians'): each scope — the run, then
# each given tag — is a set of FILTERed aggregates; 10,000 items take tens of ms. PostgreSQL only
# (percentile_cont, jsonb containment): other databases rebuild the aggregates in full.
_RESULTS = table(MetricResult)
_EXAMPLES = table(Example)
_DONE = f"ri.{_STATUS} = 'done'"
_FINISHED = f"ri.{_STATUS} IN ('done', 'error')"
_JUDGE_KEY = "f.details -> 'judge'"
# (overall, faithfulness score, faithfulness passed) of an item: after review, and as the judge left them.
_REVIEWED_VALUES = (f"ri.{quote('overall_score')}", "f.score", "f.passed")
_JUDGE_VALUES = tuple(
    f"CASE WHEN {_JUDGE_KEY} IS NOT NULL THEN ({_JUDGE_KEY} ->> '{key}')::{cast} ELSE {current} END"
    for key, cast, current in zip(
        ("overall", "score", "passed"), ("float8", "float8", "boolean"), _REVIEWED_VALUES, strict=True
    )
)


def _review_stats_columns(values: tuple[str, ...], scope: str) -> list[str]:
    overall, score, passed = values
    where = f" FILTER (WHERE {scope})"
    return [
        f"avg({overall}){where}",
        f"percentile_cont(0.5) WITHIN GROUP (ORDER BY {overall}){where}",
        f"count({overall}){where}",
        f"avg({score}){where}",
        f"percentile_cont(0.5) WITHIN GROUP (ORDER BY {score}){where}",
        f"count({score}){where}",
        f"count(*) FILTER (WHERE {scope} AND {score} IS NOT NULL AND {passed})",
        f"count(*) FILTER (WHERE {scope} AND {score} IS NOT NULL AND {passed} IS NOT NULL)",
    ]


def run_review_stats(run_id: int, tags: list[str]) -> tuple:
    """One row (aggregates.review_summary reads it): REVIEW_STATS_COLUMNS values for the run after review,
    the same as the judge left it, the same after review for each of `tags`, then the finished items
    reviewed and still to review. Other databases than PostgreSQL: the run's two chunks only, in Python
    (small local runs; their tag statistics are rebuilt in full by the caller)."""
    if connection.vendor != "postgresql":
        return _review_stats_in_python(run_id)
    params: dict[str, Any] = {"run": run_id}
    columns = _review_stats_columns(_REVIEWED_VALUES, _DONE) + _review_stats_columns(_JUDGE_VALUES, _DONE)
    for i, tag in enumerate(tags):
        params[f"tag{i}"] = json.dumps([tag])
        columns += _review_stats_columns(_REVIEWED_VALUES, f"{_DONE} AND e.{quote('tags')} @> %(tag{i})s::jsonb")
    reviewed_at = f"ri.{quote('reviewed_at')}"
    columns += [
        f"count(*) FILTER (WHERE {_FINISHED} AND {reviewed_at} IS NOT NULL)",
        f"count(*) FILTER (WHERE {_FINISHED} AND {reviewed_at} IS NULL)",
    ]
    sql = f"""
        SELECT {", ".join(columns)}
        FROM {_ITEMS} ri
        JOIN {_EXAMPLES} e ON e.{_ID} = ri.{_EXAMPLE_ID}
        LEFT JOIN {_RESULTS} f ON f.{quote("item_id")} = ri.{_ID} AND f.{quote("metric")} = 'faithfulness'
        WHERE ri.{_RUN_ID} = %(run)s
    """
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        return cursor.fetchone()


def _review_stats_in_python(run_id: int) -> tuple:
    rows = MetricResult.objects.filter(item__run_id=run_id, metric="faithfulness", item__status=ItemStatus.DONE)
    values = list(rows.values_list("item__overall_score", "score", "passed", "details"))
    overall_only = RunItem.objects.filter(run_id=run_id, status=ItemStatus.DONE, results__isnull=True)
    values += [(overall, None, None, {}) for overall in overall_only.values_list("overall_score", flat=True)]
    reviewed = [(overall, score, passed) for overall, score, passed, _ in values]
    judge = [
        (details["judge"]["overall"], details["judge"]["score"], details["judge"]["passed"]) if "judge" in details
        else (overall, score, passed)
        for overall, score, passed, details in values
    ]  # fmt: skip
    finished = RunItem.objects.filter(run_id=run_id, status__in=[ItemStatus.DONE, ItemStatus.ERROR])
    counts = (finished.filter(reviewed_at__isnull=False).count(), finished.filter(reviewed_at__isnull=True).count())
    return (*_stats_chunk(reviewed), *_stats_chunk(judge), *counts)


def _stats_chunk(values: list[tuple]) -> tuple:
    """The REVIEW_STATS_COLUMNS values of one scope from (overall, faithfulness score, passed) per item."""
    overalls = [overall for overall, _, _ in values if overall is not None]
    scores = [(score, passed) for _, score, passed in values if score is not None]
    return (
        statistics.fmean(overalls) if overalls else None,
        statistics.median(overalls) if overalls else None,
        len(overalls),
        statistics.fmean(score for score, _ in scores) if scores else None,
        statistics.median(score for score, _ in scores) if scores else None,
        len(scores),
        sum(1 for _, passed in scores if passed),
        sum(1 for _, passed in scores if passed is not None),
    )

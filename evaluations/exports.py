"""CSV and JSON exports of a run's items, produced row by row so a 10,000-item run never sits in memory.

CSV cells that a spreadsheet would read as a formula (starting with = + - @, or a tab or carriage
return) are prefixed with a single quote: dataset text is untrusted.
"""

from __future__ import annotations

import csv
import json
from collections.abc import Iterable, Iterator, Sequence
from typing import Any

from evaluations.item_table import ItemRow
from evaluations.metrics import execution_order

FORMULA_PREFIXES = ("=", "+", "-", "@", "\t", "\r")


def spreadsheet_safe(value: Any) -> Any:
    """The value, with a leading ' when it is text a spreadsheet would evaluate."""
    if isinstance(value, str) and value.startswith(FORMULA_PREFIXES):
        return "'" + value
    return value


def export_record(row: ItemRow, columns: Sequence[str]) -> dict[str, Any]:
    """One item as a flat record: ids, status, overall, each metric's score and pass, review time, text."""
    record: dict[str, Any] = {
        "item_id": row.id,
        "example_id": row.external_id,
        "position": row.position,
        "status": row.status,
        "overall": row.overall,
    }
    for name in columns:
        result = row.scores.get(name)
        record[f"{name}_score"] = result.score if result else None
        record[f"{name}_passed"] = result.passed if result else None
    record["reviewed_at"] = row.reviewed_at.isoformat() if row.reviewed_at else None
    record["tags"] = row.tags
    record["query"] = row.query
    record["response"] = row.response
    record["error"] = row.error
    return record


class _Line:
    """A file-like object whose write returns the text, for csv.writer in a generator."""

    def write(self, text: str) -> str:
        return text


def csv_lines(rows: Iterable[ItemRow], metrics: Sequence[str]) -> Iterator[str]:
    columns = execution_order(metrics)
    writer = csv.writer(_Line())
    header_written = False
    for row in rows:
        record = export_record(row, columns)
        if not header_written:
            yield writer.writerow(list(record))
            header_written = True
        record["tags"] = ";".join(record["tags"])
        yield writer.writerow([spreadsheet_safe("" if value is None else value) for value in record.values()])
    if not header_written:
        yield writer.writerow(list(export_record(_EMPTY_ROW, columns)))


def json_chunks(rows: Iterable[ItemRow], metrics: Sequence[str]) -> Iterator[str]:
    """A JSON array, one item per line."""
    columns = execution_order(metrics)
    yield "["
    separator = "\n"
    for row in rows:
        yield separator + json.dumps(export_record(row, columns), ensure_ascii=False)
        separator = ",\n"
    yield "\n]\n"


_EMPTY_ROW = ItemRow(
    id=0,
    position=0,
    external_id="",
    query="",
    response="",
    tags=[],
    status="",
    error="",
    overall=None,
    reviewed_at=None,
)

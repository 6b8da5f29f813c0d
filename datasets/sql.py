"""Hand-written SQL reading the datasets app's tables for other apps' hot statements.

The engine's claim returns an example's fields in the same UPDATE as scalar subqueries (SQLite's
RETURNING cannot name an UPDATE ... FROM table), saving a query and an ORM fetch per item.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from datasets.models import Example
from evalsite.db import from_db, quote, table

# What the engine reads of an example to build its metric input (and a live target's request:
# external_id, tags and metadata fill the request template's placeholders).
EXAMPLE_INPUT_FIELDS = tuple(
    Example._meta.get_field(name)
    for name in (
        "query",
        "response",
        "contexts",
        "reference_answer",
        "expected_context_ids",
        "retrieved_ids",
        "external_id",
        "tags",
        "metadata",
    )
)


def example_input_columns(example_id_sql: str) -> str:
    """Scalar subqueries selecting EXAMPLE_INPUT_FIELDS of the example whose id is `example_id_sql`."""
    examples = table(Example)
    pk = quote(Example._meta.pk.column)
    return ", ".join(
        f"(SELECT {quote(field.column)} FROM {examples} WHERE {examples}.{pk} = {example_id_sql})"
        for field in EXAMPLE_INPUT_FIELDS
    )


def example_from_columns(values: Sequence[Any]) -> Example:
    """An unsaved Example holding the values `example_input_columns` selected (converted as the fields hold them)."""
    return Example(
        **{field.attname: from_db(field, value) for field, value in zip(EXAMPLE_INPUT_FIELDS, values, strict=True)}
    )

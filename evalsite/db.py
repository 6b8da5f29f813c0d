"""The SQL helpers every app's hand-written statements share: identifier quoting, value converters,
the raw multi-row insert, and the SQLite version check.

Hand-written SQL lives in one module per app (`datasets/sql.py`, `evaluations/sql.py`,
`judges/sql.py`): the statements that run for every item or judge call, where the ORM's query
compilation cost more CPU than the database spent running them (bench/throughput.py).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from datetime import datetime
from decimal import Decimal
from functools import cache
from typing import Any

from django.core.exceptions import ImproperlyConfigured
from django.db import connection, models

# RETURNING (the claim, the feed, insert_rows with ids) arrived in SQLite 3.35.
SQLITE_MIN_VERSION = (3, 35, 0)


def quote(name: str) -> str:
    """A table or column name quoted for the current backend."""
    return connection.ops.quote_name(name)


def table(model: type[models.Model]) -> str:
    return quote(model._meta.db_table)


def column(model: type[models.Model], field_name: str) -> str:
    return quote(model._meta.get_field(field_name).column)


def to_db(value: Any) -> Any:
    """Datetimes and decimals as the backend stores them (SQLite: UTC text without offset)."""
    if isinstance(value, datetime):
        return connection.ops.adapt_datetimefield_value(value)
    if isinstance(value, Decimal):
        return connection.ops.adapt_decimalfield_value(value)
    return value


def from_db(field: models.Field, value: Any) -> Any:
    """A raw column value as the model field holds it (JSON columns arrive as text on SQLite)."""
    convert = getattr(field, "from_db_value", None)
    return convert(value, None, connection) if convert is not None else value


def check_sqlite_version(engine: str, version: tuple[int, ...] = sqlite3.sqlite_version_info) -> None:
    """ImproperlyConfigured at start-up when the database is SQLite older than SQLITE_MIN_VERSION."""
    if "sqlite" in engine and tuple(version) < SQLITE_MIN_VERSION:
        found = ".".join(map(str, version))
        needed = ".".join(map(str, SQLITE_MIN_VERSION))
        raise ImproperlyConfigured(
            f"DATABASE_URL: SQLite {found} is too old; evalsite needs SQLite >= {needed} (UPDATE ... RETURNING). "
            "Upgrade SQLite (or Python's sqlite3) or use PostgreSQL."
        )


@cache
def _insert_fields(model: type[models.Model]) -> tuple[models.Field, ...]:
    return tuple(field for field in model._meta.concrete_fields if not field.primary_key)


def insert_rows_sql(rows: Sequence[models.Model], *, where: str) -> tuple[str, list[Any]]:
    """An INSERT of these unsaved rows that only happens when `where` holds, as SQL and parameters:
    `INSERT ... SELECT * FROM (VALUES ...) WHERE ...`, for a data-modifying CTE (PostgreSQL).

    Each value is cast to its column's type: inside a SELECT, PostgreSQL would otherwise type a
    column of the VALUES list from its first row (a NULL there reads as text).
    """
    model = type(rows[0])
    fields = _insert_fields(model)
    row = "(" + ", ".join(f"CAST(%s AS {field.db_type(connection)})" for field in fields) + ")"
    sql = (
        f"INSERT INTO {table(model)} ({', '.join(quote(field.column) for field in fields)}) "
        f"SELECT * FROM (VALUES {', '.join([row] * len(rows))}) AS {quote('new')} WHERE {where}"
    )
    return sql, _insert_params(rows, fields)


def _insert_params(rows: Sequence[models.Model], fields: Sequence[models.Field]) -> list[Any]:
    return [field.get_db_prep_save(field.pre_save(row, True), connection) for row in rows for field in fields]


def insert_rows(rows: Sequence[models.Model], *, return_ids: bool = False) -> None:
    """One multi-row INSERT of unsaved instances of one model, each value prepared by its field
    (pre_save + get_db_prep_save, as bulk_create does: auto_now_add included).

    The ORM's create()/bulk_create() spent more CPU compiling these statements than the database
    spent running them. With `return_ids` the rows get their primary keys and count as saved.
    """
    if not rows:
        return
    model = type(rows[0])
    fields = _insert_fields(model)
    placeholder = "(" + ", ".join(["%s"] * len(fields)) + ")"
    sql = (
        f"INSERT INTO {table(model)} "
        f"({', '.join(quote(field.column) for field in fields)}) "
        f"VALUES {', '.join([placeholder] * len(rows))}"
    )
    if return_ids:
        sql += f" RETURNING {quote(model._meta.pk.column)}"
    params = _insert_params(rows, fields)
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        if return_ids:
            for row, (pk,) in zip(rows, cursor.fetchall(), strict=True):
                row.pk = pk
                row._state.adding = False
                row._state.db = connection.alias

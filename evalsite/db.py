"""Raw inserts for the hot paths (judge calls, item results): bulk_create's semantics without its compilation."""

from __future__ import annotations

from collections.abc import Sequence
from functools import cache

from django.db import connection, models


@cache
def _insert_fields(model: type[models.Model]) -> tuple[models.Field, ...]:
    return tuple(field for field in model._meta.concrete_fields if not field.primary_key)


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
        f"INSERT INTO {connection.ops.quote_name(model._meta.db_table)} "
        f"({', '.join(connection.ops.quote_name(field.column) for field in fields)}) "
        f"VALUES {', '.join([placeholder] * len(rows))}"
    )
    if return_ids:
        sql += f" RETURNING {connection.ops.quote_name(model._meta.pk.column)}"
    params = [field.get_db_prep_save(field.pre_save(row, True), connection) for row in rows for field in fields]
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        if return_ids:
            for row, (pk,) in zip(rows, cursor.fetchall(), strict=True):
                row.pk = pk
                row._state.adding = False
                row._state.db = connection.alias

"""Hand-written SQL of the judges app: the cache lookup that runs for every judge call.

Plain SQL (one indexed SELECT): the ORM's query compilation cost several times the query itself
(bench/throughput.py). The JudgeCall INSERT goes through `evalsite.db.insert_rows`.
"""

from __future__ import annotations

from django.db import connection

from evalsite.db import quote, table
from judges.models import JudgeCall

# In the model's field order: Model.from_db fills the deferred fields in that order.
_CACHED_FIELDS = ["id", "prompt_version", "raw_reply"]
_CACHED_SQL = (
    f"SELECT {', '.join(quote(name) for name in _CACHED_FIELDS)} FROM {table(JudgeCall)} "
    f"WHERE {quote('cache_key')} = %s AND {quote('error')} = '' ORDER BY {quote('id')} LIMIT 1"
)


def judge_calls_cached(cache_keys: list[str]) -> dict[str, JudgeCall]:
    """The first successful call of each of these cache keys that has one: one query for an item's prompts."""
    if not cache_keys:
        return {}
    keys = ", ".join(["%s"] * len(cache_keys))
    sql = (
        f"SELECT {quote('cache_key')}, {', '.join(quote(name) for name in _CACHED_FIELDS)} FROM {table(JudgeCall)} "
        f"WHERE {quote('cache_key')} IN ({keys}) AND {quote('error')} = '' ORDER BY {quote('id')}"
    )
    with connection.cursor() as cursor:
        cursor.execute(sql, cache_keys)
        rows = cursor.fetchall()
    found: dict[str, JudgeCall] = {}
    for key, *values in rows:
        if key not in found:
            found[key] = JudgeCall.from_db(connection.alias, _CACHED_FIELDS, values)
    return found


def judge_call_cached(cache_key: str) -> JudgeCall | None:
    """The first successful call with this cache key, deferred like `.only("id", "raw_reply", "prompt_version")`."""
    with connection.cursor() as cursor:
        cursor.execute(_CACHED_SQL, [cache_key])
        row = cursor.fetchone()
    if row is None:
        return None
    return JudgeCall.from_db(connection.alias, _CACHED_FIELDS, row)

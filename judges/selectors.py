"""Reads of judge configs and calls."""

from __future__ import annotations

from datetime import datetime
from decimal import Decimal

from django.db.models import Count, Q, QuerySet, Sum

from judges import sql
from judges.models import JudgeCall, JudgeConfig


def judge_config_list() -> QuerySet[JudgeConfig]:
    return JudgeConfig.objects.all()


def judge_config_get(*, name: str) -> JudgeConfig | None:
    return JudgeConfig.objects.filter(name=name).first()


def judge_config_by_ref(ref: int | str) -> JudgeConfig | None:
    """The judge config with this id (an int) or name (a str)."""
    if isinstance(ref, int):
        return JudgeConfig.objects.filter(pk=ref).first()
    return judge_config_get(name=ref)


def judge_call_cached(*, cache_key: str) -> JudgeCall | None:
    """The first successful call with this cache key (the gateway's exact-match cache): id, reply and version."""
    return sql.judge_call_cached(cache_key)


def judge_calls_cached(*, cache_keys: list[str]) -> dict[str, JudgeCall]:
    """`judge_call_cached` for several keys in one query: {key: call} for the keys that have one."""
    return sql.judge_calls_cached(cache_keys)


def judge_calls_for_run(*, run_id: int) -> QuerySet[JudgeCall]:
    return JudgeCall.objects.filter(run_id=run_id).select_related("config")


def judge_spend_for_run(*, run_id: int) -> dict[str, int | Decimal]:
    """New spend of a run: calls made (cache hits write no row), tokens, cost and failed calls."""
    totals = JudgeCall.objects.filter(run_id=run_id).aggregate(
        calls=Count("id"),
        input_tokens=Sum("input_tokens", default=0),
        output_tokens=Sum("output_tokens", default=0),
        cost=Sum("cost", default=Decimal(0)),
    )
    totals["errors"] = JudgeCall.objects.filter(run_id=run_id).exclude(error="").count()
    return totals


def judge_config_list_with_spend() -> QuerySet[JudgeConfig]:
    """Judge configs with what their logged calls cost so far (cache hits write no row: they are free)."""
    return JudgeConfig.objects.annotate(
        spend=Sum("calls__cost", default=Decimal(0)),
        call_count=Count("calls"),
        tokens=Sum("calls__input_tokens", default=0) + Sum("calls__output_tokens", default=0),
    ).order_by("name")


def judge_calls_for_item(*, run_item_id: int) -> QuerySet[JudgeCall]:
    """The calls logged for one run item's evaluation, in the order they were made, with their judge config
    (the item page and the API name each call's judge: one query, not one per call)."""
    return JudgeCall.objects.filter(run_item_id=run_item_id).select_related("config").order_by("created_at", "id")


def judge_spend_since(*, since: datetime) -> list[dict]:
    """Per judge config, the calls logged since `since`: calls, tokens, cost and failed calls, costliest first.

    Cache hits log no call (they are free). One query.
    """
    rows = (
        JudgeCall.objects.filter(created_at__gte=since)
        .values("config_id", "config__name", "config__provider", "config__model")
        .annotate(
            calls=Count("id"),
            input_tokens=Sum("input_tokens", default=0),
            output_tokens=Sum("output_tokens", default=0),
            cost=Sum("cost", default=Decimal(0)),
            errors=Count("id", filter=~Q(error="")),
        )
        .order_by("-cost", "config__name")
    )
    return list(rows)

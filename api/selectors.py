"""Reads of the API's own tables."""

from __future__ import annotations

from typing import Any

from django.db.models import F, QuerySet

from api.models import ApiToken, RunCallback


def run_callback(run_id: int) -> RunCallback | None:
    return RunCallback.objects.filter(run_id=run_id).first()


def user_tokens(user: Any) -> QuerySet[ApiToken]:
    """The user's tokens, active first, newest first."""
    return ApiToken.objects.filter(user=user).order_by(F("revoked_at").desc(nulls_first=True), "-created_at", "-id")

"""Reads of the API's own tables, and the few reads it combines for one response."""

from __future__ import annotations

from typing import Any

from api.models import ApiToken, RunCallback
from evaluations.review_selectors import ReviewCounts
from evaluations.review_selectors import run_review_counts as _review_counts


def run_callback(run_id: int) -> RunCallback | None:
    return RunCallback.objects.filter(run_id=run_id).first()


def run_review_counts(run_id: int) -> ReviewCounts:
    return _review_counts(run_id)


def user_tokens(user: Any) -> list[ApiToken]:
    """The user's tokens, active first, newest first."""
    return sorted(ApiToken.objects.filter(user=user), key=lambda token: (token.revoked_at is not None, -token.pk))

"""The document a run's callback POSTs: the run as GET /api/runs/{id}/ shows it."""

from __future__ import annotations

from typing import Any

from api.serializers import RunDetailSerializer
from evaluations.models import Run
from evaluations.review_selectors import run_review_counts
from evaluations.run_selectors import run_get


def callback_payload(run: Run, base_url: str) -> dict[str, Any]:
    run = run_get(run.pk) or run
    context = {"base_url": base_url, "review_counts": run_review_counts(run.pk), "callback": None}
    return {"event": "run.finished", "run": RunDetailSerializer(run, context=context).data}

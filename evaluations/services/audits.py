"""Audits: a uniformly random sample of a finished run's items that people label, for human-calibrated scores.

The review queue is ordered by need, so the items people reviewed there are a biased sample of
the run; an unbiased estimate needs items drawn at random. `audit_start` draws that sample:

- only from a finished run (any finished status) that has claim-level faithfulness, and only
  among its *scored* items (status done, a faithfulness score): the population whose judge
  mean the estimate corrects (`evaluations.audit_estimates`);
- `size` items (default 150, ARES's figure), or all of them when the run has fewer;
- uniformly at random without replacement by `numpy.random.default_rng(seed)` over the
  population in id order (`sample_positions`); the seed is stored, so the same run and seed
  always give the same sample in the same order; without a seed one is drawn and stored;
- one audit per run: starting a second one is refused (an admin may delete an audit in the
  admin to start over; its items' reviews stay, they are claim reviews).

An audited item is one whose every claim has a human verdict (override or confirm; an item
without claims: marked reviewed). Completion is automatic: the review that gives the last claim
its verdict marks a drawn item audited in the same transaction (`audit_item_sync`, called by
`services.overrides`), so a reviewer never has a separate button to forget. A drawn item that
people had already reviewed through the review queue counts at once; a reviewed item that was
not drawn never counts, whatever its reviews.
"""

from __future__ import annotations

import secrets
from typing import Any

import numpy as np
from django.db import IntegrityError, transaction
from django.db.models import QuerySet
from django.utils import timezone

from evalsite.roles import REVIEWER, require_role
from evaluations.models import Audit, AuditItem, Claim, ItemStatus, Run, RunItem

DEFAULT_SIZE = 150
MAX_SIZE = 100_000
MAX_SEED = 2**63 - 1  # PositiveBigIntegerField


def audit_start(run: Run, *, size: int = DEFAULT_SIZE, seed: int | None = None, user: Any) -> Audit:
    """Draw the run's audit sample (see the module doc). Raises ValueError naming `run`, `size` or `seed`;
    PermissionDenied for users who are not reviewers or admins (None is the system)."""
    if user is not None:
        require_role(user, REVIEWER, "Starting an audit")
    size = _checked_int("size", size, low=1, high=MAX_SIZE)
    seed = secrets.randbits(63) if seed is None else _checked_int("seed", seed, low=0, high=MAX_SEED)
    try:
        with transaction.atomic():
            return _draw(run, size, seed, user)
    except IntegrityError as exc:  # a concurrent start won the one-to-one
        raise ValueError(f"run: run {run.pk} already has an audit") from exc


def _draw(run: Run, size: int, seed: int, user: Any) -> Audit:
    run = Run.objects.select_for_update().get(pk=run.pk)
    if not run.is_finished:
        raise ValueError(f"run: run {run.pk} is {run.status}; audit a finished run")
    if "faithfulness" not in run.metrics:
        raise ValueError(f"run: run {run.pk} has no claim-level faithfulness, the score an audit labels")
    existing = Audit.objects.filter(run=run).select_related("created_by").first()
    if existing is not None:
        by = f" by {existing.created_by.username}" if existing.created_by else ""
        raise ValueError(
            f"run: run {run.pk} already has an audit ({existing.size} items, seed {existing.seed}, "
            f"started {existing.created_at:%Y-%m-%d %H:%M}{by}); one audit per run"
        )
    population = list(scored_items(run.pk).order_by("id").values_list("id", "reviewed_at", "reviewed_by_id"))
    if not population:
        raise ValueError(f"run: run {run.pk} has no scored item to audit")
    audit = Audit.objects.create(run=run, size=size, seed=seed, population=len(population), created_by=user)
    picks = sample_positions(len(population), size, seed)
    entries = []
    for position, index in enumerate(picks, start=1):
        item_id, reviewed_at, reviewed_by_id = population[index]
        # Reviewed by need before the audit and drawn now: it counts, with its review's time and person.
        entries.append(
            AuditItem(
                audit=audit, item_id=item_id, position=position, audited_at=reviewed_at, audited_by_id=reviewed_by_id
            )
        )
    AuditItem.objects.bulk_create(entries)
    return audit


def sample_positions(population: int, size: int, seed: int) -> np.ndarray:
    """Indices into the population (0..population-1), drawn uniformly without replacement, in draw order.

    min(size, population) of them; the same arguments always give the same indices.
    """
    rng = np.random.default_rng(seed)
    return rng.choice(population, size=min(size, population), replace=False)


def scored_items(run_id: int) -> QuerySet[RunItem]:
    """The population an audit draws from: the run's finished items that have a faithfulness score."""
    return RunItem.objects.filter(
        run_id=run_id, status=ItemStatus.DONE, results__metric="faithfulness", results__score__isnull=False
    )


@transaction.atomic
def audit_item_complete(item: RunItem, *, user: Any) -> AuditItem:
    """Mark a drawn item audited; it must have a human verdict on every claim (claim-less: be marked reviewed).

    Idempotent: an audited item stays as it was. Reviews call this automatically (`audit_item_sync`).
    """
    if user is not None:
        require_role(user, REVIEWER, "Auditing an item")
    entry = AuditItem.objects.select_for_update().select_related("item").filter(item_id=item.pk).first()
    if entry is None:
        raise ValueError(f"item: item {item.pk} is not in its run's audit sample")
    if entry.audited_at is not None:
        return entry
    claims = Claim.objects.filter(item_id=item.pk)
    total, waiting = claims.count(), claims.filter(reviewed_at__isnull=True).count()
    if waiting:
        raise ValueError(
            f"item: {waiting} of {total} claims have no human verdict yet (override or confirm each claim)"
        )
    if total == 0 and entry.item.reviewed_at is None:
        raise ValueError("item: it has no claims; mark it reviewed first")
    entry.audited_at, entry.audited_by = timezone.now(), user
    AuditItem.objects.filter(pk=entry.pk).update(audited_at=entry.audited_at, audited_by=user)
    return entry


def audit_item_sync(*, item: RunItem, user: Any, now: Any = None) -> bool:
    """After a review: a drawn item whose every claim now has a human verdict (`item.reviewed_at` set by the
    review services exactly then) becomes audited. One UPDATE, no read; True when it did."""
    if item.reviewed_at is None:
        return False
    updated = AuditItem.objects.filter(item_id=item.pk, audited_at__isnull=True).update(
        audited_at=now or timezone.now(), audited_by=user
    )
    return bool(updated)


def _checked_int(name: str, value: Any, *, low: int, high: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int | str):
        raise ValueError(f"{name}: give a whole number from {low} to {high}")
    try:
        number = int(value)
    except ValueError:
        raise ValueError(f"{name}: {value!r} is not a whole number") from None
    if not low <= number <= high:
        raise ValueError(f"{name}: must be from {low} to {high}, got {number}")
    return number

"""Reads of the audit pages: the audit queue in draw order, one item's place in the audit, the next item to audit.

Each function runs one query whatever the run's or the audit's size.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.db.models import Count, FilteredRelation, IntegerField, Max, OuterRef, Q, QuerySet, Subquery
from django.db.models.functions import Coalesce

from evaluations.models import Audit, AuditItem, Claim


def audit_for_run(run_id: int) -> Audit | None:
    return Audit.objects.filter(run_id=run_id).select_related("created_by").first()


def audit_queue(audit: Audit) -> QuerySet[AuditItem]:
    """The drawn items in draw order, each with its claims (`n_claims`, `n_reviewed`) and its faithfulness score."""
    return (
        AuditItem.objects.filter(audit=audit)
        .annotate(faithfulness=FilteredRelation("item__results", condition=Q(item__results__metric="faithfulness")))
        .annotate(
            n_claims=Count("item__claims", distinct=True),
            n_reviewed=Count("item__claims", filter=Q(item__claims__reviewed_at__isnull=False), distinct=True),
            faithfulness_score=Max("faithfulness__score"),
        )
        .select_related("item__example", "audited_by")
        .only(
            "id",
            "position",
            "audited_at",
            "item__id",
            "item__example__external_id",
            "item__example__query",
            "audited_by__username",
        )
        .order_by("position")
    )


@dataclass(frozen=True)
class ItemAuditState:
    """One drawn item's place in its run's audit, for the item page ("Audit 12 / 150")."""

    position: int
    drawn: int
    audited: int  # the audit's audited items
    audited_at: datetime | None
    audited_by: Any
    claims_waiting: int  # claims of this item without a human verdict


def item_audit_state(item_id: int) -> ItemAuditState | None:
    """None when the item was not drawn (or its run has no audit)."""
    same_audit = AuditItem.objects.filter(audit_id=OuterRef("audit_id")).order_by().values("audit_id")
    waiting = (
        Claim.objects.filter(item_id=OuterRef("item_id"), reviewed_at__isnull=True)
        .order_by()
        .values("item_id")
        .annotate(count=Count("id"))
        .values("count")
    )
    entry = (
        AuditItem.objects.filter(item_id=item_id)
        .select_related("audited_by")
        .annotate(
            drawn=Subquery(same_audit.annotate(count=Count("id")).values("count"), output_field=IntegerField()),
            audited=Subquery(
                same_audit.filter(audited_at__isnull=False).annotate(count=Count("id")).values("count"),
                output_field=IntegerField(),
            ),
            waiting=Coalesce(Subquery(waiting, output_field=IntegerField()), 0),
        )
        .first()
    )
    if entry is None:
        return None
    return ItemAuditState(
        position=entry.position,
        drawn=entry.drawn,
        audited=entry.audited or 0,
        audited_at=entry.audited_at,
        audited_by=entry.audited_by,
        claims_waiting=entry.waiting,
    )


def audit_next_item(run_id: int, *, after: int | None = None) -> int | None:
    """The next drawn item not yet audited, in draw order after item `after` (then from the start), other than
    `after` itself; None when every drawn item is audited. One or two queries."""
    waiting = (
        AuditItem.objects.filter(audit__run_id=run_id, audited_at__isnull=True)
        .order_by("position")
        .values_list("item_id", flat=True)
    )
    if after is not None:
        waiting = waiting.exclude(item_id=after)
        current = AuditItem.objects.filter(audit__run_id=run_id, item_id=after).values("position")[:1]
        ahead = waiting.filter(position__gt=Subquery(current, output_field=IntegerField())).first()
        if ahead is not None:
            return ahead
    return waiting.first()

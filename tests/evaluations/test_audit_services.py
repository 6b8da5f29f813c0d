"""Audits: the random sample's rules (finished runs only, size, seed, one per run) and when an item is audited."""

from __future__ import annotations

import pytest
from django.core.exceptions import PermissionDenied

from bench.seed_review import seed_finished_run
from evaluations.models import Audit, AuditItem, Claim, RunItem, RunStatus
from evaluations.services import audits
from evaluations.services import overrides as review

pytestmark = [pytest.mark.django_db, pytest.mark.sqlite]


@pytest.fixture
def reviewer(make_user):
    return make_user("rita", role="reviewer")


@pytest.fixture
def run():
    return seed_finished_run(items=40, claims=2)


def drawn_ids(audit: Audit) -> list[int]:
    return list(AuditItem.objects.filter(audit=audit).order_by("position").values_list("item_id", flat=True))


def population_ids(run) -> list[int]:
    return list(RunItem.objects.filter(run=run).order_by("id").values_list("id", flat=True))


def review_every_claim(item: RunItem, reviewer) -> None:
    for claim in Claim.objects.filter(item=item).order_by("position"):
        review.claim_confirm(claim=claim, reviewer=reviewer)


def test_the_sample_is_uniform_without_replacement_and_reproducible_from_its_seed(run, reviewer) -> None:
    audit = audits.audit_start(run=run, size=15, seed=1234, user=reviewer)

    ids = drawn_ids(audit)
    population = population_ids(run)
    assert (audit.size, audit.seed, audit.population, audit.created_by) == (15, 1234, 40, reviewer)
    assert len(ids) == len(set(ids)) == 15
    assert ids == [population[i] for i in audits.sample_positions(40, 15, 1234)]
    assert list(AuditItem.objects.filter(audit=audit).values_list("position", flat=True)) == list(range(1, 16))

    # the same seed draws the same items in the same order; another seed, another sample
    audit.delete()
    assert drawn_ids(audits.audit_start(run=run, size=15, seed=1234, user=reviewer)) == ids
    Audit.objects.filter(run=run).delete()
    assert drawn_ids(audits.audit_start(run=run, size=15, seed=99, user=reviewer)) != ids


def test_without_a_seed_one_is_drawn_and_stored(run) -> None:
    audit = audits.audit_start(run=run, size=5, user=None)

    population = population_ids(run)
    assert 0 <= audit.seed < 2**63
    assert drawn_ids(audit) == [population[i] for i in audits.sample_positions(40, 5, audit.seed)]


def test_a_size_above_the_run_draws_every_item(run) -> None:
    audit = audits.audit_start(run=run, size=500, seed=3, user=None)

    assert sorted(drawn_ids(audit)) == population_ids(run)
    assert audit.size == 500 and audit.population == 40


def test_the_default_size_is_150() -> None:
    run = seed_finished_run(items=200, claims=1)
    audit = audits.audit_start(run=run, seed=5, user=None)
    assert (audit.size, len(drawn_ids(audit))) == (150, 150)


@pytest.mark.parametrize("status", [RunStatus.QUEUED, RunStatus.RUNNING, RunStatus.CANCELLING])
def test_an_unfinished_run_is_refused(run, status) -> None:
    run.__class__.objects.filter(pk=run.pk).update(status=status)
    with pytest.raises(ValueError, match=f"run: run {run.pk} is {status}; audit a finished run"):
        audits.audit_start(run=run, size=10, user=None)
    assert not Audit.objects.exists()


def test_one_audit_per_run(run) -> None:
    audits.audit_start(run=run, size=10, seed=1, user=None)
    with pytest.raises(ValueError, match="already has an audit"):
        audits.audit_start(run=run, size=10, seed=2, user=None)
    assert Audit.objects.count() == 1


def test_a_run_without_faithfulness_has_nothing_to_audit(run) -> None:
    run.__class__.objects.filter(pk=run.pk).update(metrics=["rubric"])
    run.refresh_from_db()
    with pytest.raises(ValueError, match="no claim-level faithfulness"):
        audits.audit_start(run=run, size=10, user=None)


@pytest.mark.parametrize(
    ("size", "seed", "message"),
    [
        (0, None, "size: must be from 1"),
        ("abc", None, "size: 'abc' is not a whole number"),
        (True, None, "size: give a whole number"),
        (10, -1, "seed: must be from 0"),
        (10, 2**63, "seed: must be from 0"),
    ],
)
def test_bad_size_or_seed_names_the_parameter(run, size, seed, message) -> None:
    with pytest.raises(ValueError, match=message):
        audits.audit_start(run=run, size=size, seed=seed, user=None)


def test_viewers_cannot_start_an_audit(run, make_user) -> None:
    with pytest.raises(PermissionDenied):
        audits.audit_start(run=run, size=10, user=make_user("vic", role="viewer"))


def test_the_last_claims_verdict_makes_a_drawn_item_audited(run, reviewer) -> None:
    audit = audits.audit_start(run=run, size=10, seed=8, user=reviewer)
    item = RunItem.objects.get(pk=drawn_ids(audit)[0])
    first, *rest = Claim.objects.filter(item=item).order_by("position")
    assert rest, "the seeded items have at least two claims"

    # a verdict on one claim of several: not audited yet, and completing by hand says what is missing
    review.claim_override(claim=first, reviewer=reviewer, new_verdict="CONTRADICTED", reason="c1 says spring")
    entry = AuditItem.objects.get(item=item)
    assert entry.audited_at is None
    with pytest.raises(ValueError, match=f"{len(rest)} of {len(rest) + 1} claims have no human verdict"):
        audits.audit_item_complete(item=item, user=reviewer)

    # the last one: audited at once, by that reviewer
    for claim in rest:
        review.claim_confirm(claim=claim, reviewer=reviewer)
    entry.refresh_from_db()
    assert entry.audited_at is not None and entry.audited_by == reviewer
    assert audits.audit_item_complete(item=item, user=reviewer).audited_at == entry.audited_at  # idempotent


def test_items_reviewed_by_need_count_only_when_drawn(run, reviewer) -> None:
    # given: two items fully reviewed through the review queue before the audit, one of which the seed draws
    population = population_ids(run)
    picks = audits.sample_positions(len(population), 10, 21)
    drawn = RunItem.objects.get(pk=population[picks[0]])
    not_drawn = RunItem.objects.get(pk=next(pk for i, pk in enumerate(population) if i not in set(picks)))
    review_every_claim(drawn, reviewer)
    review_every_claim(not_drawn, reviewer)

    # when
    audit = audits.audit_start(run=run, size=10, seed=21, user=None)

    # then: the drawn one is audited already (with its reviewer), the other is not part of the audit
    entries = AuditItem.objects.filter(audit=audit)
    assert list(entries.filter(audited_at__isnull=False).values_list("item_id", "audited_by")) == [
        (drawn.pk, reviewer.pk)
    ]
    assert not entries.filter(item=not_drawn).exists()
    with pytest.raises(ValueError, match="not in its run's audit sample"):
        audits.audit_item_complete(item=not_drawn, user=reviewer)


def test_reviewing_an_item_outside_the_audit_changes_nothing_in_it(run, reviewer) -> None:
    audit = audits.audit_start(run=run, size=5, seed=2, user=None)
    outside = RunItem.objects.filter(run=run).exclude(pk__in=drawn_ids(audit)).first()

    review_every_claim(outside, reviewer)

    assert not AuditItem.objects.filter(audit=audit, audited_at__isnull=False).exists()


def test_a_drawn_item_without_claims_is_audited_when_marked_reviewed(run, reviewer) -> None:
    audit = audits.audit_start(run=run, size=5, seed=4, user=None)
    item = RunItem.objects.get(pk=drawn_ids(audit)[0])
    Claim.objects.filter(item=item).delete()
    with pytest.raises(ValueError, match="mark it reviewed first"):
        audits.audit_item_complete(item=item, user=reviewer)

    review.item_mark_reviewed(item=item, reviewer=reviewer)

    assert AuditItem.objects.get(item=item).audited_by == reviewer

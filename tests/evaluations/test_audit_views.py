"""Audit pages: "Start an audit" on the run page, the audit queue, progress, the calibrated figure, the item's audit state."""

from __future__ import annotations

import re

import pytest
from django.test import Client
from django.urls import reverse

from bench.seed_review import seed_finished_run
from evaluations.models import Audit, AuditItem, Claim, RunItem, RunStatus
from evaluations.services import audits
from evaluations.services import overrides as review_services

pytestmark = [pytest.mark.django_db, pytest.mark.sqlite]
HTMX = {"HTTP_HX_REQUEST": "true"}


@pytest.fixture
def run():
    return seed_finished_run(items=40, claims=1)


@pytest.fixture
def reviewer(make_user):
    return make_user("rita", role="reviewer")


@pytest.fixture
def reviewer_client(reviewer) -> Client:
    client = Client()
    client.force_login(reviewer)
    return client


@pytest.fixture
def viewer_client(make_user) -> Client:
    client = Client()
    client.force_login(make_user("vic", role="viewer"))
    return client


def run_url(run) -> str:
    return reverse("evaluations:run_detail", args=[run.pk])


def text(html: str) -> str:
    return " ".join(re.sub(r"<[^>]+>", " ", html).split())


def audit_items(run, count: int, reviewer) -> None:
    """Confirm every claim of the first `count` drawn items (they become audited)."""
    for entry in AuditItem.objects.filter(audit__run=run).order_by("position")[:count]:
        for claim in Claim.objects.filter(item_id=entry.item_id):
            review_services.claim_confirm(claim=claim, reviewer=reviewer)


def test_a_reviewer_sees_start_an_audit_with_size_150_and_a_viewer_does_not(run, reviewer_client, viewer_client):
    html = reviewer_client.get(run_url(run)).content.decode()
    assert "Start an audit" in html
    assert re.search(r'name="size"[^>]*value="150"|value="150"[^>]*name="size"', html)

    assert "Start an audit" not in viewer_client.get(run_url(run)).content.decode()


def test_starting_an_audit_draws_the_sample_and_opens_the_queue(run, reviewer_client):
    response = reviewer_client.post(reverse("evaluations:audit_start", args=[run.pk]), {"size": "12", "seed": "7"})

    assert response.status_code == 302 and response["Location"] == reverse("evaluations:audit_queue", args=[run.pk])
    audit = Audit.objects.get(run=run)
    assert (audit.size, audit.seed) == (12, 7)
    page = text(reviewer_client.get(response["Location"]).content.decode())
    assert "Audit started: 12 of 40 scored items drawn at random (seed 7)." in page
    assert "Audited 0 / 12" in page
    entries = AuditItem.objects.filter(audit=audit).order_by("position").select_related("item__example")
    positions = [page.index(entry.item.example.external_id) for entry in entries]
    assert positions == sorted(positions)  # draw order


@pytest.mark.parametrize(
    ("data", "message"), [({"size": "0"}, "size: "), ({"size": "x"}, "size: "), ({"size": "5", "seed": "-3"}, "seed: ")]
)
def test_bad_input_is_reported_by_field_and_draws_nothing(run, reviewer_client, data, message):
    response = reviewer_client.post(reverse("evaluations:audit_start", args=[run.pk]), data, follow=True)
    assert message in text(response.content.decode())
    assert not Audit.objects.exists()


def test_an_unfinished_run_cannot_be_audited(run, reviewer_client):
    run.__class__.objects.filter(pk=run.pk).update(status=RunStatus.RUNNING)
    response = reviewer_client.post(reverse("evaluations:audit_start", args=[run.pk]), {"size": "10"}, follow=True)
    assert "audit a finished run" in text(response.content.decode())
    assert not Audit.objects.exists()


def test_viewers_are_refused(run, viewer_client):
    response = viewer_client.post(reverse("evaluations:audit_start", args=[run.pk]), {"size": "10"})
    assert response.status_code == 403
    assert not Audit.objects.exists()


def test_below_30_audited_items_the_run_page_shows_progress_not_a_figure(run, reviewer, reviewer_client):
    audits.audit_start(run=run, size=35, seed=2, user=reviewer)
    audit_items(run, 12, reviewer)

    page = text(reviewer_client.get(run_url(run)).content.decode())

    assert "12 / 35 audited" in page
    assert "The calibrated figures appear from 30 audited items: 18 to go." in page
    assert "calibrated" not in page.replace("calibrated figures", "").replace("Human-calibrated", "")


def test_from_30_audited_items_the_run_page_shows_the_calibrated_figure_beside_the_judges(run, reviewer):
    audits.audit_start(run=run, size=30, seed=2, user=reviewer)
    audit_items(run, 30, reviewer)  # people confirm every verdict: calibrated = the judge's values on the audit
    client = Client()
    client.force_login(reviewer)

    page = text(client.get(run_url(run)).content.decode())

    assert "30 / 30 audited" in page
    line = re.search(r"judge (\d\.\d\d); calibrated (\d\.\d\d) \[(\d\.\d\d), (\d\.\d\d)\] from 30 audited items", page)
    assert line, page
    low, mean, high = float(line[3]), float(line[2]), float(line[4])
    assert low <= mean <= high
    assert "Faithfulness pass rate, calibrated" in page


def test_the_audit_queue_marks_audited_items_and_counts_them(run, reviewer, reviewer_client, django_assert_num_queries):
    audit = audits.audit_start(run=run, size=10, seed=4, user=reviewer)
    audit_items(run, 3, reviewer)
    url = reverse("evaluations:audit_queue", args=[run.pk])
    reviewer_client.get(url)

    # session, user, run, audit, calibration (1: below 30), paginator count, page, groups
    with django_assert_num_queries(8):
        html = reviewer_client.get(url).content.decode()

    assert html.count("✓ audited") == 3 and html.count("to audit</span>") == 7
    assert "Audited <strong>3 / 10</strong>" in html
    assert audit.pk


def test_the_audit_queue_without_an_audit(run, viewer_client):
    html = text(viewer_client.get(reverse("evaluations:audit_queue", args=[run.pk])).content.decode())
    assert "This run has no audit" in html
    assert viewer_client.get(reverse("evaluations:audit_queue", args=[10**9])).status_code == 404


def test_the_item_page_shows_its_audit_position_and_state(run, reviewer, reviewer_client):
    audit = audits.audit_start(run=run, size=10, seed=4, user=reviewer)
    entries = list(AuditItem.objects.filter(audit=audit).order_by("position"))
    third = RunItem.objects.get(pk=entries[2].item_id)
    url = reverse("evaluations:item_review", args=[run.pk, third.pk])

    page = text(reviewer_client.get(url).content.decode())
    waiting = Claim.objects.filter(item=third).count()
    assert "Audit 3 / 10" in page
    assert f"{waiting} claim{'s' if waiting > 1 else ''} still need" in page

    # the last claim's verdict, in place over HTMX: the state panel says audited at once
    claims = list(Claim.objects.filter(item=third).order_by("position"))
    for claim in claims:
        response = reviewer_client.post(
            reverse("evaluations:claim_review", args=[run.pk, third.pk, claim.pk]), {"action": "confirm"}, **HTMX
        )
    fragment = text(response.content.decode())
    assert "✓ Audited by rita" in fragment and "1 of 10 drawn items audited" in fragment

    outside = RunItem.objects.filter(run=run).exclude(pk__in=[entry.item_id for entry in entries]).first()
    assert (
        "audit-state"
        not in reviewer_client.get(reverse("evaluations:item_review", args=[run.pk, outside.pk])).content.decode()
    )


def test_next_to_audit_walks_the_draw_order_then_returns_to_the_queue(run, reviewer, reviewer_client):
    audit = audits.audit_start(run=run, size=3, seed=9, user=reviewer)
    first, second, third = AuditItem.objects.filter(audit=audit).order_by("position").values_list("item_id", flat=True)
    next_url = reverse("evaluations:audit_next", args=[run.pk])

    assert reviewer_client.get(next_url)["Location"].endswith(f"/items/{first}/")
    assert reviewer_client.get(next_url, {"after": second})["Location"].endswith(f"/items/{third}/")
    assert reviewer_client.get(next_url, {"after": third})["Location"].endswith(f"/items/{first}/")  # wraps round

    audit_items(run, 3, reviewer)
    response = reviewer_client.get(next_url, follow=True)
    assert response.redirect_chain[-1][0] == reverse("evaluations:audit_queue", args=[run.pk])
    assert "Every drawn item is audited." in text(response.content.decode())


def test_the_admin_lists_audits_and_their_items_read_only(run, reviewer):
    from django.contrib.auth.models import User

    audit = audits.audit_start(run, size=5, seed=1, user=reviewer)
    client = Client()
    client.force_login(User.objects.create_superuser("root", "root@example.com", "pw-12345678"))

    for model in ("audit", "audititem"):
        assert client.get(reverse(f"admin:evaluations_{model}_changelist")).status_code == 200, model
    assert client.get(reverse("admin:evaluations_audit_change", args=[audit.pk])).status_code == 200
    assert client.get(reverse("admin:evaluations_audit_add")).status_code == 403
    assert (
        client.get(reverse("admin:evaluations_audititem_changelist"), {"audited_at__isempty": "1"}).status_code == 200
    )


def test_a_run_too_small_for_a_figure_says_so(reviewer, reviewer_client):
    small = seed_finished_run(items=12, claims=1, name="small")
    audits.audit_start(small, size=150, seed=1, user=reviewer)

    page = text(reviewer_client.get(run_url(small)).content.decode())

    assert "0 / 12 audited" in page
    assert "This run has 12 scored items: fewer than the 30 audited items a calibrated interval needs" in page

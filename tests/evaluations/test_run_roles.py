"""Role checks live in the run services: people need the reviewer role to start or steer a run."""

from __future__ import annotations

import pytest
from django.core.exceptions import PermissionDenied

from bench.seed import seed_finished_run
from evaluations.models import RunStatus
from evaluations.services import runs

pytestmark = pytest.mark.django_db


@pytest.fixture
def run():
    return seed_finished_run(4, name="roles", error_every=2)


def test_a_viewer_cannot_start_a_run(run, make_user):
    with pytest.raises(PermissionDenied, match="Starting a run needs the reviewer role"):
        runs.run_create(
            dataset_version=run.dataset_version,
            judge_config=run.judge_config,
            metrics=["retrieval"],
            user=make_user("vic"),
            enqueue=False,
        )


@pytest.mark.parametrize(
    ("status", "control"),
    [
        (RunStatus.RUNNING, runs.run_cancel),
        (RunStatus.CANCELLED, runs.run_resume),
        (RunStatus.COMPLETED_WITH_ERRORS, runs.run_rerun_failed),
    ],
)
def test_a_viewer_cannot_steer_a_run_and_a_reviewer_can(
    run, make_user, status, control, django_capture_on_commit_callbacks
):
    run.status = status
    run.save(update_fields=["status"])

    with pytest.raises(PermissionDenied):
        control(run=run, user=make_user("vic"))
    run.refresh_from_db()
    assert run.status == status

    control(run=run, user=make_user("rita", role="reviewer"))
    run.refresh_from_db()
    assert run.status != status


def test_the_system_needs_no_role(run):
    created = runs.run_create(
        dataset_version=run.dataset_version, judge_config=run.judge_config, metrics=["retrieval"], enqueue=False
    )

    assert created.status == RunStatus.QUEUED

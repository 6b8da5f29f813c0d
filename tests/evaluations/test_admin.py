"""The evaluations admin: every model listed, results read-only."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import User
from django.urls import reverse

from evaluations.models import Run, RunStatus
from evaluations.services import executor, runs

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def admin_client(client):
    client.force_login(User.objects.create_superuser("root", "root@example.com", "pw-12345678"))
    return client


def test_every_model_has_a_changelist_and_results_cannot_be_added(
    admin_client, make_dataset, offline_judge, stub_gateway
):
    run = runs.run_create(
        dataset_version=make_dataset(2), judge_config=offline_judge, metrics=["faithfulness"], enqueue=False
    )
    executor.run_execute_in_process(run=run)

    for model in ("run", "runitem", "metricresult", "claim", "verdictoverride"):
        response = admin_client.get(reverse(f"admin:evaluations_{model}_changelist"))
        assert response.status_code == 200, model
    assert admin_client.get(reverse("admin:evaluations_run_change", args=[run.pk])).status_code == 200
    assert admin_client.get(reverse("admin:evaluations_metricresult_add")).status_code == 403
    assert admin_client.get(reverse("admin:evaluations_run_add")).status_code == 403


def test_cancel_action_goes_through_the_service(admin_client, make_dataset, offline_judge, monkeypatch):
    from evaluations import tasks

    monkeypatch.setattr(tasks.run_start_task, "delay", lambda run_id: None)
    run = runs.run_create(dataset_version=make_dataset(1), judge_config=offline_judge, metrics=["retrieval"])

    response = admin_client.post(
        reverse("admin:evaluations_run_changelist"),
        {"action": "cancel_runs", "_selected_action": [run.pk]},
        follow=True,
    )

    assert response.status_code == 200
    assert Run.objects.get(pk=run.pk).status == RunStatus.CANCELLED

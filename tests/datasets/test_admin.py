"""The admin is read-mostly: datasets are editable, versions and examples are not."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import User
from django.urls import reverse

from tests.datasets.conftest import item, jsonl


@pytest.fixture
def superuser_client(client, db):
    client.force_login(User.objects.create_superuser("root", "root@example.com", "pw-12345678"))
    return client


@pytest.fixture
def version(import_bytes):
    return import_bytes(jsonl(item(1))).version


def test_versions_and_examples_can_be_viewed_but_not_added(superuser_client, version) -> None:
    example = version.examples.get()
    for model, pk in (("datasetversion", version.pk), ("example", example.pk)):
        assert superuser_client.get(reverse(f"admin:datasets_{model}_changelist")).status_code == 200
        assert superuser_client.get(reverse(f"admin:datasets_{model}_change", args=[pk])).status_code == 200
        assert superuser_client.get(reverse(f"admin:datasets_{model}_add")).status_code == 403


def test_an_example_cannot_be_changed(superuser_client, version) -> None:
    example = version.examples.get()
    response = superuser_client.post(reverse("admin:datasets_example_change", args=[example.pk]), {"query": "edited"})
    assert response.status_code == 403
    example.refresh_from_db()
    assert example.query == "Question 1?"


def test_a_dataset_description_can_be_edited(superuser_client, version) -> None:
    dataset = version.dataset
    url = reverse("admin:datasets_dataset_change", args=[dataset.pk])
    response = superuser_client.post(url, {"name": "renamed", "description": "From the STIP worked examples."})
    assert response.status_code == 302
    dataset.refresh_from_db()
    assert (dataset.name, dataset.description) == ("renamed", "From the STIP worked examples.")

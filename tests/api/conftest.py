"""Users of each role with their API clients (token auth), a finished run with claims, small helpers."""

from __future__ import annotations

import io
import json
from collections.abc import Callable
from typing import Any

import pytest
from rest_framework.test import APIClient

from api.services import token_create
from bench.seed_review import seed_finished_run
from datasets.services import dataset_import
from evaluations.models import Run
from judges.services import judge_config_create

# The run-engine fixtures (datasets, judges, the fake LLM, real Celery workers), shared.
from tests.evaluations.conftest import celery_worker, fake_llm, make_dataset, make_fake_judge  # noqa: F401
from tests.evaluations.helpers import example

# The demo RAG server and targets pointing at it (tests/api/test_targets.py), as the targets tests have them.
from tests.targets.conftest import demo_rag, make_target  # noqa: F401


def client_for(user: Any) -> APIClient:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {token_create(user=user).key}")
    return client


@pytest.fixture
def viewer(make_user):
    return make_user("vic", role="viewer")


@pytest.fixture
def reviewer(make_user):
    return make_user("rita", role="reviewer")


@pytest.fixture
def admin(make_user):
    return make_user("ada", role="admin")


@pytest.fixture
def viewer_api(viewer) -> APIClient:
    return client_for(viewer)


@pytest.fixture
def reviewer_api(reviewer) -> APIClient:
    return client_for(reviewer)


@pytest.fixture
def admin_api(admin) -> APIClient:
    return client_for(admin)


@pytest.fixture
def anon_api() -> APIClient:
    return APIClient()


@pytest.fixture
def finished_run(db) -> Run:
    """A completed run of 6 items with faithfulness (2 claims each), relevancy, rubric, ... (bench.seed_review)."""
    return seed_finished_run(items=6, claims=2, name="seeded")


@pytest.fixture
def offline(db):
    return judge_config_create(name="offline-api", provider="offline", model="heuristic-v1", max_concurrency=4)


def import_items(name: str, items: list[dict[str, Any]]):
    content = "".join(json.dumps(item) + "\n" for item in items).encode()
    return dataset_import(name=name, file=io.BytesIO(content), filename="d.jsonl", fmt="jsonl").version


@pytest.fixture
def small_dataset(db) -> Callable[..., Any]:
    def make(name: str = "rivers", count: int = 3):
        return import_items(name, [example(n) for n in range(1, count + 1)])

    return make


def assert_error(response, status: int, code: str | None = None, field: str | None = None) -> dict[str, Any]:
    """The response is the one error shape, with this status (and code / field at fault)."""
    assert response.status_code == status, (response.status_code, getattr(response, "content", b"")[:500])
    body = response.json()
    assert set(body) == {"error"}, body
    error = body["error"]
    assert {"code", "message", "fields"} <= set(error), error
    assert isinstance(error["message"], str) and error["message"]
    if code:
        assert error["code"] == code, error
    if field:
        assert field in error["fields"], error
    return error

from __future__ import annotations

import io
import json
from collections.abc import Callable
from typing import Any

import pytest

from datasets.models import Dataset, DatasetVersion, Example
from datasets.services import ImportResult, dataset_import


def jsonl(*items: dict[str, Any]) -> bytes:
    return "".join(json.dumps(item) + "\n" for item in items).encode()


def item(number: int, **fields: Any) -> dict[str, Any]:
    return {
        "id": f"q-{number}",
        "query": f"Question {number}?",
        "response": f"Answer {number} [c1].",
        "contexts": [{"id": "c1", "text": f"Context {number}."}],
        **fields,
    }


def assert_nothing_stored() -> None:
    assert (Dataset.objects.count(), DatasetVersion.objects.count(), Example.objects.count()) == (0, 0, 0)


@pytest.fixture
def import_bytes(db) -> Callable[..., ImportResult]:
    def run(
        content: bytes, *, name: str = "demo", filename: str = "data.jsonl", fmt: str | None = None, user: Any = None
    ) -> ImportResult:
        return dataset_import(name=name, file=io.BytesIO(content), filename=filename, fmt=fmt, user=user)

    return run

"""Dataset endpoints: upload a file or JSON items through the importer, identical content, errors, 413, reads."""

from __future__ import annotations

import json

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from datasets.models import DatasetVersion
from tests.api.conftest import assert_error
from tests.evaluations.helpers import example

# sqlite: the API also works on the embedded default (make test's second pass).
pytestmark = [pytest.mark.django_db, pytest.mark.sqlite]


def jsonl(*items) -> bytes:
    return "".join(json.dumps(item) + "\n" for item in items).encode()


def upload(client, name: str, content: bytes, filename: str = "data.jsonl", **extra):
    return client.post(
        "/api/datasets/", {"name": name, "file": SimpleUploadedFile(filename, content), **extra}, format="multipart"
    )


def test_upload_a_file_then_the_identical_content_returns_the_existing_version(admin_api) -> None:
    content = jsonl(example(1), example(2))
    first = upload(admin_api, "rivers", content)
    assert first.status_code == 201, first.content
    body = first.json()
    assert body["created"] is True
    assert body["dataset"]["name"] == "rivers" and body["dataset"]["latest_version"] == 1
    assert body["version"]["number"] == 1 and body["version"]["item_count"] == 2
    assert body["version"]["created_by"] == "ada"
    again = upload(admin_api, "rivers", content)
    assert again.status_code == 200 and again.json()["created"] is False
    assert again.json()["version"]["id"] == body["version"]["id"]
    changed = upload(admin_api, "rivers", jsonl(example(1)))
    assert changed.status_code == 201 and changed.json()["version"]["number"] == 2


def test_upload_json_items_and_csv_with_an_explicit_format(admin_api) -> None:
    response = admin_api.post("/api/datasets/", {"name": "inline", "items": [example(1), example(2)]}, format="json")
    assert response.status_code == 201, response.content
    assert response.json()["version"]["source_format"] == "json"
    csv = b'id,query,response,contexts\nq-1,What?,It is [1].,"[""It is.""]"\n'
    response = upload(admin_api, "csv-one", csv, filename="export.txt", format="csv")
    assert response.status_code == 201, response.content


def test_import_problems_name_the_line_and_field(admin_api) -> None:
    content = jsonl(example(1)) + b'{"id": "q-2", "response": "no query"}\nnot json\n'
    error = assert_error(upload(admin_api, "bad", content), 400, "invalid", "file")
    wheres = [(problem["where"], problem["field"]) for problem in error["problems"]]
    assert ("line 2", "query") in wheres
    assert any(where == "line 3" for where, _ in wheres)
    assert "line 2, field 'query'" in error["message"]
    assert not DatasetVersion.objects.exists()


def test_json_items_problems_name_the_item(admin_api) -> None:
    response = admin_api.post("/api/datasets/", {"name": "bad", "items": [example(1), {"id": "x"}]}, format="json")
    error = assert_error(response, 400, "invalid", "items")
    assert error["problems"][0]["where"] == "item 1"


@pytest.mark.parametrize(
    "body, field",
    [
        ({"file": "x"}, "name"),
        ({"name": "x"}, "file"),
    ],
)
def test_missing_fields_are_400_naming_them(admin_api, body, field) -> None:
    assert_error(admin_api.post("/api/datasets/", body, format="multipart"), 400, "invalid", field)


def test_an_unknown_format_or_extension_is_400(admin_api) -> None:
    assert_error(upload(admin_api, "x", jsonl(example(1)), filename="data.xml"), 400, "invalid", "file")
    assert_error(upload(admin_api, "x", jsonl(example(1)), format="xml"), 400, "invalid", "format")


def test_an_upload_over_the_limit_is_413(admin_api, settings) -> None:
    settings.DATASET_MAX_UPLOAD_BYTES = 200
    content = jsonl(*(example(n) for n in range(1, 5)))
    assert_error(upload(admin_api, "big", content), 413, "payload_too_large")
    items = [example(n) for n in range(1, 5)]
    assert_error(admin_api.post("/api/datasets/", {"name": "big", "items": items}, format="json"), 413)
    assert not DatasetVersion.objects.exists()


def test_a_json_body_over_djangos_memory_limit_is_413(admin_api, settings) -> None:
    settings.DATA_UPLOAD_MAX_MEMORY_SIZE = 100
    items = [example(n) for n in range(1, 5)]
    assert_error(admin_api.post("/api/datasets/", {"name": "big", "items": items}, format="json"), 413)


def test_list_detail_versions_and_examples(viewer_api, small_dataset) -> None:
    version = small_dataset("rivers", count=3)
    small_dataset("lakes", count=1)
    listing = viewer_api.get("/api/datasets/").json()
    assert listing["count"] == 2 and [d["name"] for d in listing["results"]] == ["lakes", "rivers"]
    detail = viewer_api.get(f"/api/datasets/{version.dataset_id}/").json()
    assert detail["name"] == "rivers" and [v["number"] for v in detail["versions"]] == [1]
    versions = viewer_api.get(f"/api/datasets/{version.dataset_id}/versions/").json()
    assert versions["count"] == 1 and versions["results"][0]["item_count"] == 3
    examples = viewer_api.get(f"/api/datasets/{version.dataset_id}/versions/1/examples/").json()
    assert [e["external_id"] for e in examples["results"]] == ["q-1", "q-2", "q-3"]
    first = examples["results"][0]
    assert first["contexts"][0]["id"] == "c1" and first["expected_context_ids"] == ["c1"]
    assert first["reference_answer"]


def test_examples_are_paginated_in_file_order(viewer_api, small_dataset) -> None:
    version = small_dataset("many", count=55)
    url = f"/api/datasets/{version.dataset_id}/versions/1/examples/"
    first = viewer_api.get(url).json()
    assert first["count"] == 55 and len(first["results"]) == 50 and first["previous"] is None
    second = viewer_api.get(first["next"]).json()
    assert [e["position"] for e in second["results"]] == [51, 52, 53, 54, 55] and second["next"] is None


def test_unknown_datasets_and_versions_are_404(viewer_api, small_dataset) -> None:
    version = small_dataset()
    assert_error(viewer_api.get("/api/datasets/999999/"), 404, "not_found")
    assert_error(viewer_api.get("/api/datasets/999999/versions/"), 404)
    assert_error(viewer_api.get(f"/api/datasets/{version.dataset_id}/versions/7/examples/"), 404)

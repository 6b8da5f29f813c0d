"""CSV and JSON exports of a run's items: streamed, filtered like the table, safe to open in a spreadsheet."""

from __future__ import annotations

import csv
import io
import json

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from bench.seed import seed_finished_run
from evaluations import item_table
from evaluations.exports import spreadsheet_safe
from evaluations.models import RunItem

pytestmark = [pytest.mark.django_db, pytest.mark.sqlite]


@pytest.fixture
def viewer(client, make_user):
    client.force_login(make_user("vic"))
    return client


def export(client, run, fmt: str, **params):
    response = client.get(reverse(f"evaluations:run_export_{fmt}", args=[run.pk]), params)
    assert response.status_code == 200
    assert response.streaming, "exports must stream"
    body = b"".join(response.streaming_content).decode()
    return response, body


def test_csv_export_has_one_row_per_item_with_every_metric(viewer):
    run = seed_finished_run(12, name="exp", error_every=6)

    response, body = export(viewer, run, "csv")

    rows = list(csv.DictReader(io.StringIO(body)))
    assert response["Content-Type"].startswith("text/csv")
    assert response["Content-Disposition"] == f'attachment; filename="run-{run.pk}-items.csv"'
    assert len(rows) == 12
    assert {"item_id", "example_id", "overall", "faithfulness_score", "rubric_passed", "citation_audit_score"} <= set(
        rows[0]
    )
    first = RunItem.objects.filter(run=run).order_by("example__position").first()
    assert rows[0]["item_id"] == str(first.pk) and rows[0]["overall"] == str(first.overall_score)
    assert [row["status"] for row in rows].count("error") == 2


def test_exports_follow_the_tables_filters_and_sort(viewer):
    run = seed_finished_run(40, name="exp")

    _, body = export(viewer, run, "json", failing="rubric", sort="rubric")

    records = json.loads(body)
    wanted = RunItem.objects.filter(run=run, results__metric="rubric", results__passed=False)
    assert {record["item_id"] for record in records} == set(wanted.values_list("pk", flat=True))
    scores = [record["rubric_score"] for record in records]
    assert scores == sorted(scores)


def test_an_export_reads_the_items_in_chunks(viewer, monkeypatch):
    run = seed_finished_run(25, name="exp")
    monkeypatch.setattr(item_table, "EXPORT_CHUNK_SIZE", 10)

    with CaptureQueriesContext(connection) as queries:
        _, body = export(viewer, run, "json")

    assert len(json.loads(body)) == 25
    result_reads = [query for query in queries if 'FROM "evaluations_metricresult"' in query["sql"]]
    assert len(result_reads) == 3  # 10 + 10 + 5 items: one read of results per chunk, none per item


def test_an_empty_export_still_has_its_header(viewer):
    run = seed_finished_run(3, name="exp")

    _, body = export(viewer, run, "csv", q="no such text")

    assert body.splitlines()[0].startswith("item_id,example_id,position,status,overall")
    assert len(body.splitlines()) == 1


@pytest.mark.parametrize("cell", ['=HYPERLINK("http://x")', "+1+1", "-2+3", "@SUM(A1)", "\tx", "\r=1"])
def test_formula_cells_are_defused(cell):
    assert spreadsheet_safe(cell) == "'" + cell
    assert spreadsheet_safe("plain text") == "plain text" and spreadsheet_safe(0.5) == 0.5


def test_dataset_text_cannot_become_a_spreadsheet_formula(viewer):
    run = seed_finished_run(2, name="exp", text=lambda n: {"query": '=HYPERLINK("http://evil")', "response": "@cmd"})

    _, body = export(viewer, run, "csv")

    rows = list(csv.DictReader(io.StringIO(body)))
    assert rows[0]["query"] == '\'=HYPERLINK("http://evil")' and rows[0]["response"] == "'@cmd"
    _, raw = export(viewer, run, "json")
    assert json.loads(raw)[0]["query"] == '=HYPERLINK("http://evil")'  # JSON keeps the data as it is


def test_a_bad_filter_is_a_400(viewer):
    run = seed_finished_run(2, name="exp")

    response = viewer.get(reverse("evaluations:run_export_csv", args=[run.pk]), {"sort": "x"})

    assert response.status_code == 400 and b"sort:" in response.content

"""dataset_import stores valid files: formats, field aliases, versioning, atomicity."""

from __future__ import annotations

import io
import json
import threading
from pathlib import Path

import pytest
from django.db import connection

from datasets import services
from datasets.models import Dataset, DatasetVersion, Example
from datasets.services import dataset_import
from tests.datasets.conftest import assert_nothing_stored, item, jsonl

DEMO = Path(services.__file__).parent / "demo" / "stip-governance.jsonl"


def stored(result) -> list[Example]:
    return list(result.version.examples.order_by("position"))


def test_a_canonical_jsonl_file_is_stored_as_version_one(import_bytes, make_user) -> None:
    # given
    ann = make_user("ann", role="admin")
    full = {
        "id": "q-1",
        "query": "Who proposed STIP?",
        "response": "The Foundation [c1].",
        "contexts": [{"id": "c1", "text": "Author: Arbitrum Foundation", "score": 0.92, "metadata": {"src": "tally"}}],
        "reference_answer": "The Arbitrum Foundation.",
        "expected_context_ids": ["c1"],
        "retrieved_ids": ["c1", "c9"],
        "tags": ["factual"],
        "metadata": {"difficulty": "easy"},
        "ignored_extra_field": 1,
    }
    # when
    result = import_bytes(jsonl(full, {"query": "Second?"}), name="stip", filename="stip.jsonl", user=ann)
    # then
    version = result.version
    assert result.created is True
    assert (version.dataset.name, version.number, version.item_count) == ("stip", 1, 2)
    assert (version.source_filename, version.source_format, version.created_by) == ("stip.jsonl", "jsonl", ann)
    assert version.dataset.created_by == ann
    first, second = stored(result)
    assert (first.position, first.external_id, first.query, first.response) == (
        1,
        "q-1",
        full["query"],
        full["response"],
    )
    assert first.contexts == full["contexts"]
    assert (first.reference_answer, first.expected_context_ids, first.retrieved_ids) == (
        "The Arbitrum Foundation.",
        ["c1"],
        ["c1", "c9"],
    )
    assert (first.tags, first.metadata) == (["factual"], {"difficulty": "easy"})
    # defaults: the position as id, empty optional fields, retrieved ids left to the contexts' order
    assert (second.position, second.external_id, second.response, second.contexts) == (2, "2", "", [])
    assert (second.reference_answer, second.expected_context_ids, second.retrieved_ids) == ("", [], None)
    assert (second.tags, second.metadata) == ([], {})


def test_the_shipped_demo_dataset_imports(db) -> None:
    with DEMO.open("rb") as file:
        result = dataset_import(name="stip-governance", file=file, filename=DEMO.name)
    assert result.version.item_count == 7
    first = result.version.examples.order_by("position").first()
    assert first.external_id == "query-004"
    assert [context["id"] for context in first.contexts] == ["stip-tally", "stip-snapshot", "stip-forum"]


def test_ragas_field_names(import_bytes) -> None:
    ragas = {
        "user_input": "When did the vote end?",
        "retrieved_contexts": ["Voting End: 2023-11-15", "Voting Start: 2023-11-01"],
        "reference": "On 15 November 2023.",
        "response": "It ended on 2023-11-15 [1].",
    }
    (example,) = stored(import_bytes(jsonl(ragas)))
    assert example.query == "When did the vote end?"
    assert example.contexts == [
        {"id": "1", "text": "Voting End: 2023-11-15"},
        {"id": "2", "text": "Voting Start: 2023-11-01"},
    ]
    assert example.reference_answer == "On 15 November 2023."
    assert example.response == "It ended on 2023-11-15 [1]."


def test_deepeval_field_names(import_bytes) -> None:
    deepeval = {
        "input": "How much ARB did STIP allocate?",
        "actual_output": "50 million ARB.",
        "retrieval_context": ["The STIP program allocated 50 million ARB tokens."],
        "expected_output": "50 million ARB tokens.",
    }
    (example,) = stored(import_bytes(jsonl(deepeval)))
    assert (example.query, example.response, example.reference_answer) == (
        "How much ARB did STIP allocate?",
        "50 million ARB.",
        "50 million ARB tokens.",
    )
    assert example.contexts == [{"id": "1", "text": "The STIP program allocated 50 million ARB tokens."}]


def test_context_objects_without_id_take_their_position(import_bytes) -> None:
    contexts = [{"id": "c1", "text": "a"}, {"text": "b", "score": 0.5}, "c", {"id": 7, "text": "d"}]
    (example,) = stored(import_bytes(jsonl({"id": 12, "query": "q", "contexts": contexts})))
    assert example.external_id == "12"
    assert example.contexts == [
        {"id": "c1", "text": "a"},
        {"id": "2", "text": "b", "score": 0.5},
        {"id": "3", "text": "c"},
        {"id": "7", "text": "d"},
    ]


def test_a_json_array(import_bytes) -> None:
    content = json.dumps([item(1), item(2, tags=["x"])]).encode()
    result = import_bytes(content, filename="data.json")
    assert result.version.source_format == "json"
    assert [(e.external_id, e.tags) for e in stored(result)] == [("q-1", []), ("q-2", ["x"])]


def test_a_csv_file_with_json_and_pipe_cells(import_bytes) -> None:
    # given a header using a Ragas alias, a quoted multi-line cell and both list notations
    content = (
        b"id,user_input,response,contexts,expected_context_ids,tags,metadata,retrieved_ids\n"
        b'a,"Who, and when?","Line one\nline two [c1]","[{""id"": ""c1"", ""text"": ""T""}]",c1,factual | hard,'
        b'"{""k"": 1}","[""c1"", ""c2""]"\n'
        b"\n"
        b'b,Second?,,"[""s1"", ""s2""]","[""2""]",,,c2|c1\n'
    )
    # when
    result = import_bytes(content, filename="data.csv")
    # then
    first, second = stored(result)
    assert (first.external_id, first.query, first.response) == ("a", "Who, and when?", "Line one\nline two [c1]")
    assert first.contexts == [{"id": "c1", "text": "T"}]
    assert (first.expected_context_ids, first.tags, first.metadata) == (["c1"], ["factual", "hard"], {"k": 1})
    assert first.retrieved_ids == ["c1", "c2"]
    assert (second.position, second.response, second.tags, second.metadata) == (2, "", [], {})
    assert second.contexts == [{"id": "1", "text": "s1"}, {"id": "2", "text": "s2"}]
    assert (second.expected_context_ids, second.retrieved_ids) == (["2"], ["c2", "c1"])


def test_a_byte_order_mark_is_ignored(import_bytes) -> None:
    result = import_bytes(b"\xef\xbb\xbfid,query\n1,q\n", filename="excel.csv")
    assert stored(result)[0].external_id == "1"


def test_an_explicit_format_beats_the_extension(import_bytes) -> None:
    result = import_bytes(jsonl(item(1)), filename="export.txt", fmt="JSONL")
    assert result.version.source_format == "jsonl"


# --- versioning ---------------------------------------------------------------


def test_identical_content_returns_the_existing_version(import_bytes) -> None:
    first = import_bytes(jsonl(item(1), item(2)))
    again = import_bytes(jsonl(item(1), item(2)))
    assert again.created is False
    assert again.version == first.version
    assert (DatasetVersion.objects.count(), Example.objects.count()) == (1, 2)


def test_identical_content_under_another_filename_and_key_order_is_the_same_version(import_bytes) -> None:
    first = import_bytes(jsonl(item(1)), filename="a.jsonl")
    reordered = {key: item(1)[key] for key in reversed(list(item(1)))}
    again = import_bytes(json.dumps([reordered], indent=2).encode(), filename="b.json")
    assert (again.created, again.version) == (False, first.version)


def test_identical_content_in_csv_is_the_same_version(import_bytes) -> None:
    first = import_bytes(jsonl({"id": "a", "query": "q", "tags": ["x", "y"]}))
    again = import_bytes(b"id,query,tags\na,q,x|y\n", filename="data.csv")
    assert (again.created, again.version) == (False, first.version)


def test_changed_content_makes_the_next_version_and_keeps_the_old(import_bytes) -> None:
    first = import_bytes(jsonl(item(1), item(2)))
    second = import_bytes(jsonl(item(1), item(2, response="A better answer.")))
    assert second.created is True
    assert (second.version.dataset, second.version.number) == (first.version.dataset, 2)
    assert first.version.examples.get(external_id="q-2").response == "Answer 2 [c1]."
    assert second.version.examples.get(external_id="q-2").response == "A better answer."
    # re-uploading the first content finds version 1 again
    third = import_bytes(jsonl(item(1), item(2)))
    assert (third.created, third.version) == (False, first.version)


def test_other_datasets_have_their_own_numbering(import_bytes) -> None:
    import_bytes(jsonl(item(1)), name="a")
    import_bytes(jsonl(item(2)), name="a")
    result = import_bytes(jsonl(item(1)), name="b")
    assert (result.created, result.version.number, Dataset.objects.count()) == (True, 1, 2)


@pytest.mark.django_db(transaction=True)
def test_concurrent_identical_imports_store_one_version() -> None:
    # given an existing dataset (creating it would serialise the imports on its unique name)
    Dataset.objects.create(name="race")
    content = jsonl(*(item(n) for n in range(1, 51)))
    barrier = threading.Barrier(4)
    results, errors = [], []

    def run() -> None:
        try:
            barrier.wait()
            results.append(dataset_import(name="race", file=io.BytesIO(content), filename="race.jsonl"))
        except Exception as exc:  # surfaced by the assertion below
            errors.append(exc)
        finally:
            connection.close()

    threads = [threading.Thread(target=run) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    assert errors == []
    assert sorted(result.created for result in results) == [False, False, False, True]
    assert {result.version.pk for result in results} == {DatasetVersion.objects.get().pk}
    assert Example.objects.count() == 50


def test_a_database_failure_midway_stores_nothing(import_bytes, monkeypatch) -> None:
    # given inserts that fail on the second batch
    monkeypatch.setattr(services, "EXAMPLE_BATCH_SIZE", 2)
    real_bulk_create = Example.objects.bulk_create
    calls = []

    def failing_bulk_create(objs, *args, **kwargs):
        calls.append(len(objs))
        if len(calls) == 2:
            raise RuntimeError("connection lost")
        return real_bulk_create(objs, *args, **kwargs)

    monkeypatch.setattr(Example.objects, "bulk_create", failing_bulk_create)
    # when
    with pytest.raises(RuntimeError):
        import_bytes(jsonl(item(1), item(2), item(3)))
    # then the first batch was rolled back with the version and the dataset
    assert calls == [2, 1]
    assert_nothing_stored()


def test_an_error_on_the_last_line_of_a_big_file_writes_nothing(import_bytes, monkeypatch) -> None:
    # given a file of 2,500 valid items and a bad last line, written in batches of 1,000 as read
    written = []
    real_bulk_create = Example.objects.bulk_create

    def counting_bulk_create(objs, *args, **kwargs):
        written.append(len(objs))
        return real_bulk_create(objs, *args, **kwargs)

    monkeypatch.setattr(Example.objects, "bulk_create", counting_bulk_create)
    content = jsonl(*(item(n) for n in range(1, 2501)), {"id": "q-last", "query": ["not", "text"]})
    # when
    with pytest.raises(services.DatasetImportError) as caught:
        import_bytes(content)
    # then the batches read before the error were written, and rolled back with the rest
    assert written == [1000, 1000]
    assert [str(problem) for problem in caught.value.problems] == [
        "line 2501, field 'query': must be a string, got a list"
    ]
    assert_nothing_stored()


def test_items_are_numbered_across_batches(import_bytes, monkeypatch) -> None:
    monkeypatch.setattr(services, "EXAMPLE_BATCH_SIZE", 2)

    result = import_bytes(jsonl(*(item(n) for n in range(1, 6))))

    assert [(e.position, e.external_id) for e in stored(result)] == [(n, f"q-{n}") for n in range(1, 6)]
    assert result.version.item_count == 5


def test_identical_content_written_in_batches_is_undone_and_finds_the_first_version(import_bytes, monkeypatch) -> None:
    monkeypatch.setattr(services, "EXAMPLE_BATCH_SIZE", 2)
    content = jsonl(*(item(n) for n in range(1, 6)))
    first = import_bytes(content)

    again = import_bytes(content)

    assert (again.created, again.version) == (False, first.version)
    assert Example.objects.count() == 5

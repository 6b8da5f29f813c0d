"""dataset_import rejects a bad file as a whole: every problem named, nothing stored."""

from __future__ import annotations

import json

import pytest

from datasets.parsing import MAX_PROBLEMS, DatasetImportError
from tests.datasets.conftest import assert_nothing_stored, item, jsonl

GOOD = jsonl(item(1))


def import_error(import_bytes, content: bytes, **kwargs) -> DatasetImportError:
    with pytest.raises(DatasetImportError) as caught:
        import_bytes(content, **kwargs)
    return caught.value


def problem_lines(error: DatasetImportError) -> list[str]:
    return [str(problem) for problem in error.problems]


@pytest.mark.parametrize(
    ("bad_line", "expected"),
    [
        (b'{"id": "q-2", "query": "x",}', "line 2: invalid JSON: Expecting property name enclosed in double quotes"),
        (b'["not", "an", "object"]', "line 2: must be a JSON object, got a list"),
        (json.dumps({"id": "q-2", "response": "r"}).encode(), "line 2, field 'query': is missing"),
        (json.dumps({"query": "   "}).encode(), "line 2, field 'query': is empty"),
        (json.dumps({"query": 42}).encode(), "line 2, field 'query': must be a string, got a number"),
        (json.dumps({"query": "q", "response": ["a"]}).encode(), "line 2, field 'response': must be a string"),
        (json.dumps({"query": "q", "tags": ["a", 1]}).encode(), "line 2, field 'tags': must be a list of strings"),
        (
            json.dumps({"query": "q", "tags": "a"}).encode(),
            "line 2, field 'tags': must be a list of strings, got a string",
        ),
        (
            json.dumps({"query": "q", "expected_context_ids": "c1"}).encode(),
            "line 2, field 'expected_context_ids': must be a list of id strings, got a string",
        ),
        (
            json.dumps({"query": "q", "retrieved_ids": {"a": 1}}).encode(),
            "line 2, field 'retrieved_ids': must be a list",
        ),
        (json.dumps({"query": "q", "metadata": [1]}).encode(), "line 2, field 'metadata': must be an object"),
        (json.dumps({"query": "q", "id": {"x": 1}}).encode(), "line 2, field 'id': must be a string or an integer"),
        (
            json.dumps({"query": "q", "contexts": [{"id": "c1", "content": "no text key"}]}).encode(),
            "line 2, field 'contexts[0]': must be a string or an object with a string 'text'",
        ),
        (
            json.dumps({"query": "q", "contexts": ["fine", 7]}).encode(),
            "line 2, field 'contexts[1]': must be a string or an object with a string 'text'",
        ),
        (json.dumps({"query": "q", "contexts": "one string"}).encode(), "line 2, field 'contexts': must be a list"),
        (
            json.dumps({"query": "q", "contexts": [{"text": "a", "score": "high"}]}).encode(),
            "line 2, field 'contexts[0].score': must be a number",
        ),
        (
            json.dumps({"query": "q", "contexts": [{"id": "c1", "text": "a"}, {"id": "c1", "text": "b"}]}).encode(),
            "line 2, field 'contexts': duplicate context id 'c1'",
        ),
        (
            json.dumps(
                {"query": "q", "contexts": ["first", {"id": "1", "text": "clashes with the positional id"}]}
            ).encode(),
            "line 2, field 'contexts': duplicate context id '1'",
        ),
        (
            json.dumps({"query": "q", "user_input": "q again"}).encode(),
            "line 2, field 'user_input': 'query' and 'user_input' both give the query",
        ),
        (b'{"query": "caf\xe9"}', "line 2: not valid UTF-8 (byte 0xe9"),
    ],
)
def test_a_bad_jsonl_line_is_named_and_nothing_is_stored(import_bytes, bad_line: bytes, expected: str) -> None:
    # given a good first line and a bad second one
    content = GOOD + bad_line + b"\n"
    # when
    error = import_error(import_bytes, content)
    # then
    assert "nothing was imported" in error.message
    assert any(line.startswith(expected) for line in problem_lines(error)), problem_lines(error)
    assert_nothing_stored()


def test_ragas_alias_is_named_as_written_when_missing_query(import_bytes) -> None:
    error = import_error(import_bytes, jsonl({"response": "r"}))
    assert problem_lines(error) == ["line 1, field 'query': is missing (also accepted: user_input, input)"]
    assert_nothing_stored()


def test_ragas_alias_type_problem_names_the_alias(import_bytes) -> None:
    error = import_error(import_bytes, jsonl({"user_input": "q", "retrieved_contexts": [1]}))
    assert problem_lines(error) == [
        "line 1, field 'retrieved_contexts[0]': must be a string or an object with a string 'text'"
    ]


def test_duplicate_example_ids_name_both_lines(import_bytes) -> None:
    content = jsonl(item(1), item(2), item(1, query="Same id, other question?"))
    error = import_error(import_bytes, content)
    assert problem_lines(error) == ["line 3, field 'id': duplicate id 'q-1' (first used on line 1)"]
    assert_nothing_stored()


def test_a_missing_id_takes_the_position_so_it_can_clash(import_bytes) -> None:
    content = jsonl({"id": "2", "query": "a"}, {"query": "b"})
    error = import_error(import_bytes, content)
    assert problem_lines(error) == ["line 2, field 'id': duplicate id '2' (first used on line 1)"]


@pytest.mark.parametrize(
    ("content", "filename"),
    [
        (b"", "data.jsonl"),
        (b"\n  \n\n", "data.jsonl"),
        (b"[]", "data.json"),
        (b"", "data.json"),
        (b"id,query\n", "data.csv"),
    ],
)
def test_an_empty_file_is_refused(import_bytes, content: bytes, filename: str) -> None:
    error = import_error(import_bytes, content, filename=filename)
    assert error.message.startswith("The file is empty")
    assert_nothing_stored()


def test_a_file_over_the_size_limit_is_refused(import_bytes, settings) -> None:
    # given a limit smaller than the file
    content = jsonl(item(1), item(2))
    settings.DATASET_MAX_UPLOAD_BYTES = len(content) - 1
    # when
    error = import_error(import_bytes, content)
    # then
    assert f"over the size limit of {len(content) - 1} bytes" in error.message
    assert_nothing_stored()


@pytest.mark.parametrize("filename", ["data.json", "data.csv"])
def test_the_size_limit_holds_for_every_format(import_bytes, settings, filename: str) -> None:
    settings.DATASET_MAX_UPLOAD_BYTES = 10
    error = import_error(import_bytes, b"x" * 11, filename=filename)
    assert "over the size limit" in error.message


def test_a_file_at_the_size_limit_is_accepted(import_bytes, settings) -> None:
    content = jsonl(item(1))
    settings.DATASET_MAX_UPLOAD_BYTES = len(content)
    assert import_bytes(content).version.item_count == 1


def test_problems_are_collected_up_to_the_cap(import_bytes) -> None:
    # given more bad lines than the cap
    content = jsonl(*({"id": str(n)} for n in range(1, 31)))
    # when
    error = import_error(import_bytes, content)
    # then all of the first MAX_PROBLEMS are reported, then checking stops
    assert len(error.problems) == MAX_PROBLEMS
    assert [problem.where for problem in error.problems] == [f"line {n}" for n in range(1, MAX_PROBLEMS + 1)]
    assert f"stopped after the first {MAX_PROBLEMS}" in error.message
    assert_nothing_stored()


def test_several_problems_in_one_file_are_all_reported(import_bytes) -> None:
    content = jsonl(item(1), {"id": "q-2"}, item(3, tags="x")) + b"{broken\n"
    error = import_error(import_bytes, content)
    assert error.message.startswith("The file has 3 problems")
    assert [problem.where for problem in error.problems] == ["line 2", "line 3", "line 4"]


def test_json_problems_name_the_zero_based_item(import_bytes) -> None:
    content = json.dumps([item(1), {"id": "x", "query": None}, "text"]).encode()
    error = import_error(import_bytes, content, filename="data.json")
    assert problem_lines(error) == [
        "item 1, field 'query': is missing (also accepted: user_input, input)",
        "item 2: must be a JSON object, got a string",
    ]
    assert_nothing_stored()


def test_invalid_json_document_names_line_and_column(import_bytes) -> None:
    error = import_error(import_bytes, b'[\n  {"query": "a"},\n  {"query": }\n]', filename="data.json")
    assert problem_lines(error) == ["line 3, column 13: invalid JSON: Expecting value"]


def test_json_top_level_must_be_an_array(import_bytes) -> None:
    error = import_error(import_bytes, json.dumps(item(1)).encode(), filename="data.json")
    assert problem_lines(error) == ["file: the top level must be a JSON array of objects, got an object"]


def test_non_utf8_json_names_the_line(import_bytes) -> None:
    error = import_error(import_bytes, b'[\n{"query": "\xff"}]', filename="data.json")
    assert problem_lines(error) == ["line 2: not valid UTF-8 (byte 0xff); save the file as UTF-8"]
    assert_nothing_stored()


def test_csv_problems_name_the_data_row_and_bad_json_cells(import_bytes) -> None:
    content = (
        b"id,query,contexts,metadata\n"
        b'a,Good?,"[""one""]",\n'
        b'b,Bad contexts?,"[""one"",]",\n'
        b",,,\n"
        b'c,,,"{""k"": 1}"\n'
        b"d,Bad metadata?,,{nope}\n"
    )
    error = import_error(import_bytes, content, filename="data.csv")
    assert problem_lines(error) == [
        "data row 2, field 'contexts': the cell holds invalid JSON (Expecting value, column 8); write a JSON list",
        "data row 3, field 'query': is missing (also accepted: user_input, input)",
        "data row 4, field 'metadata': the cell holds invalid JSON "
        "(Expecting property name enclosed in double quotes, column 2); write a JSON object",
    ]
    assert_nothing_stored()


def test_csv_without_a_query_column_is_refused_once(import_bytes) -> None:
    error = import_error(import_bytes, b"id,question\n1,a\n2,b\n", filename="data.csv")
    assert problem_lines(error) == ["header: no 'query' column (also accepted: user_input, input)"]


def test_csv_row_with_too_many_cells(import_bytes) -> None:
    error = import_error(import_bytes, b"id,query\n1,a,extra\n", filename="data.csv")
    assert problem_lines(error) == ["data row 1: has 3 cells but the header has 2 columns"]


def test_csv_non_utf8_names_the_file_line(import_bytes) -> None:
    error = import_error(import_bytes, b"id,query\n1,ok\n2,caf\xe9\n", filename="data.csv")
    assert problem_lines(error) == ["line 3: not valid UTF-8 (byte 0xe9 at byte 6 of the line); save the file as UTF-8"]
    assert_nothing_stored()


def test_an_unknown_extension_asks_for_the_format(import_bytes) -> None:
    error = import_error(import_bytes, GOOD, filename="data.txt")
    assert "Cannot tell the format of 'data.txt'" in error.message
    assert_nothing_stored()


def test_an_unknown_format_is_refused(import_bytes) -> None:
    error = import_error(import_bytes, GOOD, fmt="xml")
    assert error.message == "Unknown format 'xml': use one of jsonl, json, csv."


def test_a_blank_name_is_refused(import_bytes) -> None:
    error = import_error(import_bytes, GOOD, name="   ")
    assert error.message == "Give the dataset a name."
    assert_nothing_stored()


def test_a_failed_import_leaves_earlier_versions_alone(import_bytes) -> None:
    first = import_bytes(GOOD)
    import_error(import_bytes, GOOD + b"{}\n")
    assert list(first.version.dataset.versions.values_list("number", flat=True)) == [1]
    assert first.version.examples.count() == 1

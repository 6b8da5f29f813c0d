from __future__ import annotations

import pytest

from targets.mapping import MappingError, extract, mapping_check

BODY = {
    "data": {"output": "The STIP passed [stip-tally]."},
    "sources": [
        {"doc_id": "stip-tally", "chunk": "Status: executed", "similarity": 0.9},
        {"doc_id": "stip-forum", "chunk": "50 million ARB", "similarity": 0.4},
    ],
    "plain": ["first text", "second text"],
}


def test_objects_reshaped_by_jmespath_give_contexts_and_ids_in_rank_order():
    mapping = {"answer": "data.output", "contexts": "sources[].{id: doc_id, text: chunk, score: similarity}"}

    extracted = extract(mapping, BODY)

    assert extracted.answer == "The STIP passed [stip-tally]."
    assert extracted.contexts == [
        {"id": "stip-tally", "text": "Status: executed", "score": 0.9},
        {"id": "stip-forum", "text": "50 million ARB", "score": 0.4},
    ]
    assert extracted.retrieved_ids == ["stip-tally", "stip-forum"]  # the contexts' order when not mapped


def test_strings_as_contexts_and_explicit_retrieved_ids():
    extracted = extract({"answer": "data.output", "contexts": "plain", "retrieved_ids": "sources[].doc_id"}, BODY)

    assert extracted.contexts == [{"id": "1", "text": "first text"}, {"id": "2", "text": "second text"}]
    assert extracted.retrieved_ids == ["stip-tally", "stip-forum"]


@pytest.mark.parametrize(
    ("mapping", "message"),
    [
        ({"answer": "data.answer"}, "answer: `data.answer` found nothing in the response"),
        ({"answer": "sources"}, "answer: `sources` found .* not a string"),
        ({"answer": "data.output", "contexts": "nothing"}, "contexts: `nothing` found nothing"),
        ({"answer": "data.output", "contexts": "data"}, "contexts: `data` found .* not a list"),
        ({"answer": "data.output", "contexts": "sources"}, "contexts: `sources` item 1 is .*`text` string"),
        ({"answer": "data.output", "retrieved_ids": "data.output"}, "retrieved_ids: .* not a list of ids"),
    ],
)
def test_a_mapping_that_finds_nothing_or_the_wrong_shape_is_named(mapping, message):
    with pytest.raises(MappingError, match=message):
        extract(mapping, BODY)


@pytest.mark.parametrize(
    ("mapping", "message"),
    [
        ({}, "answer: is required"),
        ({"answer": "a..b"}, "answer: `a..b` is not a valid JMESPath expression"),
        ({"answer": "a", "context": "b"}, "context: unknown mapping"),
        ("answer", "response_mapping: must be a JSON object"),
    ],
)
def test_mapping_check_names_the_bad_key(mapping, message):
    with pytest.raises(MappingError, match=message):
        mapping_check(mapping)

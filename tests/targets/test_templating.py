from __future__ import annotations

import json

import pytest

from targets.templating import TemplateError, placeholders_check, render

FIELDS = {
    "query": 'What is "STIP"?\nSay more.',
    "id": "q-1",
    "reference_answer": "",
    "response": "",
    "expected_context_ids": ["c1"],
    "tags": ["factual"],
    "metadata": {"top_k": 5, "team": {"name": "gov"}},
}


def test_a_whole_placeholder_becomes_the_value_itself_and_a_partial_one_its_text():
    template = {
        "question": "{{query}}",
        "k": "{{ metadata.top_k }}",
        "tags": "{{tags}}",
        "label": "item {{id}} of {{metadata.team.name}} (k={{metadata.top_k}})",
        "nested": [{"q": "{{query}}"}, 3, True, None],
    }

    body = render(template, FIELDS)

    assert body == {
        "question": FIELDS["query"],
        "k": 5,
        "tags": ["factual"],
        "label": "item q-1 of gov (k=5)",
        "nested": [{"q": FIELDS["query"]}, 3, True, None],
    }
    # quotes and newlines in the question stay inside one JSON string
    assert json.loads(json.dumps(body))["question"] == FIELDS["query"]


def test_a_missing_metadata_key_renders_as_null_or_empty_text():
    assert render({"x": "{{metadata.missing}}", "y": "a{{metadata.missing.deeper}}b"}, FIELDS) == {"x": None, "y": "ab"}


def test_an_unknown_placeholder_is_named():
    with pytest.raises(TemplateError, match=r"unknown placeholder \{\{question\}\}"):
        placeholders_check({"q": ["{{question}}"]})
    placeholders_check({"q": "{{query}}", "m": "{{metadata.anything}}"})  # fine


def test_a_placeholder_in_a_key_is_replaced_by_text():
    assert render({"{{id}}": "{{tags}}", "k-{{metadata.top_k}}": 1}, FIELDS) == {"q-1": ["factual"], "k-5": 1}

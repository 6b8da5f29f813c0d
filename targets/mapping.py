"""The response mapping: JMESPath expressions that find the answer, the contexts and the retrieved ids.

    {"answer": "answer",                                   # required: a string
     "contexts": "sources[].{id: doc_id, text: chunk, score: similarity}",  # optional
     "retrieved_ids": "sources[].doc_id"}                  # optional, rank order

`contexts` may find a list of strings (ids become "1", "2", ...) or of objects with `text` and
optional `id` and `score` (reshape other names with a JMESPath multiselect hash, as above).
Without `retrieved_ids` the contexts' ids in their order are the retrieved ids. An expression
that finds nothing (null) or the wrong shape is a MappingError naming the mapping, the
expression and what it found.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

import jmespath
from jmespath.exceptions import JMESPathError

KEYS = ("answer", "contexts", "retrieved_ids")
REQUIRED = ("answer",)


class MappingError(ValueError):
    """A mapping expression is invalid, found nothing, or found the wrong shape."""

    def __init__(self, key: str, message: str) -> None:
        super().__init__(f"{key}: {message}")
        self.key = key


@dataclass(frozen=True)
class Extracted:
    answer: str
    contexts: list[dict[str, Any]] = field(default_factory=list)  # [{"id", "text", "score"?}]
    retrieved_ids: list[str] = field(default_factory=list)
    found: dict[str, Any] = field(default_factory=dict)  # what each expression returned, as found


def mapping_check(mapping: Any) -> None:
    """MappingError for the first problem: not an object, an unknown key, a missing answer, a bad expression."""
    if not isinstance(mapping, dict):
        raise MappingError("response_mapping", 'must be a JSON object such as {"answer": "answer"}')
    for key in mapping:
        if key not in KEYS:
            raise MappingError(key, f"unknown mapping; use {', '.join(KEYS)}")
    for key in REQUIRED:
        if not mapping.get(key):
            raise MappingError(key, "is required: a JMESPath expression such as `answer` or `data.output.text`")
    for key, expression in mapping.items():
        if expression in (None, ""):
            continue
        if not isinstance(expression, str):
            raise MappingError(key, "must be a JMESPath expression (a string)")
        try:
            jmespath.compile(expression)
        except JMESPathError as exc:
            raise MappingError(key, f"`{expression}` is not a valid JMESPath expression: {_first_line(exc)}") from None


def extract(mapping: dict[str, str], body: Any) -> Extracted:
    """Apply the mapping to a decoded JSON body; MappingError names the mapping that failed."""
    found = {key: _search(key, expression, body) for key, expression in mapping.items() if expression}
    answer = found.get("answer")
    if answer is None:
        raise MappingError("answer", f"`{mapping['answer']}` found nothing in the response")
    if not isinstance(answer, str | int | float) or isinstance(answer, bool):
        raise MappingError("answer", f"`{mapping['answer']}` found {_short(answer)}, not a string")
    contexts = _contexts(mapping.get("contexts"), found.get("contexts")) if "contexts" in found else []
    if "retrieved_ids" in found:
        retrieved = _ids(mapping["retrieved_ids"], found["retrieved_ids"])
    else:
        retrieved = [context["id"] for context in contexts]
    return Extracted(answer=str(answer), contexts=contexts, retrieved_ids=retrieved, found=found)


def _search(key: str, expression: str, body: Any) -> Any:
    try:
        return jmespath.search(expression, body)
    except JMESPathError as exc:
        raise MappingError(key, f"`{expression}` failed: {_first_line(exc)}") from None


def _contexts(expression: str | None, value: Any) -> list[dict[str, Any]]:
    if value is None:
        raise MappingError("contexts", f"`{expression}` found nothing in the response")
    if not isinstance(value, list):
        raise MappingError("contexts", f"`{expression}` found {_short(value)}, not a list")
    contexts = []
    for position, entry in enumerate(value, start=1):
        if isinstance(entry, str):
            contexts.append({"id": str(position), "text": entry})
            continue
        if not isinstance(entry, dict) or not isinstance(entry.get("text"), str):
            raise MappingError(
                "contexts",
                f"`{expression}` item {position} is {_short(entry)}: give strings or objects with a `text` string",
            )
        context: dict[str, Any] = {"id": str(entry["id"]) if entry.get("id") is not None else str(position)}
        context["text"] = entry["text"]
        score = entry.get("score")
        if isinstance(score, int | float) and not isinstance(score, bool):
            context["score"] = float(score)
        contexts.append(context)
    return contexts


def _ids(expression: str, value: Any) -> list[str]:
    if value is None:
        raise MappingError("retrieved_ids", f"`{expression}` found nothing in the response")
    if not isinstance(value, list) or any(not isinstance(entry, str | int) or entry is None for entry in value):
        raise MappingError("retrieved_ids", f"`{expression}` found {_short(value)}, not a list of ids")
    return [str(entry) for entry in value]


def _short(value: Any, limit: int = 120) -> str:
    text = json.dumps(value, ensure_ascii=False)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _first_line(exc: Exception) -> str:
    position, token = getattr(exc, "lex_position", None), getattr(exc, "token_value", None)
    if position is not None and token is not None:  # a ParseError: say where, not the parser's token names
        return f"unexpected {token!r} at column {position + 1}" if token else f"incomplete at column {position + 1}"
    text = str(exc).strip()
    if "Incomplete expression" in text:
        return "the expression ends too early (an unclosed bracket or a trailing operator?)"
    return text.splitlines()[0] if text else type(exc).__name__

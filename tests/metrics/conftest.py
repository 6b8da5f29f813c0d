"""Helpers of the metric tests: items, contexts and test MetricContexts with scripted or offline judges."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import pytest

from evaluations.metrics.base import ItemInput, MetricContext
from evaluations.metrics.run_settings import resolve_settings
from judges.types import Context, JudgeResult

REPO = Path(__file__).resolve().parents[2]
SAMPLE_DATASET = REPO / "datasets" / "demo" / "stip-governance.jsonl"


def make_item(
    response: str = "",
    contexts: Mapping[str, str] | None = None,
    *,
    query: str = "What happened?",
    reference_answer: str = "",
    expected_context_ids: tuple[str, ...] = (),
    retrieved_ids: tuple[str, ...] | None = None,
) -> ItemInput:
    return ItemInput(
        query=query,
        response=response,
        contexts=tuple(Context(id=cid, text=text) for cid, text in (contexts or {}).items()),
        reference_answer=reference_answer,
        expected_context_ids=expected_context_ids,
        retrieved_ids=retrieved_ids,
    )


class ScriptedJudge:
    """A judge returning given parsed values (or raising given errors) per prompt name, recording every call.

    A value that is a list of per-call values is consumed one call at a time when `sequence=True`;
    a callable is called with the fields.
    """

    def __init__(self, replies: Mapping[str, Any], *, version: str = "test-1") -> None:
        self.replies = dict(replies)
        self.version = version
        self.calls: list[tuple[str, dict[str, Any]]] = []
        self._lock = threading.Lock()

    def __call__(self, prompt_name: str, fields: dict[str, Any]) -> JudgeResult:
        with self._lock:
            self.calls.append((prompt_name, fields))
        reply = self.replies[prompt_name]
        if isinstance(reply, BaseException):
            raise reply
        value = reply(fields) if callable(reply) else reply
        return JudgeResult(value=value, prompt_name=prompt_name, prompt_version=self.version)

    def names(self) -> list[str]:
        return [name for name, _ in self.calls]


def make_ctx(judge: Callable[[str, dict[str, Any]], JudgeResult] | None = None, **settings: Any) -> MetricContext:
    def no_judge(prompt_name: str, fields: dict[str, Any]) -> JudgeResult:
        raise AssertionError(f"unexpected judge call: {prompt_name}")

    return MetricContext(judge=judge or no_judge, settings=resolve_settings(settings))


def load_sample_items() -> dict[str, ItemInput]:
    items = {}
    for line in SAMPLE_DATASET.read_text().splitlines():
        if not line.strip():
            continue
        row = json.loads(line)
        items[row["id"]] = ItemInput(
            query=row["query"],
            response=row["response"],
            contexts=tuple(Context(id=c["id"], text=c["text"]) for c in row["contexts"]),
            reference_answer=row.get("reference_answer", ""),
            expected_context_ids=tuple(row.get("expected_context_ids", ())),
        )
    return items


@pytest.fixture
def stip_items() -> dict[str, ItemInput]:
    return load_sample_items()


class TextJudge(ScriptedJudge):
    """A judge whose replies are hand-written reply TEXTS, read by the real parser (judges.reply_parsing.parse_reply).

    Every call is also rendered with the real prompt template, which checks the fields a metric sends.
    """

    def __call__(self, prompt_name: str, fields: dict[str, Any]) -> JudgeResult:
        from judges.prompts import prompt_version, render
        from judges.reply_parsing import parse_reply

        render(prompt_name, fields)
        with self._lock:
            self.calls.append((prompt_name, fields))
        reply = self.replies[prompt_name]
        if isinstance(reply, BaseException):
            raise reply
        text = reply(fields) if callable(reply) else reply
        value = parse_reply(prompt_name, text, fields)
        return JudgeResult(value=value, prompt_name=prompt_name, prompt_version=prompt_version(prompt_name))


def offline_judge(prompt_name: str, fields: dict[str, Any]) -> JudgeResult:
    """The deterministic offline judge, its reply text read by the real parser (no gateway, no database)."""
    from judges.heuristics import reply
    from judges.prompts import prompt_version
    from judges.reply_parsing import parse_reply

    return JudgeResult(
        value=parse_reply(prompt_name, reply(prompt_name, fields), fields),
        prompt_name=prompt_name,
        prompt_version=prompt_version(prompt_name),
    )

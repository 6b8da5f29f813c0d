"""One check of a target: one call, no retries or limiter, reported mapping by mapping.

`manage.py check_target` and the target page's "Check" button both use `target_check`.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from targets import client
from targets.client import TargetConfig, TargetError
from targets.models import Target

DEFAULT_QUERY = "What is the status of the STIP proposal and who proposed it?"


@dataclass(frozen=True)
class CheckReport:
    ok: bool
    message: str  # one line: "target 'x' answered in 12 ms (HTTP 200)" or the exact error
    query: str
    http_status: int | None = None
    latency_ms: int | None = None
    failed_mapping: str = ""  # the mapping key that found nothing or the wrong shape
    extracted: dict[str, Any] = field(default_factory=dict)  # answer, contexts, retrieved_ids as read
    found: dict[str, Any] = field(default_factory=dict)  # each expression's raw result
    body: str = ""  # the body the target sent
    request: dict[str, Any] = field(default_factory=dict)

    def lines(self) -> list[str]:
        """The report as text, for the command."""
        out = [self.message]
        if self.ok:
            out.append(f"answer: {self.extracted['answer']}")
            out.append(f"contexts: {len(self.extracted['contexts'])}")
            for context in self.extracted["contexts"]:
                score = f" (score {context['score']:.3f})" if "score" in context else ""
                out.append(f"  [{context['id']}]{score} {' '.join(context['text'].split())[:100]}")
            out.append(f"retrieved_ids: {', '.join(self.extracted['retrieved_ids']) or '(none)'}")
        elif self.body:
            out.append(f"body: {self.body[:2000]}")
        return out


def target_check(target: Target | TargetConfig, *, query: str = "") -> CheckReport:
    """Call the target once with `query` (or a default question); what each mapping extracted, or the exact error."""
    config = target if isinstance(target, TargetConfig) else TargetConfig.of(target)
    query = query.strip() or DEFAULT_QUERY
    fields = {"query": query, "id": "check", "reference_answer": "", "response": "", "expected_context_ids": []}
    fields |= {"tags": [], "metadata": {}}
    try:
        result = client.send_once(config, fields)
    except TargetError as exc:
        return CheckReport(
            ok=False,
            message=str(exc),
            query=query,
            http_status=exc.http_status,
            latency_ms=exc.latency_ms,
            failed_mapping=exc.mapping_key,
            body=exc.body,
        )
    extracted = result.extracted
    return CheckReport(
        ok=True,
        message=f"target {config.name!r} answered in {result.latency_ms} ms (HTTP {result.http_status})",
        query=query,
        http_status=result.http_status,
        latency_ms=result.latency_ms,
        extracted={
            "answer": extracted.answer,
            "contexts": extracted.contexts,
            "retrieved_ids": extracted.retrieved_ids,
        },
        found={key: json.dumps(value, ensure_ascii=False, indent=2) for key, value in extracted.found.items()},
        body=result.raw_body,
        request=result.request,
    )

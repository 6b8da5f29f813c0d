"""`reply`: the offline judge's answer to a prompt, written in that prompt's output contract.

The text is what a model would send back, so it goes through the same parser
(`judges.reply_parsing`) as a real judge's reply. Claims are numbered 1..n in verdict replies.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from typing import Any

from judges.heuristics.claims import extract_claims
from judges.heuristics.correctness import judge_correctness
from judges.heuristics.relevancy import judge_relevancy
from judges.heuristics.rubric import judge_rubric
from judges.heuristics.verify import verify_claims
from judges.types import Context


def reply(prompt_name: str, fields: Mapping[str, Any]) -> str:
    """The reply text for `prompt_name` with `fields`; ValueError for an unknown prompt."""
    try:
        render = _REPLIES[prompt_name]
    except KeyError:
        raise ValueError(f"the offline judge has no reply for prompt {prompt_name!r}") from None
    return render(fields)


def _claim_extraction(fields: Mapping[str, Any]) -> str:
    return _json({"claims": extract_claims(_text(fields, "response"))})


def _claim_verification(fields: Mapping[str, Any]) -> str:
    claims = [str(claim) for claim in fields.get("claims") or []]
    verdicts = verify_claims(claims, _contexts(fields))
    return _json(
        {
            "verdicts": [
                {
                    "claim": verdict.claim + 1,
                    "verdict": verdict.verdict,
                    "evidence": verdict.evidence,
                    "context_ids": list(verdict.context_ids),
                }
                for verdict in verdicts
            ]
        }
    )


def _relevancy(fields: Mapping[str, Any]) -> str:
    result = judge_relevancy(_text(fields, "query"), _text(fields, "response"), _contexts(fields))
    return f"{'YES' if result.passing else 'NO'}\n{result.feedback}"


def _rubric(fields: Mapping[str, Any]) -> str:
    rules = [str(rule) for rule in fields.get("audit_rules") or []]
    scores = judge_rubric(_text(fields, "query"), _text(fields, "response"), _contexts(fields), rules)
    return _json(
        {
            "faithfulness": scores.faithfulness,
            "relevance": scores.relevance,
            "completeness": scores.completeness,
            "reasoning_quality": scores.reasoning_quality,
            "improvement_suggestions": list(scores.improvement_suggestions),
        }
    )


def _correctness(fields: Mapping[str, Any]) -> str:
    result = judge_correctness(_text(fields, "query"), _text(fields, "response"), _text(fields, "reference"))
    return f"{result.score:g}\n{result.justification}"


_REPLIES: dict[str, Callable[[Mapping[str, Any]], str]] = {
    "claim_extraction": _claim_extraction,
    "claim_verification": _claim_verification,
    "relevancy": _relevancy,
    "rubric": _rubric,
    "correctness": _correctness,
}


def _json(value: object) -> str:
    return json.dumps(value, ensure_ascii=False)


def _text(fields: Mapping[str, Any], name: str) -> str:
    value = fields.get(name)
    return value if isinstance(value, str) else ""


def _contexts(fields: Mapping[str, Any]) -> list[Context]:
    """Contexts as given (Context), or as JSON-ish dicts / plain strings (ids "1", "2", ...)."""
    contexts = []
    for number, item in enumerate(fields.get("contexts") or [], start=1):
        if isinstance(item, Context):
            contexts.append(item)
        elif isinstance(item, Mapping):
            contexts.append(Context(id=str(item.get("id", number)), text=str(item.get("text", ""))))
        else:
            contexts.append(Context(id=str(number), text=str(item)))
    return contexts

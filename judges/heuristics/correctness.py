"""Correctness: how much of the reference answer the response gives, and whether it contradicts it.

Steps:
1. Off-topic check (relevancy's question match, with the reference as the only context):
   an answer about another subject scores 1.
2. Content-word overlap with the reference (stems, synonyms, normalised numbers and dates):
   precision, recall and the recall-weighted F (beta 2: leaving out reference facts costs
   more than adding true detail).
3. Score = 1 + 4 × min(1, F / `FULL_MARKS_AT`), to the nearest half point (paraphrases
   rarely share every word, so F 0.85 already earns 5).
4. The response's claims are verified against the reference; a contradicted one caps the
   score at `CONTRADICTION_CAP`.
"""

from __future__ import annotations

from judges.heuristics.claims import extract_claims
from judges.heuristics.evidence import units_of
from judges.heuristics.relevancy import HEURISTIC_NOTE, match_query
from judges.heuristics.text import Token, content_tokens
from judges.heuristics.verify import assess_claim
from judges.types import CONTRADICTED, Context, Correctness

BETA = 2.0
FULL_MARKS_AT = 0.85
CONTRADICTION_CAP = 2.0
MAX_LISTED = 8


def judge_correctness(query: str, response: str, reference: str) -> Correctness:
    if not (response or "").strip():
        return Correctness(1.0, f"The response is empty. {HEURISTIC_NOTE}")
    if not (reference or "").strip():
        return Correctness(1.0, f"There is no reference answer to compare with. {HEURISTIC_NOTE}")

    reference_context = [Context("reference", reference)]
    match = match_query(query, response, reference_context)
    if match.off_topic:
        about = f"about {match.other_subject}" if match.other_subject else "not about the question's subject"
        return Correctness(
            1.0, f"The response is {about}; the question asks about {', '.join(match.subjects)}. {HEURISTIC_NOTE}"
        )

    response_tokens = content_tokens(response)
    reference_tokens = content_tokens(reference)
    response_norms = {token.norm for token in response_tokens}
    matched = [token for token in reference_tokens if token.norm in response_norms]
    missed = [token for token in reference_tokens if token.norm not in response_norms]
    precision = len(matched) / len(response_tokens) if response_tokens else 0.0
    recall = len(matched) / len(reference_tokens) if reference_tokens else 0.0
    f_beta = f_score(precision, recall)
    score = half_points(1 + 4 * min(1.0, f_beta / FULL_MARKS_AT))

    lines = [
        f"Overlap with the reference: precision {precision:.2f}, recall {recall:.2f} (F{BETA:g} {f_beta:.2f}).",
        f"Matched: {_listing(matched)}." if matched else "Matched: nothing.",
    ]
    if missed:
        lines.append(f"Missing from the response: {_listing(missed)}.")
    conflict = _contradiction(response, reference_context)
    if conflict:
        score = min(score, CONTRADICTION_CAP)
        lines.append(f"Contradicts the reference: {conflict} (score capped at {CONTRADICTION_CAP:g}).")
    lines.append(HEURISTIC_NOTE)
    return Correctness(score, "\n".join(lines))


def f_score(precision: float, recall: float, beta: float = BETA) -> float:
    if precision <= 0 or recall <= 0:
        return 0.0
    return (1 + beta**2) * precision * recall / (beta**2 * precision + recall)


def half_points(value: float) -> float:
    """Nearest half point in 1..5 (half up, so 3.75 → 4.0)."""
    return min(5.0, max(1.0, int(value * 2 + 0.5) / 2))


def _contradiction(response: str, reference_context: list[Context]) -> str:
    units = units_of(reference_context)
    for claim in extract_claims(response):
        assessment = assess_claim(claim, units)
        if assessment.verdict == CONTRADICTED:
            return f'"{claim}" ({assessment.note})'
    return ""


def _listing(tokens: list[Token]) -> str:
    words = list(dict.fromkeys(token.raw for token in tokens))
    more = len(words) - MAX_LISTED
    return ", ".join(words[:MAX_LISTED]) + (f" and {more} more" if more > 0 else "")

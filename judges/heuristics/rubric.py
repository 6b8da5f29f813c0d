"""Rubric: four 0..1 dimensions and concrete suggestions, each from a plain measurement.

- faithfulness: claim verification share, (SUPPORTED + 0.5 × PARTIALLY_SUPPORTED) / claims.
- relevance: share of the question's key terms the answer covers (relevancy's question
  match); at most `OFF_TOPIC_RELEVANCE` when relevancy says NO.
- completeness: share of the words of the contexts' sentences most relevant to the question
  (and of the question's key terms) that the answer contains, scaled so `COMPLETE_AT` counts
  as complete; at most the relevance.
- reasoning_quality: starts at `REASONING_BASE`; citations that all name a given context
  add, unknown ids subtract; several statements add; contradicted claims subtract.
- audit rules: a rule saying "<dimension> ... at most X" caps that dimension (faithfulness
  when it names none); code applies the same caps again later.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from judges.heuristics.claims import CITATION_RE, extract_claims
from judges.heuristics.evidence import Unit, units_of
from judges.heuristics.relevancy import QueryMatch, match_query
from judges.heuristics.text import content_tokens, tokenize
from judges.heuristics.verify import assess_claim
from judges.types import CONTRADICTED, NOT_ENOUGH_INFO, PARTIALLY_SUPPORTED, SUPPORTED, Context, RubricScores

DIMENSIONS = ("faithfulness", "relevance", "completeness", "reasoning_quality")
OFF_TOPIC_RELEVANCE = 0.2
RELEVANT_UNITS = 3  # context sentences the completeness check expects the answer to draw on
COMPLETE_AT = 0.8
REASONING_BASE = 0.5
MAX_SUGGESTIONS = 5
_CAP_RE = re.compile(r"(?:at most|no more than|not (?:exceed|above)|capped at|<=|≤)\s*(\d+(?:\.\d+)?)\s*(%?)", re.I)


@dataclass(frozen=True)
class ClaimCheck:
    claim: str
    verdict: str
    evidence: str
    note: str


def judge_rubric(query: str, response: str, contexts: list[Context], audit_rules: list[str]) -> RubricScores:
    units = units_of(contexts)
    checks = [_check(claim, units) for claim in extract_claims(response or "")]
    match = match_query(query, response, contexts)
    relevant = relevant_units(query, units)
    values = {
        "faithfulness": faithfulness(checks),
        "relevance": relevance(match),
        "completeness": completeness(query, response, relevant, match),
        "reasoning_quality": reasoning_quality(response, contexts, checks),
    }
    for dimension, cap in rule_caps(audit_rules).items():
        values[dimension] = min(values[dimension], cap)
    values = {dimension: round(value, 2) for dimension, value in values.items()}
    return RubricScores(**values, improvement_suggestions=suggestions(response, contexts, relevant, checks, match))


def _check(claim: str, units: list[Unit]) -> ClaimCheck:
    assessment = assess_claim(claim, units)
    evidence = assessment.evidence[0].text if assessment.evidence else ""
    return ClaimCheck(claim, assessment.verdict, evidence, assessment.note)


def faithfulness(checks: list[ClaimCheck]) -> float:
    if not checks:
        return 0.0
    credit = {SUPPORTED: 1.0, PARTIALLY_SUPPORTED: 0.5}
    return sum(credit.get(check.verdict, 0.0) for check in checks) / len(checks)


def relevance(match: QueryMatch) -> float:
    return match.coverage if match.passing else min(match.coverage, OFF_TOPIC_RELEVANCE)


def completeness(query: str, response: str, relevant: list[Unit], match: QueryMatch) -> float:
    expected = {token.norm for unit in relevant for token in unit.tokens if not token.stop}
    expected |= {token.norm for token in content_tokens(query)}
    if not expected:
        return relevance(match)
    answer = {token.norm for token in tokenize(response or "")}
    recall = len(expected & answer) / len(expected)
    return min(1.0, recall / COMPLETE_AT, relevance(match) if not match.passing else 1.0)


def relevant_units(query: str, units: list[Unit]) -> list[Unit]:
    """The context units sharing the most words with the question (headings count), best first."""
    terms = {token.norm for token in content_tokens(query)}
    scored = [(len(terms & unit.words), index) for index, unit in enumerate(units)]
    ranked = sorted((pair for pair in scored if pair[0] > 0), key=lambda pair: (-pair[0], pair[1]))
    return [units[index] for _, index in ranked[:RELEVANT_UNITS]]


def reasoning_quality(response: str, contexts: list[Context], checks: list[ClaimCheck]) -> float:
    if not checks:
        return 0.1
    score = REASONING_BASE
    cited = cited_ids(response)
    known = {str(context.id) for context in contexts}
    if cited and cited <= known:
        score += 0.2
    elif cited - known:
        score -= 0.2
    if len(checks) >= 2:
        score += 0.1
    contradicted = sum(1 for check in checks if check.verdict == CONTRADICTED)
    score += 0.2 if not contradicted else -0.4 * contradicted / len(checks)
    return min(1.0, max(0.0, score))


def cited_ids(response: str) -> set[str]:
    ids: set[str] = set()
    for marker in CITATION_RE.findall(response or ""):
        ids.update(part.strip() for part in re.split(r"[,;]", marker.strip(" []")) if part.strip())
    return ids


def rule_caps(rules: list[str]) -> dict[str, float]:
    """{dimension: cap} from rules such as "Faithfulness must be at most 0.4" (0..100 values divided)."""
    caps: dict[str, float] = {}
    for rule in rules or []:
        match = _CAP_RE.search(rule)
        if match is None:
            continue
        value = float(match.group(1))
        if match.group(2) or value > 1:
            value /= 100
        lowered = rule.lower().replace("_", " ")
        named = [dimension for dimension in DIMENSIONS if dimension.split("_")[0] in lowered]
        for dimension in named or ["faithfulness"]:
            caps[dimension] = min(caps.get(dimension, 1.0), value)
    return caps


def suggestions(
    response: str, contexts: list[Context], relevant: list[Unit], checks: list[ClaimCheck], match: QueryMatch
) -> list[str]:
    found: list[str] = []
    if not checks:
        found.append("Answer the question with at least one factual statement drawn from the contexts.")
    for check in checks:
        if check.verdict == CONTRADICTED:
            found.append(f'Correct "{_bare(check.claim)}": the context says "{_bare(check.evidence)}".')
        elif check.verdict == NOT_ENOUGH_INFO:
            found.append(f'Remove or source "{_bare(check.claim)}": no context states it.')
        elif check.verdict == PARTIALLY_SUPPORTED:
            found.append(f'Qualify "{_bare(check.claim)}": the contexts support it only in part.')
    if match.off_topic and match.subjects:
        found.append(f"Answer about {' / '.join(match.subjects)}, which the question asks about.")
    elif match.missed:
        found.append(f"Address the question's {', '.join(match.missed)} directly.")
    known = {str(context.id) for context in contexts}
    cited = cited_ids(response)
    if cited - known:
        found.append(f"Cite only retrieved contexts; unknown ids: {', '.join(sorted(cited - known))}.")
    elif not cited and contexts and checks:
        found.append(f"Cite the supporting context after each statement, e.g. [{contexts[0].id}].")
    answer = {token.norm for token in tokenize(response or "")}
    for unit in relevant:
        own = {token.norm for token in unit.tokens if not token.stop}
        if own and len(own & answer) < len(own) / 2:
            found.append(f'Add what [{unit.context_id}] says: "{_bare(unit.text)}".')
            break
    return found[:MAX_SUGGESTIONS]


def _bare(sentence: str) -> str:
    return sentence.rstrip(" .")

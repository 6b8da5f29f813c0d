"""Relevancy: does the answer address what the question asks about?

Steps:
1. The question's key terms: its content words, plus the kind of answer it wants ("who" →
   a name, "when" / "deadline" / "date" → a date, "how many" / "how much" → a number,
   "status" → an outcome word such as "executed").
2. Its subject: the names it mentions ("STIP", "Security Council Elections").
3. NO when the answer names none of them and talks about another named subject instead
   (one that no context mentions alongside the question's subject, so an alias such as
   "STIP" for "Short-Term Incentive Program" is not held against it), or when neither the
   answer nor the contexts mention the subject at all (a retrieval miss answered anyway).
4. Otherwise YES when the answer covers at least `RELEVANT_AT` of the key terms.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from judges.heuristics.evidence import units_of
from judges.heuristics.text import Token, content_tokens, entities, polarity, tokenize
from judges.types import Context, Relevancy

RELEVANT_AT = 0.5
NAME_FOUND_AT = 2 / 3  # share of a name's words that must appear for the name to count as mentioned
HEURISTIC_NOTE = "(Offline heuristic judge: word overlap, not understanding.)"

_WANTS = (
    (re.compile(r"\bwho(?:m|se)?\b", re.I), "a name"),
    (re.compile(r"\bwhen\b|\bdeadline\b|\bdate\b|\bwhat (?:day|year|month)\b", re.I), "a date"),
    (re.compile(r"\bhow (?:many|much)\b|\bwhat (?:amount|number|percentage)\b", re.I), "a number"),
    (re.compile(r"\bstatus\b|\boutcome\b|\bresult\b", re.I), "an outcome"),
)

_ANSWER_TYPE_WORDS = frozenset({"status", "outcome", "result"})


@dataclass(frozen=True)
class QueryMatch:
    addressed: tuple[str, ...]  # key terms of the question the answer covers (as the question writes them)
    missed: tuple[str, ...]
    subjects: tuple[str, ...]  # names in the question
    subject_found: bool  # the answer mentions at least one of them (True when the question names none)
    other_subject: str  # the answer's own leading name, when it talks about something else
    subject_in_contexts: bool

    @property
    def coverage(self) -> float:
        total = len(self.addressed) + len(self.missed)
        return len(self.addressed) / total if total else 0.0

    @property
    def off_topic(self) -> bool:
        return not self.subject_found and (bool(self.other_subject) or not self.subject_in_contexts)

    @property
    def passing(self) -> bool:
        return bool(self.addressed) and not self.off_topic and self.coverage >= RELEVANT_AT


def judge_relevancy(query: str, response: str, contexts: list[Context]) -> Relevancy:
    match = match_query(query, response, contexts)
    return Relevancy(passing=match.passing, feedback=relevancy_feedback(match))


def match_query(query: str, response: str, contexts: list[Context]) -> QueryMatch:
    answer_tokens = tokenize(response or "")
    answer_words = {token.norm for token in answer_tokens if not token.stop}
    addressed: list[str] = []
    missed: list[str] = []
    for token in content_tokens(query or ""):
        if token.norm in _ANSWER_TYPE_WORDS:
            continue  # "status" asks for an outcome; the answer need not repeat the word
        (addressed if _covered(token, answer_tokens, answer_words) else missed).append(token.raw)
    query_words = {token.norm for token in tokenize(query or "")}
    for pattern, wanted in _WANTS:
        if pattern.search(query or ""):
            found = _answer_gives(wanted, answer_tokens, response or "", query_words)
            (addressed if found else missed).append(wanted)

    subjects = entities(query or "", sentence_initial=False)
    found = not subjects or any(_mentions(answer_words, name) for name in subjects)
    units = units_of(contexts)
    context_words = set().union(*(unit.words for unit in units)) if units else set()
    other = ""
    if not found:
        for name in entities(response or "", sentence_initial=False):
            if set(name) & query_words:
                continue
            if not any(_mentions(unit.words, name) and _mentions(unit.words, s) for unit in units for s in subjects):
                other = _raw_name(response, name)
                break
    return QueryMatch(
        addressed=tuple(dict.fromkeys(addressed)),
        missed=tuple(term for term in dict.fromkeys(missed) if term not in addressed),
        subjects=tuple(_raw_name(query, name) for name in subjects),
        subject_found=found,
        other_subject=other,
        subject_in_contexts=any(_mentions(context_words, name) for name in subjects),
    )


def relevancy_feedback(match: QueryMatch) -> str:
    lines = []
    if match.off_topic and match.other_subject:
        lines.append(f"The answer is about {match.other_subject}, but the question asks about {_join(match.subjects)}.")
    elif match.off_topic:
        lines.append(
            f"Neither the answer nor the contexts mention {_join(match.subjects)}, which the question asks about."
        )
    elif not match.addressed:
        lines.append("The answer shares no key term with the question.")
    if match.addressed:
        lines.append(f"Addressed: {', '.join(match.addressed)}.")
    if match.missed:
        lines.append(f"Not addressed: {', '.join(match.missed)}.")
    lines.append(
        f"{len(match.addressed)} of {len(match.addressed) + len(match.missed)} key terms covered. {HEURISTIC_NOTE}"
    )
    return "\n".join(lines)


def _covered(token: Token, answer_tokens: tuple[Token, ...], answer_words: set[str]) -> bool:
    if token.date is not None:
        return any(other.date is not None and token.date.covered_by(other.date) for other in answer_tokens)
    return token.norm in answer_words


def _answer_gives(wanted: str, answer: tuple[Token, ...], response: str, query_words: set[str]) -> bool:
    if wanted == "a name":
        return any(not set(name) <= query_words for name in entities(response, sentence_initial=False))
    if wanted == "a date":
        return any(token.kind == "d" for token in answer)
    if wanted == "a number":
        return any(token.kind in ("n", "p") for token in answer)
    return any(polarity(token) is not None or token.norm in ("status", "activ", "clos") for token in answer)


def _mentions(words: set[str] | frozenset[str], name: tuple[str, ...]) -> bool:
    return sum(1 for part in name if part in words) >= NAME_FOUND_AT * len(name)


def _raw_name(text: str, name: tuple[str, ...]) -> str:
    """The name as `text` writes it (first run of tokens whose norms spell it)."""
    tokens = [token for token in tokenize(text) if not token.stop]
    for start in range(len(tokens) - len(name) + 1):
        if tuple(token.norm for token in tokens[start : start + len(name)]) == name:
            first, last = tokens[start], tokens[start + len(name) - 1]
            return text[first.start : last.start + len(last.raw)]
    return " ".join(name)


def _join(items: tuple[str, ...]) -> str:
    return " / ".join(items) if items else "its subject"

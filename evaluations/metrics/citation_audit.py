"""Citation audit: does every sentence of the answer cite contexts that exist? (deterministic, 0 judge calls)

Steps:
1. Drop fenced code blocks and mask inline code, so `x[a]` in code is never a citation.
2. Split the answer into sentences (at . ! ? followed by a space and a non-lowercase
   character, and at line breaks). Citation markers that open a sentence ("... end. [c1]")
   belong to the sentence before.
3. Find the citation markers (run setting `citation_pattern`, group 1 = the inside of the
   brackets, ids separated by commas or semicolons). An id is valid when it is one of the
   item's context ids; a number `n` that is not itself a context id means the n-th context
   (1-based). Everything else is an invalid id.
4. Per sentence: valid ids, invalid ids, number of words (markers excluded). Sentences
   with fewer than `min_sentence_words` words, and markdown headings, are trivially short:
   never counted as uncited.

Result: `hallucination_detected` = any invalid id.

Score: how well the answer cites, 0..1, higher is better: the share of the non-trivial
sentences that cite at least one valid context; 1.0 when no sentence needs a citation; 0.0
as soon as any citation names an id that does not exist (a made-up source outweighs every
good citation). Default threshold 0.5 (run setting `thresholds.citation_audit`); passed =
score ≥ threshold, the rule of every metric (`base.passes`). Uncited sentences also cap the
rubric's faithfulness (see rubric.py).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from evaluations.metrics.base import ItemInput, MetricContext, MetricOutcome, scored_outcome
from evaluations.metrics.run_settings import DEFAULT_CITATION_PATTERN

FENCED_CODE = re.compile(r"```.*?(?:```|$)", re.DOTALL)
INLINE_CODE = re.compile(r"`[^`\n]*`")
SENTENCE_BREAK = re.compile(r"\s*\n\s*|(?<=[.!?])\s+(?=[^a-z\s])")
ID_SEPARATOR = re.compile(r"[,;]")
WORD = re.compile(r"\w+")


@dataclass(frozen=True)
class SentenceAudit:
    text: str
    cited_ids: tuple[str, ...]  # valid context ids (numeric markers resolved), first-seen order
    invalid_ids: tuple[str, ...]  # as written in the marker
    words: int
    trivial: bool

    @property
    def uncited(self) -> bool:
        return not self.trivial and not self.cited_ids and not self.invalid_ids

    @property
    def well_cited(self) -> bool:
        return bool(self.cited_ids) and not self.invalid_ids


@dataclass(frozen=True)
class CitationAudit:
    sentences: tuple[SentenceAudit, ...]

    @property
    def cited_ids(self) -> list[str]:
        return _unique(cid for sentence in self.sentences for cid in sentence.cited_ids)

    @property
    def invalid_ids(self) -> list[str]:
        return _unique(cid for sentence in self.sentences for cid in sentence.invalid_ids)

    @property
    def hallucination_detected(self) -> bool:
        return bool(self.invalid_ids)

    @property
    def uncited_sentences(self) -> int:
        return sum(sentence.uncited for sentence in self.sentences)

    @property
    def considered_sentences(self) -> int:
        return sum(not sentence.trivial for sentence in self.sentences)

    @property
    def score(self) -> float:
        if self.hallucination_detected:
            return 0.0
        considered = [sentence for sentence in self.sentences if not sentence.trivial]
        if not considered:
            return 1.0
        return sum(sentence.well_cited for sentence in considered) / len(considered)

    def as_details(self) -> dict[str, Any]:
        return {
            "hallucination_detected": self.hallucination_detected,
            "cited_ids": self.cited_ids,
            "invalid_ids": self.invalid_ids,
            "uncited_sentences": self.uncited_sentences,
            "considered_sentences": self.considered_sentences,
            "sentences": [
                {
                    "text": sentence.text,
                    "cited_ids": list(sentence.cited_ids),
                    "invalid_ids": list(sentence.invalid_ids),
                    "trivial": sentence.trivial,
                }
                for sentence in self.sentences
            ],
        }


def audit_citations(
    response: str,
    context_ids: Sequence[str],
    *,
    pattern: str = DEFAULT_CITATION_PATTERN,
    min_sentence_words: int = 4,
) -> CitationAudit:
    """Audit the citation markers of `response` against the item's context ids (in the contexts' order)."""
    marker = re.compile(pattern)
    text = FENCED_CODE.sub("\n", response)
    masked = INLINE_CODE.sub(lambda match: " " * len(match.group()), text)
    sentences: list[tuple[str, str]] = []  # (original text, code-masked text)
    for original, hidden in _split(text, masked):
        lead = _leading_markers(hidden, marker)
        if lead and sentences:
            previous_original, previous_hidden = sentences[-1]
            sentences[-1] = (
                f"{previous_original} {original[:lead].rstrip()}",
                f"{previous_hidden} {hidden[:lead].rstrip()}",
            )
            original, hidden = original[lead:].strip(), hidden[lead:].strip()
        if original:
            sentences.append((original, hidden))
    return CitationAudit(
        sentences=tuple(
            _audit_sentence(original, hidden, marker, context_ids, min_sentence_words) for original, hidden in sentences
        )
    )


def audit_item(item: ItemInput, settings: dict[str, Any]) -> CitationAudit:
    """The audit of one item under the run settings (the one place rubric and citation_audit get it)."""
    return audit_citations(
        item.response,
        [context.id for context in item.contexts],
        pattern=settings["citation_pattern"],
        min_sentence_words=settings["min_sentence_words"],
    )


class CitationAuditMetric:
    name = "citation_audit"
    uses_judge = False

    def evaluate(self, item: ItemInput, ctx: MetricContext) -> MetricOutcome:
        audit = audit_item(item, ctx.settings)
        return scored_outcome(
            self.name,
            audit.score,
            ctx.settings["thresholds"]["citation_audit"],
            feedback=_feedback(audit),
            details=audit.as_details(),
        )


def _split(text: str, masked: str) -> list[tuple[str, str]]:
    pieces: list[tuple[str, str]] = []
    start = 0
    for match in SENTENCE_BREAK.finditer(masked):
        pieces.append((text[start : match.start()], masked[start : match.start()]))
        start = match.end()
    pieces.append((text[start:], masked[start:]))
    return [(original.strip(), hidden.strip()) for original, hidden in pieces if original.strip()]


def _leading_markers(hidden: str, marker: re.Pattern[str]) -> int:
    """Length of the run of citation markers that opens the sentence (0 if none)."""
    end = 0
    while True:
        match = marker.match(hidden, end)
        if not match or match.end() == end:
            return end
        end = match.end()
        while end < len(hidden) and hidden[end] in " \t.,;":
            end += 1


def _audit_sentence(
    original: str, hidden: str, marker: re.Pattern[str], context_ids: Sequence[str], min_words: int
) -> SentenceAudit:
    cited: list[str] = []
    invalid: list[str] = []
    for match in marker.finditer(hidden):
        inside = match.group(1)
        if inside is None:
            continue
        for token in (part.strip() for part in ID_SEPARATOR.split(inside)):
            if not token:
                continue
            resolved = _resolve(token, context_ids)
            target = cited if resolved is not None else invalid
            value = resolved if resolved is not None else token
            if value not in target:
                target.append(value)
    words = len(WORD.findall(marker.sub(" ", hidden)))
    trivial = words < min_words or hidden.startswith("#")
    return SentenceAudit(
        text=original, cited_ids=tuple(cited), invalid_ids=tuple(invalid), words=words, trivial=trivial
    )


def _resolve(token: str, context_ids: Sequence[str]) -> str | None:
    if token in context_ids:
        return token
    if token.isdigit() and 1 <= int(token) <= len(context_ids):
        return context_ids[int(token) - 1]
    return None


def _unique(values: Any) -> list[str]:
    return list(dict.fromkeys(values))


def _feedback(audit: CitationAudit) -> str:
    parts = []
    if audit.invalid_ids:
        parts.append(f"invalid citation ids: {', '.join(audit.invalid_ids)}")
    parts.append(f"{audit.uncited_sentences} of {audit.considered_sentences} sentences uncited")
    return "; ".join(parts)


CITATION_AUDIT = CitationAuditMetric()

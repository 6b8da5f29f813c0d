"""Evidence units: the lines and sentences of the contexts, ready for matching.

A context is split into lines; markdown headings open sections, `Key: Value` lines stay
whole, prose is split into sentences. Each unit also carries the words of the headings it
sits under, so "Status: executed" under "# Arbitrum Short-Term Incentive Program (STIP)" /
"## Tally On-chain Vote" is known to be about the STIP's Tally vote.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from functools import lru_cache

from judges.heuristics.text import Date, Token, name_spans, polarity, split_sentences, tokenize
from judges.types import Context

_HEADING_RE = re.compile(r"^(#{1,6})\s+(.*?)\s*#*$")
_KEY_VALUE_RE = re.compile(r"^([A-Za-z][\w ()/&'.-]{0,40}?):\s+(\S.*)$")
_URL_RE = re.compile(r"https?://\S+|www\.\S+")
MAX_KEY_WORDS = 4


@dataclass(frozen=True)
class Unit:
    context_id: str
    text: str  # the literal line or sentence
    clean: str  # `text` without URLs (ids and paths, not statements): what `tokens` were read from
    headings: tuple[str, ...]  # literal heading texts it sits under, outermost first
    tokens: tuple[Token, ...]  # tokens of `clean`
    own: frozenset[str]  # norms of `tokens`
    words: frozenset[str]  # content norms (no dates) of the unit and its headings
    dates: tuple[Date, ...]  # dates of the unit and its headings
    names: tuple[tuple[int, int], ...]  # name spans in `tokens`
    signs: frozenset[tuple[int, int]]  # outcome-word polarities, see text.polarity


@lru_cache(maxsize=4096)
def parse_context(context_id: str, text: str) -> tuple[Unit, ...]:
    """The evidence units of one context, in reading order (cached: contexts repeat a lot)."""
    units: list[Unit] = []
    headings: list[tuple[int, str]] = []
    for raw_line in (text or "").splitlines():
        line = raw_line.strip()
        if not line:
            continue
        heading = _HEADING_RE.match(line)
        if heading:
            level = len(heading.group(1))
            headings = [(lvl, title) for lvl, title in headings if lvl < level] + [(level, heading.group(2))]
            units.append(_unit(context_id, heading.group(2), tuple(title for _, title in headings[:-1])))
            continue
        titles = tuple(title for _, title in headings)
        key_value = _KEY_VALUE_RE.match(line)
        if key_value and len(key_value.group(1).split()) <= MAX_KEY_WORDS:
            units.append(_unit(context_id, line, titles))
            continue
        for sentence in split_sentences(line):
            units.append(_unit(context_id, sentence, titles))
    return tuple(units)


def _unit(context_id: str, text: str, headings: tuple[str, ...]) -> Unit:
    clean = _URL_RE.sub(" ", text)
    tokens = tokenize(clean)
    everything = [*tokens, *(token for title in headings for token in tokenize(title))]
    return Unit(
        context_id=context_id,
        text=text,
        clean=clean,
        headings=headings,
        tokens=tokens,
        own=frozenset(token.norm for token in tokens),
        words=frozenset(token.norm for token in everything if not token.stop and token.kind != "d"),
        dates=tuple(token.date for token in everything if token.date is not None),
        names=tuple(name_spans(clean)),
        signs=frozenset(sign for token in tokens if (sign := polarity(token)) is not None),
    )


def units_of(contexts: Iterable[Context]) -> list[Unit]:
    """All evidence units of the contexts, in context order."""
    units: list[Unit] = []
    for context in contexts:
        units.extend(parse_context(str(context.id), context.text or ""))
    return units

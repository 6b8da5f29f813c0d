"""Tokens of the offline judge: words, numbers, dates, names and sentences.

Everything here is pure and deterministic. A text becomes a sequence of `Token`s whose `norm`
is comparable across wordings: words are lower-cased, stemmed and mapped to a synonym group
("proposed" and "authored" both become `author`), amounts are scaled ("50 million" → `#50000000`),
percentages become `%78` and dates become `Date` values that compare field by field
("March 30, 2024" and "2024-03-30" are equal, "December 2012" matches "27 December 2012").
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache
from typing import NamedTuple

from judges.heuristics.words import (
    MONTHS,
    NUMBER_WORDS,
    POLARITY,
    QUESTION_WORDS,
    SCALES,
    STOPWORDS,
    WEEKDAYS,
    norm_word,
    stem,
    word_set,
)

# --- tokens ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class Date:
    year: int | None
    month: int | None
    day: int | None

    def agrees_with(self, other: Date) -> bool:
        """No field that both dates specify differs."""
        return all(a is None or b is None or a == b for a, b in self._pairs(other))

    def covered_by(self, evidence: Date) -> bool:
        """The evidence states at least as much as this date does, and the same.

        A missing evidence year is allowed when month and day are given (pages often leave the
        year to the article's dateline)."""
        if self.month is not None and evidence.month != self.month:
            return False
        if self.day is not None and evidence.day != self.day:
            return False
        if self.year is not None and evidence.year != self.year:
            return evidence.year is None and self.month is not None and self.day is not None
        return True

    def _pairs(self, other: Date) -> tuple[tuple[int | None, int | None], ...]:
        return ((self.year, other.year), (self.month, other.month), (self.day, other.day))

    def __str__(self) -> str:
        parts = [f"{self.year:04d}" if self.year else "????"]
        if self.month:
            parts.append(f"{self.month:02d}")
        if self.day:
            parts.append(f"{self.day:02d}")
        return "-".join(parts)


class Token(NamedTuple):  # a NamedTuple: built by the hundred thousand, far cheaper than a dataclass
    norm: str  # canonical form: stem, "#<number>", "%<number>" or "@<date>"
    kind: str  # "w" word, "n" number, "o" ordinal, "p" percent, "d" date
    raw: str
    start: int
    capitalised: bool = False
    stop: bool = False
    date: Date | None = None


def polarity(token: Token) -> tuple[int, int] | None:
    """(pair, sign) of an outcome word written in lower case ("Los Angeles" is no loss)."""
    if token.kind != "w" or token.raw[:1].isupper() and token.start > 0:
        return None
    return POLARITY.get(stem(token.raw))


_MONTH_RE = r"(?:jan(?:uary)?|feb(?:ruary)?|mar(?:ch)?|apr(?:il)?|may|june?|july?|aug(?:ust)?|sept?(?:ember)?|oct(?:ober)?|nov(?:ember)?|dec(?:ember)?)\.?"
_NUMBER_RE = r"\d+(?:,\d{3})*(?:\.\d+)?"
_TOKEN_RE = re.compile(
    rf"""
    (?P<iso>\b\d{{4}}-\d{{1,2}}-\d{{1,2}}\b)
    | (?P<mdy>\b{_MONTH_RE}\s+\d{{1,2}}(?:st|nd|rd|th)?(?:,\s*|\s+)\d{{4}}\b)
    | (?P<dmy>\b\d{{1,2}}(?:st|nd|rd|th)?\s+(?:of\s+)?{_MONTH_RE},?\s+\d{{4}}\b)
    | (?P<my>\b{_MONTH_RE},?\s+\d{{4}}\b)
    | (?P<md>\b{_MONTH_RE}\s+\d{{1,2}}(?:st|nd|rd|th)?\b(?!\s*,?\s*\d))
    | (?P<dm>\b\d{{1,2}}(?:st|nd|rd|th)?\s+(?:of\s+)?{_MONTH_RE}(?![\w-]))
    | (?P<ord>\b\d+(?:st|nd|rd|th)\b)
    | (?P<num>(?:[$€£]\s?)?{_NUMBER_RE}(?:\s*(?:%|percent\b|per\s+cent\b))?(?:\s*(?:thousand|million|billion|trillion|mn|bn)\b)?)
    | (?P<word>[^\W\d_]\w*(?:['’]\w+)*)
    """,
    re.IGNORECASE | re.VERBOSE,
)
_DIGITS_RE = re.compile(r"\d+")
_HAS_DIGIT_RE = re.compile(r"\d")
_WORD_RE = re.compile(r"(?P<word>[^\W\d_]\w*(?:['’]\w+)*)")
_SCALE_RE = re.compile(r"(thousand|million|billion|trillion|mn|bn)\b", re.IGNORECASE)


def _month_number(text: str) -> int:
    match = re.search(_MONTH_RE, text, re.IGNORECASE)
    assert match is not None
    return MONTHS[match.group(0).lower().rstrip(".")]


def _date_token(kind: str, raw: str) -> Date | None:
    numbers = [int(n) for n in _DIGITS_RE.findall(raw)]
    if kind == "iso":
        year, month, day = numbers
    elif kind in ("mdy", "dmy"):
        day, year = numbers
        month = _month_number(raw)
    elif kind == "my":
        (year,), day = numbers, None
        month = _month_number(raw)
    else:  # md / dm
        (day,), year = numbers, None
        month = _month_number(raw)
    if not (month and 1 <= month <= 12) or (day is not None and not 1 <= day <= 31):
        return None
    return Date(year, month, day)


def format_number(value: float) -> str:
    return str(int(value)) if value == int(value) and abs(value) < 1e18 else format(value, ".10g")


def _number_token(raw: str, start: int) -> Token:
    digits = re.search(_NUMBER_RE, raw)
    assert digits is not None
    value = float(digits.group(0).replace(",", ""))
    scale = _SCALE_RE.search(raw)
    if scale:
        value *= SCALES[scale.group(1).lower()]
    lowered = raw.lower()
    if "%" in raw or "percent" in lowered or "per cent" in lowered:
        return Token(f"%{format_number(value)}", "p", raw, start)
    plain = digits.group(0)
    if not scale and "," not in plain and "." not in plain and len(plain) == 4 and 1000 <= value <= 2100:
        date = Date(int(value), None, None)
        return Token(f"@{date}", "d", raw, start, date=date)
    return Token(f"#{format_number(value)}", "n", raw, start)


@lru_cache(maxsize=8192)
def tokenize(text: str) -> tuple[Token, ...]:
    """Tokens of `text` in order; stopwords are kept but flagged, hyphenated words are split."""
    tokens: list[Token] = []
    # Dates and numbers all contain a digit; without one the plain word pattern is enough (2x faster).
    pattern = _TOKEN_RE if _HAS_DIGIT_RE.search(text) else _WORD_RE
    for match in pattern.finditer(text):
        kind = match.lastgroup or "word"
        raw = match.group(0)
        start = match.start()
        if kind == "num":
            tokens.append(_number_token(raw, start))
        elif kind == "ord":
            tokens.append(Token(f"#{raw.lower()}", "o", raw, start))
        elif kind != "word":
            date = _date_token(kind, raw)
            if date is None:
                continue
            tokens.append(Token(f"@{date}", "d", raw, start, date=date))
        else:
            tokens.extend(_word_tokens(raw, start))
    return tuple(tokens)


_WORD_SPLIT_RE = re.compile(r"(?<=\w)['’](?=[a-z]{2,})|_")


def _word_tokens(raw: str, start: int) -> list[Token]:
    parts = _WORD_SPLIT_RE.split(raw) if ("_" in raw or "'" in raw or "’" in raw) else (raw,)
    tokens = []
    offset = 0
    for part in parts:
        if part:
            norm, kind, stop = _word_reading(part.lower())
            tokens.append(Token(norm, kind, part, start + offset, part[:1].isupper(), stop))
        offset += len(part) + 1
    return tokens


@lru_cache(maxsize=65536)
def _word_reading(lowered: str) -> tuple[str, str, bool]:
    """(norm, kind, is-stopword) of one lower-cased word."""
    lowered = lowered.replace("’", "'")
    if lowered in NUMBER_WORDS:
        return f"#{NUMBER_WORDS[lowered]}", "n", False
    norm = norm_word(lowered)
    return norm, "w", lowered in STOPWORDS or norm in STOPWORDS or len(lowered) == 1


def content_tokens(text: str) -> list[Token]:
    """Content tokens (no stopwords), first occurrence of each norm only, in text order."""
    seen: set[str] = set()
    result = []
    for token in tokenize(text):
        if token.stop or token.norm in seen or token.norm in QUESTION_WORDS:
            continue
        seen.add(token.norm)
        result.append(token)
    return result


# --- names ---------------------------------------------------------------------------------

_NAME_JOINERS = frozenset({"of", "the", "for", "de", "del", "la", "le", "van", "von", "&"})
_NOT_NAMES = frozenset(MONTHS) | WEEKDAYS | STOPWORDS | QUESTION_WORDS
_SENTENCE_ENDS = ".!?:;\n#*>-"


def _is_name_word(token: Token) -> bool:
    return token.kind == "w" and token.capitalised and token.raw.lower() not in _NOT_NAMES


def _joined(text: str, left: Token, right: Token) -> bool:
    """Nothing but a space, a hyphen or an initial's full stop between two tokens."""
    gap = text[left.start + len(left.raw) : right.start].strip()
    return gap in ("", "-", "&") or (gap == "." and len(left.raw) == 1)


def name_spans(text: str, *, sentence_initial: bool = True) -> list[tuple[int, int]]:
    """Spans [i, j) of `tokenize(text)` that are runs of capitalised words ("Arbitrum Foundation").

    Months, weekdays and stopwords ("The", "It") are not names. A lone capitalised word that
    opens a sentence ("Delegates raised ...") is kept only when `sentence_initial` is true or
    it is an acronym.
    """
    tokens = tokenize(text)
    spans: list[tuple[int, int]] = []
    i = 0
    while i < len(tokens):
        if not _is_name_word(tokens[i]):
            i += 1
            continue
        last = i
        j = i + 1
        while j < len(tokens) and _joined(text, tokens[j - 1], tokens[j]):
            if _is_name_word(tokens[j]):
                last = j
            elif tokens[j].raw.lower() not in _NAME_JOINERS:
                break
            j += 1
        before = text[max(0, tokens[i].start - 8) : tokens[i].start].rstrip(" \t\"'([")
        opens_sentence = tokens[i].start == 0 or not before or before[-1] in _SENTENCE_ENDS
        lone = last == i
        if sentence_initial or not (opens_sentence and lone and not tokens[i].raw.isupper()):
            spans.append((i, last + 1))
        i = last + 1
    return spans


def entities(text: str, *, sentence_initial: bool = True) -> list[tuple[str, ...]]:
    """Names in `text`, each a tuple of normalised tokens, first occurrence only, in order."""
    tokens = tokenize(text)
    names: list[tuple[str, ...]] = []
    for start, end in name_spans(text, sentence_initial=sentence_initial):
        name = tuple(token.norm for token in tokens[start:end] if not token.stop)
        if name and name not in names:
            names.append(name)
    return names


# --- sentences ------------------------------------------------------------------------------

_ABBREVIATIONS = word_set(
    "mr mrs ms dr prof sr jr st mt vs etc e.g i.e inc ltd co corp no nos fig vol u.s u.k jan feb mar apr jun jul "
    "aug sep sept oct nov dec approx est gen col lt sgt rev gov sen rep"
)
_BOUNDARY_RE = re.compile(r"[.!?]+[\"')\]]*\s+(?=[\"'(\[]?[A-Z0-9])")


def split_sentences(text: str) -> list[str]:
    """Sentences of a prose paragraph; lines are split first, bullets and numbering stripped."""
    sentences: list[str] = []
    for line in text.splitlines():
        line = re.sub(r"^\s*(?:[-*+•]|\d{1,3}[.)])\s+", "", line).strip()
        if not line:
            continue
        start = 0
        for match in _BOUNDARY_RE.finditer(line):
            before = line[start : match.start()].split()
            last_word = before[-1].lower().rstrip(".") if before else ""
            if last_word in _ABBREVIATIONS or (len(last_word) == 1 and last_word.isalpha()):
                continue
            sentences.append(line[start : match.end()].strip())
            start = match.end()
        if line[start:].strip():
            sentences.append(line[start:].strip())
    return sentences

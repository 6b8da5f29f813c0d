"""Read judge replies into the output contracts of the prompts in judges/prompts.

Pure functions. Lenient about form (code fences, prose around JSON, single quotes, trailing
commas, a missing final brace, numbers as strings, 0-100 scales, label synonyms); strict about
content: a reply that cannot be read raises JudgeResponseError saying what was wrong, never a
default score.

Longer than ~350 lines on purpose: one reader per prompt contract over shared lenient-JSON
helpers; split apart, the contracts' common leniency rules would drift.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable

from judges.types import (
    CONTRADICTED,
    NOT_ENOUGH_INFO,
    PARTIALLY_SUPPORTED,
    SUPPORTED,
    VERDICTS,
    ClaimVerdict,
    Correctness,
    JudgeResponseError,
    Relevancy,
    RubricScores,
)

RUBRIC_DIMENSIONS = ("faithfulness", "relevance", "completeness", "reasoning_quality")

_MAX_JSON_STARTS = 25  # how many "{" positions to try before giving up on a reply
_FENCE = re.compile(r"```[\w-]*[ \t]*\n?(.*?)(?:```|\Z)", re.S)
_MARKDOWN = "*_`#>\"' \t"

_VERDICT_SYNONYMS = {
    SUPPORTED: ("supported", "yes", "true", "entailed", "entailment", "fully supported"),
    PARTIALLY_SUPPORTED: ("partially supported", "partial", "partially", "partly supported", "partial support"),
    CONTRADICTED: ("contradicted", "no", "unsupported", "refuted", "false", "contradiction"),
    NOT_ENOUGH_INFO: (
        "not enough info",
        "not enough information",
        "idk",
        "unknown",
        "insufficient",
        "insufficient info",
        "insufficient information",
        "nei",
    ),
}
_VERDICT_BY_LABEL = {label: verdict for verdict, labels in _VERDICT_SYNONYMS.items() for label in labels}


# --- JSON --------------------------------------------------------------------------------------


def parse_json_object(text: str) -> dict:
    """The first JSON object in a reply, read leniently (see the module docstring)."""
    value = _parse_json_value(text, "{")
    if value is None:
        raise JudgeResponseError(f"reply holds no readable JSON object: {_excerpt(text)}")
    return value


def _parse_json_value(text: str, opener: str) -> object | None:
    """The first value starting with `opener` ("{" or "[") that reads as JSON, fenced blocks first."""
    sources = [block for block in _FENCE.findall(text) if opener in block] + [text]
    for source in sources:
        starts = [i for i, char in enumerate(source) if char == opener][:_MAX_JSON_STARTS]
        for start in starts:
            value = _decode_at(source, start)
            if value is not None:
                return value
    return None


def _decode_at(source: str, start: int) -> object | None:
    try:
        return json.JSONDecoder(strict=False).raw_decode(source, start)[0]
    except json.JSONDecodeError:
        pass
    try:
        return json.loads(_repair_json(source[start:]), strict=False)
    except json.JSONDecodeError:
        return None


def _repair_json(text: str) -> str:
    """Rewrite near-JSON into JSON, up to the end of the first value.

    Handles single-quoted strings, stray quotes inside strings, Python literals, unquoted keys,
    trailing commas and missing closing brackets.
    """
    out: list[str] = []
    closers: list[str] = []
    i = 0
    while i < len(text):
        char = text[i]
        if char in "\"'":
            string, i = _read_string(text, i)
            out.append(json.dumps(string))
            if not closers:
                break
            continue
        if char in "{[":
            closers.append("}" if char == "{" else "]")
        elif char in "}]":
            _drop_trailing_comma(out)
            if closers:
                closers.pop()
            out.append(char)
            i += 1
            if not closers:
                break
            continue
        elif char.isalpha() or char == "_":
            word = re.match(r"\w+", text[i:]).group(0)
            out.append(_json_word(word, text[i + len(word) :]))
            i += len(word)
            continue
        out.append(char)
        i += 1
    _drop_trailing_comma(out)
    if closers and not re.search(r"[^\s{\[]", "".join(out)):
        raise json.JSONDecodeError("nothing but opening brackets", text, 0)
    return "".join(out) + "".join(reversed(closers))


def _read_string(text: str, start: int) -> tuple[str, int]:
    """Read a quoted string at `start`; a quote ends it only when followed by , : ] } or the end.

    An unterminated string raises json.JSONDecodeError: a reply cut off mid-text is not repaired.
    """
    quote, chars, i = text[start], [], start + 1
    while i < len(text):
        char = text[i]
        if char == "\\" and i + 1 < len(text):
            escaped = text[i + 1]
            if escaped == "u" and re.fullmatch(r"[0-9a-fA-F]{4}", text[i + 2 : i + 6]):
                chars.append(chr(int(text[i + 2 : i + 6], 16)))
                i += 6
                continue
            chars.append({"n": "\n", "t": "\t", "r": "\r", "b": "\b", "f": "\f"}.get(escaped, escaped))
            i += 2
            continue
        if char == quote and re.match(r"\s*([,:\]}]|$)", text[i + 1 :]):
            return "".join(chars), i + 1
        chars.append(char)
        i += 1
    raise json.JSONDecodeError("unterminated string", text, start)


def _json_word(word: str, rest: str) -> str:
    literals = {"True": "true", "False": "false", "None": "null", "true": "true", "false": "false", "null": "null"}
    if word in literals:
        return literals[word]
    if re.match(r"\s*:", rest):  # an unquoted key
        return json.dumps(word)
    return word


def _drop_trailing_comma(out: list[str]) -> None:
    index = len(out) - 1
    while index >= 0 and out[index].isspace():
        index -= 1
    if index >= 0 and out[index] == ",":
        del out[index]


def _json_list(text: str, key: str) -> list:
    """The list under `key` of the reply's JSON object, or a bare JSON list."""
    obj = _parse_json_value(text, "{")
    value = _MISSING if obj is None else _get(obj, key)
    if value is _MISSING and obj is not None:
        lists = [v for v in obj.values() if isinstance(v, list)]
        if len(obj) == 1 and len(lists) == 1:  # the list under another name, e.g. {"statements": [...]}
            value = lists[0]
    if value is _MISSING:
        bare = _parse_json_value(text, "[")  # e.g. [{"claim": 1, ...}] without the wrapping object
        if bare is None:
            found = (
                "no readable JSON" if obj is None else f"a JSON object without it (keys: {', '.join(map(str, obj))})"
            )
            raise JudgeResponseError(f"reply should hold a JSON object with {key!r}, found {found}: {_excerpt(text)}")
        value = bare
    if not isinstance(value, list):
        raise JudgeResponseError(f"{key!r} must be a list, got {type(value).__name__}: {value!r}")
    return value


_MISSING = object()


def _get(obj: dict, key: str) -> object:
    """obj[key], also matching keys that differ in case, spaces or hyphens."""
    if key in obj:
        return obj[key]
    for candidate, value in obj.items():
        if isinstance(candidate, str) and re.sub(r"[\s-]+", "_", candidate.strip().lower()) == key:
            return value
    return _MISSING


# --- claims and verdicts -----------------------------------------------------------------------


def parse_claims(text: str) -> list[str]:
    claims = []
    for number, item in enumerate(_json_list(text, "claims"), start=1):
        if not isinstance(item, str):
            raise JudgeResponseError(f"claim {number} is not a string: {item!r}")
        if item.strip():
            claims.append(item.strip())
    return claims


def normalize_verdict(label: str) -> str:
    if not isinstance(label, str):
        raise JudgeResponseError(f"verdict label must be a string, got {label!r}")
    key = re.sub(r"[\s_-]+", " ", label.strip(_MARKDOWN + ".!").lower()).strip()
    verdict = _VERDICT_BY_LABEL.get(key)
    if verdict is None:
        raise JudgeResponseError(f"unknown verdict label {label!r}; expected one of {', '.join(VERDICTS)}")
    return verdict


def parse_verdicts(text: str, n_claims: int) -> list[ClaimVerdict]:
    """One verdict per claim, ordered by claim. The reply numbers claims 1..n; ClaimVerdict.claim is 0-based."""
    by_number: dict[int, ClaimVerdict] = {}
    for position, item in enumerate(_json_list(text, "verdicts"), start=1):
        if not isinstance(item, dict):
            raise JudgeResponseError(f"verdict {position} is not a JSON object: {item!r}")
        number = _claim_number(_get(item, "claim"), position)
        if not 1 <= number <= n_claims:
            raise JudgeResponseError(f"verdict {position} names claim {number}, out of range 1..{n_claims}")
        if number in by_number:
            raise JudgeResponseError(f"claim {number} has more than one verdict")
        label = _get(item, "verdict")
        if label is _MISSING:
            raise JudgeResponseError(f"verdict {position} (claim {number}) has no 'verdict' label")
        by_number[number] = ClaimVerdict(
            claim=number - 1,
            verdict=normalize_verdict(label),
            evidence=_evidence(_get(item, "evidence"), number),
            context_ids=_context_ids(_get(item, "context_ids"), number),
        )
    missing = [str(number) for number in range(1, n_claims + 1) if number not in by_number]
    if missing:
        raise JudgeResponseError(f"no verdict for claim(s) {', '.join(missing)} of {n_claims}")
    return [by_number[number] for number in range(1, n_claims + 1)]


def _claim_number(value: object, position: int) -> int:
    if value is _MISSING:
        raise JudgeResponseError(f"verdict {position} has no 'claim' number")
    number = _number(value)
    if number is None or number != int(number):
        raise JudgeResponseError(f"verdict {position} has a claim number that is not a whole number: {value!r}")
    return int(number)


def _evidence(value: object, number: int) -> str:
    if value is _MISSING or value is None:
        return ""
    if isinstance(value, str):
        return value.strip()
    if isinstance(value, list) and all(isinstance(part, str) for part in value):
        return " … ".join(part.strip() for part in value if part.strip())
    raise JudgeResponseError(f"evidence of claim {number} must be text, got {value!r}")


def _context_ids(value: object, number: int) -> tuple[str, ...]:
    if value is _MISSING or value is None:
        return ()
    items = [value] if isinstance(value, str | int) and not isinstance(value, bool) else value
    if not isinstance(items, list) or not all(isinstance(i, str | int) and not isinstance(i, bool) for i in items):
        raise JudgeResponseError(f"context_ids of claim {number} must be a list of ids, got {value!r}")
    ids = (str(item).strip().strip("[]").strip() for item in items)
    return tuple(id_ for id_ in ids if id_)


# --- relevancy, rubric, correctness ------------------------------------------------------------


def parse_relevancy(text: str) -> Relevancy:
    """YES or NO on the first non-empty line (any case, markdown or punctuation around it), feedback after."""
    first, rest = _first_line(text)
    line = _strip_label(first, "answer|verdict|result|evaluation|decision|relevant|relevancy")
    match = re.match(r"(yes|no)(?=$|[\s*_`.!:,;)\-–—])[\s*_`.!:,;)\-–—]*(.*)$", line, re.I)
    if match is None:
        raise JudgeResponseError(f"relevancy reply must start with YES or NO, got {first.strip()[:80]!r}")
    feedback = "\n".join(part for part in (match.group(2).strip(), rest) if part)
    return Relevancy(passing=match.group(1).lower() == "yes", feedback=feedback)


def parse_rubric(text: str) -> RubricScores:
    """The four dimensions on 0..1; if any is above 1 the reply used 0..100 and all are divided by 100."""
    obj = parse_json_object(text)
    values = {}
    for dimension in RUBRIC_DIMENSIONS:
        raw = _get(obj, dimension)
        if raw is _MISSING:
            raise JudgeResponseError(f"rubric reply has no {dimension!r} score")
        value = _number(raw)
        if value is None:
            raise JudgeResponseError(f"rubric {dimension!r} is not a number: {raw!r}")
        values[dimension] = value
    if any(value > 1 for value in values.values()):
        values = {dimension: value / 100 for dimension, value in values.items()}
    for dimension, value in values.items():
        if not 0 <= value <= 1:
            raise JudgeResponseError(f"rubric {dimension!r} is {value:g}, outside 0..1 (or 0..100)")
    suggestions = _suggestions(_get(obj, "improvement_suggestions"))
    return RubricScores(**values, improvement_suggestions=suggestions)


def _suggestions(value: object) -> list[str]:
    if value is _MISSING or value is None:
        return []
    if isinstance(value, str):
        lines = (re.sub(r"^\s*(?:[-*•]|\d+[.)])\s*", "", line) for line in value.splitlines())
        return [line.strip() for line in lines if line.strip()]
    if isinstance(value, list) and all(isinstance(item, str | int | float) for item in value):
        return [str(item).strip() for item in value if str(item).strip()]
    raise JudgeResponseError(f"improvement_suggestions must be a list of strings, got {value!r}")


def parse_correctness(text: str) -> Correctness:
    """A 1..5 score alone on the first non-empty line ("4", "4.5/5", "Score: 4", "**4**"), justification after."""
    first, rest = _first_line(text)
    line = _strip_label(first, "score|rating|correctness|correctness score")
    match = re.match(r"([-+]?\d+(?:\.\d+)?)\s*(?:/\s*5(?:\.0)?|out of 5)?(?=$|[\s*_`.!:,;()\-–—])(.*)$", line, re.I)
    tail = match and match.group(2).strip(_MARKDOWN)
    if match is None or (tail and not re.match(r"[.!:,;(\-–—]", tail)):
        raise JudgeResponseError(
            f"correctness reply must start with a score alone on its line, got {first.strip()[:80]!r}"
        )
    score = float(match.group(1))
    if not 1 <= score <= 5:
        raise JudgeResponseError(f"correctness score {score:g} is outside 1..5")
    justification = "\n".join(part for part in (tail.strip(".!:,;-–— ()") if tail else "", rest) if part)
    return Correctness(score=score, justification=justification)


def _first_line(text: str) -> tuple[str, str]:
    """The first non-empty line and everything after it (stripped)."""
    lines = text.strip().split("\n", 1)
    if not lines[0].strip():
        raise JudgeResponseError("reply is empty")
    return lines[0], lines[1].strip() if len(lines) > 1 else ""


def _strip_label(line: str, labels: str) -> str:
    """The line without markdown around it and without a leading "Label:"."""
    line = line.strip().strip("*_`#> \t")
    return re.sub(rf"^(?:{labels})\s*[*_]*\s*[:=\-–—]\s*[*_`]*\s*", "", line, flags=re.I)


def _number(value: object) -> float | None:
    """A finite number from a JSON number or a numeric string ("0.8", " 80 ", "80%"); None otherwise."""
    if isinstance(value, bool):
        return None
    if isinstance(value, str):
        try:
            value = float(value.strip().rstrip("%").strip())
        except ValueError:
            return None
    if isinstance(value, int | float) and math.isfinite(value):
        return float(value)
    return None


def _excerpt(text: str, limit: int = 120) -> str:
    flat = " ".join(text.split())
    return repr(flat if len(flat) <= limit else flat[:limit] + "…")


# --- dispatch ----------------------------------------------------------------------------------

_PARSERS: dict[str, Callable[[str, dict], object]] = {
    "claim_extraction": lambda text, fields: parse_claims(text),
    "claim_verification": lambda text, fields: parse_verdicts(text, len(fields["claims"])),
    "relevancy": lambda text, fields: parse_relevancy(text),
    "rubric": lambda text, fields: parse_rubric(text),
    "correctness": lambda text, fields: parse_correctness(text),
}


def parse_reply(prompt_name: str, text: str, fields: dict) -> object:
    """Parse a reply to prompt `prompt_name` rendered with `fields` (KeyError for an unknown prompt)."""
    try:
        parser = _PARSERS[prompt_name]
    except KeyError:
        raise KeyError(f"no reply parser for prompt {prompt_name!r}") from None
    return parser(text, fields)

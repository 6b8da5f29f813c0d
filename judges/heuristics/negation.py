"""Polarity of statements: what a text asserts and what it denies.

A word is *denied* when a negator governs it ("not allowed", "cannot vote", "no fees",
"never voted", "no longer active", "isn't elected") or when it is the negative side of an
antonym pair ("prohibited" denies "allowed", "optional" denies "required", "excluded"
denies "included"); a negated antonym asserts again ("not prohibited"). A negator governs
the next content word; "longer" / "more" after it are skipped ("no longer active" denies
"active") and "not only" negates nothing. A leading answer particle ("Yes, ..." / "No, ...")
answers a question: the statement is what follows it.

`stances(tokens)` maps each content word (antonyms folded onto their positive side) to +1
(asserted) or -1 (denied); a word the text both asserts and denies is left out.
"""

from __future__ import annotations

import re

from judges.heuristics.text import Token
from judges.heuristics.words import ANTONYMS, NEGATORS, norm_word, word_set

ANSWER_PARTICLE_RE = re.compile(r"^\s*(?:yes|no|yeah|nope)\s*[,.!:;–—-]\s*", re.IGNORECASE)
_SKIPPED_AFTER_NEGATOR = word_set("longer more")
_NOT_A_NEGATION_BEFORE = word_set("only just merely")


NEGATOR_NORMS = frozenset(norm_word(word) for word in NEGATORS)


def drop_answer_particle(text: str) -> str:
    """The statement after a leading "Yes," / "No," ("No, X is allowed" → "X is allowed")."""
    return ANSWER_PARTICLE_RE.sub("", text, count=1)


def is_negator(token: Token) -> bool:
    raw = token.raw.lower().replace("’", "'")
    return token.kind == "w" and (raw in NEGATORS or raw.endswith("n't"))


def negated_positions(tokens: tuple[Token, ...]) -> set[int]:
    """Indexes of the content words a negator governs (the next content word after it)."""
    governed: set[int] = set()
    for index, token in enumerate(tokens):
        if not is_negator(token):
            continue
        for following in range(index + 1, len(tokens)):
            word = tokens[following]
            raw = word.raw.lower()
            if raw in _NOT_A_NEGATION_BEFORE:
                break
            if word.stop or raw in _SKIPPED_AFTER_NEGATOR or is_negator(word):
                continue  # "no longer active", "not be allowed", "not, and never, allowed"
            governed.add(following)
            break
    return governed


def stance_word(token: Token) -> tuple[str, int]:
    """(the word's norm, antonyms folded onto their positive side; +1, or -1 for a negative antonym)."""
    return ANTONYMS.get(token.raw.lower(), (token.norm, 1))


def stances(tokens: tuple[Token, ...]) -> dict[str, int]:
    """+1 for each content word the text asserts, -1 for each it denies; words it does both to are left out."""
    negated = negated_positions(tokens)
    seen: dict[str, set[int]] = {}
    for index, token in enumerate(tokens):
        if token.stop or token.kind == "d" or is_negator(token) or token.raw.lower() in _SKIPPED_AFTER_NEGATOR:
            continue
        word, sign = stance_word(token)
        seen.setdefault(word, set()).add(-sign if index in negated else sign)
    return {word: signs.pop() for word, signs in seen.items() if len(signs) == 1}


def flanks(tokens: tuple[Token, ...], word: str) -> set[tuple[int, str]]:
    """The nearest content word before (-1, norm) and after (+1, norm) each occurrence of `word`
    (antonyms folded), negators skipped: "funding is not allowed" → {(-1, "fund"), ...}."""
    found: set[tuple[int, str]] = set()
    for index, token in enumerate(tokens):
        if token.stop or stance_word(token)[0] != word:
            continue
        for side, indexes in ((-1, range(index - 1, -1, -1)), (1, range(index + 1, len(tokens)))):
            for other in indexes:
                neighbour = tokens[other]
                if not (neighbour.stop or is_negator(neighbour) or neighbour.raw.lower() in _SKIPPED_AFTER_NEGATOR):
                    found.add((side, neighbour.norm))
                    break
    return found

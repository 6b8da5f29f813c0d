"""Claim verification by word coverage, with checks for conflicting values, names and outcomes.

Steps for one claim:
1. Its content tokens (stemmed words with synonyms folded, amounts, percentages, dates).
2. Coverage: the share of those tokens found in the best evidence units, chosen greedily
   (at most `MAX_EVIDENCE_UNITS`, so a claim may draw on a heading, a `Key: Value` line and
   a sentence together).
3. Conflicts: a number, percentage or date the contexts never state, where a close unit
   states another one next to the same word ("100 million ARB" / "50 million ARB",
   "deadline ... March 30, 2024" / "Voting End: 2024-03-15"); a name the contexts never
   mention, where a close unit puts another name after the same word ("authored by X" /
   "Author: Y"); an outcome word whose opposite a unit about the same subject states
   ("vetoed" / "Status: executed"); a word one side asserts and the other denies
   (`negation.stances`: "not", "no", "never", "no longer", "isn't", "cannot", a leading
   "Yes," / "No," read as an answer, antonyms such as allowed / prohibited), in a close unit
   about the same thing (`_same_statement`) where the word has the same neighbour on one side.
4. Verdict: CONTRADICTED on a conflict; SUPPORTED when coverage reaches `SUPPORTED_AT` and
   every number, date and name of the claim is found; PARTIALLY_SUPPORTED from
   `PARTIAL_AT`; NOT_ENOUGH_INFO below.

The thresholds were chosen on WiCE dev claims (bench/offline_wice.py) and are the same for
every dataset.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache

from judges.heuristics.evidence import Unit, units_of
from judges.heuristics.negation import NEGATOR_NORMS, drop_answer_particle, flanks, stance_word, stances
from judges.heuristics.text import Token, name_spans, polarity, tokenize
from judges.types import CONTRADICTED, NOT_ENOUGH_INFO, PARTIALLY_SUPPORTED, SUPPORTED, ClaimVerdict, Context

SUPPORTED_AT = 0.6
PARTIAL_AT = 0.45
MAX_EVIDENCE_UNITS = 4
CLOSE_UNITS = 4  # best-matching units the value and name checks look at
CONFLICT_OVERLAP = 0.5  # a conflicting unit must state at least this share of the claim's other words
# A denial counts against a unit about the same thing: one stating this share of the claim's
# other words, or one whose own words are mostly the claim's.
SAME_CLAIM = 0.7
SAME_UNIT = 0.8
VALUE_KINDS = ("n", "p", "d")


@dataclass(frozen=True)
class ClaimFacts:
    text: str
    tokens: tuple[Token, ...]
    content: tuple[Token, ...]  # unique content tokens to cover, in order
    names: tuple[tuple[int, int], ...]  # name spans in `tokens`


@dataclass(frozen=True)
class Assessment:
    """What a verdict rests on; the rubric reuses `coverage` and `note`."""

    verdict: str
    coverage: float  # share of the claim's content words found in the chosen evidence
    evidence: tuple[Unit, ...]
    note: str = ""  # the conflict, or the claim's numbers / names no evidence states


def verify_claims(claims: list[str], contexts: list[Context]) -> list[ClaimVerdict]:
    """One verdict per claim, in order (`claim` is the 0-based index)."""
    units = units_of(contexts)
    verdicts = []
    for index, claim in enumerate(claims):
        assessment = assess_claim(claim, units)
        ids = tuple(dict.fromkeys(unit.context_id for unit in assessment.evidence))
        verdicts.append(ClaimVerdict(index, assessment.verdict, _quote(assessment.evidence, claim), ids))
    return verdicts


@lru_cache(maxsize=4096)
def analyse_claim(claim: str) -> ClaimFacts:
    statement = drop_answer_particle(claim)
    tokens = tokenize(statement)
    seen: set[str] = set()
    content = []
    for token in tokens:
        if not token.stop and token.norm not in seen:
            seen.add(token.norm)
            content.append(token)
    return ClaimFacts(claim, tokens, tuple(content), tuple(name_spans(statement, sentence_initial=False)))


def assess_claim(claim: str, units: list[Unit]) -> Assessment:
    facts = analyse_claim(claim)
    if not units or not facts.content:
        return Assessment(NOT_ENOUGH_INFO, 0.0, ())
    masks = [_cover_mask(facts.content, unit) for unit in units]
    chosen, covered = _greedy_cover(masks)
    coverage = covered.bit_count() / len(facts.content)

    conflict = _conflict(facts, units, masks)
    if conflict is not None:
        unit, note = conflict
        return Assessment(CONTRADICTED, coverage, (unit,), note)
    evidence = tuple(units[index] for index in chosen)
    missing = _unstated_facts(facts, covered)
    note = "not in the contexts: " + ", ".join(missing) if missing else ""
    if coverage >= SUPPORTED_AT and not missing:
        return Assessment(SUPPORTED, coverage, evidence)
    if coverage >= PARTIAL_AT:
        return Assessment(PARTIALLY_SUPPORTED, coverage, evidence, note)
    return Assessment(NOT_ENOUGH_INFO, coverage, (), note)


# --- coverage -------------------------------------------------------------------------------


def _covers(unit: Unit, token: Token) -> bool:
    if token.date is not None:
        return any(token.date.covered_by(date) for date in unit.dates)
    return token.norm in unit.words


def _cover_mask(content: tuple[Token, ...], unit: Unit) -> int:
    mask = 0
    for position, token in enumerate(content):
        if _covers(unit, token):
            mask |= 1 << position
    return mask


def _greedy_cover(masks: list[int]) -> tuple[list[int], int]:
    """Up to MAX_EVIDENCE_UNITS units, each adding the most claim words not yet covered."""
    chosen: list[int] = []
    covered = 0
    for _ in range(MAX_EVIDENCE_UNITS):
        best, best_gain = -1, 0
        for index, mask in enumerate(masks):
            gain = (mask & ~covered).bit_count()
            if gain > best_gain:
                best, best_gain = index, gain
        if best < 0:
            break
        chosen.append(best)
        covered |= masks[best]
    return chosen, covered


def _unstated_facts(facts: ClaimFacts, covered: int) -> list[str]:
    """Numbers, dates and names of the claim that the chosen evidence does not state."""
    position = {token.norm: index for index, token in enumerate(facts.content)}
    missing = [
        token.raw
        for token in facts.content
        if token.kind in VALUE_KINDS and token.raw[:1].isdigit() and not covered >> position[token.norm] & 1
    ]
    for start, end in facts.names:
        norms = [token.norm for token in facts.tokens[start:end] if token.norm in position]
        if any(not covered >> position[norm] & 1 for norm in norms):
            missing.append(" ".join(token.raw for token in facts.tokens[start:end]))
    return missing


# --- conflicts ------------------------------------------------------------------------------

Conflict = tuple[Unit, str]


def _conflict(facts: ClaimFacts, units: list[Unit], masks: list[int]) -> Conflict | None:
    ranked = sorted((index for index, mask in enumerate(masks) if mask), key=lambda i: (-masks[i].bit_count(), i))
    close = [units[index] for index in ranked[:CLOSE_UNITS]]
    checks: tuple[Callable[[], Conflict | None], ...] = (
        lambda: _value_conflict(facts, units, close),
        lambda: _name_conflict(facts, units, close),
        lambda: _polarity_conflict(facts, units),
        lambda: _stance_conflict(facts, close),
    )
    for check in checks:
        found = check()
        if found is not None:
            return found
    return None


def _neighbours(tokens: tuple[Token, ...], start: int, end: int, before: int, after: int) -> set[str]:
    """Content words just before `start` (up to `before` content tokens) and after `end` (`after`)."""
    words: set[str] = set()
    for limit, indexes in ((before, range(start - 1, -1, -1)), (after, range(end, len(tokens)))):
        taken = 0
        for index in indexes:
            if taken >= limit:
                break
            if tokens[index].stop:
                continue
            if tokens[index].kind == "w":
                words.add(tokens[index].norm)
            taken += 1
    return words


def _rest_overlap(facts: ClaimFacts, unit: Unit, excluded: set[str]) -> float:
    """Share of the claim's other content words (all but `excluded`) that the unit states."""
    rest = [token for token in facts.content if token.kind == "w" and token.norm not in excluded]
    if not rest:
        return 1.0
    return sum(1 for token in rest if token.norm in unit.words) / len(rest)


def _same_value(token: Token, other: Token) -> bool:
    if token.date is not None and other.date is not None:
        return token.date.agrees_with(other.date)
    return token.norm == other.norm


def _value_conflict(facts: ClaimFacts, units: list[Unit], close: list[Unit]) -> Conflict | None:
    for position, token in enumerate(facts.tokens):
        if token.kind not in VALUE_KINDS or any(_covers(unit, token) for unit in units):
            continue
        claim_side = _neighbours(facts.tokens, position, position + 1, 1, 1)
        for unit in close:
            if _rest_overlap(facts, unit, set()) < CONFLICT_OVERLAP:
                continue
            for unit_position, other in enumerate(unit.tokens):
                if other.kind != token.kind or _same_value(token, other):
                    continue
                if claim_side & _neighbours(unit.tokens, unit_position, unit_position + 1, 1, 1):
                    return unit, f"{token.raw} vs {other.raw}"
    return None


def _name_conflict(facts: ClaimFacts, units: list[Unit], close: list[Unit]) -> Conflict | None:
    claim_words = {token.norm for token in facts.content}
    name_words = {token.norm for start, end in facts.names for token in facts.tokens[start:end]}
    for start, end in facts.names:
        norms = {token.norm for token in facts.tokens[start:end] if not token.stop}
        if all(any(norm in unit.words for unit in units) for norm in norms):
            continue
        slot = _neighbours(facts.tokens, start, end, 1, 0) - name_words
        if not slot:
            continue
        for unit in close:
            if _rest_overlap(facts, unit, norms) < CONFLICT_OVERLAP:
                continue
            for unit_start, unit_end in unit.names:
                other = {token.norm for token in unit.tokens[unit_start:unit_end] if not token.stop}
                if other and not other & claim_words and slot & _neighbours(unit.tokens, unit_start, unit_end, 1, 0):
                    claim_name = " ".join(token.raw for token in facts.tokens[start:end])
                    unit_name = " ".join(token.raw for token in unit.tokens[unit_start:unit_end])
                    return unit, f"{claim_name} vs {unit_name}"
    return None


def _polarity_conflict(facts: ClaimFacts, units: list[Unit]) -> Conflict | None:
    signs = {sign for token in facts.tokens if (sign := polarity(token)) is not None}
    # A claim that says both ("won the first round, lost the second") has no single outcome.
    signs = {(pair, sign) for pair, sign in signs if (pair, -sign) not in signs}
    if not signs or not facts.names:
        return None
    start, end = facts.names[0]
    subject = {token.norm for token in facts.tokens[start:end] if not token.stop}
    for unit in units:
        if not subject <= unit.words:
            continue
        for pair, sign in sorted(signs):
            if (pair, -sign) in unit.signs and (pair, sign) not in unit.signs:
                return unit, "the opposite outcome"
    return None


def _stance_conflict(facts: ClaimFacts, close: list[Unit]) -> Conflict | None:
    """A close unit about the same thing denies a word the claim asserts, or asserts one it denies."""
    claim_stances = stances(facts.tokens)
    for unit in close:
        unit_stances = stances(unit.tokens)
        for word, sign in claim_stances.items():
            if unit_stances.get(word, sign) == sign or not _same_statement(facts, unit, word):
                continue
            if not flanks(facts.tokens, word) & flanks(unit.tokens, word):
                continue  # the word is about something else there ("hasn't done X" / "all he's done")
            denied = "denies" if sign > 0 else "asserts"
            return unit, f"the context {denied} what the claim {'asserts' if sign > 0 else 'denies'}"
    return None


def _same_statement(facts: ClaimFacts, unit: Unit, word: str) -> bool:
    """The unit is about what the claim says, `word` aside: it states most of the claim's other
    words, or most of its own words are the claim's ("X is not allowed" vs "Yes, X is allowed as part of Y")."""
    claim_rest = {token.norm for token in facts.content if stance_word(token)[0] != word} - NEGATOR_NORMS
    unit_rest = {token.norm for token in unit.tokens if not token.stop and stance_word(token)[0] != word}
    unit_rest -= NEGATOR_NORMS
    shared = claim_rest & unit.words
    if not shared:
        return False
    return len(shared) / len(claim_rest) >= SAME_CLAIM or len(unit_rest & claim_rest) / len(unit_rest) >= SAME_UNIT


# --- evidence quote -------------------------------------------------------------------------


def _quote(units: tuple[Unit, ...], claim: str) -> str:
    """Literal pieces of the contexts; a heading is quoted when its words were needed."""
    claim_words = {token.norm for token in analyse_claim(claim).content}
    pieces: list[str] = []
    for unit in units:
        needed = claim_words & unit.words - unit.own
        for heading in unit.headings:
            if needed & {token.norm for token in tokenize(heading)}:
                pieces.append(heading)
        pieces.append(unit.text)
    return " … ".join(dict.fromkeys(pieces))

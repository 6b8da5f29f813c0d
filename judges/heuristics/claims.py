"""Claim extraction: an answer split into short, self-contained statements.

Steps: strip citation markers ("[stip-tally]", "[1, 2]"); split into sentences; split each
sentence at "; ", ", and", "but" and at "and" when both sides carry their own verb; give a
subject-less right-hand clause the subject of its left-hand one ("X was authored by Y and
requested Z" → "X requested Z"); replace a leading "It" / "The program" with the previous
claim's subject when that subject is a simple noun phrase; drop a leading "However," and
statements about the answerer or its sources ("I could not find ...").
"""

from __future__ import annotations

import re

from judges.heuristics.negation import drop_answer_particle
from judges.heuristics.text import split_sentences
from judges.heuristics.words import word_set

CITATION_RE = re.compile(r"\s*\[\s*[\w.:/-]+(?:\s*[,;]\s*[\w.:/-]+)*\s*\](?!\()")
MIN_CLAIM_WORDS = 3
MAX_SUBJECT_WORDS = 8

AUXILIARIES = word_set(
    "is are was were be been being has have had do does did will would shall should can could may might must "
    "isn't aren't wasn't weren't hasn't haven't hadn't doesn't didn't won't can't couldn't"
)
# Common verbs that do not end in -ed; enough to tell a clause from a noun phrase.
COMMON_VERBS = word_set(
    """
    won led became made held gave took left grew sold bought built ran met brought taught fought sang spent went
    came told said saw chose drew fell rose lost paid sent kept felt thought began wrote got put set knew
    needs requires includes contains allocates runs spans uses gives makes takes offers provides allows lets
    remains seems says shows means holds leads covers aims gets puts sets becomes lives works plays serves
    """
)
PRONOUN_SUBJECTS = ("it", "this", "he", "she", "they")
GENERIC_SUBJECTS = ("the program", "this program", "the programme", "the proposal", "this proposal", "the project")
_DETERMINERS = word_set("the a an its their his her our this that these those")
_DISCOURSE_RE = re.compile(
    r"^(?:however|also|in addition|additionally|moreover|furthermore|overall|in summary|in short|finally)\s*,?\s+",
    re.I,
)
# Statements about the answerer or the sources ("I could not find ...", "the provided context does
# not say ...") are not claims about the world: nothing in the contexts could support them.
_META_RE = re.compile(
    r"^(?:I|we)\b|\bthe contexts?\b"
    r"|\b(?:provided|retrieved|given|available)(?:\s+[\w-]+){0,2}?\s+(?:contexts?|documents?|data|information|sources?)\b",
    re.I,
)
_CLAUSE_SPLIT_RE = re.compile(r"(;\s+|,\s+(?:and|but|while|whereas)\s+|\s+but\s+|\s+and\s+)")


def strip_citations(text: str) -> str:
    text = CITATION_RE.sub("", text)
    text = re.sub(r"\s+([.,;:!?])", r"\1", text)
    return re.sub(r"[ \t]+", " ", text).strip()


def extract_claims(response: str) -> list[str]:
    """Atomic statements of `response`, in order; [] for an empty answer."""
    claims: list[str] = []
    subject = ""
    for sentence in split_sentences(strip_citations(response or "")):
        for clause in split_clauses(sentence):
            clause = _resolve_reference(_DISCOURSE_RE.sub("", drop_answer_particle(clause)), subject)
            clause = _tidy(clause)
            if len(clause.split()) < MIN_CLAIM_WORDS or not re.search(r"[A-Za-z]", clause) or _META_RE.search(clause):
                continue
            claims.append(clause)
            subject = subject_of(clause) or subject
    return claims


def split_clauses(sentence: str) -> list[str]:
    """A sentence's coordinated clauses; a clause without its own subject borrows the first one's."""
    sentence = sentence.strip().rstrip(".!?").strip()
    pieces = [piece.strip(" ,") for piece in _coordinated(sentence)]
    pieces = [piece for piece in pieces if piece]
    if not pieces:
        return []
    first_subject = subject_of(pieces[0], pronouns=True)
    clauses = [pieces[0]]
    for piece in pieces[1:]:
        if first_subject and _starts_with_verb(piece):
            piece = f"{first_subject} {piece}"
        clauses.append(piece)
    return clauses


def _coordinated(sentence: str) -> list[str]:
    """Split at a coordinator only where both sides carry a verb ("apples, oranges, and pears" stays)."""
    parts = _CLAUSE_SPLIT_RE.split(sentence)
    pieces = [parts[0]]
    for separator, part in zip(parts[1::2], parts[2::2], strict=True):
        if has_predicate(pieces[-1]) and has_predicate(part):
            pieces.append(part)
        else:
            pieces[-1] = f"{pieces[-1]}{separator}{part}"
    return pieces


def _words(text: str) -> list[str]:
    return re.findall(r"[A-Za-z][\w'’-]*", text)


def _is_verb(words: list[str], index: int) -> bool:
    word = words[index].lower()
    if word in AUXILIARIES or word in COMMON_VERBS:
        return True
    previous = words[index - 1].lower() if index else ""
    return len(word) > 4 and word.endswith("ed") and previous not in _DETERMINERS


def has_predicate(text: str) -> bool:
    words = _words(text)
    return any(_is_verb(words, index) for index in range(len(words)))


def _starts_with_verb(text: str) -> bool:
    words = _words(text)
    return bool(words) and _is_verb(words, 0)


def subject_of(clause: str, *, pronouns: bool = False) -> str:
    """The words before the clause's first verb, parentheses dropped ("The STIP proposal")."""
    words = clause.split()
    plain = _words(clause)
    for index in range(len(plain)):
        if _is_verb(plain, index):
            verb = plain[index]
            position = next((i for i, word in enumerate(words) if word.strip("(),;:\"'") == verb), None)
            if not position:
                return ""
            subject = re.sub(r"\s*\([^)]*\)", "", " ".join(words[:position]))
            subject = subject.split(",")[0].strip()  # "Mr. Smith, who lived in ..." → "Mr. Smith"
            if (subject.lower() in PRONOUN_SUBJECTS and not pronouns) or len(subject.split()) > MAX_SUBJECT_WORDS:
                return ""
            return subject
    return ""


def _resolve_reference(clause: str, subject: str) -> str:
    if not subject:
        return clause
    lowered = clause.lower()
    for reference in (*PRONOUN_SUBJECTS, *GENERIC_SUBJECTS):
        if not lowered.startswith(reference + " "):
            continue
        if reference in GENERIC_SUBJECTS and (
            subject.lower() == reference or not any(word[:1].isupper() for word in subject.split()[1:])
        ):
            return clause  # only a named subject ("The STIP proposal") can stand in for "the program"
        return f"{subject} {clause[len(reference) + 1 :]}"
    return clause


def _tidy(clause: str) -> str:
    clause = clause.strip(" ,;")
    if not clause:
        return clause
    clause = clause[0].upper() + clause[1:]
    return clause if clause[-1] in ".!?" else clause + "."

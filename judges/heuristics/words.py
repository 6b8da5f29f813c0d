"""Word knowledge of the offline judge: stopwords, months, number words, a light stemmer,
synonym groups and outcome words of opposite polarity. Plain data and pure functions.
"""

from __future__ import annotations

from functools import lru_cache

# --- word lists -----------------------------------------------------------------------------


def word_set(words: str) -> frozenset[str]:
    """A set of the whitespace-separated words of `words` (keeps long word lists readable)."""
    return frozenset(words.split())


STOPWORDS = word_set(
    """
    a about above after again against all also am an and any are as at be because been before being
    below between both but by can could did do does doing down during each either else ever every
    few for from further had has have having he her here hers herself him himself his how however i
    if in into is it its itself just let me might more most must my myself neither no nor not now of
    off on once only or other ought our ours ourselves out over own per same shall she should so some
    such than that the their theirs them themselves then there these they this those though through
    thus to too under until up upon us very via was we were what when where whether which while who
    whom whose why will with within without would yet you your yours yourself yourselves
    n't 's one's etc i.e e.g since still instead then later already again even often also another
    among around across along including toward towards onto whose unto may
    """
)

# Question words and fillers that say what kind of answer is wanted but are not its topic.
QUESTION_WORDS = word_set(
    "what which who whom whose when where why how is are was were does do did can could should would "
    "tell explain describe give list please"
)

MONTHS = {
    name: number
    for number, names in enumerate(
        [
            ("january", "jan"),
            ("february", "feb"),
            ("march", "mar"),
            ("april", "apr"),
            ("may",),
            ("june", "jun"),
            ("july", "jul"),
            ("august", "aug"),
            ("september", "sep", "sept"),
            ("october", "oct"),
            ("november", "nov"),
            ("december", "dec"),
        ],
        start=1,
    )
    for name in names
}
WEEKDAYS = word_set("monday tuesday wednesday thursday friday saturday sunday")

NUMBER_WORDS = {
    "two": 2,
    "three": 3,
    "four": 4,
    "five": 5,
    "six": 6,
    "seven": 7,
    "eight": 8,
    "nine": 9,
    "ten": 10,
    "eleven": 11,
    "twelve": 12,
}
SCALES = {"thousand": 1e3, "million": 1e6, "mn": 1e6, "billion": 1e9, "bn": 1e9, "trillion": 1e12}

IRREGULAR = {
    "won": "win",
    "wrote": "write",
    "written": "write",
    "began": "begin",
    "begun": "begin",
    "became": "become",
    "made": "make",
    "held": "hold",
    "led": "lead",
    "gave": "give",
    "given": "give",
    "took": "take",
    "taken": "take",
    "left": "leave",
    "known": "know",
    "knew": "know",
    "grew": "grow",
    "grown": "grow",
    "sold": "sell",
    "bought": "buy",
    "built": "build",
    "ran": "run",
    "met": "meet",
    "brought": "bring",
    "taught": "teach",
    "fought": "fight",
    "sang": "sing",
    "sung": "sing",
    "spent": "spend",
    "went": "go",
    "gone": "go",
    "came": "come",
    "told": "tell",
    "said": "say",
    "saw": "see",
    "seen": "see",
    "chose": "choose",
    "chosen": "choose",
    "drew": "draw",
    "drawn": "draw",
    "fell": "fall",
    "rose": "rise",
    "lost": "lose",
    "paid": "pay",
    "sent": "send",
    "kept": "keep",
    "felt": "feel",
    "thought": "think",
    "caught": "catch",
    "stood": "stand",
    "struck": "strike",
    "wore": "wear",
    "died": "die",
    "dead": "die",
    "death": "die",
    "birth": "born",
    "births": "born",
    "children": "child",
    "men": "man",
    "women": "woman",
    "people": "person",
    "wives": "wife",
    "lives": "live",
    "first": "first",
    "proposal": "proposal",  # the noun, not "propose" (which means "author")
    "proposals": "proposal",
    "1st": "first",
    "2nd": "second",
    "3rd": "third",
}

# Each group's first word is the canonical form; the others are read as meaning the same.
SYNONYM_GROUPS = [
    ("author", "propose", "proposer", "authored", "creator", "create", "submit", "submitter", "sponsor", "draft"),
    ("end", "deadline", "conclude", "finish", "expire", "until"),
    ("start", "begin", "commence", "launch", "open"),
    ("allocate", "grant", "award", "fund", "budget"),
    ("approve", "accept", "adopt", "ratify", "endorse"),
    ("reject", "veto", "deny", "decline", "defeat", "block"),
    ("active", "ongoing", "underway", "current", "currently"),
    ("buy", "purchase", "acquire", "acquisition"),
    ("die", "decease"),
    ("marry", "marriage", "married", "wed", "wedding", "wife", "husband", "spouse"),
    ("film", "movie"),
    ("song", "track"),
    ("job", "position", "role"),
    ("company", "firm", "corporation", "business"),
    ("win", "victory", "winner"),
    ("lose", "loss"),
    ("release", "publish"),
    ("large", "big", "huge"),
    ("small", "little"),
    ("child", "son", "daughter", "kid"),
    ("vote", "ballot", "poll"),
    ("token", "coin"),
    ("concern", "worry", "criticism", "criticise", "criticize"),
    ("incentive", "incentivize", "incentivise", "reward"),
    ("leader", "head", "chief", "director"),
    ("found", "establish", "establishment", "founding", "founder"),
]

# Outcome / status words whose polarity contradicts the other side of the pair (matched on stems,
# not synonym groups, so "currently" is not read as a status).
POLARITY_PAIRS = [
    (
        ("approve", "approved", "pass", "passed", "execute", "executed", "enact", "implemented", "adopted", "ratified"),
        ("reject", "rejected", "veto", "vetoed", "fail", "failed", "defeated", "cancelled", "canceled", "withdrawn"),
    ),
    (("win", "won"), ("lose", "lost")),
    (("active", "ongoing", "open"), ("closed", "ended", "expired")),
]

# Negators: each denies the next content word ("not allowed"); any word ending in "n't" too.
NEGATORS = word_set("not no never cannot nor neither")

# Antonym pairs a statement can be denied with: (asserting words, denying words), as written
# (not stemmed: "options" is no "optional"). Only pairs whose sides exclude each other
# ("prohibited" = "not allowed").
ANTONYM_PAIRS = [
    (
        "allow allows allowed permit permits permitted permissible",
        "prohibit prohibits prohibited forbid forbids forbidden ban bans banned disallow disallows disallowed",
    ),
    ("require requires required mandatory compulsory obligatory", "optional"),
    ("include includes included", "exclude excludes excluded"),
    ("eligible", "ineligible"),
]

# --- stemming -------------------------------------------------------------------------------

_SUFFIXES = (
    ("izations", "ize"),
    ("ization", "ize"),
    ("isations", "ize"),
    ("isation", "ize"),
    ("ations", "ate"),
    ("ation", "ate"),
    ("itions", ""),
    ("ition", ""),
    ("ions", ""),
    ("ion", ""),
    ("ments", ""),
    ("ment", ""),
    ("ness", ""),
    ("ings", ""),
    ("ing", ""),
    ("ities", ""),
    ("ity", ""),
    ("ies", "y"),
    ("ied", "y"),
    ("ized", "ize"),
    ("ised", "ize"),
    ("ises", "ize"),
    ("ise", "ize"),
    ("izes", "ize"),
    ("edly", ""),
    ("ers", ""),
    ("er", ""),
    ("ed", ""),
    ("ly", ""),
    ("als", ""),
    ("al", ""),
    ("es", ""),
    ("s", ""),
)


@lru_cache(maxsize=65536)
def stem(word: str) -> str:
    """A light suffix-stripping stemmer: enough to match "allocated"/"allocation"/"allocates"."""
    w = word.lower().replace("’", "'")
    if w.endswith("'s"):
        w = w[:-2]
    w = w.strip("'")
    if w in IRREGULAR:
        return IRREGULAR[w]
    if len(w) <= 3 or not w.isalpha():
        return w
    for suffix, replacement in _SUFFIXES:
        if w.endswith(suffix) and len(w) - len(suffix) + len(replacement) >= 3:
            if suffix in ("s", "es") and w.endswith(("ss", "us", "is")):
                continue
            w = w[: len(w) - len(suffix)] + replacement
            break
    if w.endswith("ize") and len(w) > 5:
        w = w[:-3]
    if w.endswith("e") and len(w) >= 4:
        w = w[:-1]
    if len(w) >= 4 and w[-1] == w[-2] and w[-1] not in "lsz" and w[-1].isalpha():
        w = w[:-1]
    if w.endswith("at") and len(w) > 5:
        w = w + "e"  # "allocat" and "allocate" meet at "allocate"
    return w


def _build_canonical() -> dict[str, str]:
    canonical: dict[str, str] = {}
    for group in SYNONYM_GROUPS:
        head = stem(group[0])
        for word in group:
            canonical.setdefault(stem(word), head)
    return canonical


CANONICAL = _build_canonical()


@lru_cache(maxsize=65536)
def norm_word(word: str) -> str:
    """Stem, then map onto the synonym group's canonical stem."""
    stemmed = stem(word)
    return CANONICAL.get(stemmed, stemmed)


def _polarity_table() -> dict[str, tuple[int, int]]:
    table: dict[str, tuple[int, int]] = {}
    for pair_index, (positive, negative) in enumerate(POLARITY_PAIRS):
        for sign, words in ((1, positive), (-1, negative)):
            for word in words:
                table.setdefault(stem(word), (pair_index, sign))
    return table


POLARITY = _polarity_table()


def _antonym_table() -> dict[str, tuple[str, int]]:
    """word → (norm of the pair's first asserting word, +1 asserting / -1 denying)."""
    table: dict[str, tuple[str, int]] = {}
    for asserting, denying in ANTONYM_PAIRS:
        head = norm_word(asserting.split()[0])
        for sign, words in ((1, asserting), (-1, denying)):
            for word in words.split():
                table[word] = (head, sign)
    return table


ANTONYMS = _antonym_table()

"""Text handling: the one stemmer every service uses; the validator's tokens and meta phrases.

``stem`` is the only stemmer: retrieval's BM25 tokens (``services.retrieval.lexical``), synthesis's
key terms (``services.synthesis.sufficiency``) and the validator's content terms all use it, so a
word family is one term everywhere (a test forbids defining another).

Sentences are defined once, for the generator and the validator alike, in
``services.common.language.sentences``.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Final, NamedTuple

from services.common.language.stopwords import FUNCTION_WORDS, NUMBER_WORDS, STATUTE_CONNECTIVES


def without_format_marks(text: str) -> str:
    """``text`` without Unicode format characters (category Cf: direction marks such as U+202E,
    zero-width spaces and joiners, the byte-order mark). They are invisible, and a leading
    direction mark pasted from a right-to-left interface would otherwise hide "What is ..." from
    every cue that reads the start of a question."""
    if text.isascii():
        return text
    return "".join(c for c in text if unicodedata.category(c) != "Cf")


_SPACE = re.compile(r"\s+")


def normalise_query(text: str) -> str:
    """NFKC, whitespace collapsed and trimmed: the text every retrieval stage (and the cache
    key) sees, and what a query's or question's length limit counts (NFKC can lengthen text:
    U+FDFA alone becomes 18 characters).

    Case is kept: a configured encoder may be cased, and "IPC" must stay recognisable.
    """
    return _SPACE.sub(" ", unicodedata.normalize("NFKC", text)).strip()


def is_blank(text: str) -> bool:
    """Nothing visible: only spaces, line breaks, control or format characters (a NUL, a
    zero-width space, a direction mark), or nothing at all. What ``NOT_BLANK`` forbids of a
    question, a query or a document id."""
    return not any(c.isprintable() and not c.isspace() for c in text)


# The field violation of a blank value (``is_blank``): one wording for every field that needs a
# visible character, so a whitespace-only value is not told it is empty.
NOT_BLANK: Final = "must not be blank (it has no visible character)"


def word_list(text: str) -> list[str]:
    """Whitespace-separated words of a literal (keeps long word lists readable)."""
    return text.split()


# Spelled-out numbers are not content words (the quantities module reads them as numbers); the
# statute connectives and modal verbs carry no checkable fact; negation words are stop words here
# because the negation module checks them separately. One base for every module:
# services/common/language/stopwords.py.
STOP_WORDS: frozenset[str] = FUNCTION_WORDS | STATUTE_CONNECTIVES | NUMBER_WORDS

# Currency and unit spellings read as one word, so "Rs." and "rupees" count as the same term.
# ``stem`` folds them before it strips suffixes, so every reader of terms (BM25, key terms,
# title cues, the validator) folds them alike: "rs", "rupees" and "rupee" all become "rupe".
_SYNONYMS: dict[str, str] = {
    "rs": "rupee",
    "inr": "rupee",
    "₹": "rupee",
    "rupees": "rupee",
    "yrs": "year",
    "yr": "year",
    "percent": "percent",
    "%": "percent",
}


def _combining_marks() -> str:
    """A regex character class body of every combining mark (categories Mn, Mc, Me) this
    Python's Unicode database knows: the vowel signs and viramas of Indic scripts, the accents of
    decomposed (NFD) Latin text. Python's ``\\w`` holds none of them. Marks lie in U+0300 to
    U+1FFFF and the variation selectors U+E0100 to U+E01EF (about 30 ms to scan, once)."""
    ranges: list[tuple[int, int]] = []
    for cp in (*range(0x300, 0x20000), *range(0xE0100, 0xE01F0)):
        if unicodedata.category(chr(cp)) in ("Mn", "Mc", "Me"):
            if ranges and ranges[-1][1] == cp - 1:
                ranges[-1] = (ranges[-1][0], cp)
            else:
                ranges.append((cp, cp))
    return "".join(
        re.escape(chr(a)) if a == b else f"{re.escape(chr(a))}-{re.escape(chr(b))}"
        for a, b in ranges
    )


# Word families the suffix rules split: an offence's noun and its doer read as the verb
# ("bribery", "bribes" and "bribing" are one term; "robber", "robbery" and "robbed" another),
# and a few other families of the Code's words ("injury" / "injured", "cruelty" / "cruel",
# "voluntary" / "voluntarily", "marriage" / "married").
# Drawn from the IPC's own vocabulary: its words ending in "-y" that the rules leave whole, the
# offences its sections name and their doers (docs/EVALUATION.md, "Then BM"). No stemming
# library joins them (Porter leaves "robberi" and "rob" apart), and a suffix rule would fold
# "number", "order" and "every", so the families are listed. Looked up on the word and on its
# singular; each maps to a word whose own stem is the family's. Left out: "threat" (an everyday
# word the Code uses in many senses) and "defamatory" (Then BM's runs; "Then BN").
_FAMILIES: dict[str, str] = {
    "bribery": "bribe",
    "robbery": "rob",
    "robber": "rob",
    "forgery": "forge",
    "forger": "forge",
    "conspiracy": "conspire",
    "conspirator": "conspire",
    "injury": "injure",
    "slavery": "slave",
    "marriage": "marry",
    "delivery": "deliver",
    "miscarriage": "miscarry",
    "cruelty": "cruel",
    "death": "die",
    "died": "die",
    "dying": "die",
    "deceit": "deceive",
    "deception": "deceive",
    "voluntary": "voluntarily",
    "dacoity": "dacoit",
    "murderer": "murder",
    "kidnapper": "kidnap",
    "abductor": "abduct",
    "trespasser": "trespass",
    "abettor": "abet",
    "rioter": "riot",
    "counterfeiter": "counterfeit",
    "cheater": "cheat",
    "thief": "theft",
    "thieves": "theft",
    "rapist": "rape",
    "extortionist": "extort",
    "offender": "offend",
}

_MARKS = _combining_marks()
# A word: letters and digits with the combining marks that follow them ("चोरी", an NFD "café"),
# and inner apostrophes ("person's", "don't"); the one definition of a word for BM25, expansion,
# key terms, conversation frames and the validator's tokens (issue 14). Until 2026-11-27 marks
# ended a word, so a Hindi or Tamil word fell apart into single letters.
WORD_PATTERN: Final = rf"[^\W_]+(?:[{_MARKS}]+[^\W_]*)*(?:['’][^\W_]+(?:[{_MARKS}]+[^\W_]*)*)*"
_WORD_RE = re.compile(WORD_PATTERN)

# A word, or (group 1 empty) a punctuation mark that ends a clause.
# ("4.0" and "10,000" do not end a clause).
_TOKEN_RE = re.compile(rf"({WORD_PATTERN})|[;:!?()\[\]\n\"“”]|[.,](?![0-9])")

# Ordered longest first; (suffix, replacement, minimum stem length left after removal).
_SUFFIXES: tuple[tuple[str, str, int], ...] = (
    ("ational", "ate", 3),
    ("ization", "ize", 3),
    ("fulness", "ful", 3),
    ("iveness", "ive", 3),
    ("ousness", "ous", 3),
    ("ements", "", 4),
    ("ments", "", 4),
    ("ement", "", 4),
    ("ment", "", 4),
    ("ations", "", 4),
    ("ation", "", 4),
    ("itions", "", 4),
    ("ition", "", 4),
    ("ions", "", 4),
    ("ion", "", 4),
    ("ness", "", 4),
    ("ancy", "", 4),
    ("ency", "", 4),
    ("ance", "", 4),
    ("ence", "", 4),
    ("ant", "", 4),
    ("ent", "", 4),
    ("ably", "", 4),
    ("ibly", "", 4),
    ("able", "", 4),
    ("ible", "", 4),
    ("ingly", "", 3),
    ("edly", "", 3),
    ("ings", "", 3),
    ("ing", "", 3),
    ("ities", "", 4),
    ("ity", "", 4),
    ("ively", "", 4),
    ("ive", "", 4),
    ("ies", "y", 3),
    ("ied", "y", 3),
    ("ly", "", 4),
    ("ed", "", 3),
    ("es", "", 4),
    ("s", "", 3),
)
_VOWELS = frozenset("aeiouy")
# Plural endings, tried before the suffixes above; words ending so are not plurals ("witness",
# "status", "analysis").
_PLURALS: tuple[tuple[str, str, int], ...] = (("sses", "ss", 2), ("ies", "y", 3), ("s", "", 3))
_NOT_PLURAL = ("ss", "us", "is")


@lru_cache(maxsize=65536)
def stem(word: str) -> str:
    """Strip common English suffixes; the same word family maps to one stem (not a real lemma).

    Both sides of every comparison go through this function, so consistency matters more than
    linguistic accuracy: "punished", "punishment" and "punishable" all become "punish". Expects
    a lower-cased word; numbers and words with digits ("498a") are returned as they are.
    Changing what it returns changes BM25: bump ``services.retrieval.lexical.TOKENIZER_VERSION``.
    A currency or unit spelling is first read as its word ("Rs" as "rupee", "yrs" as "year"),
    and a word of a listed family, or its singular, as the family's head word ("robbery" and
    "robbers" as "rob": ``_FAMILIES``).
    """
    word = _SYNONYMS.get(word, word)
    if word in _FAMILIES:
        return stem(_FAMILIES[word])
    if len(word) <= 3 or not word.isalpha():
        return word
    for ending in ("ed", "ing"):
        # Two letters before "-ed"/"-ing" are too short to strip to, but a vowel and a
        # consonant there are a word with its "e": "used", "using" -> "use"; "aged" -> "age".
        if word.endswith(ending) and len(word) == len(ending) + 2 and _vowel_then_stop(word):
            return word[:2] + "e"
    # A plural first becomes its singular, so both take the same path: "sentences" and
    # "sentence" both become "sent" (stripping "-es" at once left "sentenc").
    base = word if word.endswith(_NOT_PLURAL) else _strip_suffix(word, _PLURALS)
    singular = base
    if singular in _FAMILIES:
        return stem(_FAMILIES[singular])
    if not base.endswith(_NOT_PLURAL):
        base = _strip_suffix(base, _SUFFIXES[:-1])
    # A second pass catches stacked suffixes ("fraudulently" -> "fraudulent" -> "fraudul").
    base = _strip_suffix(base, _SUFFIXES[:-1])
    if base != singular and singular.endswith(("ed", "ing")):
        # "-ed"/"-ing" took the "e" that ends a suffix: "sentenc(ed)" is "sentence", which
        # loses its "-ence" as the bare word does ("sent"); "receiv(ed)" loses "-ive" ("rece").
        restored = _strip_suffix(base + "e", _SUFFIXES[:-1])
        if restored != base + "e":
            return restored
    if len(base) == 3 and word[3] in "ei" and _short_syllable(base):
        # "-ed" or "-ing" took a silent "e" with it: "fined", "raped", "taking" read as "fine",
        # "rape", "take" (left as "fin", "rap", "tak", they matched nothing the word's other
        # forms give; "noted" became "not").
        return base + "e"
    if len(base) >= 4 and base[-1] == base[-2] and base[-1] not in "lsz" and base[-1].isalpha():
        base = base[:-1]  # committ -> commit
    if len(base) > 4 and base.endswith("e"):
        base = base[:-1]  # decrease/decreas(ed) agree
    if len(base) > 5 and base.endswith("at"):
        base = base[:-2]  # associat(e|ed) and associ(ation) agree
    return base


def _vowel_then_stop(word: str) -> bool:
    """A vowel, then a consonant other than w, x or y: "us(ed)", "ag(ing)"; not "ow(ed)"."""
    return word[0] in _VOWELS and word[0] != "y" and word[1] not in _VOWELS and word[1] not in "wxy"


def _short_syllable(root: str) -> bool:
    """Consonant, vowel, consonant (not w, x or y): "fin", "rap", "tak"; not "fix", "pay",
    "see" or "add"."""
    return root[0] not in _VOWELS and _vowel_then_stop(root[1:])


def _strip_suffix(word: str, rules: Sequence[tuple[str, str, int]]) -> str:
    """Apply the first rule whose suffix matches and leaves a long enough stem with a vowel."""
    for suffix, replacement, min_stem in rules:
        if word.endswith(suffix):
            root = word[: -len(suffix)]
            if len(root) >= min_stem and _VOWELS.intersection(root):
                return root + replacement
    return word


def normalise(word: str) -> str:
    """Unicode-compatibility fold and casefold one word; curly apostrophes become straight."""
    return unicodedata.normalize("NFKC", word).casefold().replace("’", "'")


def words(text: str) -> list[str]:
    """The words of ``text``, normalised (``normalise``), a possessive "'s" dropped."""
    found = []
    for raw in _WORD_RE.findall(text):
        word = raw.lower() if raw.isascii() else normalise(raw)
        found.append(word[:-2] if word.endswith("'s") else word)
    return found


@lru_cache(maxsize=65536)
def term_of(norm: str) -> str:
    """Content term of a normalised word, or "" for stop words and bare numbers."""
    if norm in _SYNONYMS:  # before the stop words: "percent" and "%" are terms here
        return stem(norm)
    if norm in STOP_WORDS or norm.endswith("n't") or norm.isdigit():
        return ""
    if len(norm) < 2 and not norm.isalnum():
        return ""
    if norm.endswith("'s"):
        norm = norm[:-2]
    return stem(norm)


@dataclass(frozen=True, slots=True)
class Clause:
    """A clause of a text (between clause punctuation): offsets and its content terms.

    ``negated`` terms lie in a negation scope there, ``positive`` ones occur outside any.
    """

    start: int
    end: int
    terms: frozenset[str]
    negated: frozenset[str] = frozenset()
    positive: frozenset[str] = frozenset()
    position: float = 0.0  # relative place in its text, 0 (start) to 1 (end)


class Token(NamedTuple):
    """A word of a text: normalised form, content term ("" if none), offsets, clause number."""

    norm: str
    term: str
    start: int
    end: int
    clause: int


@lru_cache(maxsize=65536)
def _word(raw: str) -> tuple[str, str]:
    norm = raw.lower() if raw.isascii() else normalise(raw)
    return norm, term_of(norm)


def tokenize(text: str) -> tuple[Token, ...]:
    """Split ``text`` into word tokens; a clause number increments at clause punctuation."""
    tokens: list[Token] = []
    append = tokens.append
    new = tuple.__new__  # Token(...) without the NamedTuple's Python-level __new__ (hot loop)
    word = _word
    clause = 0
    pending = False
    for match in _TOKEN_RE.finditer(text):
        raw = match[1]
        if raw is None:
            pending = bool(tokens)
            continue
        if pending:
            clause += 1
            pending = False
        norm, term = word(raw)
        start, end = match.span()
        append(new(Token, (norm, term, start, end, clause)))
    return tuple(tokens)


def surface(tokens: Sequence[Token], terms: Sequence[str]) -> list[str]:
    """Each of ``terms`` as ``tokens`` write it (lower-cased, the first word with that term), for
    messages a person reads: "commute", not the stem "commut". A term no token has stays as is."""
    written: dict[str, str] = {}
    for token in tokens:
        if token.term:
            written.setdefault(token.term, token.norm)
    return [written.get(term, term) for term in terms]


def id_terms(semantic_id: str) -> frozenset[str]:
    """Terms carried by an evidence id (``IPC_420_0`` gives ``ipc`` and ``420``); the trailing
    sentence index is a position, not content, so it is left out."""
    stem = re.sub(r"_[0-9]+$", "", semantic_id)
    words = (normalise(w) for w in re.split(r"[\W_]+", stem) if w)
    return frozenset(w if w.isdigit() else term_of(w) for w in words) - {""}


# Not before a number: "according to the sections" is about the sources, "according to section
# 302" names one (its number is a reference the number rule reads).
_SOURCE_NOUN = (
    r"(?:evidence|documents?|context|sources?|texts?|information|passages?|excerpts?|materials?"
    r"|records?|chunks?|provisions?|sections?|extracts?)(?!\s*[0-9])"
)
_SOURCE_ADJ = (
    r"(?:(?:provided|given|available|above|cited|retrieved|supplied|relevant|following)\s+)"
)
_META_RE = re.compile(
    "|".join(
        (
            # "Based on the provided documents,", "According to the evidence", "As per the text"
            rf"\b(?:based\s+(?:solely\s+|only\s+)?on|according\s+to|as\s+per|as\s+"
            rf"(?:stated|described|mentioned|shown|given|indicated|noted|explained|set\s+out|"
            rf"provided)\s+in)\s+(?:the\s+)?{_SOURCE_ADJ}*{_SOURCE_NOUN}\b",
            # "From the provided evidence", "In the given context"
            rf"\b(?:from|in)\s+the\s+{_SOURCE_ADJ}+{_SOURCE_NOUN}\b",
            # "The evidence states that", "These provisions indicate"
            rf"\b(?:the|these|this)\s+{_SOURCE_ADJ}*{_SOURCE_NOUN}\s+(?:clearly\s+)?"
            r"(?:states?|shows?|says?|indicates?|suggests?|mentions?|notes?|explains?|describes?|"
            r"specif(?:y|ies)|establish(?:es)?|reads?)(?:\s+that)?\b",
            r"^\W*(?:in\s+summary|to\s+summari[sz]e|in\s+conclusion|in\s+short|in\s+brief|"
            r"overall|to\s+conclude|in\s+other\s+words|summary|answer|short\s+answer)\b",
            r"\bhere\s+(?:is|are)\s+(?:the|a|an)\s+(?:summary|answer|overview|details?)\b",
            r"\b(?:is|are)\s+as\s+follows\b",
        )
    ),
    re.IGNORECASE,
)


# Words left over once the meta phrasing is blanked from a sentence that only talks about the
# answer or the sources ("Here is a summary of the provisions."): such a sentence states no fact.
META_TERMS: frozenset[str] = frozenset(
    term_of(w)
    for w in word_list("""
    answer answers summary summarise summarize overview detail details question questions
    follows following below evidence document documents source sources context text texts
    information passage passages excerpt excerpts provision provisions record records relevant
    provided given available cited retrieved key points main
    """)
) - {""}


# How the extractive generator's source headings relate one document to another
# ("IPC section 380 (differs from IPC section 379 on a number):"; extractive.by_source), and the
# words of those notes, which name how sources relate, not a fact (the validator's rule K).
SOURCE_NOTES: Final = {
    "agreement": "agrees with {}",
    "numeric": "differs from {} on a number",
    "negation": "differs from {} on a negation",
}
SOURCE_NOTE_TERMS: frozenset[str] = frozenset(
    term_of(w) for note in SOURCE_NOTES.values() for w in word_list(note.replace("{}", " "))
) - {""}


def source_heading(label: str, notes: Sequence[str] = ()) -> str:
    """A source heading as the extractive generator writes it: the source's label, its notes
    (each a SOURCE_NOTES template filled in) in brackets joined by "; ", and a colon. What
    SOURCE_NOTE_RE reads back."""
    return f"{label} ({'; '.join(notes)}):" if notes else f"{label}:"


# A heading's notes as ``source_heading`` writes them: "(" one or more notes joined by "; " ")"
# right before the final colon, each a SOURCE_NOTES template naming a source (what it names is
# read by the validator's rule K).
_NOTE_ITEM = "|".join(
    re.escape(note).replace(re.escape("{}"), r"[^();:]+?") for note in SOURCE_NOTES.values()
)
SOURCE_NOTE_RE: Final = re.compile(rf"\s*\((?:{_NOTE_ITEM})(?:; (?:{_NOTE_ITEM}))*\)\s*:\s*$")


def blank_meta(text: str) -> str:
    """``text`` with meta phrasing ("Based on the provided documents", "In summary") blanked.

    Offsets are preserved (phrases become spaces), so spans computed afterwards still fit.
    """
    return _META_RE.sub(lambda m: " " * len(m.group()), text)


Phrases = dict[str, tuple[tuple[str, ...], ...]]


def phrase_index(phrases: Sequence[tuple[str, ...]]) -> Phrases:
    """Word sequences indexed by their first word, for ``phrase_at``."""
    index: dict[str, list[tuple[str, ...]]] = {}
    for phrase in phrases:
        index.setdefault(phrase[0], []).append(phrase)
    return {word: tuple(found) for word, found in index.items()}


def phrase_at(norms: Sequence[str], i: int, phrases: Phrases) -> int:
    """The length of the first phrase of ``phrases`` that starts at word ``i``, or 0."""
    for phrase in phrases.get(norms[i], ()):
        if tuple(norms[i : i + len(phrase)]) == phrase:
            return len(phrase)
    return 0


def counted(n: int, noun: str) -> str:
    """A count and its noun as people write them: "1 passage", "5 passages" (regular plurals
    only; the CLIs' nouns are)."""
    return f"{n} {noun}" if n == 1 else f"{n} {noun}s"


# Cyrillic letters drawn like Latin ones: inside a word that also has Latin letters ("tеn"
# with a Cyrillic е, "nоt" with a Cyrillic о) they stand for the Latin letter. Not Greek:
# "TNFα" and "IFNγ" are how science writes, and folding them changed SciFact verdicts.
_LOOKALIKES: Final = str.maketrans(
    "аеорсухіјѕԁӏвкмнтАВЕКМНОРСТХІЈЅ",
    "aeopcyxijsdlbkmhtABEKMHOPCTXIJS",
)
_MIXED_WORD = re.compile(r"[^\W\d_]+")


def fold_lookalikes(text: str) -> str:
    """``text`` as a reader sees it, one character for one (offsets hold): digits of any
    script and full-width forms as ASCII ("１０", "१०" -> "10"), and Cyrillic look-alikes
    inside a word with Latin letters as those letters ("tеn" -> "ten"). The
    validator reads an answer this way, so a look-alike cannot hide a number or a "not"."""
    chars = list(text)
    for i, ch in enumerate(chars):
        if ch.isascii():
            continue
        digit = unicodedata.decimal(ch, None)  # a digit of any script; not "²" (no decimal)
        if digit is not None:
            chars[i] = str(digit)
        elif "\uff01" <= ch <= "\uff5e":  # full-width ASCII: "Ｒｓ" -> "Rs"
            chars[i] = chr(ord(ch) - 0xFEE0)
    out = "".join(chars)
    if out.isascii():
        return out
    return _MIXED_WORD.sub(_fold_mixed_word, out)


def _fold_mixed_word(match: re.Match[str]) -> str:
    word = match.group()
    if word.isascii() or not any("a" <= c.lower() <= "z" for c in word):
        return word
    return word.translate(_LOOKALIKES)


def as_read(text: str) -> str:
    """``text`` as a reader sees it, for everything that reads a question: invisible format
    marks dropped (``without_format_marks``), NFKC (full-width "Ｗｈａｔ" -> "What", ligatures,
    compatibility forms), then look-alike letters and other scripts' digits folded
    (``fold_lookalikes``: "thеft" with a Cyrillic е -> "theft"). Synthesis reads a question
    this way once, before its intent, retrieval query and key terms (``question.py``), so a
    cue or a key term cannot hide behind a character that only looks like ASCII."""
    if text.isascii():
        return text
    return fold_lookalikes(unicodedata.normalize("NFKC", without_format_marks(text)))

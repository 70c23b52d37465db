"""A question's key terms: what it is about, as the words a passage must share with it.

One definition for synthesis's sufficiency check (which refuses a question no evidence shares
a key term with) and for retrieval's defined-term lookup (a definition question whose key terms
are a section title's content words names that section: docs/RETRIEVAL.md).
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Protocol

from services.common.language.acts import ACTS
from services.common.language.conversation import conversation_spans
from services.common.language.lay_terms import alternatives
from services.common.language.references import (
    normalise_section,
    parse_section_refs,
    reference_spans,
)
from services.common.language.stopwords import FUNCTION_WORDS, REQUEST_WORDS
from services.common.language.text import stem
from services.common.language.text import words as text_words

__all__ = [
    "CUE_WORDS",
    "GENERIC_WORDS",
    "STOP_WORDS",
    "ChunkLike",
    "KeyTerms",
    "Vocabulary",
    "chunk_section",
    "chunk_stems",
    "extract_key_terms",
    "holds",
    "text_stems",
    "title_terms",
]


class ChunkLike(Protocol):
    """What the key-term readers need of a passage (``services.common.evidence.Chunk`` has it;
    the language layer imports no service code)."""

    @property
    def text(self) -> str: ...
    @property
    def title(self) -> str: ...
    @property
    def act(self) -> str: ...
    @property
    def act_name(self) -> str: ...
    @property
    def section(self) -> str: ...
    @property
    def doc_id(self) -> str: ...


def _words(text: str) -> frozenset[str]:
    return frozenset(text.split())


# Function words carry no topic; request words say what kind of answer is wanted, not about
# what (one base for every module: services/common/language/stopwords.py).
STOP_WORDS = FUNCTION_WORDS | REQUEST_WORDS

# Words that only name the kind of answer wanted; the intent rule checks for them instead.
CUE_WORDS = _words(
    """
    define defined definition definitions meaning meanings mean means denote denotes
    punishment punishments punish punished punishable penalty penalties sentence sentences
    procedure procedures process steps step
    extent scope applicability applicable apply applies
    """
)

# Words naming the corpus itself; they only count when a question has nothing more specific.
# Every registered act's code is one (data/corpora/acts.json: "HMA" was missing from the list
# this replaced).
GENERIC_WORDS = _words(
    """
    act acts code codes law laws legal provision provisions statute statutes section sections
    chapter chapters clause clauses article articles indian penal india
    offence offences offense offenses
    """
) | frozenset(act.code.lower() for act in ACTS)


@dataclass(frozen=True, slots=True)
class KeyTerms:
    """What a question is about: stemmed content terms, corpus words and section references.

    ``terms`` are specific content words; ``generic`` are corpus words (``IPC``, ``code``) used
    only when ``terms`` is empty; ``sections`` are normalised section numbers (``"420"``).
    """

    terms: tuple[str, ...]
    generic: tuple[str, ...]
    sections: tuple[str, ...]

    @property
    def effective(self) -> tuple[str, ...]:
        """The terms a chunk must match: specific ones when present, else generic ones (unless
        a section is named: "section 379 ... in law" needs no chunk saying "law")."""
        if self.terms or self.sections:
            return self.terms
        return self.generic

    @property
    def is_empty(self) -> bool:
        """True when the question names nothing a chunk could match."""
        return not (self.terms or self.generic or self.sections)


# "Does slapping count as assault?": the phrase asks whether one thing is another and names no
# topic ("count" alone may: a nobleman, a charge). Then AH, docs/EVALUATION.md.
_CLASSIFICATION_PHRASE = re.compile(r"\bcount(?:s|ed|ing)?(?=\s+as\b)", re.IGNORECASE)


def extract_key_terms(question: str) -> KeyTerms:
    """Drop stop, question and cue words; keep section references as their own key terms; leave
    out the conversation (greetings, thanks, request frames: ``conversation_spans``) and the
    "count as" of a classification question."""
    # Sections as the shared parser reads them, lower-cased like every key term ("498a"); the
    # references, and the words that are conversation rather than content ("Hi,", "can you help
    # me", "I would like to know", "the document" after "please summarise"), are blanked out of
    # the question (spans of the original text) before lower-casing.
    sections = [ref.section.lower() for ref in parse_section_refs(question)]
    remainder = question
    phrases = [m.span() for m in _CLASSIFICATION_PHRASE.finditer(question)]
    for start, end in (*reference_spans(question), *conversation_spans(question), *phrases):
        remainder = f"{remainder[:start]}{' ' * (end - start)}{remainder[end:]}"
    remainder = remainder.lower()
    terms: list[str] = []
    generic: list[str] = []
    for token in text_words(remainder):
        if token in STOP_WORDS or token in CUE_WORDS:
            continue
        if token in GENERIC_WORDS:
            _append_unique(generic, stem(token))
        elif len(token) > 1 or token.isdigit():
            _append_unique(terms, stem(token))
    return KeyTerms(tuple(terms), tuple(generic), tuple(dict.fromkeys(sections)))


def _append_unique(items: list[str], item: str) -> None:
    if item not in items:
        items.append(item)


def title_terms(title: str) -> frozenset[str]:
    """The content words of a section title, stemmed as key terms are: every word but function
    and request words. Cue words stay ("Punishment for theft" is about punishment), so only a
    question asking for exactly what the title names matches it."""
    return frozenset(
        stem(token)
        for token in text_words(title.lower())
        if token not in STOP_WORDS and (len(token) > 1 or token.isdigit())
    )


def text_stems(text: str) -> frozenset[str]:
    """The stems of every word in ``text``."""
    return frozenset(stem(token) for token in text_words(text))


def chunk_stems(chunk: ChunkLike) -> frozenset[str]:
    """Stems of a chunk's text and title, plus its act's acronym where the text names the act,
    plus the specific words of its act's name.

    The acronym lets "the IPC" match a sentence saying "the Indian Penal Code" without making
    every IPC sentence match a question that merely mentions the IPC. The name's specific words
    let "the Model Traffic Act" match every sentence of that act: "model" and "traffic" are key
    terms (only generic words such as "Indian", "Penal", "Code" and "Act" are not), and no
    sentence of an act need repeat its name. Every word of the IPC's name is generic, so an IPC
    chunk gains nothing.
    """
    words = f"{chunk.text} {chunk.title}".lower()
    stems = text_stems(words)
    act_name = re.sub(r",?\s*\d{4}$", "", chunk.act_name).lower()  # "Indian Penal Code, 1860"
    if chunk.act and act_name and act_name in words:
        stems |= {stem(chunk.act.lower())}
    if chunk.act and act_name:
        stems |= _name_stems(act_name)
    return stems


@functools.cache
def _name_stems(act_name: str) -> frozenset[str]:
    """The stems of an act name's specific words (not stop, cue or generic words)."""
    return frozenset(
        stem(token)
        for token in text_words(act_name)
        if token not in STOP_WORDS and token not in CUE_WORDS and token not in GENERIC_WORDS
    )


def chunk_section(chunk: ChunkLike) -> str:
    """The chunk's normalised section, falling back to the ``<ACT>_<SECTION>`` doc id."""
    if chunk.section:
        return normalise_section(chunk.section).lower()
    match = re.search(r"_([0-9]+[A-Za-z]?)$", chunk.doc_id)
    return match.group(1).lower() if match else ""


def holds(term: str, stems: frozenset[str], sections: frozenset[str]) -> bool:
    """Whether text with these ``stems`` (and provisions numbered ``sections``) holds a key
    ``term``: as its stem, as one of the statute's words for it ("steal": "theft",
    ``lay_terms``), or, for a number, as a section number."""
    return (
        term in stems
        or bool(alternatives(term) & stems)
        or (term[0].isdigit() and term in sections)
    )


@dataclass(frozen=True, slots=True)
class Vocabulary:
    """Every stem and section number of a corpus: which of a question's key terms it holds
    anywhere at all. A question none of whose key terms the corpus holds ("chori ki saza kya
    hai", Hindi in Latin letters) shares no word with any passage, whatever a model scores."""

    stems: frozenset[str]
    sections: frozenset[str]

    @classmethod
    def of(cls, chunks: Iterable[ChunkLike]) -> Vocabulary:
        stems: set[str] = set()
        sections: set[str] = set()
        for chunk in chunks:
            stems |= chunk_stems(chunk)
            sections.add(chunk_section(chunk))
        return cls(frozenset(stems), frozenset(sections - {""}))

    def unknown(self, terms: Iterable[str]) -> tuple[str, ...]:
        """The ``terms`` (key terms) no passage of the corpus holds."""
        return tuple(t for t in terms if not holds(t, self.stems, self.sections))

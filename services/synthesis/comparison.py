"""Comparison questions: "What is the difference between theft and extortion?" and kin.

A comparison needs evidence for each thing compared, but one retrieval for the whole question
tends to return a provision that merely mentions both (s.390, robbery, "there is either theft or
extortion") and neither definition. The pipeline therefore also retrieves for each compared term
on its own and gives every term a place in the evidence. Pure: no I/O.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final

from services.common.evidence import ScoredChunk
from services.common.intent import Intent
from services.common.language.key_terms import (
    STOP_WORDS,
    KeyTerms,
    chunk_section,
    extract_key_terms,
    text_stems,
)
from services.common.language.text import stem
from services.synthesis.sufficiency import (
    SufficiencyDecision,
    SufficiencyOptions,
    assess_sufficiency,
)

_END: Final = r"\s*[?.!]*\s*$"
# Each pattern captures the two compared terms, "a" and "b", in the order the question names them.
_PATTERNS: Final = tuple(
    re.compile(pattern + _END, re.IGNORECASE)
    for pattern in (
        r"\bdifferences?\s+between\s+(?P<a>.+?)\s+and\s+(?P<b>.+?)",
        r"\bdistinguish(?:es|ed)?\s+(?:between\s+)?(?P<a>.+?)\s+(?:from|and)\s+(?P<b>.+?)",
        r"\b(?:does|do|is|are)\s+(?P<a>.+?)\s+(?:differ|different)\s+from\s+(?P<b>.+?)",
        r"\bcompare\s+(?P<a>.+?)\s+(?:and|with|to)\s+(?P<b>.+?)",
        r"\b(?:does|do)\s+(?P<a>.+?)\s+and\s+(?P<b>.+?)\s+compare",
        r"^(?P<a>.+?)\s+(?:vs\.?|versus)\s+(?P<b>.+?)",
    )
)
# Choices between two named things ("Which is older, X or Y?", "Are X and Y both ...?"):
# case-sensitive, and both terms must be names, so "legal or illegal" is no comparison. Since
# rule AM also "Which genus has more species: X or Y?" and "Are (both) X and Y vocalists?",
# where X and Y are runs of capitalised words and a lower-case word follows Y.
_NAMES: Final = r"[A-Z0-9][\w'’.&-]*(?:\s+[A-Z0-9][\w'’.&-]*)*"
_CHOICES: Final = tuple(
    re.compile(pattern)
    for pattern in (
        r"[,:]\s*(?P<a>[^,:]+?)\s+or\s+(?P<b>[^,:]+?)" + _END,
        r"^(?i:are|were|is|was|do|does|did|have|has)\s+(?i:both\s+)?(?P<a>[^,]+?),?\s+and\s+"
        r"(?P<b>[^,]+?),?\s+both\b",
        rf"^(?i:are|were|is|was|do|does|did|have|has)\s+(?i:both\s+)?(?P<a>{_NAMES})\s+and\s+"
        rf"(?P<b>{_NAMES})(?=\s+[a-z])",
    )
)
_LEADING: Final = re.compile(r"^(?:(?:the|a|an|offences?\s+of|offence|crimes?\s+of)\s+)+", re.I)
# "the punishments for voluntarily causing hurt and grievous hurt": the head names the aspect.
_HEAD: Final = re.compile(
    r"^(?P<head>(?:the\s+)?(?:punishments?|penalty|penalties|sentences?|definitions?|meaning)"
    r"\s+(?:for|of)\s+)(?P<rest>.+)$",
    re.IGNORECASE,
)
# A choice between two offences by how grave they are (rule AY), in any case: "Which is punished
# more severely, theft or criminal breach of trust?", "Is kidnapping or abduction the graver
# offence?". Only gravity words: "Which is older, rum or whisky?" stays no comparison.
_GRAVITY: Final = (
    r"(?:severe(?:ly)?|serious(?:ly)?|grave(?:r|st)?|worse|worst|heav(?:ier|iest|ily)"
    r"|harsh(?:er|est|ly)|light(?:er|est))"
)
_GRAVITY_CHOICES: Final = (
    re.compile(
        rf"^which\b[^,:]*?\b{_GRAVITY}\b[^,:]*[,:]\s*(?P<a>[^,:]+?)\s+or\s+(?P<b>[^,:]+?)" + _END,
        re.IGNORECASE,
    ),
    re.compile(
        rf"^(?:is|are)\s+(?P<a>[^,]+?)\s+or\s+(?P<b>[^,]+?)\s+the\s+(?:(?:more|most)\s+)?"
        rf"{_GRAVITY}\b[^,]*" + _END,
        re.IGNORECASE,
    ),
)
# Every pattern in the order tried, each with whether its sides must be capitalised names.
_ALL_PATTERNS: Final = (
    *((p, False) for p in _PATTERNS),
    *((p, True) for p in _CHOICES),
    *((p, False) for p in _GRAVITY_CHOICES),
)
MAX_TERM_WORDS: Final = 6
# What each side of a choice must state for it to be made (rule AO): "Which musician is older,
# X or Y?" compares dates, "Which genus has more species, X or Y?" numbers; each side is then
# quoted, where it can be, by a sentence holding one (``sufficiency.states_answer_type``).
_CHOICE_TYPES: Final = (
    (
        "time",
        re.compile(
            r"\b(?:older|oldest|younger|youngest|earlier|earliest|later|latest|newer|newest"
            r"|first|(?:more|most)\s+recent(?:ly)?)\b",
            re.I,
        ),
    ),
    (
        "number",
        re.compile(
            r"\b(?:more|most|fewer|fewest|less|least|larger|largest|bigger|biggest|smaller"
            r"|smallest|taller|tallest|higher|highest|longer|longest|shorter|shortest|greater"
            r"|greatest)\b",
            re.I,
        ),
    ),
)
# Title words around the term itself: "Punishment for theft", "Definition of criminal conspiracy".
_TITLE_FILLER: Final = frozenset(stem(w) for w in ("punishment", "definition", "of", "for"))
_PUNISH: Final = stem("punishment")

_CUE: Final = {
    Intent.PUNISHMENT: "What is the punishment for {}?",
    Intent.PROCEDURE: "What is the procedure for {}?",
    Intent.SCOPE: "What is the scope of {}?",
}


@dataclass(frozen=True, slots=True)
class Comparison:
    """The compared terms and one retrieval query for each, in the question's order."""

    terms: tuple[str, ...]
    queries: tuple[str, ...]

    @property
    def focus(self) -> str:
        """The terms alone ("theft and extortion"): what the evidence must be about, without the
        comparison words ("difference", "differ", "compare") that no provision contains."""
        return " and ".join(self.terms)

    @property
    def answer_terms(self) -> KeyTerms:
        """What the answer must address: each compared term's key terms, as sufficiency reads
        each term, in the question's order. Not the question's: its comparison word
        ("differ", "compar") is in no provision, and for "section 299 and section 300" it was
        the only term, so no sentence of either section held one."""
        each = [extract_key_terms(term) for term in self.terms]
        return KeyTerms(
            terms=tuple(dict.fromkeys(t for k in each for t in k.terms)),
            generic=tuple(dict.fromkeys(t for k in each for t in k.generic)),
            sections=tuple(dict.fromkeys(t for k in each for t in k.sections)),
        )


def find_comparison(question: str, intent: Intent) -> Comparison | None:
    """The comparison ``question`` asks for, or None when it asks for none.

    Terms longer than ``MAX_TERM_WORDS`` words, or without a content word, mean the pattern
    matched something else ("How does the right of private defence of the body ..."), and no
    comparison is returned.
    """
    text = " ".join(question.split())
    for pattern, names_only in _ALL_PATTERNS:
        match = pattern.search(text)
        if match is None:
            continue
        terms = _terms(match.group("a"), match.group("b"))
        if terms is not None and (not names_only or all(_is_name(t) for t in terms)):
            template = _CUE.get(intent, "What is {}?")
            return Comparison(terms, tuple(template.format(term) for term in terms))
    return None


def choice_answer_type(question: str) -> str | None:
    """The kind of fact a comparison weighs ("time" for "older", "first"; "number" for "more",
    "larger"), or None; read for a comparison only."""
    return next((kind for kind, pattern in _CHOICE_TYPES if pattern.search(question)), None)


def _is_name(term: str) -> bool:
    return term[:1].isupper() or term[:1].isdigit()


def _terms(a: str, b: str) -> tuple[str, str] | None:
    a, b = _clean(a), _clean(b)
    head = _HEAD.match(a)
    if head is not None:
        # The aspect applies to both terms; each query names it once, through the intent cue.
        a = _clean(head.group("rest"))
        b = _clean(_HEAD.sub(r"\g<rest>", b))
    for term in (a, b):
        if not term or len(term.split()) > MAX_TERM_WORDS or not term_stems(term):
            return None
    if text_stems(a) == text_stems(b):
        return None
    return a, b


def _clean(term: str) -> str:
    term = term.strip(" ,;:?.!\"'“”‘’")
    return _LEADING.sub("", term).strip()


def assess_comparison(
    comparison: Comparison,
    intent: Intent,
    evidence: Sequence[ScoredChunk],
    options: SufficiencyOptions | None = None,
) -> SufficiencyDecision:
    """Sufficient only when the evidence supports every compared term on its own.

    One check over "theft and extortion" would want a passage naming both, which only s.390
    (robbery) and s.410 (stolen property) do; a comparison instead needs each side answered.
    Half a comparison is refused, as any answer the evidence cannot carry is.
    """
    decisions = [assess_sufficiency(term, intent, evidence, options) for term in comparison.terms]
    failing = [i for i, d in enumerate(decisions) if not d.sufficient]
    failed = decisions[failing[0]] if failing else None
    return SufficiencyDecision(
        sufficient=failed is None,
        intent=intent,
        key_terms=extract_key_terms(comparison.focus),
        requirements=decisions[0].requirements if failed is None else failed.requirements,
        failed=None if failed is None else failed.failed,
        relevant_ids=tuple(dict.fromkeys(i for d in decisions for i in d.relevant_ids)),
        supporting_ids=tuple(dict.fromkeys(i for d in decisions for i in d.supporting_ids)),
        best_score=max(d.best_score for d in decisions),
        compared=comparison.terms,
        unsupported=comparison.terms[failing[0]] if failing else "",
    )


def term_stems(term: str) -> frozenset[str]:
    """The content stems of a compared term."""
    return text_stems(term) - STOP_WORDS


def term_sections(term: str) -> frozenset[str]:
    """The sections a compared term names ("section 302", "s.323", "325 IPC"), as
    ``chunk_section`` writes them; empty for a term that names none ("theft")."""
    return frozenset(extract_key_terms(term).sections)


def titled_with(title_stems: frozenset[str], term: frozenset[str]) -> bool:
    """Whether a section's title is the term itself ("Theft", "Punishment for theft"): that
    section defines or punishes it, where others ("Robbery") only mention it in passing."""
    return bool(title_stems) and title_stems - _TITLE_FILLER == term


def interleave(
    term_rankings: Sequence[Sequence[ScoredChunk]],
    terms: Sequence[str],
    question_ranking: Sequence[ScoredChunk],
    intent: Intent,
) -> list[ScoredChunk]:
    """One ranking for a comparison: the per-term rankings and the whole question's take turns.

    In each term's ranking the passages of sections titled with the term move to the front, so
    "What is theft?" leads with s.378 (Theft), not s.390 (Robbery), which retrieval ranks first
    because it names theft three times. Among those, a "Punishment for …" title comes first for
    a punishment question and last otherwise (s.383 Extortion before s.384 Punishment for
    extortion when the question asks what extortion is). A term that names a section ("section
    302") puts that section's passages first instead, in retrieval's order: by title, s.302
    ("Punishment for murder") fell behind s.50 ("Section") and out of the evidence.
    """
    rankings = [
        _named_first(ranking, named)
        if (named := term_sections(term))
        else _titled_first(ranking, term_stems(term), intent)
        for ranking, term in zip(term_rankings, terms, strict=True)
    ]
    rankings.append(list(question_ranking))
    return take_turns(rankings)


def take_turns(rankings: Sequence[Sequence[ScoredChunk]]) -> list[ScoredChunk]:
    """One ranking from several: each ranking's first, then each one's second, and so on (a
    comparison's terms, or a multi-part question's parts, then the whole question)."""
    merged: list[ScoredChunk] = []
    for rank in range(max((len(r) for r in rankings), default=0)):
        merged.extend(ranking[rank] for ranking in rankings if rank < len(ranking))
    return merged


def _named_first(ranking: Sequence[ScoredChunk], sections: frozenset[str]) -> list[ScoredChunk]:
    return sorted(ranking, key=lambda scored: chunk_section(scored.chunk) not in sections)


def _titled_first(
    ranking: Sequence[ScoredChunk], term: frozenset[str], intent: Intent
) -> list[ScoredChunk]:
    wants_penalty = intent is Intent.PUNISHMENT

    def key(scored: ScoredChunk) -> tuple[bool, bool]:
        title = text_stems(scored.chunk.title)
        return (not titled_with(title, term), (_PUNISH in title) != wants_penalty)

    return sorted(ranking, key=key)  # stable: retrieval order within each group

"""Evidence sufficiency: decide, before any generation, whether retrieved evidence can answer."""

from __future__ import annotations

import enum
import math
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from typing import Final

from services.common.evidence import Chunk, ScoredChunk
from services.common.intent import PROFILES, Intent
from services.common.language.key_terms import (
    STOP_WORDS,
    KeyTerms,
    chunk_section,
    chunk_stems,
    extract_key_terms,
    holds,
)
from services.common.language.references import parse_section_refs
from services.common.language.script import unreadable_script
from services.common.language.text import stem
from services.common.language.text import words as text_words
from services.synthesis.holdings import Holdings


def term_coverage(key_terms: KeyTerms, chunk: Chunk) -> float:
    """Share of the question's effective terms found in the chunk (0..1).

    When the question names sections, a chunk from another section covers nothing. Bare numbers
    also match the chunk's section. With only a section reference, a matching section covers all.
    """
    section = chunk_section(chunk)
    if key_terms.sections and section not in key_terms.sections:
        return 0.0
    wanted = key_terms.effective
    if not wanted:
        return 1.0 if key_terms.sections else 0.0
    stems = chunk_stems(chunk)
    hits = sum(1 for term in wanted if term in stems or (term[0].isdigit() and term == section))
    return hits / len(wanted)


def shared_terms(key_terms: KeyTerms, chunks: Iterable[Chunk]) -> tuple[str, ...]:
    """The question's effective key terms that some chunk holds: as a stem, as one of the
    statute's words for it ("steal": "theft", ``lay_terms``), or, for a number, as its section.

    Empty when the evidence shares no word with the question ("ok", "pizza"): for a short
    question, nothing there is about what was asked, whatever a model scores
    (``answerability.unrelated_to_evidence``).
    """
    found: dict[str, None] = {}
    for chunk in chunks:
        stems, sections = chunk_stems(chunk), frozenset({chunk_section(chunk)})
        for term in key_terms.effective:
            if holds(term, stems, sections):
                found[term] = None
    return tuple(t for t in key_terms.effective if t in found)


def required_hits(key_terms: KeyTerms, options: SufficiencyOptions) -> int:
    """How many of the effective key terms a chunk must contain to be relevant.

    ``ceil(min_term_coverage * n)``, capped at ``max_required_terms``: long, wordy questions
    ("What is the possible sentence for someone who knowingly spreads a disease?") name many
    words a provision need not repeat.
    """
    wanted = len(key_terms.effective)
    if wanted == 0:
        return 0
    return max(1, min(math.ceil(options.min_term_coverage * wanted), options.max_required_terms))


def is_relevant(key_terms: KeyTerms, chunk: Chunk, options: SufficiencyOptions) -> bool:
    """The chunk is from a named section (if any) and holds enough of the key terms."""
    coverage = term_coverage(key_terms, chunk)
    if coverage <= 0.0:
        return False
    wanted = len(key_terms.effective)
    if wanted == 0:
        return True  # only sections were named, and the chunk is from one of them
    return round(coverage * wanted) >= required_hits(key_terms, options)


# The Code's defining forms around one of the question's key terms (``{term}``, escaped), in
# lower case: "culpable homicide is murder"; "... commits forgery." closing the sentence with at
# most four more words, its other form beside "is said to commit" (rule BC); "A person abets the
# doing of a thing, who: ...", s.107 (rule BE).
_DEFINING_FORMS: Final = (
    r"\b(?:is|are)\s+(?:(?:a|an|the)\s+)?[\"“‘']?{term}\w*\b",
    r"\bcommits?\s+[\"“‘']?{term}[\w-]*(?:\s+[\w-]+){{0,4}}[\"”’']?\s*[.;]?\s*$",
    r"^\s*(?:a|any)\s+person\s+{term}\w*\b[^.;:]*?\bwho\b",
)


def has_intent_language(intent: Intent, text: str, key_terms: KeyTerms | None = None) -> bool:
    """True when ``text`` carries the language an answer of this intent needs.

    GENERAL needs none. For definitions, one of the Code's defining forms around one of the
    question's key terms also counts (``_DEFINING_FORMS``: "culpable homicide is murder", "...
    commits forgery.", "A person abets the doing of a thing, who: ...").
    """
    pattern = PROFILES[intent].answer_language
    if pattern is None:
        return True
    if pattern.search(text):
        return True
    if intent is Intent.DEFINITION and key_terms is not None:
        lowered = text.lower()
        return any(
            re.search(form.format(term=re.escape(term)), lowered)
            for term in key_terms.terms
            for form in _DEFINING_FORMS
        )
    return False


class Requirement(enum.Enum):
    """One sufficiency requirement; a refusal names the first one that failed."""

    # The question is mostly in a script the models and rules read (language/script.py).
    QUESTION_READABLE = "QUESTION_READABLE"
    EVIDENCE_PRESENT = "EVIDENCE_PRESENT"
    QUESTION_HAS_KEY_TERMS = "QUESTION_HAS_KEY_TERMS"
    MIN_SCORE = "MIN_SCORE"
    SECTION_MATCH = "SECTION_MATCH"
    KEY_TERM_MATCH = "KEY_TERM_MATCH"
    DEFINITIONAL_LANGUAGE = "DEFINITIONAL_LANGUAGE"
    PENALTY_LANGUAGE = "PENALTY_LANGUAGE"
    PROCEDURAL_LANGUAGE = "PROCEDURAL_LANGUAGE"
    SCOPE_LANGUAGE = "SCOPE_LANGUAGE"
    NAMED_TERMS_MATCH = "NAMED_TERMS_MATCH"
    # The answerability model found no evidence sentence that answers (answerability.py).
    ANSWERING_SENTENCE = "ANSWERING_SENTENCE"
    # "How many ...?" needs a number, "In what year ...?" a time, in some relevant chunk.
    ANSWER_TYPE = "ANSWER_TYPE"
    # A statement (a claim to verify): the entailment model found no evidence sentence stating it.
    STATING_SENTENCE = "STATING_SENTENCE"


_INTENT_REQUIREMENT: dict[Intent, Requirement] = {
    Intent.DEFINITION: Requirement.DEFINITIONAL_LANGUAGE,
    Intent.PUNISHMENT: Requirement.PENALTY_LANGUAGE,
    Intent.PROCEDURE: Requirement.PROCEDURAL_LANGUAGE,
    Intent.SCOPE: Requirement.SCOPE_LANGUAGE,
}

_DESCRIPTIONS: dict[Requirement, str] = {
    Requirement.QUESTION_READABLE: (
        "the question is written mostly in a script other than Latin, which the models and "
        "rules do not read"
    ),
    Requirement.EVIDENCE_PRESENT: "retrieval returned no evidence",
    Requirement.QUESTION_HAS_KEY_TERMS: "the question names nothing the evidence could match",
    Requirement.MIN_SCORE: "no evidence reached the minimum relevance score",
    Requirement.SECTION_MATCH: "no evidence comes from the section(s) the question names",
    Requirement.KEY_TERM_MATCH: "no evidence contains the question's key terms",
    Requirement.DEFINITIONAL_LANGUAGE: "no relevant evidence contains definitional language",
    Requirement.PENALTY_LANGUAGE: "no relevant evidence states a penalty",
    Requirement.PROCEDURAL_LANGUAGE: "no relevant evidence describes a procedure",
    Requirement.SCOPE_LANGUAGE: "no relevant evidence states an extent or applicability",
    Requirement.NAMED_TERMS_MATCH: "the relevant evidence lacks a name or number the question uses",
    Requirement.ANSWERING_SENTENCE: "no evidence sentence answers the question",
    Requirement.STATING_SENTENCE: "no evidence sentence states the claim",
    Requirement.ANSWER_TYPE: "no relevant evidence holds the kind of answer asked for",
}


# The requirements a part of a multi-part question can fail on its own (the model's).
_PART_REQUIREMENTS: Final = frozenset(
    {Requirement.ANSWERING_SENTENCE, Requirement.STATING_SENTENCE}
)


@dataclass(frozen=True, slots=True)
class SufficiencyOptions:
    """Thresholds. ``min_score`` is on retrieval's final score scale (set it to match)."""

    min_score: float = 0.0
    # With two key terms both must match ("capital" alone must not make an IPC chunk relevant
    # to "What is the capital of France?"); with five, three; never more than three.
    min_term_coverage: float = 0.6
    max_required_terms: int = 3
    # Every name and number the question writes ("Tesla", "1905") must occur in some relevant
    # chunk: an on-topic question with one swapped name cannot be answered from this evidence.
    require_named_terms: bool = False
    # "How many/much ...?" needs a number and "In what year / When was ...?" a date or year in
    # some relevant chunk (``answer_type``); "When is ...?" asks for conditions, not a time.
    require_answer_type: bool = False


@dataclass(frozen=True, slots=True)
class SufficiencyDecision:
    """Whether the evidence can answer, and if not, the first requirement that failed.

    ``relevant_ids`` passed the score and key-term checks; ``supporting_ids`` also carry the
    intent's language. ``requirements`` lists every requirement checked, in order.
    """

    sufficient: bool
    intent: Intent
    key_terms: KeyTerms
    requirements: tuple[Requirement, ...]
    failed: Requirement | None = None
    relevant_ids: tuple[str, ...] = ()
    supporting_ids: tuple[str, ...] = ()
    best_score: float = 0.0
    # For a KEY_TERM_MATCH refusal, the key terms some evidence chunk holds all the same
    # (``shared_terms``): the evidence holds the question's words only partly. Empty when it
    # holds none of them; the model may then not rescue a short question
    # (``answerability.unrelated_to_evidence``).
    shared: tuple[str, ...] = ()
    # The question's words retrieval found in no passage of the whole corpus (its
    # ``unknown_terms``, as the question writes them): when every key term is one of them
    # (``unknown``), the model may not rescue the question either.
    unknown_words: tuple[str, ...] = ()
    # A comparison's terms, each checked on its own (comparison.assess_comparison), and the
    # first one the evidence did not support ("" when all were, or for other questions).
    compared: tuple[str, ...] = ()
    unsupported: str = ""
    # The answerability model's best P(answers) over the evidence (None when it did not run),
    # its name, and what it changed: "" (nothing), "vetoed", "rescued", a judge outcome, or
    # "question_too_long" (the model could not read the question: answerability.py).
    answerability: float | None = None
    answerability_model: str = ""
    answerability_effect: str = ""
    # Each evidence chunk's P(answers) when the model scored the request (semantic id, score).
    answerability_by_id: tuple[tuple[str, float], ...] = ()
    # For a multi-part question the model scored per part: each part's answering chunks
    # (P(answers) for that part at least the veto threshold), (semantic id, score), best first.
    answerability_by_part: tuple[tuple[tuple[str, float], ...], ...] = ()
    # For a multi-part question the model scored: each part, its best score, and whether that
    # reached the threshold the decision used (``AnswerabilityScores.part_report``).
    answerability_parts: tuple[tuple[str, float, bool], ...] = ()
    # The judge (issue 17), when the model left the question uncertain: its model and P(yes).
    judge_model: str = ""
    judge_score: float | None = None
    # For a statement judged by the entailment model: "stated" or "undecided"
    # (answerability.StatementVerdict); "" otherwise.
    statement_verdict: str = ""
    # For a SECTION_MATCH refusal: the acts the question asks about that the index does not
    # hold (codes), and what the index lacks in words (``holdings.Holdings``): such an act, or
    # the named provisions it holds no text of. Empty otherwise.
    unheld: tuple[str, ...] = ()
    absent: str = ""

    @property
    def failed_code(self) -> str:
        """The failed requirement's stable code ("PENALTY_LANGUAGE"), "" when sufficient."""
        return self.failed.value if self.failed else ""

    @property
    def unknown(self) -> frozenset[str]:
        """``unknown_words`` as key terms (stemmed)."""
        return frozenset(stem(word) for word in self.unknown_words)

    @property
    def reason(self) -> str:
        """A sentence saying why the evidence is insufficient ("" when sufficient). A question
        none of whose key terms the corpus holds says so, naming them: a user sees that the
        words, not the evidence found, are the problem ("chori ki saza kya hai")."""
        if self.failed is None:
            return ""
        if self.absent:
            return self.absent  # names the act or provision the index lacks, and what it holds
        said = _DESCRIPTIONS[self.failed]
        effective = self.key_terms.effective
        if (
            self.failed is Requirement.KEY_TERM_MATCH
            and effective
            and set(effective) <= self.unknown
        ):
            named = ", ".join(self.unknown_words or effective)
            said += f", and no passage of the corpus holds any of them ({named})"
        elif self.failed is Requirement.KEY_TERM_MATCH:
            # Some key terms the corpus holds, some it does not: name those (rule Y).
            held = set(effective)
            missing = [w for w in self.unknown_words if stem(w) in held]
            if missing:
                said += "; no passage of the corpus holds " + ", ".join(map(repr, missing))
        unanswered = [part for part, _, answered in self.answerability_parts if not answered]
        if unanswered and self.failed in _PART_REQUIREMENTS:
            # Which part to rephrase or ask elsewhere (docs/EVALUATION.md, "Then X").
            verb = "answers" if self.failed is Requirement.ANSWERING_SENTENCE else "states"
            said += f": none {verb} " + " or ".join(repr(part) for part in unanswered)
        return said


def assess_sufficiency(
    question: str,
    intent: Intent,
    evidence: Sequence[ScoredChunk],
    options: SufficiencyOptions | None = None,
    *,
    key_terms: KeyTerms | None = None,
    holdings: Holdings | None = None,
    acts: Sequence[str] = (),
) -> SufficiencyDecision:
    """Apply the checks in order; the first one that fails makes the evidence insufficient.

    ``key_terms`` are ``question``'s when the caller has them already (``QuestionAnalysis``).
    ``holdings`` are what the index holds, when known, and ``acts`` the acts the question asks
    about (``references.asked_acts``).

    0. the question is in a script the models and rules read (``script.unreadable_script``:
    an Urdu or Hindi question is refused, never matched letter by letter); 0b. every act it
    asks about is one the index holds (``SECTION_MATCH``: "Under the BNS, ..." is never
    answered from the IPC, whatever words they share); 1. there is evidence; 2. the question
    has key terms; 3. some chunk reaches ``min_score``; 4. if the question names sections, some
    such chunk is from one of them (``explain_absent`` says so when the index holds no text of
    them); 5. some such chunk
    holds ``required_hits`` of the key terms (it is *relevant*); 6. some relevant chunk carries
    the intent's language (definitional, penalty, procedural, scope; none for general
    questions), or, for a definition, is the provision titled with the asked term.
    """
    opts = options or SufficiencyOptions()
    key_terms = key_terms if key_terms is not None else extract_key_terms(question)
    checked: list[Requirement] = []
    best = max((scored.score for scored in evidence), default=0.0)

    def decide(
        failed: Requirement | None,
        relevant: Iterable[ScoredChunk] = (),
        supporting: Iterable[ScoredChunk] = (),
        shared: tuple[str, ...] = (),
        unheld: tuple[str, ...] = (),
        absent: str = "",
    ) -> SufficiencyDecision:
        return SufficiencyDecision(
            sufficient=failed is None,
            intent=intent,
            key_terms=key_terms,
            requirements=tuple(checked),
            failed=failed,
            relevant_ids=tuple(s.chunk.semantic_id for s in relevant),
            supporting_ids=tuple(s.chunk.semantic_id for s in supporting),
            best_score=best,
            shared=shared,
            unheld=unheld,
            absent=absent,
        )

    checked.append(Requirement.QUESTION_READABLE)
    if unreadable_script(question) is not None:
        return decide(Requirement.QUESTION_READABLE)
    unheld = holdings.unheld(acts) if holdings is not None else ()
    if unheld:
        assert holdings is not None
        checked.append(Requirement.SECTION_MATCH)
        return decide(
            Requirement.SECTION_MATCH, unheld=unheld, absent=holdings.unheld_reason(unheld)
        )
    checked.append(Requirement.EVIDENCE_PRESENT)
    if not evidence:
        return decide(Requirement.EVIDENCE_PRESENT)
    checked.append(Requirement.QUESTION_HAS_KEY_TERMS)
    if key_terms.is_empty:
        return decide(Requirement.QUESTION_HAS_KEY_TERMS)
    checked.append(Requirement.MIN_SCORE)
    scored = [s for s in evidence if s.score >= opts.min_score]
    if not scored:
        return decide(Requirement.MIN_SCORE)
    if key_terms.sections:
        checked.append(Requirement.SECTION_MATCH)
        scored = [s for s in scored if chunk_section(s.chunk) in key_terms.sections]
        if not scored:
            return decide(Requirement.SECTION_MATCH)
    checked.append(Requirement.KEY_TERM_MATCH)
    relevant = [s for s in scored if is_relevant(key_terms, s.chunk, opts)]
    if not relevant:
        shared = shared_terms(key_terms, (s.chunk for s in scored))
        return decide(Requirement.KEY_TERM_MATCH, shared=shared)
    if opts.require_named_terms:
        required = required_terms(question, key_terms)
        if required:
            checked.append(Requirement.NAMED_TERMS_MATCH)
            found = frozenset().union(*(chunk_stems(s.chunk) for s in relevant))
            if required - found:
                return decide(Requirement.NAMED_TERMS_MATCH, relevant)
    if opts.require_answer_type:
        wanted = answer_type(question)
        if wanted is not None:
            checked.append(Requirement.ANSWER_TYPE)
            relevant = [s for s in relevant if _ANSWER_TYPES[wanted].search(s.chunk.text)]
            if not relevant:
                return decide(Requirement.ANSWER_TYPE)
    requirement = _INTENT_REQUIREMENT.get(intent)
    if requirement is None:
        return decide(None, relevant, relevant)
    checked.append(requirement)
    supporting = [s for s in relevant if _supports(intent, s.chunk, key_terms)]
    if not supporting:
        return decide(requirement, relevant)
    return decide(None, relevant, supporting)


_NUMBER_WORDS = (
    r"one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|thirteen|fourteen|fifteen"
    r"|sixteen|seventeen|eighteen|nineteen|twenty|thirty|forty|fifty|sixty|seventy|eighty"
    r"|ninety|hundred|thousand|million|billion|lakh|crore|dozen|half|several|many|few"
)
_MONTHS = r"january|february|march|april|may|june|july|august|september|october|november|december"
_ASKS: tuple[tuple[str, re.Pattern[str]], ...] = (
    (
        "number",
        re.compile(
            r"^\W*(?:how\s+(?:many|much|long|old|far|large|big|tall|high|often)\b"
            r"|what\s+(?:number|percentage|proportion|amount|size|population)\b)",
            re.I,
        ),
    ),
    (
        "time",
        re.compile(
            r"^\W*(?:(?:in\s+)?(?:what|which)\s+(?:year|century|decade|month|date|day)\b"
            r"|when\s+(?:was|were|did|had)\b)",
            re.I,
        ),
    ),
)
_ANSWER_TYPES: dict[str, re.Pattern[str]] = {
    "number": re.compile(rf"\d|\b(?:{_NUMBER_WORDS})\b", re.I),
    "time": re.compile(
        rf"\b(?:1\d{{3}}|20\d{{2}}|\d{{1,4}}s|(?:{_MONTHS})|centur(?:y|ies)|decades?"
        r"|(?:B\.?C|A\.?D|C\.?E)\b|era|dynasty|age|period|years?|ago|today|now)\b",
        re.I,
    ),
}


def answer_type(question: str) -> str | None:
    """The kind of answer the question's opening asks for ("number", "time"), or None."""
    return next((kind for kind, pattern in _ASKS if pattern.search(question)), None)


def states_answer_type(kind: str, text: str) -> bool:
    """Whether ``text`` holds an answer of ``kind`` ("number": a digit or number word; "time":
    a year, month, century, era ...), as ``require_answer_type`` reads it."""
    return _ANSWER_TYPES[kind].search(text) is not None


_NAME_OR_NUMBER = re.compile(r"\b(?:[A-Z][\w'’-]*|\d[\d,.]*)")


def required_terms(question: str, key_terms: KeyTerms) -> frozenset[str]:
    """Key terms the question writes as a name or a number ("Tesla", "1905"), not as its first
    word: swapping one of them is what makes an on-topic question unanswerable."""
    words = question.split()
    tail = " ".join(words[1:]) if words else ""
    named = {
        stem(token)
        for match in _NAME_OR_NUMBER.finditer(tail)
        for token in text_words(match.group(0))
    }
    return frozenset(t for t in key_terms.terms if t in named)


def explain_absent(
    decision: SufficiencyDecision, question: str, holdings: Holdings
) -> SufficiencyDecision:
    """A ``SECTION_MATCH`` refusal of provisions ``question`` names that the index holds no
    text of, saying so ("section 304B of the Indian Penal Code, 1860 is not in this index: its
    text is absent from the corpus"); any other decision as it is."""
    if decision.failed is not Requirement.SECTION_MATCH or decision.absent:
        return decision
    absent = holdings.absent(parse_section_refs(question))
    return replace(decision, absent=holdings.absent_reason(absent)) if absent else decision


def _supports(intent: Intent, chunk: Chunk, key_terms: KeyTerms) -> bool:
    """The chunk carries the intent's language; for a definition, a provision whose title is
    exactly what the question asks about ("assault ... to deter public servant ...") also
    describes it."""
    if has_intent_language(intent, chunk.text, key_terms):
        return True
    if intent is Intent.DEFINITION and key_terms.terms:
        # The title names exactly the asked term: "Murder" for "What is murder?", but not
        # "Punishment for murder".
        title = {stem(w) for w in text_words(chunk.title) if w not in STOP_WORDS}
        return bool(title) and title == set(key_terms.terms)
    return False

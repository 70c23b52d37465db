"""Answerability: does some evidence sentence answer the question? (issue 13)

The keyword rules of ``sufficiency`` decide by shared words: an unanswerable question written
with the corpus's words passes them, and a plain-language question in other words than the
statute fails them. A trained (question, sentence) cross-encoder scores whether a sentence
answers the question; this module combines its scores with the keyword decision.

Modes (``SYNTHESIS_ANSWERABILITY``), so that each can be measured against the others:

- ``off``: keyword rules only (the model is not loaded).
- ``shadow``: the model scores every request and the response reports it; the keyword rules
  decide. For calibrating on one's own traffic before switching a mode on.
- ``veto``: keyword rules, and a question they pass is refused when no evidence sentence
  reaches ``veto_below`` (requirement ``ANSWERING_SENTENCE``).
- ``rescue``: keyword rules, but a refusal for words alone (``KEY_TERM_MATCH`` or a missing
  intent language) is overruled when some sentence reaches ``rescue_at``. Only such refusals
  are scored (``needs_scores``): a question the keyword rules answer costs no model call.
- ``both``: veto and rescue.
- ``model``: the model alone decides, after the structural checks (evidence present, a named
  section present, every name and number the question writes found).

A question that names a section ("under section 420") is left to the keyword rules in every
mode: the section rule already requires that section's text, and the model, which never saw
section numbers, scores such questions low.

Pure: the scorer is a protocol; ``answerability_onnx`` adapts the shipped ONNX model to it.
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Protocol, TypeVar

from services.common.budget import Stop
from services.common.cross_encoder import OnnxCrossEncoder, encoders_of
from services.common.evidence import ScoredChunk, passage_text
from services.common.judge import Band, Item, Judge, Outcome, Verdict
from services.common.language.conversation import asked_question
from services.common.language.key_terms import (
    chunk_section,
    chunk_stems,
    extract_key_terms,
    holds,
)
from services.synthesis.sufficiency import Requirement, SufficiencyDecision

_Row = TypeVar("_Row")


class AnswerabilityScorer(Protocol):
    """P(the passage answers the question) for each passage; thread-safe."""

    @property
    def name(self) -> str: ...

    @property
    def passage_format(self) -> str:
        """How the model reads a chunk (``services.common.evidence.passage_text``)."""
        ...

    def score(self, question: str, passages: Sequence[str]) -> list[float]: ...


class StatementScorer(AnswerabilityScorer, Protocol):
    """The entailment model for statements: besides ``score``, each passage's (score,
    P(entailment), P(contradiction)), which the statement's verdict reads."""

    def label_scores(
        self, question: str, passages: Sequence[str]
    ) -> list[tuple[float, float, float]]: ...


class StatementVerdict(enum.Enum):
    """What the evidence says of a statement. Only STATED is asserted: its precision met the
    bar fixed before measuring (0.93 on the tune halves; 0.78 on the halves never tuned on), a
    CONTRADICTED verdict's did not (docs/SYNTHESIS.md, "Claims")."""

    NONE = ""  # not a statement judged by the entailment model
    # Some passage states it: P(entailment) >= stated_at and above every P(contradiction), and
    # the validator finds the claim, citing that passage, GROUNDED.
    STATED = "stated"
    UNDECIDED = "undecided"  # not that sure, or the validator disagrees: read the evidence


class AnswerabilityMode(enum.Enum):
    """How the model's scores combine with the keyword rules (module docstring)."""

    OFF = "off"
    SHADOW = "shadow"
    VETO = "veto"
    RESCUE = "rescue"
    BOTH = "both"
    MODEL = "model"

    @property
    def vetoes(self) -> bool:
        return self in (AnswerabilityMode.VETO, AnswerabilityMode.BOTH)

    @property
    def rescues(self) -> bool:
        return self in (AnswerabilityMode.RESCUE, AnswerabilityMode.BOTH)


# Refusals the model may overrule: the question's words are absent from the evidence, or the
# intent's cue words are. Structural failures (no evidence, a named section or a name/number
# the question writes missing) are never overruled.
RESCUABLE: frozenset[Requirement] = frozenset(
    {
        Requirement.KEY_TERM_MATCH,
        Requirement.DEFINITIONAL_LANGUAGE,
        Requirement.PENALTY_LANGUAGE,
        Requirement.PROCEDURAL_LANGUAGE,
        Requirement.SCOPE_LANGUAGE,
    }
)


# The most key terms a question may have for the model to be kept from rescuing it when the
# evidence holds none of them (``unrelated_to_evidence``). Chosen on the plain tune set
# (docs/EVALUATION.md, "The front door"): its answerable questions that share no word with
# their evidence are situations told in everyday words, of 3 to 8 key terms.
MAX_UNRELATED_TERMS = 2


def unrelated_to_evidence(decision: SufficiencyDecision) -> bool:
    """A ``KEY_TERM_MATCH`` refusal whose evidence holds none of the question's key terms
    (``SufficiencyDecision.shared`` empty), of a short question (at most ``MAX_UNRELATED_TERMS``
    key terms: "ok", "pizza", "asdf", "How many sections are there?") or of one none of whose
    key terms the whole corpus holds (``SufficiencyDecision.unknown``, from retrieval: "chori ki
    saza kya hai", Hindi in Latin letters). No model or judge overrules it: the model scored
    "ok" 0.996 against s.109's text. A longer question with a word of the corpus may name a
    provision in none of its words ("make someone work against their will" for s.374's "compels
    ... to labour"), so the model may still rescue it, as it may any question whose words the
    evidence holds in part."""
    effective = decision.key_terms.effective
    return (
        decision.failed is Requirement.KEY_TERM_MATCH
        and not decision.shared
        and (
            len(effective) <= MAX_UNRELATED_TERMS
            or (bool(decision.unknown) and set(effective) <= decision.unknown)
        )
    )


# What ``model`` mode keeps of the keyword rules, and what the judge is never asked about. A
# question that names nothing ("Hi, can you help me?", "Please summarise the document for me.":
# ``QUESTION_HAS_KEY_TERMS``) asks about nothing a passage could answer, whatever a model scores.
STRUCTURAL: frozenset[Requirement] = frozenset(
    {
        Requirement.QUESTION_READABLE,
        Requirement.EVIDENCE_PRESENT,
        Requirement.QUESTION_HAS_KEY_TERMS,
        Requirement.SECTION_MATCH,
        Requirement.NAMED_TERMS_MATCH,
    }
)


class StatementCheck(enum.Enum):
    """What judges a statement (a claim to verify, ``intent.is_statement``) beside the keyword
    rules: the answerability model as for a question, nothing more, or the entailment model
    (does some evidence chunk entail the claim?)."""

    MODEL = "model"
    KEYWORDS = "keywords"
    ENTAILMENT = "entailment"


@dataclass(frozen=True, slots=True)
class AnswerabilityOptions:
    """The mode and its two thresholds on P(answers) (0..1)."""

    mode: AnswerabilityMode = AnswerabilityMode.OFF
    veto_below: float = 0.5
    rescue_at: float = 0.9
    # What judges statements: the answerability model was trained on questions only.
    statements: StatementCheck = StatementCheck.MODEL
    # With ``statements`` ENTAILMENT, the thresholds on P(entailment) that take the place of
    # ``veto_below`` and ``rescue_at`` for a statement, under the same mode.
    statement_veto_below: float = 0.0
    statement_rescue_at: float = 1.0
    # What a veto names as failed: no sentence answers the question, or (for a statement) none
    # states the claim.
    requirement: Requirement = Requirement.ANSWERING_SENTENCE

    def for_statements(self) -> AnswerabilityOptions:
        """These options with the statement thresholds in place of the question ones."""
        return replace(
            self,
            veto_below=self.statement_veto_below,
            rescue_at=self.statement_rescue_at,
            requirement=Requirement.STATING_SENTENCE,
        )

    @property
    def enabled(self) -> bool:
        return self.mode is not AnswerabilityMode.OFF


@dataclass(frozen=True, slots=True)
class AnswerabilityScores:
    """The model's scores for one request's evidence: ``by_id`` maps semantic id → P(answers)."""

    model: str
    by_id: Mapping[str, float]
    # For a multi-part question, each part's own scores (semantic id → P(answers) for that
    # part), in the parts' order (``by_id`` then holds each chunk's best over the parts); empty
    # for a question of one part.
    by_part: tuple[Mapping[str, float], ...] = ()
    # For a multi-part question, the parts as scored, in ``by_part``'s order; empty else.
    parts: tuple[str, ...] = ()

    @property
    def part_best(self) -> tuple[float, ...]:
        """For a multi-part question, each part's best score; empty for a question of one part."""
        return tuple(max(part.values(), default=0.0) for part in self.by_part)

    @property
    def best(self) -> float:
        """The question's score: the best chunk's, or for a multi-part question the weakest
        part's best, since each part needs its own answering sentence."""
        if self.part_best:
            return min(self.part_best)
        return max(self.by_id.values(), default=0.0)

    def at_least(self, threshold: float) -> tuple[str, ...]:
        """Ids scoring at least ``threshold``, best first."""
        ranked = sorted(self.by_id.items(), key=lambda item: (-item[1], item[0]))
        return tuple(i for i, s in ranked if s >= threshold)

    def part_report(self, threshold: float) -> tuple[tuple[str, float, bool], ...]:
        """For a multi-part question, each part with its best score and whether that reaches
        ``threshold``; empty for a question of one part (or scores that do not name parts)."""
        if not self.parts:
            return ()
        return tuple(
            (part, best, best >= threshold)
            for part, best in zip(self.parts, self.part_best, strict=True)
        )

    def part_answering(self, threshold: float) -> tuple[tuple[tuple[str, float], ...], ...]:
        """For a multi-part question, each part's (id, score) scoring at least ``threshold``
        for that part, best first; empty for a question of one part."""
        return tuple(
            tuple(
                (i, s)
                for i, s in sorted(part.items(), key=lambda item: (-item[1], item[0]))
                if s >= threshold
            )
            for part in self.by_part
        )


def needs_scores(decision: SufficiencyDecision, options: AnswerabilityOptions) -> bool:
    """Whether the model must score this request's evidence under ``options.mode``.

    Every mode but ``off`` scores every question (``shadow``, ``veto``, ``both`` and ``model``
    may change or report any decision), except ``rescue``: it can only overrule a refusal for
    words alone in a question that names no section, so it scores nothing else and the
    response carries no score for those questions.
    """
    if options.mode is AnswerabilityMode.OFF:
        return False
    if options.mode is AnswerabilityMode.RESCUE:
        return (
            not decision.sufficient
            and decision.failed in RESCUABLE
            and not unrelated_to_evidence(decision)
            and not decision.key_terms.sections
        )
    return True


# Passages per model call. The request's deadline and cancellation are checked between calls
# (``Stop``), so a request whose caller has gone costs at most one call's time more: 8 passages,
# about 50 ms on one thread (every pair runs alone, so slicing changes no score).
SCORE_SLICE = 8


def _sliced(
    score: Callable[[str, Sequence[str]], list[_Row]],
    question: str,
    texts: Sequence[str],
    stop: Stop | None,
) -> list[_Row]:
    """``score(question, texts)``, ``SCORE_SLICE`` passages a call, checking ``stop`` before
    each call (``DeadlineExceededError`` once the deadline has passed or the call was
    cancelled)."""
    rows: list[_Row] = []
    for start in range(0, len(texts), SCORE_SLICE):
        if stop is not None:
            stop.check("answerability")
        rows.extend(score(question, texts[start : start + SCORE_SLICE]))
    return rows


def score_evidence(
    scorer: AnswerabilityScorer,
    question: str,
    evidence: Sequence[ScoredChunk],
    parts: Sequence[str] = (),
    *,
    stop: Stop | None = None,
) -> AnswerabilityScores:
    """Score every evidence chunk against the question, or against each of its ``parts`` when
    there are two or more (``question.question_parts``), each read as the question it asks
    (``conversation.asked_question``: "Define X." as "What is X?"). With ``stop``, the
    scoring ends with ``DeadlineExceededError`` between model calls once the request's
    deadline has passed or the request was cancelled (it runs in a worker thread, which
    nothing else can stop)."""
    ids = [s.chunk.semantic_id for s in evidence]
    texts = [passage_text(s.chunk, scorer.passage_format) for s in evidence]
    asked = list(parts) if len(parts) > 1 else [question]
    holding = part_holders(asked, evidence) if len(asked) > 1 else [None]
    by_id: dict[str, float] = {}
    by_part: list[dict[str, float]] = []
    for part, holders in zip(asked, holding, strict=True):
        # The model reads a request as the question it asks (rule AU): it was trained on
        # questions. Reports keep the part as written.
        values = _sliced(scorer.score, asked_question(part), texts, stop)
        own: dict[str, float] = {}
        for semantic_id, value in zip(ids, values, strict=True):
            if holders is not None and semantic_id not in holders:
                value = 0.0  # rule AP: the part's own words are elsewhere in the evidence
            by_id[semantic_id] = max(value, by_id.get(semantic_id, 0.0))
            own[semantic_id] = max(value, own.get(semantic_id, 0.0))
        by_part.append(own)
    if len(asked) == 1:
        return AnswerabilityScores(scorer.name, by_id)
    return AnswerabilityScores(scorer.name, by_id, tuple(by_part), tuple(asked))


def part_holders(
    parts: Sequence[str], evidence: Sequence[ScoredChunk]
) -> list[frozenset[str] | None]:
    """For each part of a multi-part question, the ids of the evidence chunks that may answer
    it (rule AP): those holding one of the part's own key terms (its terms no other part has,
    read as the keyword rules read a chunk: ``key_terms.holds`` over ``chunk_stems``), or None
    (any chunk, the model alone deciding) when the part has no own term or no chunk holds one.
    "What are the punishments for bribery?" is not answered by s.384's punishment of extortion,
    which the model scores 0.997 for it, while s.171B holds "bribery"."""
    terms = [set(extract_key_terms(part).effective) for part in parts]
    stems = [(s.chunk.semantic_id, chunk_stems(s.chunk), chunk_section(s.chunk)) for s in evidence]
    holding: list[frozenset[str] | None] = []
    for index, wanted in enumerate(terms):
        own = wanted.difference(*(t for n, t in enumerate(terms) if n != index))
        holders = frozenset(
            semantic_id
            for semantic_id, words, section in stems
            if any(holds(term, words, frozenset({section})) for term in own)
        )
        holding.append(holders or None)
    return holding


@dataclass(frozen=True, slots=True)
class StatementReading:
    """A claim's scores, the model's verdict, and the chunk that states it best (for STATED,
    which the validator then checks the claim against)."""

    scores: AnswerabilityScores
    verdict: StatementVerdict
    stating: ScoredChunk | None = None


def score_statement(
    scorer: StatementScorer,
    claim: str,
    evidence: Sequence[ScoredChunk],
    stated_at: float,
    *,
    stop: Stop | None = None,
) -> StatementReading:
    """Score every evidence chunk against a claim (as ``score_evidence`` does, the score and
    the verdict from the same model calls, and stopping as it does) and read the model's
    verdict: STATED when the best P(entailment) reaches ``stated_at`` and is above every
    chunk's P(contradiction), UNDECIDED otherwise."""
    ids = [s.chunk.semantic_id for s in evidence]
    texts = [passage_text(s.chunk, scorer.passage_format) for s in evidence]
    rows = _sliced(scorer.label_scores, claim, texts, stop)
    by_id = {i: score for i, (score, _, _) in zip(ids, rows, strict=True)}
    scores = AnswerabilityScores(scorer.name, by_id)
    if not rows:
        return StatementReading(scores, StatementVerdict.UNDECIDED)
    best = max(range(len(rows)), key=lambda n: rows[n][1])
    entails = rows[best][1]
    contradicts = max(c for _, _, c in rows)
    if entails >= stated_at and entails > contradicts:
        return StatementReading(scores, StatementVerdict.STATED, evidence[best])
    return StatementReading(scores, StatementVerdict.UNDECIDED)


def claim_citing(claim: str, chunk_id: str) -> str:
    """The claim as a one-sentence answer citing ``chunk_id``, for the validator to judge."""
    return f"{claim.strip().rstrip('.')} [{chunk_id}]."


def combine(
    decision: SufficiencyDecision, scores: AnswerabilityScores, options: AnswerabilityOptions
) -> SufficiencyDecision:
    """The keyword ``decision`` adjusted by the model's ``scores`` under ``options.mode``.

    The result records the best score and how the model changed the decision
    (``answerability_effect``: ``""``, ``"vetoed"`` or ``"rescued"``).
    """
    mode = options.mode
    noted = replace(
        decision,
        answerability=scores.best,
        answerability_model=scores.model,
        answerability_by_id=tuple(scores.by_id.items()),
        answerability_by_part=scores.part_answering(options.veto_below),
        answerability_parts=scores.part_report(options.veto_below),
    )
    if mode in (AnswerabilityMode.OFF, AnswerabilityMode.SHADOW):
        return noted
    if decision.key_terms.sections:
        # "What does section 302 say?": the named section's text answers it, which the section
        # rule already checks; the model never saw section numbers (chunk text has none) and
        # scores such questions low (0.11 for s.302's own text), so it decides nothing here.
        return noted
    if mode is AnswerabilityMode.MODEL:
        if decision.failed in STRUCTURAL or unrelated_to_evidence(decision):
            return noted
        answering = scores.at_least(options.veto_below)
        if not answering or scores.best < options.veto_below:
            return _refuse(noted, decided=decision.sufficient, requirement=options.requirement)
        return _answer(
            noted, answering, rescued=not decision.sufficient, requirement=options.requirement
        )
    if decision.sufficient:
        if mode.vetoes and scores.best < options.veto_below:
            return _refuse(noted, decided=True, requirement=options.requirement)
        return noted
    # A rescue threshold of 1.0 rescues nothing (no calibrated threshold is that high).
    if (
        mode.rescues
        and options.rescue_at < 1.0
        and decision.failed in RESCUABLE
        and not unrelated_to_evidence(decision)
    ):
        answering = scores.at_least(options.rescue_at)
        if answering and scores.best >= options.rescue_at:  # every part answered
            return _answer(noted, answering, rescued=True, requirement=options.requirement)
    return noted


def _refuse(
    decision: SufficiencyDecision,
    *,
    decided: bool,
    requirement: Requirement = Requirement.ANSWERING_SENTENCE,
) -> SufficiencyDecision:
    checked = (*decision.requirements, requirement)
    return replace(
        decision,
        sufficient=False,
        failed=requirement,
        requirements=checked,
        supporting_ids=(),
        answerability_effect="vetoed" if decided else "",
    )


def _answer(
    decision: SufficiencyDecision,
    answering: tuple[str, ...],
    *,
    rescued: bool,
    requirement: Requirement = Requirement.ANSWERING_SENTENCE,
) -> SufficiencyDecision:
    checked = (*decision.requirements, requirement)
    relevant = tuple(dict.fromkeys((*decision.relevant_ids, *answering)))
    return replace(
        decision,
        sufficient=True,
        failed=None,
        requirements=checked,
        relevant_ids=relevant,
        supporting_ids=answering,
        answerability_effect="rescued" if rescued else "",
    )


# The judge tier (issue 17): a question whose best P(answers) is inside this band is asked
# about, when a judge is configured. It straddled model v1's veto threshold (0.41) and sends
# 4.5-10 % of the dev sets' questions (docs/JUDGE.md, "Choosing the band").
DEFAULT_JUDGE_BAND = Band(0.3, 0.6)
# The passages sent to the judge with a question: the best-scoring ones.
JUDGE_PASSAGES = 5


def needs_judge(
    keyword: SufficiencyDecision,
    scores: AnswerabilityScores,
    options: AnswerabilityOptions,
    band: Band,
) -> bool:
    """Whether the model left this question uncertain enough to ask the judge.

    Only where the model decides (a mode other than off and shadow), never for a question
    naming a section (the model does not decide those) or a structural refusal (no evidence,
    a named section or term missing: no judge can make absent evidence present).
    """
    if options.mode in (AnswerabilityMode.OFF, AnswerabilityMode.SHADOW):
        return False
    if keyword.key_terms.sections or keyword.failed in STRUCTURAL or unrelated_to_evidence(keyword):
        return False
    return bool(scores.by_id) and band.contains(scores.best)


def judge_item(question: str, evidence: Sequence[ScoredChunk], scores: AnswerabilityScores) -> Item:
    """The question and its ``JUDGE_PASSAGES`` best-scoring passages, in score order."""
    texts = {s.chunk.semantic_id: s.chunk.text for s in evidence}
    ranked = scores.at_least(0.0)[:JUDGE_PASSAGES]
    return Item(question, tuple((i, texts[i]) for i in ranked if i in texts))


def judged(decision: SufficiencyDecision, item: Item, verdict: Verdict) -> SufficiencyDecision:
    """``decision`` (the model's) settled by the judge: a yes answers with the passages it
    saw, anything else refuses (fail closed). ``answerability_effect`` says which."""
    noted = replace(decision, judge_model=verdict.model, judge_score=verdict.score)
    if verdict.outcome is Outcome.YES:
        if decision.sufficient:
            return replace(noted, answerability_effect="judge_confirmed")
        answering = tuple(i for i, _ in item.evidence)
        return replace(
            _answer(noted, answering, rescued=True), answerability_effect="judge_rescued"
        )
    effect = {
        Outcome.NO: "judge_refused",
        Outcome.UNAVAILABLE: "judge_unavailable",
        Outcome.BUDGET_EXHAUSTED: "judge_budget_exhausted",
    }[verdict.outcome]
    return replace(_refuse(noted, decided=False), answerability_effect=effect)


# Effects under which the generator is told which passages answer (``answering``).
ANSWERING_EFFECTS = frozenset({"rescued", "judge_rescued"})
# The question is too long for the model's window: the keyword rules decided alone.
QUESTION_TOO_LONG = "question_too_long"


class AnswerabilityCheck:
    """The scorer, its options and the judge, shared by every pipeline of a process.

    The server loads the model at warm-up (``load``); until then, and when the mode is ``off``,
    ``ready`` is False. A pipeline with an enabled mode and no scorer fails the request
    (``ModelUnavailableError``) instead of deciding by keywords alone without saying so.
    """

    def __init__(
        self,
        options: AnswerabilityOptions | None = None,
        *,
        judge: Judge | None = None,
        band: Band = DEFAULT_JUDGE_BAND,
    ) -> None:
        self.options = options or AnswerabilityOptions()
        self.scorer: AnswerabilityScorer | None = None
        # The entailment model, for statements (``StatementCheck.ENTAILMENT``).
        self.statement_scorer: StatementScorer | None = None
        self.judge = judge
        self.band = band

    @property
    def enabled(self) -> bool:
        return self.options.enabled

    def encoders(self) -> list[OnnxCrossEncoder]:
        """The loaded models' encoders (what a self-check runs); none before loading."""
        return encoders_of(self.scorer, self.statement_scorer)

    def load(
        self,
        scorer: AnswerabilityScorer,
        options: AnswerabilityOptions,
        statement_scorer: StatementScorer | None = None,
    ) -> None:
        self.scorer, self.options = scorer, options
        self.statement_scorer = statement_scorer

"""Validation verdicts: the validator's domain result types (also read by the synthesis service)."""

from __future__ import annotations

import enum
from dataclasses import dataclass, field


class Verdict(enum.Enum):
    """Answer-level verdict."""

    GROUNDED = "grounded"
    REFUSAL = "refusal"
    NOT_GROUNDED = "not_grounded"


class SentenceVerdict(enum.Enum):
    """Sentence-level verdict."""

    SUPPORTED = "supported"
    EXEMPT = "exempt"  # meta-statements and the refusal need no citation
    UNSUPPORTED = "unsupported"


class Reason(enum.Enum):
    """Why a sentence (or the answer) got its verdict; stable codes for clients and metrics."""

    SUPPORTED = "SUPPORTED"
    META_STATEMENT = "META_STATEMENT"
    REFUSAL = "REFUSAL"
    NO_CITATION = "NO_CITATION"
    INVALID_CITATION = "INVALID_CITATION"
    MALFORMED_CITATION = "MALFORMED_CITATION"
    LOW_COVERAGE = "LOW_COVERAGE"
    NUMBER_MISMATCH = "NUMBER_MISMATCH"
    NEGATION_MISMATCH = "NEGATION_MISMATCH"
    MISSING_CITATION = "MISSING_CITATION"
    CITATION_IN_REFUSAL = "CITATION_IN_REFUSAL"
    EMPTY_ANSWER = "EMPTY_ANSWER"
    PENALTY_MISMATCH = "PENALTY_MISMATCH"
    ROLE_MISMATCH = "ROLE_MISMATCH"
    MODALITY_MISMATCH = "MODALITY_MISMATCH"
    LINK_MISMATCH = "LINK_MISMATCH"
    # Names an act none of its cited passages belongs to or names (rule 5b).
    ACT_MISMATCH = "ACT_MISMATCH"
    # Quotes part of a cited sentence and leaves out the exception or condition that limits it
    # (rule 6b).
    QUALIFIER_DROPPED = "QUALIFIER_DROPPED"
    UNSAFE_TEXT = "UNSAFE_TEXT"
    # Mostly in a script the rules and model do not read (language/script.py): not verified.
    UNREADABLE_SCRIPT = "UNREADABLE_SCRIPT"
    CONTRADICTED = "CONTRADICTED"
    NOT_ENTAILED = "NOT_ENTAILED"
    REFUSAL_IN_ANSWER = "REFUSAL_IN_ANSWER"
    # The judge tier (issue 17) decided a sentence the local tiers left uncertain.
    JUDGE_REJECTED = "JUDGE_REJECTED"
    JUDGE_UNAVAILABLE = "JUDGE_UNAVAILABLE"
    JUDGE_BUDGET_EXHAUSTED = "JUDGE_BUDGET_EXHAUSTED"


class Tier(enum.Enum):
    """The layers of checks, cheapest first; a report names those that ran and which decided."""

    CITATIONS = "citations"
    COVERAGE = "coverage"
    NUMBERS = "numbers"
    NEGATION = "negation"
    PENALTY = "penalty"
    ROLES = "roles"
    ENTAILMENT = "entailment"
    JUDGE = "judge"


# The tier each sentence reason belongs to (the one that decided a sentence with that reason).
TIER_OF_REASON: dict[Reason, Tier] = {
    Reason.SUPPORTED: Tier.COVERAGE,
    Reason.META_STATEMENT: Tier.CITATIONS,
    Reason.REFUSAL: Tier.CITATIONS,
    Reason.NO_CITATION: Tier.CITATIONS,
    Reason.INVALID_CITATION: Tier.CITATIONS,
    Reason.MALFORMED_CITATION: Tier.CITATIONS,
    Reason.MISSING_CITATION: Tier.CITATIONS,
    Reason.CITATION_IN_REFUSAL: Tier.CITATIONS,
    Reason.REFUSAL_IN_ANSWER: Tier.CITATIONS,
    Reason.EMPTY_ANSWER: Tier.CITATIONS,
    Reason.LOW_COVERAGE: Tier.COVERAGE,
    Reason.UNREADABLE_SCRIPT: Tier.COVERAGE,
    Reason.NUMBER_MISMATCH: Tier.NUMBERS,
    Reason.LINK_MISMATCH: Tier.NUMBERS,
    Reason.ACT_MISMATCH: Tier.NUMBERS,
    Reason.UNSAFE_TEXT: Tier.CITATIONS,
    Reason.NEGATION_MISMATCH: Tier.NEGATION,
    Reason.MODALITY_MISMATCH: Tier.NEGATION,
    Reason.QUALIFIER_DROPPED: Tier.NEGATION,
    Reason.PENALTY_MISMATCH: Tier.PENALTY,
    Reason.ROLE_MISMATCH: Tier.ROLES,
    Reason.CONTRADICTED: Tier.ENTAILMENT,
    Reason.NOT_ENTAILED: Tier.ENTAILMENT,
    Reason.JUDGE_REJECTED: Tier.JUDGE,
    Reason.JUDGE_UNAVAILABLE: Tier.JUDGE,
    Reason.JUDGE_BUDGET_EXHAUSTED: Tier.JUDGE,
}


@dataclass(frozen=True, slots=True)
class SupportSpan:
    """A supporting span inside an evidence chunk's text: ``text[char_start:char_end]``."""

    semantic_id: str
    char_start: int
    char_end: int


@dataclass(frozen=True, slots=True)
class MalformedCitation:
    """A bracketed token that looks like a citation but cannot be parsed or resolved."""

    token: str
    char_start: int
    char_end: int
    problem: str


@dataclass(frozen=True, slots=True)
class EntailmentScores:
    """The entailment model's probabilities for a sentence and the evidence that decided them.

    ``char_start``/``char_end`` locate the deciding evidence sentence (or window) inside the
    passage ``semantic_id``; ``windows`` counts the (evidence, claim) pairs judged, and
    ``split`` says a text was longer than the model's window and was judged in pieces.
    ``verbatim`` means the claim is an evidence sentence word for word (no model call).
    """

    entailment: float
    neutral: float
    contradiction: float
    semantic_id: str
    char_start: int
    char_end: int
    windows: int
    split: bool = False
    verbatim: bool = False


@dataclass(frozen=True, slots=True)
class JudgeDecision:
    """What the judge said of a sentence the local tiers left uncertain.

    ``outcome`` is ``services.common.judge.Outcome``'s value ("yes", "no", "unavailable",
    "budget_exhausted"); ``score`` is P(yes) from token log-probabilities, when the endpoint
    returns them; ``local_score`` is the local score that put the sentence in the band.
    """

    model: str
    outcome: str
    score: float | None = None
    cached: bool = False
    local_score: float | None = None


@dataclass(frozen=True, slots=True)
class SentenceReport:
    """Verdict for one answer sentence."""

    index: int
    text: str
    verdict: SentenceVerdict
    reason: Reason
    coverage: float
    cited_ids: tuple[str, ...] = ()
    invalid_ids: tuple[str, ...] = ()
    missing_ids: tuple[str, ...] = ()
    spans: tuple[SupportSpan, ...] = ()
    detail: str = ""
    entailment: EntailmentScores | None = None
    decided_by: Tier | None = None
    judge: JudgeDecision | None = None
    # Every rule an unsupported sentence broke, in the order ``reason`` is chosen by (``reason``
    # is the first); empty for a supported or exempt sentence.
    failed: tuple[Reason, ...] = ()


@dataclass(frozen=True, slots=True)
class ValidationOptions:
    """Thresholds and switches; defaults are the documented contract."""

    single_citation_threshold: float = 0.30
    multi_citation_threshold: float = 0.21
    check_numbers: bool = True
    check_negation: bool = True
    require_complete_citation: bool = True
    # MISSING_CITATION fires when an uncited item adds at least max(missing_min_terms,
    # ceil(missing_min_fraction * claim terms)) claim content terms the cited items lack.
    missing_min_terms: int = 2
    missing_min_fraction: float = 0.25
    check_penalties: bool = True
    # The offender a sentence names must be the one its cited statute names (validator.roles).
    check_roles: bool = True
    # The entailment tier runs when the server has it on and this is true. Thresholds left
    # None use the model's calibrated defaults (its manifest, or the server's configuration).
    check_entailment: bool = True
    entail_threshold: float | None = None
    contradiction_threshold: float | None = None
    # A sentence whose only cheap failure is LOW_COVERAGE (a paraphrase in other words) is
    # accepted when the model entails it with at least this probability.
    coverage_rescue_threshold: float | None = None
    # A premise whose P(contradiction) reaches this does not entail a sentence, whatever its
    # P(entailment) (None: the model's default, which may be none; 1 switches the veto off).
    contradiction_veto_threshold: float | None = None
    # The judge tier runs where the server has a judge configured and this is true; a sentence
    # whose local entailment score is in [judge_band_low, judge_band_high) is escalated
    # (None: the server's band).
    check_judge: bool = True
    judge_band_low: float | None = None
    judge_band_high: float | None = None


@dataclass(frozen=True, slots=True)
class ValidationReport:
    """Answer-level result; ``verdict`` is GROUNDED only when every rule passed."""

    verdict: Verdict
    reason: Reason
    support_score: float
    cited_ids: tuple[str, ...] = ()
    invalid_citations: tuple[str, ...] = ()
    malformed_citations: tuple[MalformedCitation, ...] = ()
    missing_citations: tuple[str, ...] = ()
    uncovered_sentences: tuple[int, ...] = ()
    sentences: tuple[SentenceReport, ...] = field(default_factory=tuple)
    tiers: tuple[Tier, ...] = ()
    entailment_model: str = ""
    judge_model: str = ""
    # Why the verdict, in words, for a person reading the response ("" when grounded).
    detail: str = ""
    # (stage, seconds) for each stage that ran: "rules" (the cheap tiers) and "entailment"
    # (the model), for the validator's metrics. Not part of the verdict, so not compared.
    stage_seconds: tuple[tuple[str, float], ...] = field(default=(), compare=False)

    @property
    def accepted(self) -> bool:
        """True when the answer may be delivered (grounded, or exactly the refusal)."""
        return self.verdict in (Verdict.GROUNDED, Verdict.REFUSAL)

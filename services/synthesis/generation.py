"""Generator contract: the request a generator receives, what it returns, and how it fails."""

from __future__ import annotations

import enum
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import NamedTuple, Protocol, runtime_checkable

from services.common.evidence import ScoredChunk
from services.common.intent import Intent
from services.common.language.key_terms import KeyTerms


class Turn(NamedTuple):
    """One conversation turn; ``role`` is ``"user"`` or ``"assistant"``."""

    role: str
    text: str


@dataclass(frozen=True, slots=True)
class GenerationRequest:
    """Everything a generator may use to draft an answer.

    ``evidence`` is numbered 1..n in this order: compact citations ``[1-3]`` in a draft refer
    to these positions. ``focus_question`` is the question with follow-up context folded in
    (equal to ``question`` when the question stands alone). ``compared`` names what a
    comparison question compares, so that a generator can address each (see comparison.py).
    """

    question: str
    evidence: tuple[ScoredChunk, ...]
    intent: Intent
    focus_question: str = ""
    history: tuple[Turn, ...] = ()
    synthesis_mode: bool = False
    # The terms a comparison question compares ("theft", "extortion"); empty otherwise.
    compared: tuple[str, ...] = ()
    # The ids the answerability model found answering when it overruled the keyword rules
    # (answerability.py): a generator should draw on those even if they share no word with the
    # question.
    answering: tuple[str, ...] = ()
    # Each evidence chunk's P(answers) from the answerability model, when it scored the request
    # (semantic id -> score); empty when it did not run.
    answer_scores: Mapping[str, float] = field(default_factory=dict)
    # For a multi-part question, each part's answering chunks (semantic id -> P(answers) for
    # that part, at least the model's threshold), in the parts' order; empty otherwise.
    part_answers: tuple[Mapping[str, float], ...] = ()
    # What the answer must address, as the request's QuestionAnalysis found it (its
    # ``answer_terms``); None: a generator that needs them extracts them itself.
    key_terms: KeyTerms | None = None


@dataclass(frozen=True, slots=True)
class TokenUsage:
    """Token counts reported by an LLM endpoint."""

    prompt_tokens: int
    completion_tokens: int
    total_tokens: int


@dataclass(frozen=True, slots=True)
class GenerationResult:
    """A draft answer; it is not deliverable until the validator accepts it."""

    text: str
    generator: str
    model: str = ""
    usage: TokenUsage | None = None
    finish_reason: str = "stop"


class GenerationFailure(enum.Enum):
    """Stable reason codes for a generation that produced no usable draft."""

    LLM_TIMEOUT = "LLM_TIMEOUT"
    LLM_HTTP_ERROR = "LLM_HTTP_ERROR"
    LLM_UNREACHABLE = "LLM_UNREACHABLE"
    LLM_MALFORMED_OUTPUT = "LLM_MALFORMED_OUTPUT"
    LLM_TRUNCATED = "LLM_TRUNCATED"
    LLM_STREAM_INTERRUPTED = "LLM_STREAM_INTERRUPTED"


class GenerationError(Exception):
    """A generator could not produce a draft; the pipeline turns this into a refusal.

    Not a ``GroundedError``: it never leaves the synthesis pipeline, which answers with the
    refusal sentence and ``REFUSED_GENERATION_FAILED`` instead. Messages must never carry
    credentials.
    """

    def __init__(self, failure: GenerationFailure, message: str) -> None:
        super().__init__(f"{failure.value}: {message}")
        self.failure = failure
        self.message = message

    @property
    def reason(self) -> str:
        """The stable reason code (``LLM_TIMEOUT`` ...)."""
        return self.failure.value


@runtime_checkable
class Generator(Protocol):
    """Drafts an answer from evidence. ``name`` selects it in a request's generator override."""

    @property
    def name(self) -> str:
        """Short stable name (``extractive``, ``openai``)."""
        ...

    async def generate(self, request: GenerationRequest, *, timeout_s: float) -> GenerationResult:
        """Draft an answer within ``timeout_s`` seconds or raise ``GenerationError``."""
        ...


# Receives each piece of draft text as the generator produces it (StreamAnswer).
TextSink = Callable[[str], None]


@runtime_checkable
class IncrementalGenerator(Generator, Protocol):
    """A generator that can hand over its draft piece by piece while it is being produced.

    StreamAnswer validates each sentence as soon as it is complete; a generator without this
    (the extractive one drafts in milliseconds) is streamed from its finished draft.
    """

    async def generate_incrementally(
        self, request: GenerationRequest, *, timeout_s: float, on_text: TextSink
    ) -> GenerationResult:
        """``generate``, calling ``on_text`` with each new piece of the draft as it arrives;
        the pieces joined are the draft before the final strip."""
        ...

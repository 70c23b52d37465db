"""Synthesis pipeline: retrieve, check sufficiency, generate, validate; only validated text leaves.

    request -> retrieve -> sufficiency -> generate (temperature 0) -> resolve [1-3] -> validate
                 |              |                |                                     |
      errors propagate     insufficient:   GenerationError:                      rejected:
      (UNAVAILABLE /       REFUSAL, the    REFUSAL,                              REFUSAL + report,
      DEADLINE_EXCEEDED)   generator is    REFUSED_GENERATION_FAILED             REFUSED_VALIDATION_
                           never called                                          FAILED

The answer is always either text the validator accepted, byte for byte, or exactly ``REFUSAL``.
"""

from __future__ import annotations

import asyncio
import contextlib
import copy
import enum
import logging
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Final, Protocol, TypeVar

from services.common.budget import bounded, budget, in_thread
from services.common.errors import (
    DeadlineExceededError,
    DependencyTimeoutError,
    DependencyUnavailableError,
    ModelUnavailableError,
    TooLongForModelError,
    Violations,
)
from services.common.evidence import MAX_ANSWER_BYTES, Chunk, ScoredChunk, StageSkip
from services.common.intent import Intent
from services.common.judge import Task
from services.common.language.citations import resolve_positions
from services.common.language.key_terms import KeyTerms
from services.common.language.names import names_beyond_question
from services.common.language.text import NOT_BLANK, is_blank, normalise_query
from services.common.metrics import STAGE_SECONDS
from services.common.refusal import REFUSAL
from services.common.tracing import annotate, stage_span
from services.common.validation import SentenceVerdict, ValidationReport, Verdict
from services.synthesis.answerability import (
    ANSWERING_EFFECTS,
    QUESTION_TOO_LONG,
    AnswerabilityCheck,
    StatementCheck,
    StatementVerdict,
    claim_citing,
    combine,
    judge_item,
    judged,
    needs_judge,
    needs_scores,
    score_evidence,
    score_statement,
)
from services.synthesis.comparison import (
    Comparison,
    assess_comparison,
    interleave,
    take_turns,
)
from services.synthesis.completion import complete_evidence
from services.synthesis.generation import (
    GenerationError,
    GenerationFailure,
    GenerationRequest,
    GenerationResult,
    Generator,
    IncrementalGenerator,
    TextSink,
    TokenUsage,
    Turn,
)
from services.synthesis.holdings import Holdings
from services.synthesis.limits import (
    DEFAULT_TOP_K,
    GENERATION_TIMEOUT_S,
    MAX_PART_PASSAGES,
    MAX_QUESTION_CHARS,
    MAX_QUESTION_PARTS,
    MAX_RETRIEVAL_QUERY_CHARS,
    MAX_TOP_K,
    RETRIEVAL_TIMEOUT_S,
    VALIDATION_TIMEOUT_S,
)
from services.synthesis.prompt import group_by_document, is_synthesis_mode, source_documents
from services.synthesis.question import QuestionAnalysis, analyse_question, recent_turns
from services.synthesis.routing import GeneratorPool, log_not_offered, not_offered
from services.synthesis.sources import SourceRelation, relate
from services.synthesis.sufficiency import (
    Requirement,
    SufficiencyDecision,
    SufficiencyOptions,
    assess_sufficiency,
    explain_absent,
)

logger = logging.getLogger(__name__)

_T = TypeVar("_T")

SNIPPET_CHARS = 200


class SynthesisStatus(enum.Enum):
    """Outcome of one request; every status but ANSWERED carries exactly ``REFUSAL``."""

    ANSWERED = "ANSWERED"
    REFUSED_INSUFFICIENT_EVIDENCE = "REFUSED_INSUFFICIENT_EVIDENCE"
    REFUSED_VALIDATION_FAILED = "REFUSED_VALIDATION_FAILED"
    REFUSED_GENERATION_FAILED = "REFUSED_GENERATION_FAILED"


@dataclass(frozen=True, slots=True)
class RetrievedEvidence:
    """What the retrieval service returned: ranked chunks, its intent, cache use, stage timings."""

    chunks: Sequence[ScoredChunk]
    intent: Intent | None = None
    cache_hit: bool = False
    timings_ms: Mapping[str, float] = field(default_factory=dict)
    # The version of the index that served the search ("" from a retriever that gives none).
    index_version: str = ""
    # The stages the search asked for that retrieval skipped, and why (the rerank, past the
    # deadline or for a query too long for its model).
    skipped: Mapping[str, StageSkip] = field(default_factory=dict)
    # The query's key terms no passage of the corpus holds (retrieval's ``unknown_terms``).
    unknown_terms: Sequence[str] = ()


def joined_versions(results: Sequence[RetrievedEvidence]) -> str:
    """The index versions of one answer's searches: one, or several (sorted, comma-joined) only
    while replicas with differently built indexes serve (a rollout)."""
    return ",".join(sorted({r.index_version for r in results if r.index_version}))


class EvidenceRetriever(Protocol):
    """Retrieval client. Raises DependencyUnavailableError / DependencyTimeoutError on failure."""

    async def retrieve(
        self,
        query: str,
        *,
        top_k: int,
        acts: Sequence[str],
        doc_ids: Sequence[str],
        timeout_s: float,
    ) -> RetrievedEvidence:
        """The ``top_k`` best chunks for ``query``, optionally restricted to acts / documents."""
        ...


class IndexCatalogue(Protocol):
    """What the retrieval index holds (retrieval's ListDocuments). Raises
    DependencyUnavailableError / DependencyTimeoutError on failure."""

    async def holdings(self, *, timeout_s: float) -> Holdings:
        """Every act the index holds and the provisions it holds text of."""
        ...


class AnswerValidator(Protocol):
    """Validator client. Raises DependencyUnavailableError / DependencyTimeoutError on failure."""

    async def validate(
        self, answer: str, evidence: Sequence[Chunk], *, timeout_s: float
    ) -> ValidationReport:
        """The validator's verdict on ``answer`` against ``evidence``."""
        ...


@dataclass(frozen=True, slots=True)
class SynthesisRequest:
    """One question. ``history`` holds earlier turns (oldest first); ``generator`` picks one by
    name (None = the default generator)."""

    question: str
    top_k: int = DEFAULT_TOP_K
    acts: tuple[str, ...] = ()
    doc_ids: tuple[str, ...] = ()
    history: tuple[Turn, ...] = ()
    generator: str | None = None


@dataclass(frozen=True, slots=True)
class PipelineSettings:
    """Per-stage time limits (each call gets ``min(remaining deadline, limit)``) and knobs."""

    retrieval_timeout_s: float = RETRIEVAL_TIMEOUT_S
    generation_timeout_s: float = GENERATION_TIMEOUT_S
    validation_timeout_s: float = VALIDATION_TIMEOUT_S
    max_top_k: int = MAX_TOP_K
    max_question_chars: int = MAX_QUESTION_CHARS
    # A multi-part question's parts, and parts x top_k (limits.py): each part is retrieved and
    # scored against every evidence passage, so both bound one request's work.
    max_question_parts: int = MAX_QUESTION_PARTS
    max_part_passages: int = MAX_PART_PASSAGES
    history_turns: int = 4
    sufficiency: SufficiencyOptions = field(default_factory=SufficiencyOptions)
    # Retrieval is asked for at least this many passages. The request's ``top_k`` best are the
    # evidence, but when they cannot answer and a passage ranked below them can, that passage
    # replaces the lowest-ranked one ("What is theft under the Indian Penal Code?" ranks the
    # defining s.378 seventh). 0 = exactly ``top_k``. 20 since 2026-11-26 (was 10), with
    # ``promote_named``: docs/EVALUATION.md, "A candidate the evidence names".
    candidate_pool: int = 20
    max_promoted: int = 2
    # A second retrieval ("hop") for a question the first passage does not finish: the
    # question plus the first passage's text, so a bridge entity the first passage names
    # ("... directed by John Smith") pulls in its own document. Its best passage from a
    # document not already among the first ``top_k - 1`` takes the last evidence slot.
    # Comparisons (one retrieval per compared term already) never take a second hop.
    second_hop: bool = False
    # A candidate ranked below the first ``top_k`` whose document an evidence passage names by
    # its title (and the question does not) takes the last evidence slot: the second hop's
    # bridge, found in the candidates already retrieved (services/common/language/names.py).
    promote_named: bool = True
    # A multi-part question ("How is X punished, and how is Y punished?") is also retrieved
    # once per part, and the parts' rankings take turns for the evidence slots, so each part
    # can find its own answering passage (the answerability check refuses a question one of
    # whose parts has none). Such a question takes no second hop, and no passage is promoted
    # into its evidence for the whole question's words (that would push a part's out).
    part_retrieval: bool = True
    # The evidence is completed from the pool (completion.py): a section the question names
    # brings its operative text, a statute list's passage brings the whole list. Either can
    # make the evidence longer than ``top_k``.
    operative_text: bool = True
    whole_lists: bool = True


@dataclass(frozen=True, slots=True)
class Citation:
    """One cited evidence sentence with its provenance.

    ``text`` is the exact evidence sentence, ``snippet`` at most 200 characters of it, and
    ``answer_sentences`` the 0-based indices of the answer sentences that cite it.
    """

    semantic_id: str
    doc_id: str
    text: str
    snippet: str
    act: str
    section: str
    sentence_index: int
    url: str
    score: float
    answer_sentences: tuple[int, ...] = ()
    # The sentence's span in its document's full text, and a stable act/section locator.
    char_start: int = 0
    char_end: int = 0
    locator: str = ""
    # 1-based page of the sentence in its source file (a PDF); 0 when it has no pages.
    page: int = 0


@dataclass(frozen=True, slots=True)
class DocumentCitations:
    """The citations of one source document (documents in order of first citation, each one's
    citations in document order). ``page`` and ``extra`` are the source's as its first cited
    sentence carries them (a PDF is one document over many pages: each citation has its own)."""

    doc_id: str
    title: str
    act: str
    act_name: str
    section: str
    url: str
    citations: tuple[Citation, ...]
    chapter: str = ""
    chapter_title: str = ""
    page: int = 0
    extra: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class SynthesisResult:
    """The pipeline's answer. ``answer`` is validated text or exactly ``REFUSAL``.

    ``refusal_code`` is a stable UPPER_SNAKE code (``INSUFFICIENT_EVIDENCE``, ``LLM_TIMEOUT``,
    ``VALIDATION_FAILED`` ...) and ``refusal_reason`` a sentence; both are "" when answered.
    ``validation`` is None when validation did not run; ``evidence`` is the list the generator
    saw (compact citation ``[n]`` is ``evidence[n-1]``).
    """

    status: SynthesisStatus
    answer: str
    refusal_code: str
    refusal_reason: str
    sufficiency: SufficiencyDecision
    intent: Intent
    evidence: tuple[ScoredChunk, ...]
    citations: tuple[DocumentCitations, ...] = ()
    validation: ValidationReport | None = None
    timings_ms: Mapping[str, float] = field(default_factory=dict)
    usage: TokenUsage | None = None
    synthesis_mode: bool = False
    # Retrieval's stages that the search asked for and retrieval skipped, named as in
    # timings_ms ("retrieval.rerank"), with why.
    skipped_stages: Mapping[str, StageSkip] = field(default_factory=dict)
    source_doc_count: int = 0
    generator: str = ""
    model: str = ""
    retrieval_query: str = ""
    # How many of the request's history turns were read (the last ones, at most history_turns).
    history_turns_used: int = 0
    cache_hit: bool = False
    # The retrieval index the evidence came from (RetrievePassagesResponse.index_version).
    index_version: str = ""
    # The draft as written when it cited by position ([1-3]); "" otherwise, and for refusals.
    compact_answer: str = ""
    # In synthesis mode, how the cited passages of different documents relate (sources.py):
    # the same statement, or a number or negation on which they differ; () otherwise.
    source_relations: tuple[SourceRelation, ...] = ()
    # Whether the input was read as a statement (a claim to check), not a question.
    statement: bool = False

    @property
    def answered(self) -> bool:
        """True when ``answer`` is a validated answer rather than the refusal."""
        return self.status is SynthesisStatus.ANSWERED


# --- pipeline ------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Prepared:
    """A request after steps 1–3: what drafting needs, or the refusal it ended in."""

    base: ResultBuilder
    generator: Generator
    generation: GenerationRequest | None
    refusal: SynthesisResult | None

    @property
    def timings(self) -> dict[str, float]:
        return self.base.timings

    @property
    def evidence_ids(self) -> list[str]:
        """The evidence ids in order: compact citation ``[n]`` is the n-th."""
        return [s.chunk.semantic_id for s in self.base.evidence]


@dataclass
class _HeldCache:
    """The last holdings read (``SynthesisPipeline._holdings``), and the lock that lets one
    request read them while others wait."""

    holdings: Holdings | None = None
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)


class SynthesisPipeline:
    """request → retrieve → sufficiency → generate → resolve citations → validate → result.

    Fails closed: retrieval and validation errors propagate (never an unvalidated answer);
    generator failures, insufficient evidence and rejected drafts become the refusal.
    ``generator`` is the default generator, and ``generators`` adds generators a request may
    select by name; or ``generator`` is a ``GeneratorPool`` that also holds generators for
    caller-chosen models, leased per request with ``lease(model)``.
    """

    def __init__(
        self,
        retriever: EvidenceRetriever,
        validator: AnswerValidator,
        generator: Generator | GeneratorPool,
        settings: PipelineSettings | None = None,
        *,
        generators: Sequence[Generator] = (),
        answerability: AnswerabilityCheck | None = None,
        catalogue: IndexCatalogue | None = None,
    ) -> None:
        self._retriever = retriever
        # What the index holds, read once per index version (``_holdings``); without a
        # catalogue, questions about acts and provisions are judged on the evidence alone.
        self._catalogue = catalogue
        self._held = _HeldCache()  # shared with the views ``lease`` hands out
        self._answerability = answerability or AnswerabilityCheck()
        self._validator = validator
        if isinstance(generator, GeneratorPool):
            if generators:
                raise ValueError("generators come from the pool")
            self._pool = generator
        else:
            self._pool = GeneratorPool([generator, *generators])
        self._default_name = self._pool.default.name
        # The generators this request's model selects; ``lease`` hands out a view with others.
        self._generators: Mapping[str, Generator] = self._pool.configured
        self._settings = settings or PipelineSettings()

    @property
    def generator_names(self) -> tuple[str, ...]:
        """Names a request's ``generator`` field may use."""
        return tuple(self._generators)

    @contextlib.asynccontextmanager
    async def lease(self, model: str) -> AsyncIterator[SynthesisPipeline]:
        """This pipeline drawing on the generators for ``model`` ("" = the configured model),
        which stay open until the block exits. Nothing else differs: retriever, validator,
        answerability check and settings are this pipeline's own."""
        async with self._pool.lease(model) as chosen:
            if chosen is self._generators:
                yield self
                return
            view = copy.copy(self)
            view._generators = chosen
            yield view

    async def answer(
        self, request: SynthesisRequest, *, deadline: float | None = None
    ) -> SynthesisResult:
        """Answer ``request`` by ``deadline`` (a ``time.monotonic()`` value; None = no deadline).

        Raises InvalidInputError for a bad request, DeadlineExceededError when the deadline runs
        out, and lets the retriever's / validator's DependencyError through.
        """
        prepared = await self.prepare(request, deadline)
        if prepared.refusal is not None:
            return prepared.refusal
        drafted = await self.draft(prepared, deadline)
        if isinstance(drafted, SynthesisResult):
            return drafted
        report = await self.validate(drafted, prepared.base.evidence, deadline, prepared.timings)
        return verdict(prepared.base, drafted, report)

    async def prepare(self, request: SynthesisRequest, deadline: float | None) -> Prepared:
        """Steps 1–3: check the request, analyse the question, retrieve, judge the evidence.

        ``refusal`` is set when the evidence is insufficient (nothing is generated then).
        """
        started = time.perf_counter()
        generator = self._check(request)
        timings: dict[str, float] = {}
        skipped: dict[str, StageSkip] = {}
        analysis = analyse_question(request.question, request.history, self._settings.history_turns)
        self._check_parts(analysis, request.top_k)

        results = await self._retrieve(analysis, request, deadline, timings)
        skipped.update({f"retrieval.{s}": why for s, why in results[0].skipped.items()})
        version = results[0].index_version
        holdings = None
        if _acts_to_look_up(analysis, results):
            holdings = await self._holdings(version, deadline)
        evidence, decision = self._assess(analysis, results, request.top_k, timings, holdings)
        if decision.failed is Requirement.SECTION_MATCH and not decision.unheld:
            decision = await self._explain_absent(analysis, decision, holdings, version, deadline)
        decision = await self._check_answerability(analysis, evidence, decision, timings, deadline)

        synthesis = is_synthesis_mode([s.chunk for s in evidence])
        # After the checks, which judge the top_k as before; the mode too is the top_k's.
        evidence = complete_evidence(
            evidence,
            [scored for result in results for scored in result.chunks],
            analysis.answer_terms.sections,
            operative=self._settings.operative_text,
            lists=self._settings.whole_lists,
            limit=self._settings.max_top_k,
        )
        if synthesis:
            evidence = group_by_document(evidence)
        base = ResultBuilder(
            sufficiency=decision,
            intent=analysis.intent,
            evidence=tuple(evidence),
            synthesis_mode=synthesis,
            source_doc_count=len(source_documents([s.chunk for s in evidence])),
            generator=generator.name,
            retrieval_query=analysis.retrieval_query,
            history_turns_used=len(recent_turns(request.history, self._settings.history_turns)),
            cache_hit=all(result.cache_hit for result in results),
            # Several only while replicas with differently built indexes serve (a rollout).
            index_version=joined_versions(results),
            timings=timings,
            started=started,
            skipped=skipped,
            statement=analysis.statement,
        )
        if not decision.sufficient:
            refusal = base.refuse(
                SynthesisStatus.REFUSED_INSUFFICIENT_EVIDENCE,
                "INSUFFICIENT_EVIDENCE",
                f"{decision.reason} ({decision.failed_code})"
                + (f' for "{decision.unsupported}"' if decision.unsupported else ""),
            )
            return Prepared(base, generator, None, refusal)
        generation = self._generation_request(analysis, request, base, decision)
        return Prepared(base, generator, generation, None)

    async def draft(
        self, prepared: Prepared, deadline: float | None, on_text: TextSink | None = None
    ) -> str | SynthesisResult:
        """Step 4: the draft with compact citations resolved, or the refusal a failed or
        declined generation ends in. With ``on_text`` an incremental generator hands over
        each piece of its draft as it arrives."""
        base, generator = prepared.base, prepared.generator
        assert prepared.generation is not None, "prepare() refused: nothing to draft"
        mark = time.perf_counter()
        try:
            with stage_span("generation", generator=generator.name):
                drafted = await self._generate(generator, prepared.generation, deadline, on_text)
        except GenerationError as error:
            _stage_done(base.timings, "generation", mark)
            return base.refuse(
                SynthesisStatus.REFUSED_GENERATION_FAILED, error.reason, error.message
            )
        _stage_done(base.timings, "generation", mark)
        base.usage, base.model = drafted.usage, drafted.model

        written = drafted.text.strip()
        text = resolve_positions(
            written, prepared.evidence_ids, [s.chunk.text for s in base.evidence]
        )
        if text != written:
            base.compact_answer = written
        size = len(text.encode())
        if size > MAX_ANSWER_BYTES:
            # Numbered citations resolved to ids can make a draft longer than the validator
            # reads; refused here as the draft's fault, never reported as the validator's.
            too_long = GenerationError(
                GenerationFailure.LLM_MALFORMED_OUTPUT,
                f"a draft of {size:,} bytes with its citations resolved, more than the "
                f"validator reads ({MAX_ANSWER_BYTES:,})",
            )
            return base.refuse(
                SynthesisStatus.REFUSED_GENERATION_FAILED, too_long.reason, too_long.message
            )
        if is_refusal(text):
            return base.refuse(
                SynthesisStatus.REFUSED_INSUFFICIENT_EVIDENCE,
                "GENERATOR_DECLINED",
                "the generator found that the evidence does not answer the question",
            )
        return text

    async def _retrieve(
        self,
        analysis: QuestionAnalysis,
        request: SynthesisRequest,
        deadline: float | None,
        timings: dict[str, float],
    ) -> list[RetrievedEvidence]:
        """Step 1: one retrieval per query (the question, each compared term or, with
        ``part_retrieval``, each part of a multi-part question), concurrently."""
        settings = self._settings
        queries = analysis.queries + _part_queries(analysis, settings)
        pool = max(request.top_k, min(settings.candidate_pool, settings.max_top_k))
        mark = time.perf_counter()
        with stage_span("retrieval", queries=len(queries), pool=pool):
            results = await self._bounded(
                "retrieval",
                deadline,
                settings.retrieval_timeout_s,
                lambda timeout_s: self._retrieve_all(queries, request, pool, timeout_s),
            )
        _stage_done(timings, "retrieval", mark)
        for stage, ms in results[0].timings_ms.items():
            timings[f"retrieval.{stage}"] = ms
        if settings.second_hop and len(results) == 1 and results[0].chunks:
            results = [
                await self._second_hop(analysis, request, results[0], pool, deadline, timings)
            ]
        return results

    async def _second_hop(
        self,
        analysis: QuestionAnalysis,
        request: SynthesisRequest,
        first: RetrievedEvidence,
        pool: int,
        deadline: float | None,
        timings: dict[str, float],
    ) -> RetrievedEvidence:
        """Step 1b (``second_hop``): retrieve again with the question and the first passage;
        the best passage of a new document takes the last evidence slot."""
        query = hop_query(analysis.retrieval_query, first.chunks[0].chunk.text)
        mark = time.perf_counter()
        with stage_span("retrieval.second_hop", pool=pool):
            (second,) = await self._bounded(
                "retrieval",
                deadline,
                self._settings.retrieval_timeout_s,
                lambda timeout_s: self._retrieve_all((query,), request, pool, timeout_s),
            )
        _stage_done(timings, "retrieval.second_hop", mark)
        chunks = merge_hop(first.chunks, second.chunks, request.top_k)
        return replace(
            first,
            chunks=chunks,
            cache_hit=first.cache_hit and second.cache_hit,
            index_version=joined_versions((first, second)),
        )

    async def _holdings(self, index_version: str, deadline: float | None) -> Holdings | None:
        """What the index holds (None without a catalogue): read from retrieval once per index
        version, and again when a search reports another version (the index was rebuilt, or
        replicas in a rollout)."""
        if self._catalogue is None:
            return None
        cache = self._held
        async with cache.lock:
            held = cache.holdings
            if held is None or held.index_version != index_version:
                catalogue = self._catalogue
                held = await self._bounded(
                    "retrieval",
                    deadline,
                    self._settings.retrieval_timeout_s,
                    lambda timeout_s: catalogue.holdings(timeout_s=timeout_s),
                )
                cache.holdings = held
        return held

    async def _explain_absent(
        self,
        analysis: QuestionAnalysis,
        decision: SufficiencyDecision,
        holdings: Holdings | None,
        index_version: str,
        deadline: float | None,
    ) -> SufficiencyDecision:
        """A ``SECTION_MATCH`` refusal that names the sections the index holds no text of. The
        refusal stands whatever the holdings say, so a listing that fails leaves its general
        reason rather than failing the request."""
        try:
            held = holdings or await self._holdings(index_version, deadline)
        except (DependencyUnavailableError, DependencyTimeoutError) as exc:
            logger.warning("the index's holdings are not known: %s", exc)
            return decision
        return decision if held is None else explain_absent(decision, analysis.focus, held)

    def _assess(
        self,
        analysis: QuestionAnalysis,
        results: Sequence[RetrievedEvidence],
        top_k: int,
        timings: dict[str, float],
        holdings: Holdings | None = None,
    ) -> tuple[list[ScoredChunk], SufficiencyDecision]:
        """Step 2: the evidence (the ``top_k`` best, a supporting passage from below promoted
        into it when they cannot answer) and whether it is sufficient (keyword rules; with
        ``holdings``, a question about an act the index does not hold is refused)."""
        options = self._settings.sufficiency
        intent, comparison = analysis.intent, analysis.comparison
        candidates = _dedupe(_interleave(results, comparison, intent))
        if self._settings.promote_named and comparison is None and len(results) == 1:
            candidates = promote_named(analysis.focus, candidates, top_k)
        evidence = candidates[:top_k]
        acts = analysis.acts
        unheld = holdings is not None and bool(holdings.unheld(acts))
        mark = time.perf_counter()
        with stage_span("sufficiency", intent=intent.value):
            if comparison is not None and not unheld:
                # Each term's own ranking already put its passages among the first top_k.
                decision = assess_comparison(comparison, intent, evidence, options)
            else:
                terms = analysis.focus_terms

                def assess(passages: list[ScoredChunk]) -> SufficiencyDecision:
                    return assess_sufficiency(
                        analysis.focus,
                        intent,
                        passages,
                        options,
                        key_terms=terms,
                        holdings=holdings,
                        acts=acts,
                    )

                decision = assess(evidence)
                # A question retrieved per part already holds each part's best passages;
                # promoting the whole question's keyword match would push one part's out.
                if (
                    not decision.sufficient
                    and not decision.unheld
                    and len(candidates) > top_k
                    and len(results) == 1
                ):
                    evidence = promote_supporting(
                        analysis.focus,
                        intent,
                        candidates,
                        top_k,
                        options,
                        self._settings.max_promoted,
                        key_terms=terms,
                    )
                    decision = assess(evidence)
            said = tuple(dict.fromkeys(w for r in results for w in r.unknown_terms))
            if said:
                decision = replace(decision, unknown_words=said)
            annotate(sufficient=decision.sufficient, failed=decision.failed_code)
        _stage_done(timings, "sufficiency", mark)
        return evidence, decision

    async def _check_answerability(
        self,
        analysis: QuestionAnalysis,
        evidence: Sequence[ScoredChunk],
        decision: SufficiencyDecision,
        timings: dict[str, float],
        deadline: float | None,
    ) -> SufficiencyDecision:
        """Step 3 (when configured): the answerability model vetoes or rescues the decision,
        and a question it leaves uncertain goes to the judge (if there is one)."""
        check = self._answerability
        if not check.enabled or analysis.comparison is not None or decision.unheld:
            # A question about an act the index does not hold: no evidence of it can answer.
            return decision
        if check.scorer is None:
            # No manifest read yet, so no model name: the metadata names the role.
            raise ModelUnavailableError(
                "the answerability model is not loaded yet", metadata={"model": "answerability"}
            )
        if not needs_scores(decision, check.options):
            return decision
        scorer, options = check.scorer, check.options
        statement = analysis.statement
        if statement and options.statements is StatementCheck.KEYWORDS:
            return decision  # a claim to verify, left to the keyword rules by configuration
        by_entailment = statement and options.statements is StatementCheck.ENTAILMENT
        if by_entailment:
            # A claim is answerable when some evidence chunk entails it: the entailment model
            # scores it, against the statement thresholds (docs/SYNTHESIS.md, "Claims").
            if check.statement_scorer is None:
                raise ModelUnavailableError(
                    "the entailment model is not loaded yet", metadata={"model": "entailment"}
                )
            scorer, options = check.statement_scorer, options.for_statements()
        mark = time.perf_counter()
        stated = StatementVerdict.NONE
        with stage_span("answerability", mode=options.mode.value):
            try:
                if by_entailment and len(analysis.parts) <= 1:  # one claim: its verdict too
                    assert check.statement_scorer is not None
                    entails = check.statement_scorer
                    # In a worker thread, which stops between model calls once the deadline
                    # has passed or this call was cancelled: no model time for a caller gone.
                    reading = await in_thread(
                        deadline,
                        lambda stop: score_statement(
                            entails,
                            analysis.focus,
                            evidence,
                            options.rescue_at,  # the statement rescue threshold: "surely states it"
                            stop=stop,
                        ),
                    )
                    scores, stated = reading.scores, reading.verdict
                else:
                    answers = scorer
                    scores = await in_thread(
                        deadline,
                        lambda stop: score_evidence(
                            answers, analysis.focus, evidence, analysis.parts, stop=stop
                        ),
                    )
            except ModelUnavailableError as exc:
                # Which model failed, for the servicer's grounded_model_failures_total{model}.
                exc.metadata.setdefault("model", scorer.name)
                raise
            except TooLongForModelError as exc:
                # The model cannot read this question whole: the keyword rules decide alone,
                # and the response says so (the model itself is fine: no health change).
                logger.info("answerability skipped: %s", exc.message)
                annotate(effect=QUESTION_TOO_LONG)
                _stage_done(timings, "answerability", mark)
                return replace(decision, answerability_effect=QUESTION_TOO_LONG)
            keyword, decision = decision, combine(decision, scores, options)
            annotate(best=scores.best, effect=decision.answerability_effect)
        _stage_done(timings, "answerability", mark)
        if stated is StatementVerdict.STATED and reading.stating is not None:
            stated = await self._confirm_stated(analysis.focus, reading.stating, deadline, timings)
        if stated is not StatementVerdict.NONE:
            decision = replace(decision, statement_verdict=stated.value)
        # The judge's band is on P(answers): a statement the entailment model scored is not
        # escalated.
        if (
            check.judge is not None
            and not by_entailment
            and needs_judge(keyword, scores, options, check.band)
        ):
            mark = time.perf_counter()
            item = judge_item(analysis.focus, evidence, scores)
            with stage_span("judge", model=check.judge.model):
                remaining = (
                    check.judge.timeout_s if deadline is None else deadline - time.monotonic()
                )
                (verdict,) = await check.judge.judge(Task.ANSWERS, [item], timeout_s=remaining)
                decision = judged(decision, item, verdict)
                annotate(outcome=verdict.outcome.value)
            _stage_done(timings, "judge", mark)
        return decision

    async def _confirm_stated(
        self,
        claim: str,
        stating: ScoredChunk,
        deadline: float | None,
        timings: dict[str, float],
    ) -> StatementVerdict:
        """STATED stands only if the validator finds the claim, citing the passage that states
        it, GROUNDED (rule 37247e0): its number, negation, penalty and role checks see what the
        model alone misses. A validator that fails leaves the verdict UNDECIDED (a STATED
        nobody checked is never given), and the answer goes on to be validated as always."""
        mark = time.perf_counter()
        try:
            with stage_span("statement_check"):
                claimed = claim_citing(claim, stating.chunk.semantic_id)
                report = await self._ask_validator(claimed, [stating.chunk], deadline)
        except (DependencyUnavailableError, DependencyTimeoutError) as exc:
            logger.warning("statement check skipped: %s", exc)
            return StatementVerdict.UNDECIDED
        finally:
            _stage_done(timings, "statement_check", mark)
        grounded = report.verdict is Verdict.GROUNDED
        return StatementVerdict.STATED if grounded else StatementVerdict.UNDECIDED

    def _generation_request(
        self,
        analysis: QuestionAnalysis,
        request: SynthesisRequest,
        base: ResultBuilder,
        decision: SufficiencyDecision,
    ) -> GenerationRequest:
        """Step 4's input: what the generator sees."""
        turns = self._settings.history_turns
        comparison = analysis.comparison
        return GenerationRequest(
            question=analysis.question,
            evidence=base.evidence,
            intent=analysis.intent,
            focus_question=analysis.focus,
            history=recent_turns(request.history, turns),
            synthesis_mode=base.synthesis_mode,
            compared=comparison.terms if comparison is not None else (),
            answering=(
                decision.supporting_ids
                if decision.answerability_effect in ANSWERING_EFFECTS
                else ()
            ),
            key_terms=analysis.answer_terms,
            answer_scores=dict(decision.answerability_by_id),
            part_answers=tuple(dict(part) for part in decision.answerability_by_part),
        )

    async def validate(
        self,
        text: str,
        evidence: Sequence[ScoredChunk],
        deadline: float | None,
        timings: dict[str, float],
        *,
        stage: str = "validation",
    ) -> ValidationReport:
        """Step 5: the validator's verdict on ``text`` (its errors propagate: fail closed).
        ``stage``: ``validation.sentence`` for a streamed sentence checked on its own."""
        mark = time.perf_counter()
        with stage_span("validation"):
            report = await self._ask_validator(text, [s.chunk for s in evidence], deadline)
            annotate(verdict=report.verdict.value, support_score=report.support_score)
        _stage_done(timings, stage, mark)
        return report

    def _check(self, request: SynthesisRequest) -> Generator:
        settings = self._settings
        violations = Violations()
        question = request.question.strip()
        violations.check(not is_blank(question), "question", NOT_BLANK)
        violations.check(
            len(question) <= settings.max_question_chars
            and len(normalise_query(question)) <= settings.max_question_chars,
            "question",
            f"must be at most {settings.max_question_chars} characters, also once normalised "
            "(NFKC) as retrieval searches it",
        )
        violations.check(
            1 <= request.top_k <= settings.max_top_k,
            "top_k",
            f"must be between 1 and {settings.max_top_k}",
        )
        for index, turn in enumerate(request.history):
            violations.check(
                turn.role in ("user", "assistant"),
                f"history[{index}].role",
                "must be 'user' or 'assistant'",
            )
        name = request.generator or self._default_name
        if name not in self._generators:
            violations.add("generator", not_offered(name, self._generators))
            log_not_offered(name)
        violations.raise_if_any()
        return self._generators[name]

    def _check_parts(self, analysis: QuestionAnalysis, top_k: int) -> None:
        """A multi-part question is retrieved once per part and each part is scored against
        every evidence passage: at most ``max_question_parts`` parts, and parts x top_k at most
        ``max_part_passages``. Beyond either the request is refused whole (InvalidInputError
        naming the count and the limit), never answered for some of its parts."""
        settings = self._settings
        parts = len(analysis.parts)
        if analysis.asked <= 1:
            return
        # A follow-up that names nothing itself is split with the question it follows up.
        follow_up = analysis.focus != analysis.question
        asked = "with the earlier question it follows up, asks" if follow_up else "asks"
        violations = Violations()
        if analysis.asked > settings.max_question_parts:
            # Question sentences answered together count too: each asks a question. Only parts
            # are retrieved and checked one by one, so only then does the message say so.
            why = " (each is retrieved and checked on its own)" if parts >= analysis.asked else ""
            violations.add(
                "question",
                f"{asked} {analysis.asked} questions in one, more than the "
                f"{settings.max_question_parts} one request may ask{why}: ask them separately, "
                f"at most {settings.max_question_parts} per request",
            )
        elif parts * top_k > settings.max_part_passages:
            most = settings.max_part_passages // parts
            violations.add(
                "top_k",
                f"must be at most {most} for a question of {parts} parts (got {top_k}): each "
                "part is scored against every passage, and parts x top_k may be at most "
                f"{settings.max_part_passages}; lower top_k or ask the parts separately",
            )
        violations.raise_if_any()

    async def _retrieve_all(
        self, queries: Sequence[str], request: SynthesisRequest, top_k: int, timeout_s: float
    ) -> list[RetrievedEvidence]:
        """One retrieval per query, concurrently; the first failure cancels the others."""
        calls = [
            asyncio.ensure_future(
                self._retriever.retrieve(
                    query,
                    top_k=top_k,
                    acts=request.acts,
                    doc_ids=request.doc_ids,
                    timeout_s=timeout_s,
                )
            )
            for query in queries
        ]
        try:
            done, pending = await asyncio.wait(calls, return_when=asyncio.FIRST_EXCEPTION)
        except BaseException:  # our own limit or the caller's cancellation
            for call in calls:
                call.cancel()
            raise
        for call in pending:
            call.cancel()
        # Read every finished call's exception, so none is reported as never retrieved.
        failures = [c.exception() for c in calls if c in done and c.exception() is not None]
        if failures:
            raise failures[0]  # type: ignore[misc]
        return [call.result() for call in calls]

    async def _ask_validator(
        self, text: str, chunks: Sequence[Chunk], deadline: float | None
    ) -> ValidationReport:
        """The validator's verdict on ``text`` against ``chunks``, within the request's deadline
        and the validation limit (its errors propagate)."""
        return await self._bounded(
            "validator",
            deadline,
            self._settings.validation_timeout_s,
            lambda timeout_s: self._validator.validate(text, chunks, timeout_s=timeout_s),
        )

    async def _bounded(
        self,
        dependency: str,
        deadline: float | None,
        limit_s: float,
        call: Callable[[float], Awaitable[_T]],
    ) -> _T:
        """Run a dependency call with ``min(remaining, limit)``; enforce it even if it hangs."""
        return await bounded(dependency, deadline, limit_s, call)

    async def _generate(
        self,
        generator: Generator,
        request: GenerationRequest,
        deadline: float | None,
        on_text: TextSink | None = None,
    ) -> GenerationResult:
        seconds = budget(deadline, self._settings.generation_timeout_s, "generation")
        try:
            async with asyncio.timeout(seconds):
                if on_text is not None and isinstance(generator, IncrementalGenerator):
                    return await generator.generate_incrementally(
                        request, timeout_s=seconds, on_text=on_text
                    )
                return await generator.generate(request, timeout_s=seconds)
        except (TimeoutError, GenerationError) as error:
            # A caller that is gone gets DEADLINE_EXCEEDED, not a refusal it cannot read.
            if deadline is not None and time.monotonic() >= deadline:
                raise DeadlineExceededError("deadline exceeded during generation") from None
            if isinstance(error, GenerationError):
                raise
            late = f"no draft within {seconds:.3f}s"
            raise GenerationError(GenerationFailure.LLM_TIMEOUT, late) from None


def _ms_since(mark: float) -> float:
    return (time.perf_counter() - mark) * 1000.0


# The steps synthesis times, each observed in grounded_stage_seconds{service="synthesis"} when it
# ends and kept in the result's timings_ms (beside "total" and retrieval's own stages, copied as
# "retrieval.<stage>", which retrieval observes itself). A fixed set: a bounded metric label.
STAGES: Final = (
    "retrieval",
    "retrieval.second_hop",
    "sufficiency",
    "answerability",
    "statement_check",
    "judge",
    "generation",
    "validation",
    "validation.sentence",
)


def _acts_to_look_up(analysis: QuestionAnalysis, results: Sequence[RetrievedEvidence]) -> bool:
    """Whether the question asks about an act no retrieved passage is of: only then must the
    index's holdings say whether it holds that act (a passage's act is one it holds)."""
    found = {s.chunk.act for result in results for s in result.chunks}
    return any(act not in found for act in analysis.acts)


def _stage_done(timings: dict[str, float], stage: str, mark: float) -> None:
    """``stage`` ran from ``mark`` until now: its time goes into ``timings`` and the metric."""
    assert stage in STAGES, f"unknown stage {stage!r}"
    ms = _ms_since(mark)
    timings[stage] = ms
    STAGE_SECONDS.labels("synthesis", stage).observe(ms / 1000.0)


def promote_supporting(
    question: str,
    intent: Intent,
    candidates: Sequence[ScoredChunk],
    top_k: int,
    options: SufficiencyOptions,
    max_promoted: int,
    *,
    key_terms: KeyTerms | None = None,
) -> list[ScoredChunk]:
    """The ``top_k`` best candidates, with up to ``max_promoted`` supporting candidates ranked
    below them swapped in for the lowest-ranked ones (kept in retrieval order).

    Supporting means what the sufficiency check means: the passage holds the question's key
    terms and the intent's language. Without such a passage the first ``top_k`` are returned.
    """
    head = list(candidates[:top_k])
    pool = assess_sufficiency(question, intent, candidates, options, key_terms=key_terms)
    if not pool.sufficient:
        return head
    supporting = set(pool.supporting_ids)
    promoted = [s for s in candidates[top_k:] if s.chunk.semantic_id in supporting]
    promoted = promoted[: min(max_promoted, top_k)]
    if not promoted:
        return head
    return head[: top_k - len(promoted)] + promoted


def promote_named(
    question: str, candidates: Sequence[ScoredChunk], top_k: int
) -> list[ScoredChunk]:
    """The candidates, with the best one ranked below ``top_k`` whose document the first
    ``top_k`` name by its title (and ``question`` does not) moved into the last evidence slot;
    a document titled like one among them (another paragraph of the same article) does not
    count. Unchanged when there is none, or fewer than 2 slots."""
    if top_k < 2 or len(candidates) <= top_k:
        return list(candidates)
    head = candidates[:top_k]
    docs = {scored.chunk.doc_id for scored in head}
    titles = {scored.chunk.title for scored in head}
    text = " ".join(scored.chunk.text for scored in head)
    named = next(
        (
            scored
            for scored in candidates[top_k:]
            if scored.chunk.doc_id not in docs
            and names_beyond_question(text, scored.chunk.title, question, own_titles=titles)
        ),
        None,
    )
    if named is None:
        return list(candidates)
    rest = [s for s in candidates[top_k - 1 :] if s is not named]
    return [*head[: top_k - 1], named, *rest]


def _part_queries(analysis: QuestionAnalysis, settings: PipelineSettings) -> tuple[str, ...]:
    """The parts of a multi-part question, as extra queries (``part_retrieval``; a comparison
    retrieves per compared term instead)."""
    if settings.part_retrieval and analysis.comparison is None and len(analysis.parts) > 1:
        return analysis.parts
    return ()


def _interleave(
    results: Sequence[RetrievedEvidence], comparison: Comparison | None, intent: Intent
) -> list[ScoredChunk]:
    """The ranked chunks; for a comparison, each compared term's best passages come first; for
    a question retrieved per part, the parts' rankings take turns (the whole question's ranking
    only fills what they leave: its passages answer one part at best)."""
    if comparison is None:
        if len(results) == 1:
            return list(results[0].chunks)
        return take_turns([r.chunks for r in results[1:]]) + list(results[0].chunks)
    rankings = [r.chunks for r in results[1:]]
    return interleave(rankings, comparison.terms, results[0].chunks, intent)


def hop_query(question: str, passage: str, limit: int = MAX_RETRIEVAL_QUERY_CHARS) -> str:
    """The second hop's query: the question, then as much of the passage as fits ``limit``
    (cut at a word boundary: the question always goes whole, the passage is only a hint)."""
    # Both as retrieval searches them (NFKC can lengthen text: "ﬁ" is two characters).
    question, passage = normalise_query(question), normalise_query(passage)
    query = f"{question} {passage}"
    if len(query) <= limit:
        return query
    end = query[: limit + 1].rfind(" ")  # the last word that ends within the limit
    return query[:end] if end >= len(question) else question[:limit]


def merge_hop(
    first: Sequence[ScoredChunk], second: Sequence[ScoredChunk], top_k: int
) -> list[ScoredChunk]:
    """The first hop's ``top_k - 1`` best, then the second hop's best passage from a document
    not among them, then the rest of the first hop (the pool ``promote_supporting`` reads)."""
    head = list(first[: max(top_k - 1, 1)])
    seen = {s.chunk.doc_id for s in head}
    bridge = next((s for s in second if s.chunk.doc_id not in seen), None)
    if bridge is None:
        return list(first)
    rest = [s for s in first[len(head) :] if s.chunk.semantic_id != bridge.chunk.semantic_id]
    return [*head, bridge, *rest]


def _dedupe(chunks: Sequence[ScoredChunk]) -> list[ScoredChunk]:
    seen: set[str] = set()
    unique: list[ScoredChunk] = []
    for scored in chunks:
        if scored.chunk.semantic_id not in seen:
            seen.add(scored.chunk.semantic_id)
            unique.append(scored)
    return unique


def verdict(base: ResultBuilder, text: str, report: ValidationReport) -> SynthesisResult:
    """Step 6: the draft as the answer when the validator grounded it, else the refusal."""
    if report.verdict is Verdict.GROUNDED:
        return base.answered(text, report)
    if report.verdict is Verdict.REFUSAL:
        return base.refuse(
            SynthesisStatus.REFUSED_INSUFFICIENT_EVIDENCE,
            "GENERATOR_DECLINED",
            "the generator found that the evidence does not answer the question",
            report,
        )
    return base.refuse(
        SynthesisStatus.REFUSED_VALIDATION_FAILED,
        "VALIDATION_FAILED",
        _failed_validation(report),
        report,
    )


def _failed_validation(report: ValidationReport) -> str:
    """A refusal's words for a draft the validator rejected: its reason and the sentence that
    failed, never the draft's text (a client shows ``refusal_reason`` to people, and the draft is
    what was refused, markup included); ``validation.detail`` says why in full."""
    failed = next(
        (
            s
            for s in report.sentences
            if s.reason is report.reason and s.verdict is SentenceVerdict.UNSUPPORTED
        ),
        None,
    )
    where = f" (sentence {failed.index}; validation.detail says why)" if failed else ""
    return f"the draft failed validation: {report.reason.value}{where}"


def is_refusal(text: str) -> bool:
    """The draft is the refusal sentence (ignoring case, spacing and final punctuation)."""

    def norm(value: str) -> str:
        return " ".join(value.casefold().rstrip(" .").split())

    return norm(text) == norm(REFUSAL)


def snippet(text: str, limit: int = SNIPPET_CHARS) -> str:
    """``text`` shortened to at most ``limit`` characters at a word boundary, with an ellipsis."""
    flat = " ".join(text.split())
    if len(flat) <= limit:
        return flat
    cut = flat[: limit - 1]
    if " " in cut:
        cut = cut[: cut.rindex(" ")]
    return cut.rstrip(" ,;:") + "…"


def citation_locator(chunk: Chunk) -> str:
    """``IPC/420#0`` for a statute sentence, ``<doc_id>#<n>`` for any other document."""
    if chunk.act and chunk.section:
        return f"{chunk.act}/{chunk.section}#{chunk.sentence_index}"
    return f"{chunk.doc_id}#{chunk.sentence_index}"


def build_citations(
    report: ValidationReport, evidence: Sequence[ScoredChunk]
) -> tuple[DocumentCitations, ...]:
    """Citations grouped by document, from the ids the validator found in each sentence."""
    by_id = {scored.chunk.semantic_id: scored for scored in evidence}
    sentences: dict[str, list[int]] = {}
    for sentence in report.sentences:
        for semantic_id in sentence.cited_ids:
            sentences.setdefault(semantic_id, []).append(sentence.index)
    for semantic_id in report.cited_ids:
        sentences.setdefault(semantic_id, [])
    groups: dict[str, list[Citation]] = {}
    for semantic_id, indices in sentences.items():
        scored = by_id.get(semantic_id)
        if scored is None:
            continue  # an accepted report only cites evidence; skip anything else defensively
        chunk = scored.chunk
        groups.setdefault(chunk.doc_id, []).append(
            Citation(
                semantic_id=semantic_id,
                doc_id=chunk.doc_id,
                text=chunk.text,
                snippet=snippet(chunk.text),
                act=chunk.act,
                section=chunk.section,
                sentence_index=chunk.sentence_index,
                url=chunk.url,
                score=scored.score,
                answer_sentences=tuple(dict.fromkeys(indices)),
                char_start=chunk.char_start,
                char_end=chunk.char_end,
                locator=citation_locator(chunk),
                page=chunk.page,
            )
        )
    documents: list[DocumentCitations] = []
    for doc_id, cited in groups.items():
        citations = sorted(cited, key=lambda c: c.sentence_index)
        first = by_id[citations[0].semantic_id].chunk
        documents.append(
            DocumentCitations(
                doc_id=doc_id,
                title=first.title,
                act=first.act,
                act_name=first.act_name,
                section=first.section,
                url=first.url,
                citations=tuple(citations),
                chapter=first.chapter,
                chapter_title=first.chapter_title,
                page=first.page,
                extra=dict(first.extra),
            )
        )
    return tuple(documents)


@dataclass(slots=True)
class ResultBuilder:
    """Fields every result of one request shares; builds the final results."""

    sufficiency: SufficiencyDecision
    intent: Intent
    evidence: tuple[ScoredChunk, ...]
    synthesis_mode: bool
    source_doc_count: int
    generator: str
    retrieval_query: str
    history_turns_used: int
    cache_hit: bool
    index_version: str
    timings: dict[str, float]
    started: float
    usage: TokenUsage | None = None
    model: str = ""
    compact_answer: str = ""
    # Requested stages skipped, by timings name (retrieval's, as "retrieval.<stage>").
    skipped: dict[str, StageSkip] = field(default_factory=dict)
    # Whether the input was read as a statement (QuestionAnalysis.statement).
    statement: bool = False

    def refuse(
        self,
        status: SynthesisStatus,
        code: str,
        reason: str,
        report: ValidationReport | None = None,
    ) -> SynthesisResult:
        # Fields named as the response names them, so logs filter on them as clients do;
        # failed_requirement is the sufficiency requirement's code ("" when none failed).
        logger.info(
            "refused",
            extra={
                "status": status.value,
                "refusal_code": code,
                "refusal_reason": reason,
                "failed_requirement": self.sufficiency.failed_code,
            },
        )
        return self._result(status, REFUSAL, code, reason, report, ())

    def answered(self, text: str, report: ValidationReport) -> SynthesisResult:
        logger.info(
            "answered",
            extra={"status": SynthesisStatus.ANSWERED.value, "cited_ids": len(report.cited_ids)},
        )
        citations = build_citations(report, self.evidence)
        result = self._result(SynthesisStatus.ANSWERED, text, "", "", report, citations)
        # A comparison's passages come from one section per compared term: how they relate is
        # the answer's point, though the evidence is seldom in synthesis mode (one passage each).
        if not (self.synthesis_mode or self.sufficiency.compared):
            return result
        cited = set(report.cited_ids)
        relations = relate([s.chunk for s in self.evidence if s.chunk.semantic_id in cited])
        return replace(result, source_relations=relations)

    def _result(
        self,
        status: SynthesisStatus,
        answer: str,
        code: str,
        reason: str,
        report: ValidationReport | None,
        citations: tuple[DocumentCitations, ...],
    ) -> SynthesisResult:
        self.timings["total"] = _ms_since(self.started)
        return SynthesisResult(
            status=status,
            answer=answer,
            refusal_code=code,
            refusal_reason=reason,
            sufficiency=self.sufficiency,
            intent=self.intent,
            evidence=self.evidence,
            citations=citations,
            validation=report,
            timings_ms=dict(self.timings),
            skipped_stages=dict(self.skipped),
            usage=self.usage,
            synthesis_mode=self.synthesis_mode,
            source_doc_count=self.source_doc_count,
            generator=self.generator,
            model=self.model,
            retrieval_query=self.retrieval_query,
            history_turns_used=self.history_turns_used,
            cache_hit=self.cache_hit,
            index_version=self.index_version,
            compact_answer=self.compact_answer if status is SynthesisStatus.ANSWERED else "",
            statement=self.statement,
        )

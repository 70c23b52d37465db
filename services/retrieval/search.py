"""The retrieval pipeline: dense + BM25, expansion, fusion, rerank, aggregation, result cache."""

from __future__ import annotations

import dataclasses
import hashlib
import itertools
import json
import logging
import math
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Final, Protocol

import numpy as np
import numpy.typing as npt

from services.common.documents import filter_value_violations
from services.common.errors import (
    DeadlineExceededError,
    FieldViolation,
    InvalidInputError,
    TooLongForModelError,
    shown,
)
from services.common.evidence import Chunk, ScoredChunk, StageScores, StageSkip
from services.common.intent import Intent
from services.common.language.key_terms import Vocabulary, extract_key_terms, title_terms
from services.common.language.provisions import completing
from services.common.language.text import (
    NOT_BLANK,
    is_blank,
    normalise_query,
    surface,
    without_format_marks,
)
from services.common.language.text import tokenize as tokenize_text
from services.common.tracing import stage_span
from services.retrieval.aggregation import (
    DEFAULT_PER_DOC_CAP,
    DEFAULT_SIBLING_RATIO,
    Completion,
    aggregate,
)
from services.retrieval.documents import DocumentIndex
from services.retrieval.embedding import Encoder
from services.retrieval.expansion import (
    QueryAnalysis,
    analyse_query,
    feedback_query,
    feedback_terms,
    rule_expansions,
)
from services.retrieval.fusion import DEFAULT_RRF_K, merge_best, reciprocal_rank_fusion
from services.retrieval.lexical import TOKENIZER_VERSION, LexicalIndex, chunk_search_text
from services.retrieval.limits import (
    DEFAULT_TOP_K,
    MAX_FILTER_VALUES,
    MAX_QUERY_CHARS,
    MAX_TOP_K,
)
from services.retrieval.rerank import (
    CrossEncoderReranker,
    HeuristicReranker,
    Reranker,
    RerankWeights,
    load_cross_encoder,
)
from services.retrieval.store import IndexArtifacts

logger = logging.getLogger(__name__)

# Bump when SearchResult's meaning or the pipeline changes what a cached entry would hold.
# 2: a query longer than the embedding model's input is read in windows (2026-11-26).
# 3: an entry holds passage ids and scores, not passages: text comes from the index (2026-11-26).
PIPELINE_VERSION: Final = 3

STAGES: Final = ("cache", "dense", "lexical", "expansion", "fusion", "rerank", "aggregation")

Mask = npt.NDArray[np.bool_]


@dataclass(frozen=True, slots=True)
class StageSwitches:
    """Which stages run. Expansion and rerank are off by default (docs/RETRIEVAL.md, Results,
    has the numbers and commands). On the SciFact dev slice (321 claims) hybrid nDCG@10 was
    0.917, +expansion 0.923, +rerank 0.923; on 100 HotpotQA dev questions recall@10 was 0.920,
    +expansion 0.925, +rerank 0.910. Rerank lowered HotpotQA recall, so it stays off; expansion's
    gain is one or two queries' worth while it doubles the encoder calls of a miss, so it stays
    off too until a larger evaluation shows a real gain."""

    dense: bool = True
    lexical: bool = True
    expansion: bool = False
    rerank: bool = False
    aggregation: bool = True
    cache: bool = True


@dataclass(frozen=True, slots=True)
class SearchRequest:
    """One search. Its invariants (``request_violations``) hold once it is built: a request
    that breaks one is never made (``InvalidInputError`` naming every field). Filter values
    the index does not know are the edge's to report (``convert.py``); here they match nothing.
    """

    query: str
    top_k: int = DEFAULT_TOP_K
    acts: tuple[str, ...] = ()
    doc_ids: tuple[str, ...] = ()
    stages: StageSwitches = StageSwitches()
    min_score: float = 0.0

    def __post_init__(self) -> None:
        violations = request_violations(
            self.query, self.top_k, self.min_score, self.stages, self.acts, self.doc_ids
        )
        if violations:
            raise InvalidInputError(violations)


def request_violations(
    query: str,
    top_k: int,
    min_score: float,
    stages: StageSwitches,
    acts: Sequence[str],
    doc_ids: Sequence[str],
) -> list[FieldViolation]:
    """Every rule a search request breaks, by proto field name (the one statement of them)."""
    violations: list[FieldViolation] = []
    if is_blank(query):
        violations.append(FieldViolation("query", NOT_BLANK))
    if len(query) > MAX_QUERY_CHARS:
        violations.append(
            FieldViolation(
                "query", f"must be at most {MAX_QUERY_CHARS} characters (got {len(query)})"
            )
        )
    elif len(normalised := normalise_query(query)) > MAX_QUERY_CHARS:
        violations.append(
            FieldViolation(
                "query",
                f"must be at most {MAX_QUERY_CHARS} characters once normalised (NFKC), as "
                f"searched (got {len(normalised)} from {len(query)})",
            )
        )
    if not 1 <= top_k <= MAX_TOP_K:
        violations.append(
            FieldViolation("top_k", f"must be between 1 and {MAX_TOP_K} (got {top_k})")
        )
    if not (math.isfinite(min_score) and min_score >= 0):
        violations.append(FieldViolation("min_score", "must be a finite number >= 0"))
    for name, values in (("acts", acts), ("doc_ids", doc_ids)):
        if len(values) > MAX_FILTER_VALUES:
            violations.append(
                FieldViolation(f"filters.{name}", f"must hold at most {MAX_FILTER_VALUES} values")
            )
        else:
            violations += filter_value_violations(f"filters.{name}", values)
    if not (stages.dense or stages.lexical):
        violations.append(FieldViolation("stages", "at least one of dense and lexical must run"))
    return violations


@dataclass(frozen=True, slots=True)
class StageTiming:
    """Whether a stage ran for a request and how long it took; ``skipped``: why a stage the
    request asked for did not run."""

    stage: str
    ran: bool
    duration_ms: float
    skipped: StageSkip | None = None


@dataclass(frozen=True, slots=True)
class SearchResult:
    """Chunks in rank order with provenance, plus what the pipeline did to find them."""

    chunks: list[ScoredChunk]
    intent: Intent
    expanded_queries: list[str]
    timings: list[StageTiming]
    cache_hit: bool
    index_version: str


@dataclass(frozen=True, slots=True)
class SearchSettings:
    """Server-side knobs of the pipeline; each field's comment says what it does."""

    # Reciprocal rank fusion constant and per-retriever weights.
    rrf_k: int = DEFAULT_RRF_K
    dense_weight: float = 1.0
    lexical_weight: float = 1.0
    # Candidates each retriever returns per query variant (at least the rerank slate).
    candidate_depth: int = 100
    # Stage 2 reranks max(top_k, rerank_slate) candidates.
    rerank_slate: int = 20
    # Under a deadline, rerank is skipped (and the response says so) when the time left is
    # less than its expected cost (recent mean per candidate x slate, x1.5) plus this margin for
    # the stages after it. Results without rerank are never cached.
    rerank_deadline_margin_s: float = 0.005
    rerank_weights: RerankWeights = field(default_factory=RerankWeights)
    # Optional local sentence-transformers CrossEncoder directory; None keeps rerank heuristic.
    cross_encoder_path: str | None = None
    cross_encoder_weight: float = 0.7
    # Or the shipped answerability model (models/answerability-minilm-l6) as that cross-encoder.
    answerability_model_dir: str | None = None
    # Aggregation: at most this many chunks per document, siblings within this share of the best.
    per_doc_cap: int = DEFAULT_PER_DOC_CAP
    sibling_ratio: float = DEFAULT_SIBLING_RATIO
    # Added to the final score of chunks of a provision the query names ("section 420"), which
    # puts them first: every other final score is within 0..1.
    section_boost: float = 1.0
    # A definition question whose key terms are exactly a section title's content words
    # ("What is a document?", s.29 "Document") names that section, as "section 29" would
    # (docs/RETRIEVAL.md, "Named provisions"; RETRIEVAL_DEFINED_TERMS).
    defined_terms: bool = True
    # A named provision's group also holds its operative text, its first passages before a
    # proviso or Explanation (RETRIEVAL_OPERATIVE_TEXT), and a group holding a passage of a
    # statute's list holds the whole list (RETRIEVAL_WHOLE_LISTS): docs/RETRIEVAL.md,
    # "Aggregation"; services/common/language/provisions.py.
    operative_text: bool = True
    whole_lists: bool = True
    # Expansion: expanded-query scores are multiplied by this before merging with the primary.
    expansion_weight: float = 1.0
    # Pseudo-relevance feedback from the first-pass top chunks; prf_terms=0 turns it off.
    prf_docs: int = 3
    prf_terms: int = 5
    # BM25 parameters (Lucene defaults).
    bm25_k1: float = 1.2
    bm25_b: float = 0.75
    # Filtered dense search fetches this many times the share-adjusted depth, growing 4x.
    filter_overfetch: int = 2
    # Stage switches the servicer applies to switches a request leaves unset.
    default_stages: StageSwitches = StageSwitches()

    def __post_init__(self) -> None:
        positive = {
            "rrf_k": self.rrf_k,
            "candidate_depth": self.candidate_depth,
            "rerank_slate": self.rerank_slate,
            "per_doc_cap": self.per_doc_cap,
            "filter_overfetch": self.filter_overfetch,
        }
        bad = [f"{k}={v}" for k, v in positive.items() if v < 1]
        non_negative = {
            "dense_weight": self.dense_weight,
            "lexical_weight": self.lexical_weight,
            "section_boost": self.section_boost,
            "expansion_weight": self.expansion_weight,
            "prf_docs": self.prf_docs,
            "prf_terms": self.prf_terms,
        }
        bad += [f"{k}={v}" for k, v in non_negative.items() if v < 0]
        if not 0.0 <= self.sibling_ratio <= 1.0:
            bad.append(f"sibling_ratio={self.sibling_ratio}")
        if bad:
            raise ValueError(f"invalid search settings: {', '.join(bad)}")

    def fingerprint(self) -> str:
        """Hash of every setting that changes results (default_stages only fills requests)."""
        data = dataclasses.asdict(self)
        del data["default_stages"]
        del data["rerank_deadline_margin_s"]  # a result with rerank skipped is never cached
        return hashlib.sha256(json.dumps(data, sort_keys=True).encode()).hexdigest()[:16]


@dataclass(frozen=True, slots=True)
class CachedPassage:
    """One ranked passage of a cached result: its id and the scores this search gave it."""

    semantic_id: str
    score: float
    stages: StageScores


@dataclass(frozen=True, slots=True)
class CachedResult:
    """What the result cache keeps of a SearchResult: only what the index cannot give back.

    No passage text or provenance: a hit takes each passage from the index in memory by its
    id (``Searcher``), so an entry written by anyone else than this code (Redis has no say in
    what it stores) can at most reorder or rescore passages the index holds, never put words
    into one. The index version is the cache key's, not the entry's; timings are the hit's own.
    """

    passages: tuple[CachedPassage, ...]
    intent: Intent
    expanded_queries: tuple[str, ...] = ()

    @classmethod
    def of(cls, result: SearchResult) -> CachedResult:
        return cls(
            passages=tuple(
                CachedPassage(s.chunk.semantic_id, s.score, s.stages) for s in result.chunks
            ),
            intent=result.intent,
            expanded_queries=tuple(result.expanded_queries),
        )


class UnusableCacheEntryError(ValueError):
    """A cached entry this search cannot serve: a passage id the index does not hold, a passage
    twice, more passages than ``top_k``, one outside the request's filters or below its
    ``min_score``. The entry is dropped (a ``ValueError``, as an undecodable one) and the search
    runs as on a miss; its result replaces the entry."""


# Rebuilds a SearchResult from a cached entry, or raises UnusableCacheEntryError.
Resolve = Callable[[CachedResult], SearchResult]


class ResultCache(Protocol):
    """Where search results are kept between identical requests (cache-aside)."""

    def get(self, key: str, resolve: Resolve) -> SearchResult | None:
        """The entry under ``key`` as ``resolve`` rebuilds it; None on a miss, an outage, or an
        entry that cannot be decoded or that ``resolve`` refuses (each counted and logged)."""
        ...

    def set(self, key: str, entry: CachedResult) -> None: ...


def cache_key(
    request: SearchRequest, index_version: str, *, settings: SearchSettings | None = None
) -> str:
    """Key of a request's result: normalised query, every result-changing parameter, index."""
    stages = dataclasses.asdict(request.stages)
    del stages["cache"]  # whether to use the cache does not change the result
    payload = {
        "pipeline": PIPELINE_VERSION,
        "tokenizer": TOKENIZER_VERSION,
        "query": normalise_query(request.query),
        "top_k": request.top_k,
        "acts": sorted(set(request.acts)),
        "doc_ids": sorted(set(request.doc_ids)),
        "stages": stages,
        "min_score": float(request.min_score),
        "index": index_version,
        "settings": settings.fingerprint() if settings is not None else "",
    }
    digest = hashlib.sha256(json.dumps(payload, sort_keys=True).encode()).hexdigest()
    return f"grounded:retrieval:{digest}"


@dataclass(slots=True)
class _Candidate:
    """A position with its first-stage scores, built up while the pipeline runs."""

    position: int
    first: float
    dense: float | None = None
    lexical: float | None = None
    fused: float | None = None
    rerank: float | None = None
    section: bool = False

    @property
    def final(self) -> float:
        return self.rerank if self.rerank is not None else self.first


@dataclass(slots=True)
class _VariantHits:
    """What the retrievers returned for one query variant, as position → raw score."""

    dense: dict[int, float] = field(default_factory=dict)
    lexical: dict[int, float] = field(default_factory=dict)
    first: list[tuple[int, float]] = field(default_factory=list)


class _Clock:
    """Accumulates wall time per stage for one request."""

    def __init__(self) -> None:
        self.ms: dict[str, float] = {}
        self.ran: set[str] = set()
        self.skipped: dict[str, StageSkip] = {}

    def skip(self, name: str, reason: StageSkip) -> None:
        """``name`` did not run (or gave up part-way, its result unused), for ``reason``."""
        self.ran.discard(name)
        self.skipped[name] = reason

    @contextmanager
    def stage(self, name: str) -> Iterator[None]:
        started = time.perf_counter()
        try:
            with stage_span(f"retrieval.{name}"):
                yield
        finally:
            self.ran.add(name)
            self.ms[name] = self.ms.get(name, 0.0) + (time.perf_counter() - started) * 1000

    def timings(self) -> list[StageTiming]:
        return [
            StageTiming(s, s in self.ran, round(self.ms.get(s, 0.0), 3), self.skipped.get(s))
            for s in STAGES
        ]


class _Budget:
    """The caller's deadline as a monotonic instant; ``check`` raises once it has passed."""

    def __init__(self, deadline: float | None) -> None:
        self.deadline = deadline

    def check(self, stage: str) -> None:
        if self.deadline is not None and time.monotonic() >= self.deadline:
            raise DeadlineExceededError(
                f"deadline exceeded before the {stage} stage", metadata={"stage": stage}
            )

    def allows(self, seconds: float) -> bool:
        """Whether ``seconds`` of work still fit before the deadline (always, without one)."""
        return self.deadline is None or time.monotonic() + seconds <= self.deadline


class _CostEstimate:
    """A stage's recent cost per item (exponential moving average), 0 until it has run.

    Written by concurrent searches without a lock: a lost update only delays the average.
    """

    def __init__(self, weight: float = 0.2) -> None:
        self.weight = weight
        self.ms_per_item = 0.0

    def expected_s(self, items: int) -> float:
        return self.ms_per_item * items / 1000

    def update(self, ms: float, items: int) -> None:
        per_item = ms / max(items, 1)
        if self.ms_per_item == 0.0:
            self.ms_per_item = per_item
        else:
            self.ms_per_item += self.weight * (per_item - self.ms_per_item)


class Searcher:
    """Runs searches over loaded index artifacts; safe to call from several threads at once.

    Everything built here is read-only afterwards. The encoder call is serialised with a lock
    because Hugging Face fast tokenizers refuse concurrent use ("Already borrowed").
    """

    def __init__(
        self,
        artifacts: IndexArtifacts,
        encoder: Encoder,
        settings: SearchSettings = SearchSettings(),
        cache: ResultCache | None = None,
        *,
        reranker: Reranker | None = None,
    ) -> None:
        if artifacts.index.ntotal != len(artifacts.chunks):
            raise ValueError("index and chunk list disagree in length")
        self.settings = settings
        self._chunks: Sequence[Chunk] = artifacts.chunks
        # A cache hit's passages, by id (ids are unique: the index loader checks).
        self._position_of = {c.semantic_id: p for p, c in enumerate(self._chunks)}
        self._index = artifacts.index
        self._index_version = artifacts.index_version
        self._encoder = encoder
        self._encode_lock = threading.Lock()
        self._cache = cache
        self._settings_fingerprint = settings.fingerprint()
        self._lexical = LexicalIndex.from_chunks(
            self._chunks, k1=settings.bm25_k1, b=settings.bm25_b
        )
        self._by_act: dict[str, list[int]] = {}
        self._by_doc: dict[str, list[int]] = {}
        self._by_section: dict[tuple[str, str], list[int]] = {}
        self._by_section_number: dict[str, list[int]] = {}
        # Sections by their title's content words, for a definition question that names one.
        self._by_title: dict[frozenset[str], list[int]] = {}
        for position, chunk in enumerate(self._chunks):
            if chunk.section and chunk.title:
                self._by_title.setdefault(title_terms(chunk.title), []).append(position)
            self._by_doc.setdefault(chunk.doc_id, []).append(position)
            if chunk.act:
                self._by_act.setdefault(chunk.act, []).append(position)
            if chunk.section:
                self._by_section.setdefault((chunk.act, chunk.section), []).append(position)
                self._by_section_number.setdefault(chunk.section, []).append(position)
        # Every stem and section of the corpus: which of a query's key terms it holds at all.
        self._vocabulary = Vocabulary.of(self._chunks)
        self._acts = frozenset(self._by_act)
        self._doc_ids = frozenset(self._by_doc)
        self.documents = DocumentIndex(self._chunks)
        self._rerank_cost = _CostEstimate()
        if reranker is not None:
            self._reranker = reranker
        elif settings.cross_encoder_path:
            heuristic = HeuristicReranker(settings.rerank_weights)
            self._reranker = load_cross_encoder(
                settings.cross_encoder_path,
                weight=settings.cross_encoder_weight,
                heuristic=heuristic,
            )
        else:
            self._reranker = HeuristicReranker(settings.rerank_weights)

    @property
    def acts(self) -> frozenset[str]:
        """Act codes present in the index (valid values of the ``acts`` filter)."""
        return self._acts

    @property
    def doc_ids(self) -> frozenset[str]:
        """Document ids present in the index (valid values of the ``doc_ids`` filter)."""
        return self._doc_ids

    @property
    def index_version(self) -> str:
        return self._index_version

    @property
    def reranker_name(self) -> str:
        return self._reranker.name

    @property
    def model_names(self) -> tuple[str, ...]:
        """The models it runs: the embedding model (the index manifest's ``model``), then the
        rerank model when the reranker is a cross-encoder that names one."""
        if isinstance(self._reranker, CrossEncoderReranker) and self._reranker.model_name:
            return (self._encoder.name, self._reranker.model_name)
        return (self._encoder.name,)

    def unknown_terms(self, query: str) -> list[str]:
        """The query's key terms no passage of the index holds, each as the query writes it
        (lower-cased): "chori ki saza kya hai" gives all of its words, "what if I steal a bike"
        only "bike" ("steal" is held as "theft")."""
        visible = without_format_marks(normalise_query(query))
        key_terms = extract_key_terms(visible)
        unknown = self._vocabulary.unknown(key_terms.effective)
        return surface(tokenize_text(visible), unknown) if unknown else []

    def search(self, request: SearchRequest, *, deadline: float | None = None) -> SearchResult:
        """Run the pipeline for one request; a cache failure never fails the search.

        ``deadline`` is a ``time.monotonic()`` instant (the caller's gRPC deadline): it is
        checked before every stage, and DeadlineExceededError stops the search there, so a
        request its caller has given up on does not keep a worker thread encoding and ranking.
        A stage that has started runs to its end (FAISS and the encoder cannot be interrupted).
        """
        clock = _Clock()
        budget = _Budget(deadline)
        stages = request.stages
        key: str | None = None
        if stages.cache and self._cache is not None:
            key = cache_key(request, self._index_version, settings=self.settings)
            with clock.stage("cache"):
                cached = self._cache.get(key, lambda entry: self._from_cache(entry, request))
            if cached is not None:
                return dataclasses.replace(
                    cached, timings=[StageTiming("cache", True, clock.ms["cache"])]
                )

        query = normalise_query(request.query)
        analysis = analyse_query(query)
        mask = self._filter_mask(request.acts, request.doc_ids)
        slate_size = max(request.top_k, self.settings.rerank_slate)
        depth = max(self.settings.candidate_depth, slate_size)

        variants = [query]
        if stages.expansion:
            with clock.stage("expansion"):
                variants += rule_expansions(analysis)
        hits = self._retrieve(variants, depth, mask, stages, clock, budget)
        if stages.expansion and self.settings.prf_terms > 0 and self.settings.prf_docs > 0:
            budget.check("expansion")
            with clock.stage("expansion"):
                top = [p for p, _ in hits[0].first[: self.settings.prf_docs]]
                terms = feedback_terms(
                    analysis.terms,
                    [chunk_search_text(self._chunks[p]) for p in top],
                    self._lexical.idf,
                    n_terms=self.settings.prf_terms,
                )
                prf = feedback_query(query, terms)
            if prf is not None:
                variants.append(prf)
                hits += self._retrieve([prf], depth, mask, stages, clock, budget)

        with clock.stage("fusion") if stages.dense and stages.lexical else _untimed():
            candidates = self._merge(hits, stages)
        self._add_named_provisions(candidates, analysis, mask)

        ordered = sorted(candidates.values(), key=self._rank_key)
        slate = ordered[:slate_size]
        if stages.rerank and slate:
            budget.check("rerank")
            expected = 1.5 * self._rerank_cost.expected_s(len(slate))
            if not budget.allows(expected + self.settings.rerank_deadline_margin_s):
                # Answer in time without it rather than not at all (the response says so).
                clock.skip("rerank", StageSkip.DEADLINE)
            else:
                try:
                    with clock.stage("rerank"):
                        chunks = [self._chunks[c.position] for c in slate]
                        scores = self._reranker.score(analysis, chunks, [c.first for c in slate])
                        for candidate, score in zip(slate, scores, strict=True):
                            candidate.rerank = float(score)
                        slate.sort(key=self._rank_key)
                    self._rerank_cost.update(clock.ms["rerank"], len(slate))
                except TooLongForModelError as exc:
                    # The query leaves the model no room for a passage: fused order, said so.
                    logger.info("rerank skipped: %s", exc.message)
                    clock.skip("rerank", StageSkip.QUERY_TOO_LONG)

        scored = [self._scored(c) for c in slate]
        scored = [s for s in scored if s.score >= request.min_score]
        if stages.aggregation:
            with clock.stage("aggregation"):
                final = aggregate(
                    scored,
                    top_k=request.top_k,
                    per_doc_cap=self.settings.per_doc_cap,
                    sibling_ratio=self.settings.sibling_ratio,
                    complete=self._completion(candidates, mask),
                )
        else:
            final = scored[: request.top_k]

        result = SearchResult(
            chunks=final,
            intent=analysis.intent,
            expanded_queries=variants[1:],
            timings=clock.timings(),
            cache_hit=False,
            index_version=self._index_version,
        )
        if key is not None and self._cache is not None and not clock.skipped:
            self._cache.set(key, CachedResult.of(result))
        return result

    def _from_cache(self, entry: CachedResult, request: SearchRequest) -> SearchResult:
        """A hit as this index serves it: each passage taken from the index by id, with the
        entry's scores. Anything a search of ``request`` could not have returned is
        ``UnusableCacheEntryError`` (a stale or forged entry; Redis is not trusted with text)."""
        if len(entry.passages) > request.top_k:
            raise UnusableCacheEntryError(
                f"{len(entry.passages)} passages for top_k {request.top_k}"
            )
        scored: list[ScoredChunk] = []
        seen: set[str] = set()
        for passage in entry.passages:
            position = self._position_of.get(passage.semantic_id)
            if position is None:
                raise UnusableCacheEntryError(
                    f"passage {shown(passage.semantic_id)} is not in this index"
                )
            if passage.semantic_id in seen:
                raise UnusableCacheEntryError(f"passage {shown(passage.semantic_id)} twice")
            seen.add(passage.semantic_id)
            chunk = self._chunks[position]
            if (request.acts and chunk.act not in request.acts) or (
                request.doc_ids and chunk.doc_id not in request.doc_ids
            ):
                raise UnusableCacheEntryError(
                    f"passage {passage.semantic_id} is outside the request's filters"
                )
            if not (math.isfinite(passage.score) and passage.score >= request.min_score):
                raise UnusableCacheEntryError(
                    f"passage {passage.semantic_id} scores {passage.score}, not a finite score "
                    f">= min_score {request.min_score}"
                )
            scored.append(ScoredChunk(chunk, passage.score, passage.stages))
        return SearchResult(
            chunks=scored,
            intent=entry.intent,
            expanded_queries=list(entry.expanded_queries),
            timings=[],
            cache_hit=True,
            index_version=self._index_version,
        )

    # --- stages ------------------------------------------------------------------------------

    def _retrieve(
        self,
        variants: list[str],
        depth: int,
        mask: Mask | None,
        stages: StageSwitches,
        clock: _Clock,
        budget: _Budget,
    ) -> list[_VariantHits]:
        hits = [_VariantHits() for _ in variants]
        if stages.dense:
            budget.check("dense")
            with clock.stage("dense"):
                # A variant longer than the model's input is read in overlapping windows that
                # cover all of it (never cut short); a chunk scores its best window.
                pieces = [self._encoder.windows(v) for v in variants]
                with self._encode_lock:
                    vectors = self._encoder.encode([p for ps in pieces for p in ps])
                scores, positions = self._dense_search(vectors, depth, mask)
                rows = iter(zip(scores, positions, strict=True))
                for h, ps in zip(hits, pieces, strict=True):
                    for row_s, row_p in itertools.islice(rows, len(ps)):
                        for s, p in zip(row_s, row_p, strict=True):
                            if p >= 0 and float(s) > h.dense.get(int(p), -math.inf):
                                h.dense[int(p)] = float(s)
                    if len(ps) > 1:  # insertion order is the rank order fusion reads
                        best = sorted(h.dense.items(), key=lambda item: -item[1])[:depth]
                        h.dense = dict(best)
        if stages.lexical:
            budget.check("lexical")
            with clock.stage("lexical"):
                for h, variant in zip(hits, variants, strict=True):
                    lex_scores, lex_positions, _ = self._lexical.search(variant, depth, mask=mask)
                    h.lexical = dict(zip(lex_positions.tolist(), lex_scores.tolist(), strict=True))
        weights = (self.settings.dense_weight, self.settings.lexical_weight)
        for h in hits:
            if stages.dense and stages.lexical:
                h.first = reciprocal_rank_fusion(
                    [list(h.dense), list(h.lexical)], k=self.settings.rrf_k, weights=weights
                )
            elif stages.dense:
                h.first = [(p, min(max(s, 0.0), 1.0)) for p, s in h.dense.items()]
            else:
                top = max(h.lexical.values(), default=1.0)
                h.first = [(p, s / top) for p, s in h.lexical.items()]
        return hits

    def _dense_search(
        self, vectors: npt.NDArray[np.float32], k: int, mask: Mask | None
    ) -> tuple[npt.NDArray[np.float32], npt.NDArray[np.int64]]:
        """FAISS top-``k`` per query, restricted to ``mask`` by over-fetching.

        DenseIndex takes no id selector, so a filtered search asks for more neighbours than it
        needs (scaled by the filter's share of the corpus) and grows 4x until every query has
        ``k`` in-filter hits or the whole index was searched.
        """
        total = self._index.ntotal
        if mask is None:
            return self._index.search(vectors, min(k, total))
        allowed = int(mask.sum())
        want = min(k, allowed)
        if want == 0:
            empty = np.zeros((len(vectors), 0))
            return empty.astype(np.float32), empty.astype(np.int64)
        fetch = min(total, want * self.settings.filter_overfetch * max(1, total // allowed))
        while True:
            scores, positions = self._index.search(vectors, fetch)
            keep = (positions >= 0) & mask[np.clip(positions, 0, None)]
            if fetch >= total or bool((keep.sum(axis=1) >= want).all()):
                break
            fetch = min(total, fetch * 4)
        out_s = np.full((len(vectors), want), -np.inf, dtype=np.float32)
        out_p = np.full((len(vectors), want), -1, dtype=np.int64)
        for row in range(len(vectors)):
            chosen = np.flatnonzero(keep[row])[:want]
            out_s[row, : chosen.size] = scores[row, chosen]
            out_p[row, : chosen.size] = positions[row, chosen]
        return out_s, out_p

    def _merge(self, hits: list[_VariantHits], stages: StageSwitches) -> dict[int, _Candidate]:
        weight = self.settings.expansion_weight
        weighted = [
            h.first if i == 0 else [(p, s * weight) for p, s in h.first] for i, h in enumerate(hits)
        ]
        fused = stages.dense and stages.lexical
        candidates: dict[int, _Candidate] = {}
        for position, score, source in merge_best(weighted):
            h = hits[source]
            candidates[position] = _Candidate(
                position=position,
                first=score,
                dense=h.dense.get(position),
                lexical=h.lexical.get(position),
                fused=score if fused else None,
            )
        return candidates

    def _add_named_provisions(
        self, candidates: dict[int, _Candidate], analysis: QueryAnalysis, mask: Mask | None
    ) -> None:
        """Mark chunks of provisions the query names, adding those retrieval missed: by number
        ("section 420"), or, for a definition question, by title (``defined_terms``).

        Added chunks have no first-stage score (0); the section boost still ranks them above
        every unnamed chunk, and among themselves retrieved ones come first.
        """
        named = [
            self._by_section.get((ref.act, ref.section), [])
            if ref.act is not None
            else self._by_section_number.get(ref.section, [])
            for ref in analysis.section_refs
        ]
        if self.settings.defined_terms and analysis.defined_term:
            named.append(self._by_title.get(analysis.defined_term, []))
        for positions in named:
            for position in positions:
                if mask is not None and not mask[position]:
                    continue
                candidate = candidates.get(position)
                if candidate is None:
                    candidate = candidates[position] = _Candidate(position=position, first=0.0)
                candidate.section = True

    def _completion(
        self, candidates: dict[int, _Candidate], mask: Mask | None
    ) -> Completion | None:
        """What completes a statute section's group (``provisions.completing``): a named
        section's operative text, a list a member belongs to, taken from the index. Each carries
        its group's lowest score: it is there for its place in the section, not for its rank
        (its stage scores, when it was ranked, are kept)."""
        operative, lists = self.settings.operative_text, self.settings.whole_lists
        if not (operative or lists):
            return None

        def complete(group: Sequence[ScoredChunk]) -> list[ScoredChunk]:
            first = group[0].chunk
            if not (first.act and first.section):
                return []  # the layout is a statute section's; prose has no such lists
            positions = self._by_doc.get(first.doc_id, [])
            at = {self._chunks[p].sentence_index: p for p in positions}
            texts = {index: self._chunks[p].text for index, p in at.items()}
            named = any(
                (c := candidates.get(at[s.chunk.sentence_index])) is not None and c.section
                for s in group
            )
            held = [s.chunk.sentence_index for s in group]
            floor = min(s.score for s in group)
            added: list[ScoredChunk] = []
            for index in completing(texts, held, operative=operative and named, lists=lists):
                position = at[index]
                if mask is not None and not mask[position]:
                    continue
                candidate = candidates.get(position)
                if candidate is not None:
                    added.append(dataclasses.replace(self._scored(candidate), score=floor))
                else:
                    added.append(ScoredChunk(chunk=self._chunks[position], score=floor))
            return added

        return complete

    def _rank_key(self, candidate: _Candidate) -> tuple[float, int]:
        boost = self.settings.section_boost if candidate.section else 0.0
        return (-(candidate.final + boost), candidate.position)

    def _scored(self, candidate: _Candidate) -> ScoredChunk:
        boost = self.settings.section_boost if candidate.section else 0.0
        return ScoredChunk(
            chunk=self._chunks[candidate.position],
            score=candidate.final + boost,
            stages=StageScores(
                dense=candidate.dense,
                lexical=candidate.lexical,
                fused=candidate.fused,
                rerank=candidate.rerank,
            ),
        )

    def _filter_mask(self, acts: Sequence[str], doc_ids: Sequence[str]) -> Mask | None:
        """Positions allowed by the filters (each given list restricts; both must hold)."""
        if not acts and not doc_ids:
            return None
        mask = np.ones(len(self._chunks), dtype=bool)
        for values, table in ((acts, self._by_act), (doc_ids, self._by_doc)):
            if values:
                allowed = np.zeros(len(self._chunks), dtype=bool)
                for value in set(values):
                    allowed[table.get(value, [])] = True
                mask &= allowed
        return mask


@contextmanager
def _untimed() -> Iterator[None]:
    yield

"""Stage-2 rerank of a candidate slate: heuristic features, optionally a local cross-encoder."""

from __future__ import annotations

import logging
import math
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Final, Protocol

import numpy as np
import numpy.typing as npt

from services.common.evidence import Chunk
from services.common.intent import PROFILES
from services.common.language.references import SectionRef
from services.retrieval.expansion import QueryAnalysis
from services.retrieval.lexical import tokenize

logger = logging.getLogger(__name__)

Scores = npt.NDArray[np.float64]

# Entities worth matching exactly: numbers ("420", "1860", "21A") and capitalised words or
# acronyms ("Magistrate", "IPC") that are not sentence-initial function words.
_ENTITY: Final = re.compile(r"\b(?:\d+[A-Za-z]{0,2}|[A-Z][A-Za-z]{2,}|[A-Z]{2,})\b")
_NOT_ENTITIES: Final = frozenset(
    {"what", "which", "who", "whom", "whose", "when", "where", "why", "how", "is", "are",
     "the", "can", "does", "do", "should", "under", "section", "article", "explain", "define",
     "tell", "give", "list", "describe"}
)  # fmt: skip


def section_matches(chunk: Chunk, refs: Sequence[SectionRef]) -> bool:
    """Whether ``chunk`` belongs to a provision named in the query (act must agree if named)."""
    return any(
        chunk.section == ref.section and (ref.act is None or chunk.act == ref.act) for ref in refs
    )


def entities(text: str) -> set[str]:
    """Numbers and capitalised words of ``text``, lower-cased."""
    return {e.lower() for e in _ENTITY.findall(text) if e.lower() not in _NOT_ENTITIES}


@dataclass(frozen=True, slots=True)
class RerankWeights:
    """Weights of the heuristic features; they sum to 1 so scores stay within 0..1."""

    prior: float = 0.5
    term_overlap: float = 0.25
    entity_overlap: float = 0.1
    section: float = 0.1
    intent_cue: float = 0.05

    def __post_init__(self) -> None:
        values = (self.prior, self.term_overlap, self.entity_overlap, self.section, self.intent_cue)
        if any(v < 0 for v in values) or not math.isclose(sum(values), 1.0):
            raise ValueError(f"rerank weights must be >= 0 and sum to 1, got {values}")


@dataclass(frozen=True, slots=True)
class Features:
    """The heuristic features of one (query, chunk) pair, each within 0..1."""

    prior: float
    term_overlap: float
    entity_overlap: float
    section: float
    intent_cue: float


class Reranker(Protocol):
    """Scores a slate of chunks for a query; higher is better, within 0..1."""

    name: str

    def score(
        self, analysis: QueryAnalysis, chunks: Sequence[Chunk], prior: Sequence[float]
    ) -> Scores:
        """``prior`` holds the first-stage score of each chunk (fused, 0..1)."""
        ...


def features(analysis: QueryAnalysis, chunk: Chunk, prior: float) -> Features:
    """Query-term and entity overlap, named-provision match and intent cue words of a chunk."""
    body = f"{chunk.title}\n{chunk.text}"
    terms = set(analysis.terms)
    chunk_terms = set(tokenize(body))
    term_overlap = len(terms & chunk_terms) / len(terms) if terms else 0.0
    query_entities = entities(analysis.query)
    entity_overlap = (
        len(query_entities & entities(f"{body} {chunk.section} {chunk.act}")) / len(query_entities)
        if query_entities
        else 0.0
    )
    lowered = chunk.text.lower()
    cues = PROFILES[analysis.intent].rerank_cues
    return Features(
        prior=min(max(prior, 0.0), 1.0),
        term_overlap=term_overlap,
        entity_overlap=entity_overlap,
        section=1.0 if section_matches(chunk, analysis.section_refs) else 0.0,
        intent_cue=1.0 if any(cue in lowered for cue in cues) else 0.0,
    )


class HeuristicReranker:
    """A weighted sum of interpretable features; no model, microseconds per chunk."""

    name = "heuristic"

    def __init__(self, weights: RerankWeights | None = None) -> None:
        self.weights = weights or RerankWeights()

    def score(
        self, analysis: QueryAnalysis, chunks: Sequence[Chunk], prior: Sequence[float]
    ) -> Scores:
        w = self.weights
        out = np.empty(len(chunks), dtype=np.float64)
        for i, (chunk, p) in enumerate(zip(chunks, prior, strict=True)):
            f = features(analysis, chunk, p)
            out[i] = (
                w.prior * f.prior
                + w.term_overlap * f.term_overlap
                + w.entity_overlap * f.entity_overlap
                + w.section * f.section
                + w.intent_cue * f.intent_cue
            )
        return out


class PairScorer(Protocol):
    """A cross-encoder: ``predict`` returns one relevance within 0..1 per (query, text) pair.

    ``sentence_transformers.CrossEncoder`` fits when built with a sigmoid activation, as
    ``load_cross_encoder`` does.
    """

    def predict(self, sentences: list[tuple[str, str]], *args: Any, **kwargs: Any) -> Any: ...


class CrossEncoderReranker:
    """A cross-encoder's relevance blended with the heuristic score.

    ``weight`` is the cross-encoder's share; the heuristic keeps section matches and intent
    cues in play, which a general-purpose cross-encoder knows nothing about.
    """

    name = "cross-encoder"

    def __init__(
        self,
        model: PairScorer,
        *,
        weight: float = 0.7,
        heuristic: HeuristicReranker | None = None,
        batch_size: int = 32,
        pair_text: Callable[[Chunk], str] | None = None,
        model_name: str = "",
    ) -> None:
        if not 0.0 <= weight <= 1.0:
            raise ValueError(f"cross-encoder weight must be within 0..1, got {weight}")
        self._model = model
        # Which model it runs (a shipped model's manifest name, or a directory's name), for
        # grounded_build_info; ``name`` says only what kind of reranker this is.
        self.model_name = model_name
        # What the model reads of a chunk: "title: text" for a general cross-encoder; a shipped
        # pair model's own manifest format (``passage_text``) for the answerability model.
        self._pair_text = pair_text or _pair_text
        self.weight = weight
        self._heuristic = heuristic or HeuristicReranker()
        self.batch_size = batch_size

    def score(
        self, analysis: QueryAnalysis, chunks: Sequence[Chunk], prior: Sequence[float]
    ) -> Scores:
        if not chunks:
            return np.zeros(0, dtype=np.float64)
        pairs = [(analysis.query, self._pair_text(c)) for c in chunks]
        predicted = self._model.predict(pairs, batch_size=self.batch_size, show_progress_bar=False)
        relevance = np.clip(np.asarray(predicted, dtype=np.float64).reshape(len(chunks)), 0.0, 1.0)
        heuristic = self._heuristic.score(analysis, chunks, prior)
        blended: Scores = self.weight * relevance + (1.0 - self.weight) * heuristic
        return blended


class PassageScorer(Protocol):
    """Scores passages for one question (``services.common.answerability_model``)."""

    @property
    def name(self) -> str: ...

    def score(self, question: str, passages: Sequence[str]) -> list[float]: ...


class AnswerabilityPairScorer:
    """The shipped answerability model as a ``PairScorer``: P(the passage answers the query).

    Trained on (passage, question) pairs from SQuAD 2.0, HotpotQA and IPC questions, so unlike
    a general-purpose relevance model it rewards the sentence that answers, not the one that
    shares the most words.
    """

    def __init__(self, scorer: PassageScorer) -> None:
        self._scorer = scorer
        self.name = scorer.name

    def predict(self, sentences: list[tuple[str, str]], *args: Any, **kwargs: Any) -> list[float]:
        out = [0.0] * len(sentences)
        by_query: dict[str, list[int]] = {}
        for i, (query, _) in enumerate(sentences):
            by_query.setdefault(query, []).append(i)
        for query, rows in by_query.items():
            scores = self._scorer.score(query, [sentences[i][1] for i in rows])
            for i, value in zip(rows, scores, strict=True):
                out[i] = value
        return out


def _pair_text(chunk: Chunk) -> str:
    return f"{chunk.title}: {chunk.text}" if chunk.title else chunk.text


def load_cross_encoder(
    path: str,
    *,
    device: str = "cpu",
    weight: float = 0.7,
    heuristic: HeuristicReranker | None = None,
) -> CrossEncoderReranker:
    """Load a ``sentence_transformers.CrossEncoder`` from a local directory (never a hub id).

    Raises FileNotFoundError for a missing directory and ValueError for one that holds no
    loadable single-score cross-encoder, each naming ``path``.
    """
    from pathlib import Path

    if not Path(path).is_dir():
        raise FileNotFoundError(f"cross-encoder model directory not found: {path}")

    import torch
    from sentence_transformers import CrossEncoder

    logger.info("loading cross-encoder from %s on %s", path, device)
    try:
        model = CrossEncoder(
            path, device=device, local_files_only=True, activation_fn=torch.nn.Sigmoid()
        )
    except (OSError, ValueError) as exc:
        raise ValueError(f"{path} holds no loadable cross-encoder: {exc}") from exc
    if model.num_labels != 1:
        raise ValueError(
            f"{path}: expected a single-score cross-encoder, got {model.num_labels} labels"
        )
    return CrossEncoderReranker(
        model, weight=weight, heuristic=heuristic, model_name=Path(path).name
    )

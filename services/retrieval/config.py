"""Retrieval settings, read once from RETRIEVAL_* environment variables."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from services.common.config import EnvReader, ServerSettings
from services.retrieval.embedding import EMBEDDING_RUNTIMES

SERVICE_NAME = "grounded.retrieval.v1.RetrievalService"


@dataclass(frozen=True, slots=True)
class RetrievalConfig:
    server: ServerSettings
    index_dir: str
    model_path: str
    redis_url: str
    cache_ttl_s: int
    cache_timeout_s: float
    faiss_threads: int
    # Intra-op threads of the query encoder, torch or ONNX Runtime (1: no thread hand-offs on a
    # small shared box).
    torch_threads: int = 1
    # Which runtime encodes queries: "onnx" (the same weights exported at start-up and checked
    # against torch; faster) or "torch" (sentence-transformers, as the index is built).
    embedding_runtime: str = "onnx"
    # Local sentence-transformers CrossEncoder directory for stage-2 rerank; empty: heuristic only.
    cross_encoder_path: str = ""
    # The answerability model directory for stage-2 rerank (issue 13); empty: not used.
    rerank_model_dir: str = ""
    # Skip rerank when the caller's deadline leaves less than its expected cost plus this.
    rerank_deadline_margin_s: float = 0.005
    # Reciprocal-rank-fusion weights of the dense and BM25 lists (SearchSettings).
    dense_weight: float = 1.0
    lexical_weight: float = 1.0
    # A definition question names the section titled by its key terms (SearchSettings).
    defined_terms: bool = True
    # A named section's group holds its operative text; a list's passages come whole
    # (SearchSettings).
    operative_text: bool = True
    whole_lists: bool = True

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> RetrievalConfig:
        env = EnvReader("RETRIEVAL_", environ)
        return cls(
            server=ServerSettings.from_env(env, default_port=50051, default_metrics_port=9091),
            index_dir=env.str("INDEX_DIR", "var/index"),
            model_path=env.str("MODEL_PATH", ""),
            redis_url=env.redis_url("REDIS_URL"),
            cache_ttl_s=env.int("CACHE_TTL_S", 86_400, minimum=1),
            cache_timeout_s=env.float("CACHE_TIMEOUT_S", 0.05, minimum=0.001, maximum=5.0),
            faiss_threads=env.int("FAISS_THREADS", 1, minimum=1, maximum=64),
            torch_threads=env.int("TORCH_THREADS", 1, minimum=1, maximum=64),
            embedding_runtime=env.str("EMBEDDING_RUNTIME", "onnx", choices=EMBEDDING_RUNTIMES),
            cross_encoder_path=env.str("CROSS_ENCODER_PATH", "").strip(),
            rerank_model_dir=env.str("RERANK_MODEL_DIR", "").strip(),
            rerank_deadline_margin_s=env.float(
                "RERANK_DEADLINE_MARGIN_S", 0.005, minimum=0.0, maximum=5.0
            ),
            dense_weight=env.float("DENSE_WEIGHT", 1.0, minimum=0.0, maximum=100.0),
            lexical_weight=env.float("LEXICAL_WEIGHT", 1.0, minimum=0.0, maximum=100.0),
            defined_terms=env.bool("DEFINED_TERMS", True),
            operative_text=env.bool("OPERATIVE_TEXT", True),
            whole_lists=env.bool("WHOLE_LISTS", True),
        )

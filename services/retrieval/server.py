"""Retrieval server wiring: loads the model and index during warm-up, then serves."""

from __future__ import annotations

import asyncio
import gc
import logging
from functools import partial
from pathlib import Path

from grounded.retrieval.v1 import retrieval_service_pb2_grpc as pb_grpc

from services.common.answerability_model import load_scorer
from services.common.config import InvalidSettingError
from services.common.errors import ModelUnavailableError
from services.common.evidence import passage_text
from services.common.metrics import set_build_info
from services.common.server import GrpcService, ServiceApp, serve_main
from services.retrieval.cache import RedisResultCache
from services.retrieval.config import SERVICE_NAME, RetrievalConfig
from services.retrieval.embedding import (
    Encoder,
    OnnxQueryEncoder,
    SentenceTransformerEncoder,
    load_encoder,
    set_torch_threads,
)
from services.retrieval.index import set_faiss_threads
from services.retrieval.rerank import (
    AnswerabilityPairScorer,
    CrossEncoderReranker,
    HeuristicReranker,
    Reranker,
    load_cross_encoder,
)
from services.retrieval.search import Searcher, SearchSettings, StageSwitches
from services.retrieval.servicer import RetrievalServicer
from services.retrieval.store import load_artifacts

logger = logging.getLogger(__name__)


def search_settings(config: RetrievalConfig) -> SearchSettings:
    """Pipeline settings from the deployment config (the rest keep their measured defaults)."""
    # A configured rerank model turns the rerank stage on for requests that leave it unset.
    return SearchSettings(
        cross_encoder_path=config.cross_encoder_path or None,
        answerability_model_dir=config.rerank_model_dir or None,
        default_stages=StageSwitches(rerank=bool(config.rerank_model_dir)),
        rerank_deadline_margin_s=config.rerank_deadline_margin_s,
        dense_weight=config.dense_weight,
        lexical_weight=config.lexical_weight,
        defined_terms=config.defined_terms,
        operative_text=config.operative_text,
        whole_lists=config.whole_lists,
    )


def build_reranker(settings: SearchSettings) -> Reranker | None:
    """The configured cross-encoder reranker, or None for the heuristic one.

    Loaded before the embedding model so that a wrong RETRIEVAL_CROSS_ENCODER_PATH fails
    warm-up in milliseconds with the path in the message.
    """
    if settings.answerability_model_dir is not None:
        if settings.cross_encoder_path is not None:
            raise InvalidSettingError(
                "RETRIEVAL_RERANK_MODEL_DIR and RETRIEVAL_CROSS_ENCODER_PATH: set one, not both"
            )
        scorer = load_scorer(Path(settings.answerability_model_dir), threads=1)
        return CrossEncoderReranker(
            AnswerabilityPairScorer(scorer),
            weight=settings.cross_encoder_weight,
            heuristic=HeuristicReranker(settings.rerank_weights),
            # The model reads a chunk as it was trained to, as synthesis feeds it.
            pair_text=partial(passage_text, passage_format=scorer.passage_format),
            model_name=scorer.name,
        )
    if settings.cross_encoder_path is None:
        return None
    try:
        return load_cross_encoder(
            settings.cross_encoder_path,
            weight=settings.cross_encoder_weight,
            heuristic=HeuristicReranker(settings.rerank_weights),
        )
    except (OSError, ValueError) as exc:
        raise InvalidSettingError(f"RETRIEVAL_CROSS_ENCODER_PATH: {exc}") from exc


def query_encoder(
    encoder: Encoder, config: RetrievalConfig, *, release_torch: bool = False
) -> Encoder:
    """The encoder queries run on: ``encoder`` itself, or with ``RETRIEVAL_EMBEDDING_RUNTIME=onnx``
    (the default) the same model in ONNX Runtime, checked against it before it serves; with
    ``release_torch`` (the service) the checked torch weights are then freed."""
    if config.embedding_runtime == "torch":
        return encoder
    if not isinstance(encoder, SentenceTransformerEncoder):
        raise ModelUnavailableError(
            f"RETRIEVAL_EMBEDDING_RUNTIME=onnx runs a sentence-transformers model; {encoder.name} "
            "is not one: set RETRIEVAL_EMBEDDING_RUNTIME=torch"
        )
    try:
        onnx = OnnxQueryEncoder(encoder, threads=config.torch_threads)
    except ModelUnavailableError as exc:
        raise exc.naming("RETRIEVAL_EMBEDDING_RUNTIME", config.embedding_runtime) from exc
    if release_torch:
        onnx.release_torch()
    return onnx


def build_searcher(config: RetrievalConfig) -> Searcher:
    """Load encoder, artifacts and cache (blocking: runs in a worker thread during warm-up)."""
    set_faiss_threads(config.faiss_threads)
    settings = search_settings(config)
    reranker = build_reranker(settings)
    set_torch_threads(config.torch_threads)
    encoder = query_encoder(load_encoder(config.model_path or None), config, release_torch=True)
    # The torch model's module tree holds reference cycles: collect now, so that the weights the
    # ONNX runtime no longer needs leave before the index arrives, not at some later collection.
    gc.collect()
    artifacts = load_artifacts(
        Path(config.index_dir), expected_model=encoder.name, expected_dim=encoder.dim
    )
    cache = (
        RedisResultCache(
            config.redis_url, ttl_s=config.cache_ttl_s, timeout_s=config.cache_timeout_s
        )
        if config.redis_url
        else None
    )
    logger.info(
        "index loaded",
        extra={
            "chunks": len(artifacts.chunks),
            "index_version": artifacts.index_version,
            "cache": cache is not None,
            "reranker": "heuristic" if reranker is None else reranker.name,
            "embedding_runtime": config.embedding_runtime,
        },
    )
    return Searcher(artifacts, encoder, settings, cache=cache, reranker=reranker)


def create_app(config: RetrievalConfig) -> ServiceApp:
    service = GrpcService(label="retrieval", service_names=[SERVICE_NAME], settings=config.server)
    servicer = RetrievalServicer(max_message_bytes=config.server.max_message_bytes)

    async def warm_up() -> None:
        searcher = await asyncio.to_thread(build_searcher, config)
        servicer.searcher = searcher
        set_build_info(
            "retrieval", models=searcher.model_names, index_version=searcher.index_version
        )

    return ServiceApp(
        service,
        lambda server: pb_grpc.add_RetrievalServiceServicer_to_server(servicer, server),
        warm_up,
    )


def main() -> None:
    serve_main("retrieval", RetrievalConfig.from_env, create_app)

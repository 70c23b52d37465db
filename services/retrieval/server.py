"""Retrieval server wiring: loads the model and index during warm-up, then serves."""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path

from grounded.retrieval.v1 import retrieval_service_pb2_grpc as pb_grpc

from services.common.logs import configure_logging
from services.common.server import GrpcService, ServiceApp, run_until_signalled
from services.retrieval.cache import RedisResultCache
from services.retrieval.config import SERVICE_NAME, RetrievalConfig
from services.retrieval.embedding import load_encoder
from services.retrieval.index import set_faiss_threads
from services.retrieval.search import Searcher
from services.retrieval.servicer import RetrievalServicer
from services.retrieval.store import load_artifacts

logger = logging.getLogger(__name__)


def build_searcher(config: RetrievalConfig) -> Searcher:
    """Load encoder, artifacts and cache (blocking: runs in a worker thread during warm-up)."""
    set_faiss_threads(config.faiss_threads)
    encoder = load_encoder(config.model_path or None)
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
        },
    )
    return Searcher(artifacts, encoder, cache=cache)


def create_app(config: RetrievalConfig) -> ServiceApp:
    service = GrpcService(label="retrieval", service_names=[SERVICE_NAME], settings=config.server)
    servicer = RetrievalServicer()

    async def warm_up() -> None:
        servicer.searcher = await asyncio.to_thread(build_searcher, config)

    return ServiceApp(
        service,
        lambda server: pb_grpc.add_RetrievalServiceServicer_to_server(servicer, server),
        warm_up,
    )


def main() -> None:
    config = RetrievalConfig.from_env()
    configure_logging("retrieval", config.server.log_level)

    # The aio server and channels bind to the running loop, so they are built inside it.
    async def serve() -> None:
        await run_until_signalled(create_app(config))

    asyncio.run(serve())

"""Thin async handler for RetrievalService: proto → domain → proto."""

from __future__ import annotations

import asyncio
import logging
import time
from typing import Any, Final

from grounded.retrieval.v1 import retrieval_service_pb2 as pb
from grounded.retrieval.v1 import retrieval_service_pb2_grpc as pb_grpc
from grpc import aio

from services.common.errors import DeadlineExceededError, NotReadyError
from services.common.metrics import (
    RETRIEVAL_STAGES_SKIPPED,
    RETRIEVAL_TOP_SCORE,
    RETRIEVED_CHUNKS,
    STAGE_SECONDS,
)
from services.retrieval import convert
from services.retrieval.search import Searcher

# Below this much time left a search cannot even finish a cache lookup and the reply; refuse
# it at once rather than start work whose answer nobody will read.
MIN_REMAINING_S: Final = 0.002

logger = logging.getLogger(__name__)


class RetrievalServicer(pb_grpc.RetrievalServiceServicer):
    """Serves searches once a Searcher is installed by warm-up."""

    def __init__(self, *, max_message_bytes: int = 4 * 1024 * 1024) -> None:
        self.searcher: Searcher | None = None
        # The server's message limit: a whole document larger than this is refused, named.
        self.max_message_bytes = max_message_bytes

    def _ready(self) -> Searcher:
        """The installed Searcher; UNAVAILABLE until warm-up has loaded the index."""
        if self.searcher is None:
            raise NotReadyError("the index is still loading; retry shortly")
        return self.searcher

    async def RetrievePassages(
        self, request: pb.RetrievePassagesRequest, context: aio.ServicerContext[Any, Any]
    ) -> pb.RetrievePassagesResponse:
        searcher = self._ready()
        search_request = convert.request_from_proto(
            request,
            known_acts=searcher.acts,
            known_doc_ids=searcher.doc_ids,
            default_stages=searcher.settings.default_stages,
            meant=searcher.documents.meant,
        )
        # The caller's deadline goes into the search, which checks it between stages: the worker
        # thread is not cancelled with this coroutine and would otherwise run to the end.
        remaining = context.time_remaining()
        deadline: float | None = None
        if remaining is not None:
            if remaining < MIN_REMAINING_S:
                raise DeadlineExceededError(
                    f"{remaining * 1000:.1f} ms left of the caller's deadline; not searching"
                )
            deadline = time.monotonic() + remaining
        # Encoding and FAISS release the GIL; a worker thread keeps the event loop answering health checks.
        result = await asyncio.to_thread(searcher.search, search_request, deadline=deadline)
        top = [round(c.score, 4) for c in result.chunks[:3]]
        RETRIEVED_CHUNKS.observe(len(result.chunks))
        for timing in result.timings:
            # Stage names are search.STAGES; a stage's time summed over the request, as the
            # response reports it (a cache hit ran the cache stage only).
            if timing.ran:
                STAGE_SECONDS.labels("retrieval", timing.stage).observe(timing.duration_ms / 1000)
            if timing.skipped is not None:
                RETRIEVAL_STAGES_SKIPPED.labels(timing.stage, timing.skipped.value).inc()
        if top:
            RETRIEVAL_TOP_SCORE.observe(top[0])
        logger.info(
            "retrieved",
            extra={"chunks": len(result.chunks), "top_scores": top, "cache_hit": result.cache_hit},
        )
        return convert.result_to_proto(result, searcher.unknown_terms(search_request.query))

    async def GetDocument(
        self, request: pb.GetDocumentRequest, context: aio.ServicerContext[Any, Any]
    ) -> pb.GetDocumentResponse:
        searcher = self._ready()
        doc_id = convert.doc_id_from_proto(request)
        chunks = searcher.documents.get(doc_id)
        logger.info("document served", extra={"doc_id": doc_id, "passages": len(chunks)})
        return convert.document_response(
            chunks, searcher.index_version, max_bytes=self.max_message_bytes
        )

    async def ListDocuments(
        self, request: pb.ListDocumentsRequest, context: aio.ServicerContext[Any, Any]
    ) -> pb.ListDocumentsResponse:
        searcher = self._ready()
        size = convert.list_from_proto(request, known_acts=searcher.acts)
        page = searcher.documents.page(
            request.acts, request.page_token, size, index_version=searcher.index_version
        )
        return convert.list_response(page, searcher.index_version)

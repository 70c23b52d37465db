"""Thin async handler for RetrievalService: proto → domain → proto."""

from __future__ import annotations

import asyncio
from typing import Any

from grounded.retrieval.v1 import retrieval_service_pb2 as pb
from grounded.retrieval.v1 import retrieval_service_pb2_grpc as pb_grpc
from grpc import aio

from services.common.errors import NotReadyError
from services.retrieval import convert
from services.retrieval.search import Searcher


class RetrievalServicer(pb_grpc.RetrievalServiceServicer):
    """Serves searches once a Searcher is installed by warm-up."""

    def __init__(self) -> None:
        self.searcher: Searcher | None = None

    async def RetrievePassages(
        self, request: pb.RetrievePassagesRequest, context: aio.ServicerContext[Any, Any]
    ) -> pb.RetrievePassagesResponse:
        searcher = self.searcher
        if searcher is None:
            raise NotReadyError("the index is still loading; retry shortly")
        search_request = convert.request_from_proto(
            request,
            known_acts=searcher.acts,
            known_doc_ids=searcher.doc_ids,
            default_stages=searcher.settings.default_stages,
        )
        # Encoding and FAISS release the GIL; a worker thread keeps the event loop answering health checks.
        result = await asyncio.to_thread(searcher.search, search_request)
        return convert.result_to_proto(result)

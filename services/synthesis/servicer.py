"""Thin async handler for SynthesisService: proto → pipeline → proto."""

from __future__ import annotations

import contextlib
import logging
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Collection
from contextlib import AbstractAsyncContextManager
from typing import Any, Protocol, TypeVar

from grounded.retrieval.v1 import retrieval_service_pb2 as rpb
from grounded.synthesis.v1 import synthesis_service_pb2 as pb
from grounded.synthesis.v1 import synthesis_service_pb2_grpc as pb_grpc
from grpc import aio

from services.common.budget import bounded
from services.common.documents import require_doc_id, require_list
from services.common.errors import ModelUnavailableError
from services.common.metrics import MODEL_FAILURES, REFUSALS
from services.synthesis import convert
from services.synthesis.pipeline import SynthesisPipeline, SynthesisRequest, SynthesisResult
from services.synthesis.routing import ModelChoice
from services.synthesis.streaming import FinishedEvent, stream_answer

logger = logging.getLogger(__name__)
_T = TypeVar("_T")


class PipelineFor(Protocol):
    """Holds the pipeline for a model name ("" = the configured model) for one request."""

    def __call__(self, model: str, /) -> AbstractAsyncContextManager[SynthesisPipeline]:
        """An async context manager yielding the pipeline."""
        ...


class DocumentSource(Protocol):
    """Where GetDocument asks for a document (the retrieval service)."""

    async def get_document(self, doc_id: str, *, timeout_s: float) -> rpb.GetDocumentResponse:
        """The document and the index version; NotFoundError when there is none."""
        ...

    async def list_documents(
        self, request: rpb.ListDocumentsRequest, *, timeout_s: float
    ) -> rpb.ListDocumentsResponse:
        """A page of the index's documents."""
        ...


class SynthesisServicer(pb_grpc.SynthesisServiceServicer):
    """``pipeline_for(model)`` leases the pipeline to use; ``default_generator`` is the server's;
    ``models`` says which models a request may name (the pool's ``model_choice``), so that
    another is named beside every other bad field; ``documents`` serves GetDocument, each call
    bounded by ``documents_timeout_s`` and the caller's deadline."""

    def __init__(
        self,
        pipeline_for: PipelineFor,
        *,
        default_top_k: int,
        default_generator: str,
        documents: DocumentSource,
        documents_timeout_s: float,
        on_model_failure: Callable[[], Awaitable[None]] | None = None,
        offered_generators: Collection[str] | None = None,
        models: ModelChoice | None = None,
    ) -> None:
        self._pipeline_for = pipeline_for
        self._offered = offered_generators
        self._models = models
        self._documents = documents
        self._documents_timeout_s = documents_timeout_s
        self._on_model_failure = on_model_failure
        self._default_top_k = default_top_k
        self._default_generator = default_generator

    async def SynthesizeAnswer(
        self, request: pb.SynthesizeAnswerRequest, context: aio.ServicerContext[Any, Any]
    ) -> pb.SynthesizeAnswerResponse:
        domain_request, deadline = self._convert(request, context)
        async with self._pipeline_for(request.model.strip()) as pipeline, self._model_guard():
            result = await pipeline.answer(domain_request, deadline=deadline)
        _count(result)
        return convert.result_to_proto(result)

    async def StreamAnswer(
        self, request: pb.SynthesizeAnswerRequest, context: aio.ServicerContext[Any, Any]
    ) -> AsyncIterator[pb.StreamAnswerResponse]:
        domain_request, deadline = self._convert(request, context)
        async with self._pipeline_for(request.model.strip()) as pipeline, self._model_guard():
            async for event in stream_answer(pipeline, domain_request, deadline=deadline):
                if isinstance(event, FinishedEvent):
                    _count(event.result)
                yield convert.event_to_proto(event)

    async def GetDocument(
        self, request: pb.GetDocumentRequest, context: aio.ServicerContext[Any, Any]
    ) -> pb.GetDocumentResponse:
        doc_id = require_doc_id(request.doc_id)
        found = await self._from_retrieval(
            context, lambda seconds: self._documents.get_document(doc_id, timeout_s=seconds)
        )
        return pb.GetDocumentResponse(document=found.document, index_version=found.index_version)

    async def ListDocuments(
        self, request: pb.ListDocumentsRequest, context: aio.ServicerContext[Any, Any]
    ) -> pb.ListDocumentsResponse:
        require_list(request.page_size, request.acts)  # unknown acts are retrieval's to name
        forwarded = rpb.ListDocumentsRequest(
            page_size=request.page_size, page_token=request.page_token, acts=request.acts
        )
        page = await self._from_retrieval(
            context, lambda seconds: self._documents.list_documents(forwarded, timeout_s=seconds)
        )
        return pb.ListDocumentsResponse(
            documents=page.documents,
            next_page_token=page.next_page_token,
            total_size=page.total_size,
            index_version=page.index_version,
        )

    def _convert(
        self, request: pb.SynthesizeAnswerRequest, context: aio.ServicerContext[Any, Any]
    ) -> tuple[SynthesisRequest, float | None]:
        domain_request = convert.request_from_proto(
            request,
            default_top_k=self._default_top_k,
            default_generator=self._default_generator,
            offered=self._offered,
            models=self._models,
        )
        return domain_request, _deadline(context)

    async def _from_retrieval(
        self, context: aio.ServicerContext[Any, Any], call: Callable[[float], Awaitable[_T]]
    ) -> _T:
        """A document call to retrieval, bounded as an answer's retrieval is: the caller's
        deadline and SYNTHESIS_RETRIEVAL_TIMEOUT_S."""
        return await bounded("retrieval", _deadline(context), self._documents_timeout_s, call)

    @contextlib.asynccontextmanager
    async def _model_guard(self) -> AsyncIterator[None]:
        try:
            yield
        except ModelUnavailableError as exc:
            # The answerability or the statement (entailment) model stopped working: fail the
            # call and take the pod out of rotation, never fall back to keyword rules without
            # saying so. The pipeline names the model (its manifest name, or its role when it
            # is not loaded yet).
            model = exc.metadata.get("model", "unknown")
            MODEL_FAILURES.labels(model).inc()
            logger.error("model %s failed on a request: %s", model, exc.message)
            # The server decides whether the models still run (serving) or not (not serving).
            if self._on_model_failure is not None:
                await self._on_model_failure()
            raise


def _count(result: SynthesisResult) -> None:
    """Count a refusal by its code and, when the evidence fell short, the requirement that
    failed (a SufficiencyRequirement name without its prefix: one of a fixed set)."""
    if not result.answered:
        requirement = result.sufficiency.failed_code
        REFUSALS.labels(result.refusal_code or result.status.value, requirement).inc()


def _deadline(context: aio.ServicerContext[Any, Any]) -> float | None:
    """The caller's deadline as a ``time.monotonic()`` instant: it bounds every downstream call
    (min(remaining, per-stage limit))."""
    remaining = context.time_remaining()
    return None if remaining is None else time.monotonic() + remaining

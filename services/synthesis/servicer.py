"""Thin async handler for SynthesisService: proto → pipeline → proto."""

from __future__ import annotations

import time
from contextlib import AbstractAsyncContextManager
from typing import Any, Protocol

from grounded.synthesis.v1 import synthesis_service_pb2 as pb
from grounded.synthesis.v1 import synthesis_service_pb2_grpc as pb_grpc
from grpc import aio

from services.common.metrics import REFUSALS
from services.synthesis import convert
from services.synthesis.pipeline import SynthesisPipeline


class PipelineFor(Protocol):
    """Holds the pipeline for a model name ("" = the configured model) for one request."""

    def __call__(self, model: str, /) -> AbstractAsyncContextManager[SynthesisPipeline]:
        """An async context manager yielding the pipeline."""
        ...


class SynthesisServicer(pb_grpc.SynthesisServiceServicer):
    """``pipeline_for(model)`` leases the pipeline to use; ``default_generator`` is the server's."""

    def __init__(
        self, pipeline_for: PipelineFor, *, default_top_k: int, default_generator: str
    ) -> None:
        self._pipeline_for = pipeline_for
        self._default_top_k = default_top_k
        self._default_generator = default_generator

    async def SynthesizeAnswer(
        self, request: pb.SynthesizeAnswerRequest, context: aio.ServicerContext[Any, Any]
    ) -> pb.SynthesizeAnswerResponse:
        domain_request = convert.request_from_proto(
            request,
            default_top_k=self._default_top_k,
            default_generator=self._default_generator,
        )
        remaining = context.time_remaining()
        # The caller's deadline bounds every downstream call (min(remaining, per-stage limit)).
        deadline = None if remaining is None else time.monotonic() + remaining
        async with self._pipeline_for(request.model) as pipeline:
            result = await pipeline.answer(domain_request, deadline=deadline)
        if not result.answered:
            REFUSALS.labels(result.refusal_code or result.status.value).inc()
        return convert.result_to_proto(result)

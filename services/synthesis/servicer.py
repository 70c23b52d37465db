"""Thin async handler for SynthesisService: proto → pipeline → proto."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from grounded.synthesis.v1 import synthesis_service_pb2 as pb
from grounded.synthesis.v1 import synthesis_service_pb2_grpc as pb_grpc
from grpc import aio

from services.common.metrics import REFUSALS
from services.synthesis import convert
from services.synthesis.pipeline import SynthesisPipeline


class SynthesisServicer(pb_grpc.SynthesisServiceServicer):
    """``pipeline_for(model)`` returns the pipeline to use ("" = the configured default model)."""

    def __init__(
        self, pipeline_for: Callable[[str], SynthesisPipeline], *, default_top_k: int
    ) -> None:
        self._pipeline_for = pipeline_for
        self._default_top_k = default_top_k

    async def SynthesizeAnswer(
        self, request: pb.SynthesizeAnswerRequest, context: aio.ServicerContext[Any, Any]
    ) -> pb.SynthesizeAnswerResponse:
        domain_request = convert.request_from_proto(request, default_top_k=self._default_top_k)
        remaining = context.time_remaining()
        # The caller's deadline bounds every downstream call (min(remaining, per-stage limit)).
        deadline = None if remaining is None else time.monotonic() + remaining
        result = await self._pipeline_for(request.model).answer(domain_request, deadline=deadline)
        if not result.answered:
            REFUSALS.labels(result.refusal_code or result.status.value).inc()
        return convert.result_to_proto(result)

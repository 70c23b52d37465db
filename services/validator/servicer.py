"""Thin async handler for ValidatorService: proto → domain → proto."""

from __future__ import annotations

import asyncio
from typing import Any

from grounded.validator.v1 import validator_service_pb2 as pb
from grounded.validator.v1 import validator_service_pb2_grpc as pb_grpc
from grpc import aio

from services.common.metrics import VALIDATION_FAILURES
from services.validator import convert
from services.validator.engine import validate
from services.validator.report import Verdict

DEFAULT_INLINE_MAX_BYTES = 32 * 1024


class ValidatorServicer(pb_grpc.ValidatorServiceServicer):
    def __init__(self, inline_max_bytes: int = DEFAULT_INLINE_MAX_BYTES) -> None:
        self.inline_max_bytes = inline_max_bytes

    async def ValidateAnswer(
        self, request: pb.ValidateAnswerRequest, context: aio.ServicerContext[Any, Any]
    ) -> pb.ValidateAnswerResponse:
        # Validation is CPU-bound Python. A typical request takes a few milliseconds, less than a
        # worker-thread hand-off costs once the GIL is contended, so it runs on the event loop.
        # A large one (up to 200 passages) goes to a worker thread, so that the loop keeps
        # accepting calls and answering health checks meanwhile (which also lets a SIGTERM
        # drain pick queued calls up instead of cancelling them).
        if request.ByteSize() <= self.inline_max_bytes:
            response = _validate_request(request)
        else:
            response = await asyncio.to_thread(_validate_request, request)
        return response


def _validate_request(request: pb.ValidateAnswerRequest) -> pb.ValidateAnswerResponse:
    answer, evidence, options = convert.request_from_proto(request)
    report = validate(answer, evidence, options)
    if report.verdict is Verdict.NOT_GROUNDED:
        VALIDATION_FAILURES.labels(report.reason.value).inc()
    return convert.report_to_proto(report)

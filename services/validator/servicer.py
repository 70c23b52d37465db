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
from services.validator.report import ValidationReport, Verdict


class ValidatorServicer(pb_grpc.ValidatorServiceServicer):
    async def ValidateAnswer(
        self, request: pb.ValidateAnswerRequest, context: aio.ServicerContext[Any, Any]
    ) -> pb.ValidateAnswerResponse:
        # CPU-bound (parsing and checking up to 200 passages): a worker thread keeps the event loop
        # accepting calls and answering health checks, so calls that arrive under load are picked
        # up promptly, which is what lets a SIGTERM drain finish them instead of cancelling them.
        report = await asyncio.to_thread(_validate_request, request)
        if report.verdict is Verdict.NOT_GROUNDED:
            VALIDATION_FAILURES.labels(report.reason.value).inc()
        return convert.report_to_proto(report)


def _validate_request(request: pb.ValidateAnswerRequest) -> ValidationReport:
    answer, evidence, options = convert.request_from_proto(request)
    return validate(answer, evidence, options)

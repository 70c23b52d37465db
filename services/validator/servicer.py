"""Thin async handler for ValidatorService: proto → domain → proto."""

from __future__ import annotations

from typing import Any

from grounded.validator.v1 import validator_service_pb2 as pb
from grounded.validator.v1 import validator_service_pb2_grpc as pb_grpc
from grpc import aio

from services.common.metrics import VALIDATION_FAILURES
from services.validator import convert
from services.validator.engine import validate
from services.validator.report import Verdict


class ValidatorServicer(pb_grpc.ValidatorServiceServicer):
    async def ValidateAnswer(
        self, request: pb.ValidateAnswerRequest, context: aio.ServicerContext[Any, Any]
    ) -> pb.ValidateAnswerResponse:
        answer, evidence, options = convert.request_from_proto(request)
        report = validate(answer, evidence, options)
        if report.verdict is Verdict.NOT_GROUNDED:
            VALIDATION_FAILURES.labels(report.reason.value).inc()
        return convert.report_to_proto(report)

"""Thin async handler for ValidatorService: proto → domain → proto."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from typing import Any

from grounded.validator.v1 import validator_service_pb2 as pb
from grounded.validator.v1 import validator_service_pb2_grpc as pb_grpc
from grpc import aio

from services.common.errors import ModelUnavailableError
from services.common.metrics import (
    MODEL_FAILURES,
    SUPPORT_SCORE,
    VALIDATED_SENTENCES,
    VALIDATION_FAILURES,
)
from services.common.validation import Verdict
from services.common.validation_proto import report_to_proto
from services.validator import convert
from services.validator.engine import EntailmentTier, validate

DEFAULT_INLINE_MAX_BYTES = 32 * 1024
logger = logging.getLogger(__name__)


class ValidatorServicer(pb_grpc.ValidatorServiceServicer):
    def __init__(
        self,
        inline_max_bytes: int = DEFAULT_INLINE_MAX_BYTES,
        *,
        tier: EntailmentTier | None = None,
        on_model_failure: Callable[[], Awaitable[None]] | None = None,
    ) -> None:
        self.inline_max_bytes = inline_max_bytes
        # Set by the server's warm-up once the model is loaded (None: the tier is switched off).
        self.tier = tier
        self.on_model_failure = on_model_failure

    async def ValidateAnswer(
        self, request: pb.ValidateAnswerRequest, context: aio.ServicerContext[Any, Any]
    ) -> pb.ValidateAnswerResponse:
        # Validation is CPU-bound Python. A typical request takes a few milliseconds, less than a
        # worker-thread hand-off costs once the GIL is contended, so it runs on the event loop.
        # A large one (up to 200 passages) goes to a worker thread, so that the loop keeps
        # accepting calls and answering health checks meanwhile (which also lets a SIGTERM
        # drain pick queued calls up instead of cancelling them).
        # With the entailment model the call takes milliseconds of ONNX Runtime, which releases
        # the GIL: a worker thread then lets other calls and health checks proceed meanwhile.
        try:
            if self.tier is None and request.ByteSize() <= self.inline_max_bytes:
                response = _validate_request(request, None)
            else:
                response = await asyncio.to_thread(_validate_request, request, self.tier)
        except ModelUnavailableError as exc:
            MODEL_FAILURES.labels(self.tier.model.name if self.tier else "unknown").inc()
            logger.error("entailment model failed on a request, not serving: %s", exc.message)
            if self.on_model_failure is not None:
                await self.on_model_failure()
            raise
        return response


def _validate_request(
    request: pb.ValidateAnswerRequest, tier: EntailmentTier | None
) -> pb.ValidateAnswerResponse:
    answer, evidence, options = convert.request_from_proto(request)
    report = validate(answer, evidence, options, tier)
    if report.verdict is Verdict.NOT_GROUNDED:
        VALIDATION_FAILURES.labels(report.reason.value).inc()
    if report.verdict is not Verdict.REFUSAL:
        SUPPORT_SCORE.observe(report.support_score)
    logger.info(
        "validated",
        extra={
            "verdict": report.verdict.value,
            "reason": report.reason.value,
            "support_score": round(report.support_score, 4),
            "sentences": len(report.sentences),
        },
    )
    for sentence in report.sentences:
        decided = sentence.decided_by.value if sentence.decided_by else "none"
        VALIDATED_SENTENCES.labels(decided, sentence.verdict.value).inc()
    return report_to_proto(report)

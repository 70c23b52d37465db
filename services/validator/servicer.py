"""Thin async handler for ValidatorService: proto → domain → proto."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from grounded.validator.v1 import validator_service_pb2 as pb
from grounded.validator.v1 import validator_service_pb2_grpc as pb_grpc
from grpc import aio

from services.common.errors import ModelUnavailableError
from services.common.judge import Band, Judge
from services.common.metrics import (
    MODEL_FAILURES,
    STAGE_SECONDS,
    SUPPORT_SCORE,
    VALIDATED_SENTENCES,
    VALIDATION_FAILURES,
)
from services.common.tracing import annotate, stage_span
from services.common.validation import Reason, ValidationOptions, ValidationReport, Verdict
from services.validator import cascade, convert
from services.validator.cascade import DEFAULT_BAND, DEFAULT_REVIEW
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
        judge: Judge | None = None,
        band: Band = DEFAULT_BAND,
        review: frozenset[Reason] = DEFAULT_REVIEW,
    ) -> None:
        self.inline_max_bytes = inline_max_bytes
        # Set by the server's warm-up once the model is loaded (None: the tier is switched off).
        self.tier = tier
        self.on_model_failure = on_model_failure
        # The judge tier (issue 17): sentences the local tiers leave uncertain go to it.
        self.judge = judge
        self.band = band
        self.review = review

    async def ValidateAnswer(
        self, request: pb.ValidateAnswerRequest, context: aio.ServicerContext[Any, Any]
    ) -> pb.ValidateAnswerResponse:
        answer, evidence, options = convert.request_from_proto(request, band=self.band)
        # Validation is CPU-bound Python. A typical request takes a few milliseconds, less than a
        # worker-thread hand-off costs once the GIL is contended, so it runs on the event loop.
        # A large one (up to 200 passages) goes to a worker thread, so that the loop keeps
        # accepting calls and answering health checks meanwhile (which also lets a SIGTERM
        # drain pick queued calls up instead of cancelling them).
        # With the entailment model the call takes milliseconds of ONNX Runtime, which releases
        # the GIL: a worker thread then lets other calls and health checks proceed meanwhile.
        # The rules stop between sentences, and the model between rounds, once the caller's
        # deadline has passed: a caller that gave up costs no more time.
        left = context.time_remaining()
        deadline = None if left is None else time.monotonic() + left
        try:
            if self.tier is None and request.ByteSize() <= self.inline_max_bytes:
                report = validate(answer, evidence, options, None, deadline=deadline)
            else:
                report = await asyncio.to_thread(
                    validate, answer, evidence, options, self.tier, deadline=deadline
                )
        except ModelUnavailableError as exc:
            MODEL_FAILURES.labels(self.tier.model.name if self.tier else "unknown").inc()
            logger.error("entailment model failed on a request: %s", exc.message)
            # The server decides whether the model still runs (serving) or not (not serving).
            if self.on_model_failure is not None:
                await self.on_model_failure()
            raise
        if self.judge is not None and options.check_judge:
            report = await self._escalate(report, evidence, options, context)
        _record(report)
        return convert.response_to_proto(report)

    async def _escalate(
        self,
        report: ValidationReport,
        evidence: Sequence[convert.EvidenceItem],
        options: ValidationOptions,
        context: aio.ServicerContext[Any, Any],
    ) -> ValidationReport:
        """Send what the local tiers left uncertain to the judge and fold its verdicts in."""
        assert self.judge is not None
        band = Band(*self.band.with_ends(options.judge_band_low, options.judge_band_high))
        remaining = context.time_remaining()
        # Leave the reply some of the caller's time; without a deadline the judge's own applies.
        budget = self.judge.timeout_s if remaining is None else remaining - _REPLY_MARGIN_S
        started = time.perf_counter()
        with stage_span("judge", model=self.judge.model):
            judged, asked = await cascade.escalate(
                report, evidence, self.judge, band, self.review, timeout_s=budget
            )
            annotate(sentences=asked)
        if asked:
            STAGE_SECONDS.labels("validator", "judge").observe(time.perf_counter() - started)
        return judged


# Time kept back from the caller's deadline for building and sending the response.
_REPLY_MARGIN_S = 0.05


def _record(report: ValidationReport) -> None:
    for stage, seconds in report.stage_seconds:
        STAGE_SECONDS.labels("validator", stage).observe(seconds)
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

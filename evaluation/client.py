"""gRPC calls the harness makes, and the conversion of their responses into plain Outcomes."""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from grounded.retrieval.v1 import retrieval_service_pb2 as rpb
from grounded.retrieval.v1 import retrieval_service_pb2_grpc as rpb_grpc
from grounded.synthesis.v1 import synthesis_service_pb2 as spb
from grounded.synthesis.v1 import synthesis_service_pb2_grpc as spb_grpc
from grounded.type.v1 import evidence_pb2, validation_pb2
from grounded.validator.v1 import validator_service_pb2 as vpb
from grounded.validator.v1 import validator_service_pb2_grpc as vpb_grpc
from grpc import aio

from evaluation.records import Citation, Outcome
from services.common.language.citations import EvidenceIndex, scan
from services.common.refusal import REFUSAL
from services.common.validation import Verdict

# Stages of SynthesizeAnswer's timings that become latency figures; retrieval's own sub-stages
# ("retrieval.dense", ...) are left out so the histogram stays readable. "client" is the
# round trip the harness measured around the call.
LATENCY_STAGES = (
    "retrieval",
    "sufficiency",
    "answerability",
    "generation",
    "validation",
    "total",
)
CLIENT_STAGE = "client"

_VERDICTS = {
    validation_pb2.VALIDATION_VERDICT_GROUNDED: Verdict.GROUNDED,
    validation_pb2.VALIDATION_VERDICT_REFUSAL: Verdict.REFUSAL,
    validation_pb2.VALIDATION_VERDICT_NOT_GROUNDED: Verdict.NOT_GROUNDED,
}


def resolve_citations(
    answer: str, evidence: Sequence[evidence_pb2.Passage]
) -> tuple[Citation, ...]:
    """The answer's citations, each with the text of the evidence passage it names.

    Tokens are found with the validator's citation syntax (``services.common.language.citations``:
    ``[A][B]``, ``[A, B]``, numbered ``[1-3]``; a bracket quoted verbatim from the evidence, such
    as ``[95% CI]``, is text). They are read from the delivered text, not from the response's
    citation list: that list holds only ids that resolved, so an invalid citation would never
    show up in it. An id outside the evidence, and a malformed token, is an invalid citation
    (text None).
    """
    by_id = {p.semantic_id: p for p in evidence}
    found: dict[str, Citation] = {}
    for token in scan(answer, EvidenceIndex.build(evidence)):
        for semantic_id in token.ids:
            passage = by_id[semantic_id]
            found.setdefault(
                semantic_id, Citation(semantic_id, passage.text, passage.doc_id or None)
            )
        for bad in token.invalid:
            found.setdefault(bad, Citation(bad, None))
        if token.problem and not (token.ids or token.invalid):
            found.setdefault(token.raw, Citation(token.raw, None))
    return tuple(found.values())


def verdict_of(
    response: validation_pb2.ValidationReport | vpb.ValidateAnswerResponse,
) -> Verdict | None:
    """The domain verdict of a validator response (None when unset)."""
    return _VERDICTS.get(response.verdict)


def stage_latencies(
    timings: Sequence[evidence_pb2.StageTiming], client_ms: float
) -> dict[str, float]:
    """Milliseconds per reported top-level stage that ran, plus the client's round trip."""
    latency = {t.stage: t.duration_ms for t in timings if t.ran and t.stage in LATENCY_STAGES}
    latency[CLIENT_STAGE] = client_ms
    return latency


@dataclass(frozen=True, slots=True)
class Retrieved:
    """Ranked chunk ids and texts from RetrievePassages, and the index version that served them."""

    ids: tuple[str, ...]
    texts: tuple[str, ...]
    index_version: str


def outcome_from_response(
    item_id: str,
    response: spb.SynthesizeAnswerResponse,
    *,
    client_ms: float,
    retrieved: Retrieved | None = None,
) -> Outcome:
    """One Outcome from a SynthesizeAnswer response (and, optionally, a RetrievePassages one)."""
    verdict = verdict_of(response.validation) if response.HasField("validation") else None
    answered = response.status == spb.ANSWER_STATUS_ANSWERED
    return Outcome.from_answer(
        item_id,
        response.answer,
        citations=resolve_citations(response.answer, response.evidence) if answered else (),
        retrieved_ids=retrieved.ids if retrieved else (),
        retrieved_texts=retrieved.texts if retrieved else (),
        latency_ms=stage_latencies(response.timings, client_ms),
        validator_verdict=verdict,
        refusal_reason=refusal_code(response),
        answerability=round(response.sufficiency.answerability_score, 4)
        if response.sufficiency.HasField("answerability_score")
        else None,
        answerability_effect=answerability_effect(response.sufficiency),
        synthesis_mode=response.synthesis_mode,
    )


def refusal_code(response: spb.SynthesizeAnswerResponse) -> str | None:
    """``INSUFFICIENT_EVIDENCE (DEFINITIONAL_LANGUAGE)``: the stable code, with the failed
    sufficiency requirement when there is one; None when the response states no code."""
    if response.refusal_code == spb.REFUSAL_CODE_UNSPECIFIED:
        return None
    code = spb.RefusalCode.Name(response.refusal_code).removeprefix("REFUSAL_CODE_")
    failed = response.sufficiency.failed_requirement
    if failed == spb.SUFFICIENCY_REQUIREMENT_UNSPECIFIED:
        return code
    return f"{code} ({spb.SufficiencyRequirement.Name(failed).removeprefix('SUFFICIENCY_REQUIREMENT_')})"


def answerability_effect(report: spb.SufficiencyReport) -> str:
    """The effect as the records keep it: "" (none), "vetoed", "rescued", "judge_refused", ..."""
    if report.answerability_effect == spb.ANSWERABILITY_EFFECT_UNSPECIFIED:
        return ""
    name = spb.AnswerabilityEffect.Name(report.answerability_effect)
    return name.removeprefix("ANSWERABILITY_EFFECT_").lower()


def draft_of(response: spb.SynthesizeAnswerResponse) -> str | None:
    """The draft the validator judged: the answer, or for a rejected draft its sentences joined.

    None when no draft reached the validator (refused for insufficient evidence, or errors).
    """
    if response.status == spb.ANSWER_STATUS_ANSWERED:
        return response.answer
    if response.HasField("validation") and response.validation.sentences:
        return " ".join(s.text for s in response.validation.sentences)
    return None


def error_message(error: BaseException) -> str:
    """``CODE: details`` for an RPC error, else the exception's type and text."""
    if isinstance(error, aio.AioRpcError):
        return f"{error.code().name}: {error.details() or ''}".strip()
    return f"{type(error).__name__}: {error}"


class Client:
    """Stubs over one set of channels; every call has a timeout."""

    def __init__(
        self,
        synthesis: aio.Channel,
        retrieval: aio.Channel | None,
        validator: aio.Channel | None,
        *,
        timeout_s: float,
    ) -> None:
        self._synthesis = spb_grpc.SynthesisServiceStub(synthesis)
        self._retrieval = rpb_grpc.RetrievalServiceStub(retrieval) if retrieval else None
        self._validator = vpb_grpc.ValidatorServiceStub(validator) if validator else None
        self.timeout_s = timeout_s

    @property
    def has_retrieval(self) -> bool:
        return self._retrieval is not None

    @property
    def has_validator(self) -> bool:
        return self._validator is not None

    async def synthesize(self, question: str) -> tuple[spb.SynthesizeAnswerResponse, float]:
        """The answer with the server's default settings, and the round trip in ms."""
        started = time.perf_counter()
        response = await self._synthesis.SynthesizeAnswer(
            spb.SynthesizeAnswerRequest(question=question), timeout=self.timeout_s
        )
        return response, (time.perf_counter() - started) * 1000.0

    async def retrieve(
        self, query: str, *, top_k: int, stages: Mapping[str, bool] | None = None
    ) -> Retrieved:
        """Top ``top_k`` passages; ``stages`` overrides switches, and the result cache is off."""
        if self._retrieval is None:
            raise RuntimeError("no retrieval address")
        request = rpb.RetrievePassagesRequest(
            query=query, top_k=top_k, stages=rpb.RetrievalStages(cache=False, **dict(stages or {}))
        )
        response = await self._retrieval.RetrievePassages(request, timeout=self.timeout_s)
        return Retrieved(
            ids=tuple(p.semantic_id for p in response.passages),
            texts=tuple(p.text for p in response.passages),
            index_version=response.index_version,
        )

    async def validate(
        self,
        answer: str,
        evidence: Sequence[evidence_pb2.Passage],
        options: vpb.ValidationOptions,
    ) -> vpb.ValidateAnswerResponse:
        """The validator's verdict on ``answer`` against ``evidence`` with ``options``."""
        if self._validator is None:
            raise RuntimeError("no validator address")
        request = vpb.ValidateAnswerRequest(answer=answer, evidence=list(evidence), options=options)
        response: vpb.ValidateAnswerResponse = await self._validator.ValidateAnswer(
            request, timeout=self.timeout_s
        )
        return response


def refusal_outcome(item_id: str, latency_ms: Mapping[str, float]) -> Outcome:
    """An outcome that is exactly the refusal."""
    return Outcome.from_answer(item_id, REFUSAL, latency_ms=latency_ms)

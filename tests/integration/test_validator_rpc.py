"""ValidateAnswer on the real validator app over loopback: small requests are validated on the
event loop, large ones in a worker thread, with the same responses and errors either way."""

from __future__ import annotations

import asyncio
import json
import shutil
import time
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import grpc
import pytest
from grounded.type.v1 import evidence_pb2, validation_pb2
from grounded.validator.v1 import validator_service_pb2 as pb
from grounded.validator.v1 import validator_service_pb2_grpc as pb_grpc
from grpc import aio
from grpc_health.v1 import health_pb2, health_pb2_grpc

from services.common.errors import DeadlineExceededError, ModelUnavailableError
from services.common.server import ServiceApp
from services.validator import servicer as servicer_module
from services.validator.config import DEFAULT_MODEL_DIR, SERVICE_NAME, ValidatorConfig
from services.validator.server import create_app
from tests.support.grpc_helpers import error_reason, field_violations, health_status
from tests.unit.validator.samples import ipc_evidence

pytestmark = pytest.mark.integration

ANSWER = (
    "Whoever cheats and thereby dishonestly induces the person deceived to deliver any property "
    "shall be punished with imprisonment for a term which may extend to seven years [IPC_420_0]."
)


def _request(answer: str = ANSWER) -> pb.ValidateAnswerRequest:
    return pb.ValidateAnswerRequest(
        answer=answer,
        evidence=[
            evidence_pb2.Passage(semantic_id=c.semantic_id, doc_id=c.doc_id, text=c.text)
            for c in ipc_evidence()
        ],
    )


async def _serve(inline_max_bytes: int, **extra: str) -> ServiceApp:
    """The validator as deployed (interceptor, error mapping), on a free loopback port.

    The inline/worker-thread choice only exists without the entailment model (with it every
    call goes to a worker thread), so these servers run with the tier off unless asked.
    """
    env = {
        "VALIDATOR_PORT": "0",
        "VALIDATOR_INLINE_MAX_BYTES": str(inline_max_bytes),
        "VALIDATOR_ENTAILMENT": "off",
        **extra,
    }
    app = create_app(ValidatorConfig.from_env(env))
    await app.start()
    return app


@pytest.fixture
def offloaded(monkeypatch: pytest.MonkeyPatch) -> list[Callable[..., Any]]:
    """Records every function the handler hands to a worker thread."""
    calls: list[Callable[..., Any]] = []
    real = asyncio.to_thread

    async def recording(func: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Any:
        calls.append(func)
        return await real(func, *args, **kwargs)

    monkeypatch.setattr(servicer_module.asyncio, "to_thread", recording)
    return calls


@pytest.fixture
async def stubs() -> AsyncIterator[dict[str, pb_grpc.ValidatorServiceStub]]:
    """One server validating everything inline, one sending everything to a worker thread."""
    inline = await _serve(inline_max_bytes=1 << 20)
    threaded = await _serve(inline_max_bytes=0)
    channels = [
        aio.insecure_channel(f"127.0.0.1:{inline.port}"),
        aio.insecure_channel(f"127.0.0.1:{threaded.port}"),
    ]
    try:
        yield {
            "inline": pb_grpc.ValidatorServiceStub(channels[0]),
            "threaded": pb_grpc.ValidatorServiceStub(channels[1]),
        }
    finally:
        for channel in channels:
            await channel.close()
        await inline.stop(None)
        await threaded.stop(None)


class TestValidatorServicer:
    async def test_servicer_small_request_runs_inline(
        self, stubs: dict[str, pb_grpc.ValidatorServiceStub], offloaded: list[Any]
    ) -> None:
        response = await stubs["inline"].ValidateAnswer(_request(), timeout=10)

        assert response.verdict == validation_pb2.VALIDATION_VERDICT_GROUNDED
        assert offloaded == []

    async def test_servicer_large_request_runs_in_a_worker_thread(
        self, stubs: dict[str, pb_grpc.ValidatorServiceStub], offloaded: list[Any]
    ) -> None:
        response = await stubs["threaded"].ValidateAnswer(_request(), timeout=10)

        assert response.verdict == validation_pb2.VALIDATION_VERDICT_GROUNDED
        assert len(offloaded) == 1

    @pytest.mark.parametrize(
        "answer",
        [
            ANSWER,
            "Theft is punishable with death [IPC_379_0].",
            "Cheating is punished [IPC_999_0].",
            "I cannot answer based on the provided documents.",
        ],
    )
    async def test_servicer_both_paths_give_the_same_response(
        self, stubs: dict[str, pb_grpc.ValidatorServiceStub], answer: str
    ) -> None:
        inline = await stubs["inline"].ValidateAnswer(_request(answer), timeout=10)
        threaded = await stubs["threaded"].ValidateAnswer(_request(answer), timeout=10)

        assert inline == threaded

    async def test_servicer_bad_input_is_invalid_argument_on_both_paths(
        self, stubs: dict[str, pb_grpc.ValidatorServiceStub]
    ) -> None:
        request = _request()
        request.evidence.add(semantic_id="")
        for stub in stubs.values():
            with pytest.raises(aio.AioRpcError) as caught:
                await stub.ValidateAnswer(request, timeout=10)
            assert caught.value.code() == grpc.StatusCode.INVALID_ARGUMENT

    async def test_servicer_threshold_sent_equal_to_the_default_decides_as_the_default(
        self, stubs: dict[str, pb_grpc.ValidatorServiceStub]
    ) -> None:
        """Exactly 3 of the sentence's 10 content words are in the passage: coverage 0.3 meets
        the default single_citation_threshold 0.30. Sent explicitly, 0.30 is a float32 on the
        wire (0.30000001192092896 read as is), which used to reject the same sentence."""
        stub = stubs["inline"]
        unset = await stub.ValidateAnswer(_three_in_ten(), timeout=10)
        sent = _three_in_ten()
        sent.options.single_citation_threshold = 0.30
        explicit = await stub.ValidateAnswer(sent, timeout=10)
        stricter = _three_in_ten()
        stricter.options.single_citation_threshold = 0.31
        above = await stub.ValidateAnswer(stricter, timeout=10)

        assert unset.sentences[0].coverage == pytest.approx(0.3)
        assert unset.verdict == validation_pb2.VALIDATION_VERDICT_GROUNDED
        assert explicit == unset
        # The sentence is on the edge: a threshold just above its coverage rejects it.
        assert above.verdict == validation_pb2.VALIDATION_VERDICT_NOT_GROUNDED
        assert above.reason == validation_pb2.VALIDATION_REASON_LOW_COVERAGE


def _three_in_ten() -> pb.ValidateAnswerRequest:
    """A sentence of 10 content words, 3 of them (council, approved, budget) in the one passage
    it cites."""
    return pb.ValidateAnswerRequest(
        answer="The council approved budget yesterday while farmers protested loudly outside "
        "village halls [DOC_1_0].",
        evidence=[
            evidence_pb2.Passage(
                semantic_id="DOC_1_0",
                doc_id="DOC_1",
                text="The council approved the harbour budget after a long debate.",
            )
        ],
    )


class TestEntailmentTierOverRpc:
    """The shipped model in the real server: scores, tiers, switches and failure."""

    @pytest.fixture
    async def stub(self) -> AsyncIterator[pb_grpc.ValidatorServiceStub]:
        app = await _serve(1 << 20, VALIDATOR_ENTAILMENT="on")
        channel = aio.insecure_channel(f"127.0.0.1:{app.port}")
        try:
            yield pb_grpc.ValidatorServiceStub(channel)
        finally:
            await channel.close()
            await app.stop(None)

    async def test_rpc_reports_tiers_model_and_scores(
        self, stub: pb_grpc.ValidatorServiceStub
    ) -> None:
        response = await stub.ValidateAnswer(_request(), timeout=10)

        assert response.verdict == validation_pb2.VALIDATION_VERDICT_GROUNDED
        assert list(response.tiers) == [
            validation_pb2.VALIDATION_TIER_CITATIONS,
            validation_pb2.VALIDATION_TIER_COVERAGE,
            validation_pb2.VALIDATION_TIER_NUMBERS,
            validation_pb2.VALIDATION_TIER_NEGATION,
            validation_pb2.VALIDATION_TIER_PENALTY,
            validation_pb2.VALIDATION_TIER_ROLES,
            validation_pb2.VALIDATION_TIER_ENTAILMENT,
        ]
        assert response.entailment_model.startswith("entailment-minilm-l6")
        sentence = response.sentences[0]
        assert sentence.decided_by == validation_pb2.VALIDATION_TIER_ENTAILMENT
        assert sentence.entailment.semantic_id == "IPC_420_0"
        # Accepted because P(entailment) reaches the shipped model's calibrated threshold (the
        # rule; P(contradiction) only picks the reason of a rejection), and the report says so.
        threshold = json.loads((DEFAULT_MODEL_DIR / "manifest.json").read_text())["calibration"]
        assert sentence.entailment.entailment >= threshold["entail_threshold"]
        assert (
            0.99
            <= sum(
                (
                    sentence.entailment.entailment,
                    sentence.entailment.neutral,
                    sentence.entailment.contradiction,
                )
            )
            <= 1.01
        )

    async def test_rpc_rejects_a_misstated_penalty(
        self, stub: pb_grpc.ValidatorServiceStub
    ) -> None:
        answer = (
            "Cheating is punishable with rigorous imprisonment of at least seven years [IPC_420_0]."
        )
        response = await stub.ValidateAnswer(_request(answer), timeout=10)

        assert response.verdict == validation_pb2.VALIDATION_VERDICT_NOT_GROUNDED
        assert response.reason == validation_pb2.VALIDATION_REASON_PENALTY_MISMATCH
        assert response.sentences[0].decided_by == validation_pb2.VALIDATION_TIER_PENALTY

    async def test_rpc_counts_sentences_by_deciding_tier(
        self, stub: pb_grpc.ValidatorServiceStub
    ) -> None:
        from services.common.metrics import VALIDATED_SENTENCES

        counter = VALIDATED_SENTENCES.labels("penalty", "unsupported")
        before = counter._value.get()
        answer = "Cheating is punishable with rigorous imprisonment for at least seven years [IPC_420_0]."
        await stub.ValidateAnswer(_request(answer), timeout=10)
        assert counter._value.get() == before + 1

    async def test_rpc_request_can_switch_the_tier_off(
        self, stub: pb_grpc.ValidatorServiceStub
    ) -> None:
        request = _request()
        request.options.check_entailment = False
        response = await stub.ValidateAnswer(request, timeout=10)

        assert validation_pb2.VALIDATION_TIER_ENTAILMENT not in response.tiers
        assert response.entailment_model == ""

    async def test_rpc_threshold_out_of_range_is_invalid_argument(
        self, stub: pb_grpc.ValidatorServiceStub
    ) -> None:
        request = _request()
        request.options.entail_threshold = 1.5
        with pytest.raises(aio.AioRpcError) as caught:
            await stub.ValidateAnswer(request, timeout=10)
        assert caught.value.code() == grpc.StatusCode.INVALID_ARGUMENT
        assert "options.entail_threshold" in field_violations(caught.value)

    async def test_rpc_operator_switch_off_omits_the_tier(self) -> None:
        app = await _serve(1 << 20)  # VALIDATOR_ENTAILMENT=off
        async with aio.insecure_channel(f"127.0.0.1:{app.port}") as channel:
            response = await pb_grpc.ValidatorServiceStub(channel).ValidateAnswer(
                _request(), timeout=10
            )
        await app.stop(None)
        assert validation_pb2.VALIDATION_TIER_ENTAILMENT not in response.tiers

    async def test_rpc_corrupt_model_never_serves(self, tmp_path: Path) -> None:
        broken = tmp_path / "model"
        shutil.copytree(DEFAULT_MODEL_DIR, broken)
        (broken / "model.onnx").write_bytes(b"truncated")
        app = create_app(
            ValidatorConfig.from_env(
                {"VALIDATOR_PORT": "0", "VALIDATOR_ENTAILMENT_MODEL_DIR": str(broken)}
            )
        )
        with pytest.raises(ModelUnavailableError, match="corrupt"):
            await app.start()
        status = await health_status(f"127.0.0.1:{app.port}", SERVICE_NAME)
        await app.stop(None)
        assert status == health_pb2.HealthCheckResponse.NOT_SERVING

    async def test_rpc_a_request_that_breaks_the_model_fails_alone(
        self, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """The model still runs its self-check: that call is UNAVAILABLE / MODEL_UNAVAILABLE,
        the pod keeps serving and answers the next call (a query of death takes no replica out
        of rotation)."""
        real = servicer_module.validate
        calls = 0

        def breaks_once(*args: Any, **kwargs: Any) -> Any:
            nonlocal calls
            calls += 1
            if calls == 1:
                raise ModelUnavailableError("the entailment model failed to run: bad input")
            return real(*args, **kwargs)

        app = await _serve(1 << 20, VALIDATOR_ENTAILMENT="on")
        monkeypatch.setattr(servicer_module, "validate", breaks_once)
        async with aio.insecure_channel(f"127.0.0.1:{app.port}") as channel:
            stub = pb_grpc.ValidatorServiceStub(channel)
            with pytest.raises(aio.AioRpcError) as caught:
                await stub.ValidateAnswer(_request(), timeout=10)
            health = await health_pb2_grpc.HealthStub(channel).Check(
                health_pb2.HealthCheckRequest(service=SERVICE_NAME), timeout=5
            )
            after = await stub.ValidateAnswer(_request(), timeout=10)
        await app.stop(None)
        assert caught.value.code() == grpc.StatusCode.UNAVAILABLE
        assert error_reason(caught.value) == "MODEL_UNAVAILABLE"
        assert health.status == health_pb2.HealthCheckResponse.SERVING
        assert len(after.sentences) == 1  # judged: the model runs again

    async def test_rpc_a_model_that_stopped_running_stops_serving(
        self, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """The model fails its self-check too (out of memory, a graph gone bad): the call is
        UNAVAILABLE / MODEL_UNAVAILABLE and the pod reports NOT_SERVING."""
        from services.common.cross_encoder import OnnxCrossEncoder

        app = await _serve(1 << 20, VALIDATOR_ENTAILMENT="on")

        def out_of_memory(*_: Any, **__: Any) -> Any:
            raise RuntimeError("onnxruntime: failed to allocate memory")

        monkeypatch.setattr(OnnxCrossEncoder, "_run", out_of_memory)
        async with aio.insecure_channel(f"127.0.0.1:{app.port}") as channel:
            with pytest.raises(aio.AioRpcError) as caught:
                await pb_grpc.ValidatorServiceStub(channel).ValidateAnswer(_request(), timeout=10)
            health = await health_pb2_grpc.HealthStub(channel).Check(
                health_pb2.HealthCheckRequest(service=SERVICE_NAME), timeout=5
            )
        await app.stop(None)
        assert caught.value.code() == grpc.StatusCode.UNAVAILABLE
        assert error_reason(caught.value) == "MODEL_UNAVAILABLE"
        assert health.status == health_pb2.HealthCheckResponse.NOT_SERVING

    @pytest.mark.parametrize("entailment", ["on", "off"])
    async def test_rpc_hands_the_callers_deadline_to_the_rules_and_model(
        self, monkeypatch: pytest.MonkeyPatch, entailment: str
    ) -> None:
        """The rules stop between sentences, and the model between rounds, once the caller's
        deadline has passed (the engine's tests show it): the handler passes that deadline on,
        on a worker thread and inline (no model, a small request) alike, and an expired one is
        DEADLINE_EXCEEDED."""
        seen: list[float | None] = []

        def expired(*_: Any, deadline: float | None = None) -> Any:
            seen.append(deadline)
            raise DeadlineExceededError(
                "the caller's deadline passed with 1 sentence(s) not yet judged"
            )

        app = await _serve(1 << 20, VALIDATOR_ENTAILMENT=entailment)
        monkeypatch.setattr(servicer_module, "validate", expired)
        started = time.monotonic()
        async with aio.insecure_channel(f"127.0.0.1:{app.port}") as channel:
            with pytest.raises(aio.AioRpcError) as caught:
                await pb_grpc.ValidatorServiceStub(channel).ValidateAnswer(_request(), timeout=7)
        await app.stop(None)
        (deadline,) = seen
        assert deadline is not None and 5 < deadline - started <= 7.5
        assert caught.value.code() == grpc.StatusCode.DEADLINE_EXCEEDED

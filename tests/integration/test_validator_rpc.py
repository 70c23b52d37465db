"""ValidateAnswer on the real validator app over loopback: small requests are validated on the
event loop, large ones in a worker thread, with the same responses and errors either way."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from typing import Any

import grpc
import pytest
from grounded.type.v1 import evidence_pb2
from grounded.validator.v1 import validator_service_pb2 as pb
from grounded.validator.v1 import validator_service_pb2_grpc as pb_grpc
from grpc import aio

from services.common.server import ServiceApp
from services.validator import servicer as servicer_module
from services.validator.config import ValidatorConfig
from services.validator.server import create_app
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


async def _serve(inline_max_bytes: int) -> ServiceApp:
    """The validator as deployed (interceptor, error mapping), on a free loopback port."""
    env = {
        "VALIDATOR_PORT": "0",
        "VALIDATOR_INLINE_MAX_BYTES": str(inline_max_bytes),
    }
    app = create_app(ValidatorConfig.from_env(env))
    await app.start()
    return app


@pytest.fixture
def offloaded(monkeypatch: pytest.MonkeyPatch) -> list[Callable[..., Any]]:
    """Records every function the handler hands to a worker thread."""
    calls: list[Callable[..., Any]] = []
    real = asyncio.to_thread

    async def recording(func: Callable[..., Any], /, *args: Any) -> Any:
        calls.append(func)
        return await real(func, *args)

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

        assert response.verdict == pb.VALIDATION_VERDICT_GROUNDED
        assert offloaded == []

    async def test_servicer_large_request_runs_in_a_worker_thread(
        self, stubs: dict[str, pb_grpc.ValidatorServiceStub], offloaded: list[Any]
    ) -> None:
        response = await stubs["threaded"].ValidateAnswer(_request(), timeout=10)

        assert response.verdict == pb.VALIDATION_VERDICT_GROUNDED
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

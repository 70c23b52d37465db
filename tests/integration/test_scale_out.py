"""Scale-out over real servers (issue 15): per-call balancing, retries, fast recovery after a
dependency restarts."""

from __future__ import annotations

import asyncio
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import grpc
import pytest
from grounded.synthesis.v1 import synthesis_service_pb2 as spb
from grounded.synthesis.v1 import synthesis_service_pb2_grpc as spb_grpc
from grounded.validator.v1 import validator_service_pb2 as vpb
from grounded.validator.v1 import validator_service_pb2_grpc as vpb_grpc

from services.common.channels import ChannelPolicy, open_channel
from services.common.config import EnvReader, ServerSettings
from services.common.evidence import Chunk
from services.common.server import GrpcService, ServiceApp
from services.common.validation import Verdict
from services.synthesis import server as synthesis_server
from services.synthesis.clients import (
    RETRIEVE_METHOD,
    VALIDATE_METHOD,
    VALIDATOR_SERVICE,
    GrpcRetriever,
    GrpcValidator,
)
from services.synthesis.config import SynthesisConfig
from services.validator import server as validator_server
from services.validator.config import ValidatorConfig
from stack.processes import Process, served_calls, spawn
from stack.wiring import free_port
from tests.integration.conftest import Stack

pytestmark = pytest.mark.integration


def _spawn_retrieval(index_dir: Path, name: str, log_dir: Path) -> Process:
    port, metrics_port = free_port(), free_port()
    env = {
        "HF_HUB_OFFLINE": "1",
        "TRANSFORMERS_OFFLINE": "1",
        "RETRIEVAL_INDEX_DIR": str(index_dir),
        "RETRIEVAL_REDIS_URL": "",
        "RETRIEVAL_PORT": str(port),
        "RETRIEVAL_METRICS_PORT": str(metrics_port),
        "RETRIEVAL_GRACE_S": "1",
    }
    argv = [sys.executable, "-m", "services.retrieval"]
    return spawn(name, argv, env, port, metrics_port, log_dir / f"{name}.log")


def _served(process: Process) -> int:
    """RetrievePassages calls this server answered OK, from its own /metrics."""
    return served_calls(process.metrics_url, "RetrievePassages")


@pytest.fixture
def two_retrievals(ipc_index: Path, tmp_path: Path) -> Iterator[tuple[Process, Process]]:
    servers = (
        _spawn_retrieval(ipc_index, "retrieval", tmp_path),
        _spawn_retrieval(ipc_index, "retrieval-2", tmp_path),
    )
    try:
        for server in servers:
            server.wait_serving(timeout_s=120)
        yield servers
    finally:
        for server in servers:
            if server.proc.poll() is None:
                server.proc.kill()
            server.proc.wait(timeout=10)


class TestBalancing:
    async def test_calls_spread_over_two_servers_and_a_killed_one_loses_none(
        self, two_retrievals: tuple[Process, Process]
    ) -> None:
        a, b = two_retrievals
        # One target, two addresses: what dns:/// over a headless Service resolves to.
        channel = open_channel(
            f"ipv4:{a.address},{b.address}",
            policy=ChannelPolicy(retry_methods=(RETRIEVE_METHOD,)),
        )
        retriever = GrpcRetriever(channel, connect_wait_s=1.5)

        async def call(n: int) -> BaseException | None:
            try:
                await retriever.retrieve(
                    f"punishment for theft {n}", top_k=3, acts=(), doc_ids=(), timeout_s=10
                )
            except Exception as error:  # counted below: every failure is a test failure
                return error
            return None

        try:
            first = [await call(n) for n in range(120)]
            split = (_served(a), _served(b))

            # Then 100 calls, 8 at a time, with server b killed (SIGKILL) after the 20th.
            gate = asyncio.Semaphore(8)
            done = 0

            async def gated(n: int) -> BaseException | None:
                nonlocal done
                async with gate:
                    result = await call(n)
                    done += 1
                    if done == 20:
                        b.proc.kill()
                    return result

            second = await asyncio.gather(*(gated(n) for n in range(1000, 1100)))
        finally:
            await channel.close()

        assert [e for e in first if e] == []
        assert min(split) >= 40, split  # each server got at least a third of 120
        assert b.proc.wait(timeout=10) != 0  # it really died
        assert [e for e in second if e] == []


class TestRecovery:
    async def test_first_call_after_a_restarted_dependency_is_serving_succeeds(
        self, stack: Stack
    ) -> None:
        port = free_port()

        def validator() -> ServiceApp:
            return validator_server.create_app(
                ValidatorConfig.from_env(
                    {"VALIDATOR_PORT": str(port), "VALIDATOR_METRICS_PORT": "0"}
                )
            )

        first = validator()
        await first.start()
        synthesis = synthesis_server.create_app(
            SynthesisConfig.from_env(
                {
                    "SYNTHESIS_PORT": "0",
                    "SYNTHESIS_METRICS_PORT": "0",
                    "SYNTHESIS_RETRIEVAL_ADDR": stack.retrieval,
                    "SYNTHESIS_VALIDATOR_ADDR": f"127.0.0.1:{port}",
                }
            )
        )
        await synthesis.start()
        second: ServiceApp | None = None
        try:
            async with grpc.aio.insecure_channel(f"127.0.0.1:{synthesis.port}") as channel:
                stub = spb_grpc.SynthesisServiceStub(channel)
                request = spb.SynthesizeAnswerRequest(question="What is the punishment for theft?")
                assert (await stub.SynthesizeAnswer(request, timeout=30)).answer

                # The validator goes away for 30 s; callers keep asking (and failing), which is
                # what grows a default channel's reconnect backoff towards its 120 s maximum.
                await first.stop(0)
                failures = 0
                until = time.monotonic() + 30
                while time.monotonic() < until:
                    try:
                        await stub.SynthesizeAnswer(request, timeout=10)
                    except grpc.aio.AioRpcError as error:
                        assert error.code() == grpc.StatusCode.UNAVAILABLE
                        failures += 1
                    await asyncio.sleep(1.0)
                assert failures >= 5

                second = validator()
                await second.start()  # SERVING when this returns
                response = await stub.SynthesizeAnswer(request, timeout=30)
        finally:
            await synthesis.stop(0)
            if second is not None:
                await second.stop(0)

        assert response.status == spb.ANSWER_STATUS_ANSWERED


class TestConnectionAge:
    async def test_calls_survive_the_server_closing_old_connections(self) -> None:
        # MAX_CONNECTION_AGE_S makes the server close each connection after 1 s (what lets
        # clients re-resolve a headless Service); calls over 4 s must all still succeed.
        app = validator_server.create_app(
            ValidatorConfig.from_env(
                {
                    "VALIDATOR_PORT": "0",
                    "VALIDATOR_METRICS_PORT": "0",
                    "VALIDATOR_ENTAILMENT": "off",
                    "VALIDATOR_MAX_CONNECTION_AGE_S": "1",
                    "VALIDATOR_MAX_CONNECTION_AGE_GRACE_S": "1",
                }
            )
        )
        await app.start()
        channel = open_channel(
            f"127.0.0.1:{app.port}", policy=ChannelPolicy(retry_methods=(VALIDATE_METHOD,))
        )
        validator = GrpcValidator(channel, connect_wait_s=1.5)
        evidence = [Chunk(semantic_id="IPC_379_0", doc_id="IPC_379", text="Theft is punished.")]
        verdicts = []
        try:
            until = time.monotonic() + 4
            while time.monotonic() < until:
                report = await validator.validate(
                    "Theft is punished [IPC_379_0].", evidence, timeout_s=5
                )
                verdicts.append(report.verdict)
                await asyncio.sleep(0.05)
        finally:
            await channel.close()
            await app.stop(0)

        assert len(verdicts) >= 20
        assert set(verdicts) == {Verdict.GROUNDED}


class _Counting(vpb_grpc.ValidatorServiceServicer):
    def __init__(self) -> None:
        self.calls = 0

    async def ValidateAnswer(self, request: object, context: object) -> vpb.ValidateAnswerResponse:
        self.calls += 1
        return vpb.ValidateAnswerResponse()


class TestHealthChecking:
    @pytest.mark.parametrize("checked", [True, False], ids=["health-checked", "unchecked"])
    async def test_calls_skip_a_replica_that_is_not_serving(self, checked: bool) -> None:
        """Two validators behind one target; one reports NOT_SERVING (its model failed, or it
        is draining) though it still answers. A channel that checks health (as synthesis's
        do) sends it nothing; without the check round_robin sends it half the calls."""
        settings = ServerSettings.from_env(
            EnvReader("T_", {"T_PORT": "0"}), default_port=0, default_metrics_port=-1
        )
        servicers = [_Counting(), _Counting()]
        services = [
            GrpcService(label="validator", service_names=[VALIDATOR_SERVICE], settings=settings)
            for _ in servicers
        ]
        ports = []
        for service, servicer in zip(services, servicers, strict=True):
            ports.append(
                await service.start(
                    lambda server, s=servicer: vpb_grpc.add_ValidatorServiceServicer_to_server(
                        s, server
                    )
                )
            )
            await service.mark_serving()
        await services[1].mark_not_serving()
        policy = ChannelPolicy(
            retry_methods=(VALIDATE_METHOD,),
            health_service=VALIDATOR_SERVICE if checked else "",
        )
        channel = open_channel(f"ipv4:127.0.0.1:{ports[0]},127.0.0.1:{ports[1]}", policy=policy)
        try:
            stub = vpb_grpc.ValidatorServiceStub(channel)
            for _ in range(20):
                await stub.ValidateAnswer(vpb.ValidateAnswerRequest(), timeout=5)
        finally:
            await channel.close()
            for service in services:
                await service.stop(0)
        served = [s.calls for s in servicers]
        if checked:
            assert served == [20, 0], served
        else:
            assert min(served) >= 5, served

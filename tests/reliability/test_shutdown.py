"""SIGTERM on real server processes, under load: health flips, in-flight calls finish, new calls
are refused, the process exits within its grace period."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import grpc
import pytest
from grounded.synthesis.v1 import synthesis_service_pb2 as spb
from grounded.synthesis.v1 import synthesis_service_pb2_grpc as spb_grpc
from grounded.type.v1 import evidence_pb2, validation_pb2
from grounded.validator.v1 import validator_service_pb2 as vpb
from grounded.validator.v1 import validator_service_pb2_grpc as vpb_grpc
from grpc_health.v1 import health_pb2, health_pb2_grpc

from tests.reliability.fakes import QUESTION, FakeRetrieval, section_passages, serve_fake
from tests.support.redis_server import free_port

pytestmark = pytest.mark.integration
ROOT = Path(__file__).resolve().parents[2]


def _wait_serving(address: str, timeout_s: float = 30) -> None:
    deadline = time.monotonic() + timeout_s
    with grpc.insecure_channel(address) as channel:
        stub = health_pb2_grpc.HealthStub(channel)
        while time.monotonic() < deadline:
            try:
                if (
                    stub.Check(health_pb2.HealthCheckRequest(), timeout=1).status
                    == health_pb2.HealthCheckResponse.SERVING
                ):
                    return
            except grpc.RpcError:
                time.sleep(0.1)
    raise AssertionError(f"{address} never reported SERVING")


class TestGracefulShutdown:
    def test_sigterm_drains_and_exits_within_grace(self) -> None:
        port = free_port()
        env = {
            **os.environ,
            "VALIDATOR_PORT": str(port),
            "VALIDATOR_METRICS_PORT": "0",
            "VALIDATOR_GRACE_S": "3",
            "VALIDATOR_DRAIN_DELAY_S": "1",
        }
        proc = subprocess.Popen(
            [sys.executable, "-m", "services.validator"],
            cwd=ROOT,
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
        )
        address = f"127.0.0.1:{port}"
        try:
            _wait_serving(address)
            channel = grpc.insecure_channel(address)
            stub = vpb_grpc.ValidatorServiceStub(channel)
            # Small on the wire but some milliseconds of work each, so calls queue up on the server.
            evidence = [
                evidence_pb2.Passage(
                    semantic_id=f"E{i}",
                    text=f"Whoever commits theft number {i} shall be punished with imprisonment "
                    "for a term which may extend to three years, or with fine, or with both.",
                )
                for i in range(40)
            ]
            answer = " ".join(
                f"Theft number {i} is punished with imprisonment [E{i}]." for i in range(40)
            )
            request = vpb.ValidateAnswerRequest(answer=answer, evidence=evidence)
            watch = health_pb2_grpc.HealthStub(channel).Watch(
                health_pb2.HealthCheckRequest(), timeout=20
            )
            assert next(watch).status == health_pb2.HealthCheckResponse.SERVING
            # A stream of calls in flight while SIGTERM arrives: none may fail before the drain.
            futures = [stub.ValidateAnswer.future(request, timeout=10) for _ in range(30)]
            # Let the calls reach the server: those are the in-flight calls the drain must finish.
            time.sleep(0.05)
            assert not all(f.done() for f in futures), (
                "calls finished before SIGTERM; make them heavier"
            )
            started = time.monotonic()
            proc.send_signal(signal.SIGTERM)
            assert next(watch).status == health_pb2.HealthCheckResponse.NOT_SERVING
            results = [f.result() for f in futures]
            assert all(r.verdict != validation_pb2.VALIDATION_VERDICT_UNSPECIFIED for r in results)
            assert proc.wait(timeout=15) == 0
            assert time.monotonic() - started < 1 + 3 + 2  # drain delay + grace + slack
            with pytest.raises(grpc.RpcError) as info:
                stub.ValidateAnswer(request, timeout=2)
            assert info.value.code() == grpc.StatusCode.UNAVAILABLE  # type: ignore[attr-defined]
            channel.close()
        finally:
            if proc.poll() is None:
                proc.kill()
            _, stderr = proc.communicate()
            if proc.returncode != 0:
                print(stderr.decode(errors="replace")[-4000:])


async def _wait_serving_async(address: str, proc: asyncio.subprocess.Process) -> None:
    deadline = time.monotonic() + 60
    async with grpc.aio.insecure_channel(address) as channel:
        stub = health_pb2_grpc.HealthStub(channel)
        while time.monotonic() < deadline:
            assert proc.returncode is None, f"{address} exited during start-up"
            try:
                reply = await stub.Check(health_pb2.HealthCheckRequest(), timeout=1)
                if reply.status == health_pb2.HealthCheckResponse.SERVING:
                    return
            except grpc.aio.AioRpcError:
                pass
            await asyncio.sleep(0.1)
    raise AssertionError(f"{address} never reported SERVING")


class TestSynthesisShutdownUnderLoad:
    async def test_sigterm_during_load_finishes_in_flight_answers_and_refuses_new_ones(
        self, tmp_path: Path
    ) -> None:
        # Real synthesis + validator processes; retrieval is an in-process fake that holds each
        # call for a while, so calls are certainly in flight inside synthesis at SIGTERM.
        fake = FakeRetrieval(section_passages("420"), delay_s=0.8)
        server, retrieval = await serve_fake(fake)
        validator_port, synthesis_port = free_port(), free_port()
        env = {
            **os.environ,
            "VALIDATOR_PORT": str(validator_port),
            "VALIDATOR_METRICS_PORT": "0",
            "SYNTHESIS_PORT": str(synthesis_port),
            "SYNTHESIS_METRICS_PORT": "0",
            "SYNTHESIS_RETRIEVAL_ADDR": retrieval,
            "SYNTHESIS_VALIDATOR_ADDR": f"127.0.0.1:{validator_port}",
            "SYNTHESIS_GRACE_S": "3",
            "SYNTHESIS_DRAIN_DELAY_S": "0.5",
        }
        procs = {}
        for name in ("validator", "synthesis"):
            with (tmp_path / f"{name}.log").open("wb") as log:
                procs[name] = await asyncio.create_subprocess_exec(
                    sys.executable, "-m", f"services.{name}", cwd=ROOT, env=env, stderr=log
                )
        address = f"127.0.0.1:{synthesis_port}"
        request = spb.SynthesizeAnswerRequest(question=QUESTION)
        try:
            await _wait_serving_async(f"127.0.0.1:{validator_port}", procs["validator"])
            await _wait_serving_async(address, procs["synthesis"])
            async with grpc.aio.insecure_channel(address) as channel:
                stub = spb_grpc.SynthesisServiceStub(channel)
                watch = health_pb2_grpc.HealthStub(channel).Watch(
                    health_pb2.HealthCheckRequest(), timeout=30
                )
                first = await watch.read()
                assert first.status == health_pb2.HealthCheckResponse.SERVING
                calls = [
                    asyncio.ensure_future(stub.SynthesizeAnswer(request, timeout=15))
                    for _ in range(8)
                ]
                deadline = time.monotonic() + 10
                while len(fake.log.time_remaining) < len(calls):
                    assert time.monotonic() < deadline, "calls never reached retrieval"
                    await asyncio.sleep(0.02)
                assert not any(c.done() for c in calls)
                started = time.monotonic()
                procs["synthesis"].send_signal(signal.SIGTERM)
                flipped = await watch.read()
                assert flipped.status == health_pb2.HealthCheckResponse.NOT_SERVING
                results = await asyncio.gather(*calls)
                assert all(r.status == spb.ANSWER_STATUS_ANSWERED for r in results)
                code = await asyncio.wait_for(procs["synthesis"].wait(), timeout=15)
                assert code == 0
                assert time.monotonic() - started < 0.5 + 3 + 2  # drain delay + grace + slack
                with pytest.raises(grpc.aio.AioRpcError) as info:
                    await stub.SynthesizeAnswer(request, timeout=2)
                assert info.value.code() == grpc.StatusCode.UNAVAILABLE
        finally:
            for proc in procs.values():
                if proc.returncode is None:
                    proc.send_signal(signal.SIGTERM)
                    try:
                        await asyncio.wait_for(proc.wait(), timeout=10)
                    except TimeoutError:
                        proc.kill()
                        await proc.wait()
            await server.stop(0)


# A service whose warm-up never finishes: it blocks a worker thread, as loading a model or the
# index does, which no cancellation reaches.
_STUCK_WARM_UP = """
import asyncio, sys, threading
from services.common.config import EnvReader, ServerSettings
from services.common.server import GrpcService, ServiceApp, serve_main

class Config:
    server = ServerSettings.from_env(
        EnvReader("T_", {"T_PORT": "0"}), default_port=0, default_metrics_port=-1
    )

def create_app(config):
    service = GrpcService(label="stuck", service_names=[], settings=config.server)

    async def warm_up():
        print("warming up", flush=True)
        await asyncio.to_thread(threading.Event().wait)

    return ServiceApp(service, lambda server: None, warm_up)

serve_main("stuck", Config, create_app)
"""


def test_sigterm_during_warm_up_stops_without_waiting_for_it() -> None:
    """SIGTERM while a model or the index is still loading: the process stops at once (it has
    answered nothing but NOT_READY), exit status 0. It used to wait for the loading thread:
    retrieval took its whole warm-up to exit, past a pod's termination grace on a slow node."""
    proc = subprocess.Popen(
        [sys.executable, "-c", _STUCK_WARM_UP],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None and proc.stdout.readline() == "warming up\n"
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=60)  # a bound, not a measurement: it never ends else
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 0, err
    assert '"msg": "stopped during warm-up"' in err.strip().splitlines()[-1]

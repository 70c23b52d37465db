"""SIGTERM on a real server process: health flips, in-flight calls finish, new calls are refused."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import grpc
import pytest
from grounded.type.v1 import evidence_pb2
from grounded.validator.v1 import validator_service_pb2 as vpb
from grounded.validator.v1 import validator_service_pb2_grpc as vpb_grpc
from grpc_health.v1 import health_pb2, health_pb2_grpc

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
            assert all(r.verdict != vpb.VALIDATION_VERDICT_UNSPECIFIED for r in results)
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

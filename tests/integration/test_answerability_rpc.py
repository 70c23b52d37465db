"""The answerability model over real gRPC: what the response reports, and that a broken model
never serves (issue 13)."""

from __future__ import annotations

import json
import shutil
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from grounded.synthesis.v1 import synthesis_service_pb2 as spb
from grpc_health.v1 import health_pb2

from services.common.cross_encoder import UNCALIBRATED
from services.common.errors import ModelUnavailableError
from services.common.refusal import REFUSAL
from services.synthesis import server as synthesis_server
from services.synthesis.config import (
    DEFAULT_ANSWERABILITY_DIR,
    DEFAULT_STATEMENT_MODEL_DIR,
    SERVICE_NAME,
    SynthesisConfig,
)
from stack.inprocess import start_in_process
from tests.integration.conftest import Stack
from tests.support.grpc_helpers import health_status, synthesize

pytestmark = pytest.mark.integration

MANIFEST = json.loads((DEFAULT_ANSWERABILITY_DIR / "manifest.json").read_text())
MODEL_NAME = MANIFEST["name"]
STATEMENT_MODEL_NAME = json.loads((DEFAULT_STATEMENT_MODEL_DIR / "manifest.json").read_text())[
    "name"
]


@pytest.fixture(scope="module")
async def both_stack(ipc_index: Path) -> AsyncIterator[Stack]:
    running = await start_in_process(ipc_index, settings={"SYNTHESIS_ANSWERABILITY": "both"})
    yield running
    await running.stop()


class TestAnswerabilityOverGrpc:
    async def test_rpc_an_answerable_question_reports_the_models_score(
        self, both_stack: Stack
    ) -> None:
        response = await synthesize(both_stack.synthesis, "What is the punishment for theft?")

        assert response.status == spb.ANSWER_STATUS_ANSWERED
        report = response.sufficiency
        assert report.HasField("answerability_score")
        # At least the calibrated veto threshold: the answer was not vetoed.
        assert report.answerability_score >= MANIFEST["calibration"]["veto_below"]
        assert report.answerability_model == MODEL_NAME
        assert "IPC_379" in response.answer
        # Every evidence passage's own score, by id; the report's score is the best of them.
        assert set(report.answerability_by_id) == {p.semantic_id for p in response.evidence}
        assert max(report.answerability_by_id.values()) == pytest.approx(report.answerability_score)
        assert any(t.stage == "answerability" and t.ran for t in response.timings)

    async def test_rpc_an_out_of_corpus_question_is_refused(self, both_stack: Stack) -> None:
        response = await synthesize(both_stack.synthesis, "Who painted the Mona Lisa?")

        assert response.answer == REFUSAL
        assert response.status == spb.ANSWER_STATUS_REFUSED_INSUFFICIENT_EVIDENCE

    async def test_rpc_a_question_too_long_for_the_model_is_decided_by_keywords_and_health_holds(
        self, both_stack: Stack
    ) -> None:
        # ~1,000 characters (within the 2,000 limit) but ~330 tokens: more than the model's
        # 256-token window holds beside any evidence. Found by a new user with grpcurl: it used
        # to fail the call as MODEL_UNAVAILABLE and take synthesis out of rotation for good.
        # One sentence: 66 separate question sentences would ask more than 8 questions in one
        # (INVALID_ARGUMENT since "Then S").
        question = ("What is theft, " * 70)[:999] + "?"
        response = await synthesize(both_stack.synthesis, question)

        report = response.sufficiency
        assert report.answerability_effect == spb.ANSWERABILITY_EFFECT_QUESTION_TOO_LONG
        assert not report.HasField("answerability_score")
        assert response.status in (
            spb.ANSWER_STATUS_ANSWERED,
            spb.ANSWER_STATUS_REFUSED_INSUFFICIENT_EVIDENCE,
        )
        status = await health_status(both_stack.synthesis, SERVICE_NAME)
        assert status == health_pb2.HealthCheckResponse.SERVING
        after = await synthesize(both_stack.synthesis, "What is the punishment for theft?")
        assert after.status == spb.ANSWER_STATUS_ANSWERED
        assert after.sufficiency.HasField("answerability_score")

    async def test_rpc_with_the_model_off_no_score_is_reported(self, ipc_index: Path) -> None:
        off = await start_in_process(ipc_index, settings={"SYNTHESIS_ANSWERABILITY": "off"})
        try:
            response = await synthesize(off.synthesis, "What is the punishment for theft?")
        finally:
            await off.stop()

        assert not response.sufficiency.HasField("answerability_score")
        assert response.sufficiency.answerability_model == ""
        assert dict(response.sufficiency.answerability_by_id) == {}

    async def test_rpc_a_statement_is_scored_by_the_entailment_model(
        self, both_stack: Stack
    ) -> None:
        # A claim to verify: the entailment model scores it (P(a chunk entails it)), not the
        # answerability model, and the report names it.
        stated = await synthesize(
            both_stack.synthesis,
            "Whoever commits theft shall be punished with imprisonment which may extend to "
            "three years.",
        )
        assert stated.sufficiency.answerability_model == STATEMENT_MODEL_NAME
        assert stated.status == spb.ANSWER_STATUS_ANSWERED
        assert stated.sufficiency.answerability_score >= 0.5
        question = await synthesize(both_stack.synthesis, "What is the punishment for theft?")
        assert question.sufficiency.answerability_model == MODEL_NAME

    @pytest.mark.parametrize(
        ("variable", "default"),
        [
            ("SYNTHESIS_ANSWERABILITY_MODEL_DIR", DEFAULT_ANSWERABILITY_DIR),
            ("SYNTHESIS_STATEMENT_MODEL_DIR", DEFAULT_STATEMENT_MODEL_DIR),
        ],
    )
    async def test_rpc_a_corrupt_model_never_serves(
        self, tmp_path: Path, variable: str, default: Path
    ) -> None:
        broken = tmp_path / "model"
        shutil.copytree(default, broken)
        (broken / "model.onnx").write_bytes(b"truncated")
        app = synthesis_server.create_app(
            SynthesisConfig.from_env(
                {
                    "SYNTHESIS_PORT": "0",
                    "SYNTHESIS_METRICS_PORT": "0",
                    "SYNTHESIS_ANSWERABILITY": "veto",
                    variable: str(broken),
                }
            )
        )
        with pytest.raises(ModelUnavailableError, match="corrupt"):
            await app.start()
        status = await health_status(f"127.0.0.1:{app.port}", SERVICE_NAME)
        await app.stop(None)
        assert status == health_pb2.HealthCheckResponse.NOT_SERVING

    @pytest.mark.parametrize(
        ("variable", "default"),
        [
            ("SYNTHESIS_ANSWERABILITY_MODEL_DIR", DEFAULT_ANSWERABILITY_DIR),
            # The statement check reads the entailment model with synthesis's own thresholds,
            # so it never asked the manifest for one (the late review's finding 3).
            ("SYNTHESIS_STATEMENT_MODEL_DIR", DEFAULT_STATEMENT_MODEL_DIR),
        ],
    )
    async def test_rpc_an_uncalibrated_model_never_serves(
        self, tmp_path: Path, variable: str, default: Path
    ) -> None:
        marked = tmp_path / "model"
        shutil.copytree(default, marked)
        manifest = json.loads((marked / "manifest.json").read_text())
        manifest["calibration"] = {"calibrated_on": UNCALIBRATED}
        (marked / "manifest.json").write_text(json.dumps(manifest))
        app = synthesis_server.create_app(
            SynthesisConfig.from_env(
                {
                    "SYNTHESIS_PORT": "0",
                    "SYNTHESIS_METRICS_PORT": "0",
                    "SYNTHESIS_ANSWERABILITY": "both",
                    variable: str(marked),
                }
            )
        )
        with pytest.raises(ModelUnavailableError, match="uncalibrated"):
            await app.start()
        await app.stop(None)

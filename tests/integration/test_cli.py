"""`python -m services.synthesis.cli ask` against the running test stack: output and exit codes."""

from __future__ import annotations

import asyncio
import json
import socket
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest
from grounded.synthesis.v1 import synthesis_service_pb2 as pb
from grounded.type.v1 import evidence_pb2

from services.common.refusal import REFUSAL
from services.synthesis import cli
from tests.integration.conftest import Stack

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]
ANSWERABLE = "What is the punishment for cheating under section 420?"


@dataclass(frozen=True)
class Run:
    code: int
    out: str
    err: str


async def run_cli(*args: str) -> Run:
    return await run_command("ask", *args)


async def run_command(command: str, *args: str) -> Run:
    # A real subprocess, awaited without blocking the loop the in-process servers serve on.
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "services.synthesis.cli",
        command,
        *args,
        cwd=ROOT,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    out, err = await asyncio.wait_for(process.communicate(), timeout=60)
    assert process.returncode is not None
    return Run(process.returncode, out.decode(), err.decode())


def closed_port() -> str:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    return f"127.0.0.1:{port}"


class TestCliAsk:
    async def test_ask_answered_exits_0_with_citations_and_validation(self, stack: Stack) -> None:
        run = await run_cli(ANSWERABLE, "--address", stack.synthesis)

        assert run.code == 0, run.err
        assert "Answer:" in run.out and "[IPC_420_" in run.out
        assert "Citations:" in run.out and "IPC s.420" in run.out
        validation = run.out[run.out.index("VALIDATION") :]
        assert "status:     ANSWERED" in validation
        assert "sufficient: yes" in validation
        assert "grounded:   GROUNDED" in validation
        assert "0 invalid, 0 missing" in validation
        assert "uncovered:  none" in validation
        assert "retrieved:  5 passages" in validation
        assert "Sentences:" not in run.out

    async def test_ask_verbose_adds_per_sentence_coverage(self, stack: Stack) -> None:
        run = await run_cli(ANSWERABLE, "--address", stack.synthesis, "--verbose")

        assert run.code == 0, run.err
        lines = run.out[run.out.index("Sentences:") :].splitlines()[1:]
        sentences = [line for line in lines if line.lstrip().startswith("#")]
        assert sentences and all("coverage" in line for line in sentences)
        assert sentences[0].split()[:2] == ["#0", "SUPPORTED"]
        assert "IPC_420_" in sentences[0]
        # Each judged sentence says what decided it: a verbatim quote or the model's scores.
        details = [line for line in lines if not line.lstrip().startswith("#")]
        assert details and all("from IPC_" in line for line in details)
        assert (
            "tiers:      citations, coverage, numbers, negation, penalty, roles, entailment"
            in run.out
        )

    async def test_ask_json_prints_the_whole_response(self, stack: Stack) -> None:
        run = await run_cli(ANSWERABLE, "--address", stack.synthesis, "--json", "--top-k", "3")

        assert run.code == 0, run.err
        response = json.loads(run.out)
        assert response["status"] == "ANSWER_STATUS_ANSWERED"
        assert response["validation"]["verdict"] == "VALIDATION_VERDICT_GROUNDED"
        assert response["sufficiency"]["sufficient"] is True
        assert len(response["evidence"]) == 3
        assert response["citations"][0]["citations"][0]["semanticId"].startswith("IPC_")

    async def test_ask_stream_prints_each_validated_sentence_then_the_result(
        self, stack: Stack
    ) -> None:
        run = await run_cli(ANSWERABLE, "--address", stack.synthesis, "--stream")

        assert run.code == 0, run.err
        assert run.out.index("Evidence: 5 passages") < run.out.index("  [0] ")
        # The sentences are not read as more evidence: a header says what they are.
        assert run.out.index("Validated sentences, as each passes:") < run.out.index("  [0] ")
        assert run.out.index("  [0] ") < run.out.index("Answer:")
        assert "cites IPC/420#" in run.out and "retracted" not in run.out
        assert "grounded:   GROUNDED" in run.out

    async def test_ask_stream_json_prints_one_event_per_line(self, stack: Stack) -> None:
        run = await run_cli(ANSWERABLE, "--address", stack.synthesis, "--stream", "--json")

        assert run.code == 0, run.err
        events = [json.loads(line) for line in run.out.splitlines()]
        assert "evidence" in events[0] and "finished" in events[-1]
        assert all("sentence" in e for e in events[1:-1]) and len(events) > 2
        finished = events[-1]["finished"]
        assert finished["response"]["status"] == "ANSWER_STATUS_ANSWERED"
        assert finished["sentencesSent"] == len(events) - 2

    async def test_ask_refusal_exits_1(self, stack: Stack) -> None:
        run = await run_cli("What is the capital of France?", "--address", stack.synthesis)

        assert run.code == 1, run.err
        assert REFUSAL in run.out
        assert "sufficient: no (KEY_TERM_MATCH: " in run.out
        assert "refusal:    INSUFFICIENT_EVIDENCE" in run.out

    async def test_ask_refusal_json_exits_1_and_names_the_failed_requirement(
        self, stack: Stack
    ) -> None:
        run = await run_cli(
            "What is the capital of France?", "--address", stack.synthesis, "--json"
        )

        assert run.code == 1, run.err
        response = json.loads(run.out)
        assert response["answer"] == REFUSAL
        assert (
            response["sufficiency"]["failedRequirement"] == "SUFFICIENCY_REQUIREMENT_KEY_TERM_MATCH"
        )
        assert response["refusalCode"] == "REFUSAL_CODE_INSUFFICIENT_EVIDENCE"

    async def test_document_prints_each_passage_with_its_offsets(self, stack: Stack) -> None:
        run = await run_command("document", "IPC_420", "--address", stack.synthesis)

        assert run.code == 0, run.err
        assert run.out.startswith("IPC s.420 — ")
        assert "[IPC_420_0] characters 0-" in run.out

    async def test_document_json_holds_text_and_passages(self, stack: Stack) -> None:
        run = await run_command("document", "IPC_420", "--json", "--address", stack.synthesis)

        assert run.code == 0, run.err
        doc = json.loads(run.out)["document"]
        first = doc["passages"][0]
        assert doc["text"][: first["charEnd"]] == first["text"]

    async def test_documents_lists_a_page_and_the_token_for_the_next(self, stack: Stack) -> None:
        run = await run_command(
            "documents", "--act", "IPC", "--page-size", "2", "--address", stack.synthesis
        )

        assert run.code == 0, run.err
        assert run.out.startswith("IPC_1 ")
        assert "\n2 of " in run.out and "next page: --page-token " in run.out
        token = run.out.rsplit("--page-token ", 1)[1].strip()
        after = await run_command(
            "documents", "--act", "IPC", "--page-size", "2", "--page-token", token,
            "--address", stack.synthesis,
        )  # fmt: skip
        assert after.code == 0, after.err
        assert after.out.startswith("IPC_3 ")

    async def test_document_unknown_exits_2_naming_the_document_meant(self, stack: Stack) -> None:
        run = await run_command("document", "IPC_420_1", "--address", stack.synthesis)

        assert run.code == 2
        assert run.err.startswith("error: NOT_FOUND")
        assert "did you mean 'IPC_420'?" in run.err
        assert '"resourceName": "IPC_420_1"' in run.err

    async def test_ask_unreachable_server_exits_2(self) -> None:
        run = await run_cli(ANSWERABLE, "--address", closed_port(), "--timeout", "3")

        assert run.code == 2
        assert run.err.startswith("error: UNAVAILABLE") or "DEADLINE_EXCEEDED" in run.err
        assert run.out == ""

    async def test_ask_bad_input_exits_2_with_field_violations(self, stack: Stack) -> None:
        # The test stack runs the extractive generator, so a model name is a field violation.
        run = await run_cli(ANSWERABLE, "--address", stack.synthesis, "--model", "gpt-4o")

        assert run.code == 2
        assert run.err.startswith("error: INVALID_ARGUMENT")
        assert '"field": "model"' in run.err


class TestCliOutput:
    def test_print_human_shows_token_usage_when_an_llm_ran(
        self, capsys: pytest.CaptureFixture[str]
    ) -> None:
        response = pb.SynthesizeAnswerResponse(
            status=pb.ANSWER_STATUS_ANSWERED,
            answer="Whoever cheats shall be punished [IPC_417_0].",
            usage=pb.TokenUsage(
                prompt_tokens=120, completion_tokens=30, total_tokens=150, model="m-2026"
            ),
        )

        cli._print_human(response, verbose=False)

        assert (
            "tokens:     150 (120 prompt + 30 completion, model m-2026)" in capsys.readouterr().out
        )

    def test_print_human_notes_each_cited_acts_caveat_once(
        self, capsys: pytest.CaptureFixture[str]
    ) -> None:
        source = evidence_pb2.SourceMetadata(
            act="IPC", act_name="Indian Penal Code, 1860", caveat="Abridged text."
        )
        response = pb.SynthesizeAnswerResponse(
            status=pb.ANSWER_STATUS_ANSWERED,
            answer="Whoever cheats [IPC_417_0]. Whoever steals [IPC_379_0].",
            citations=[
                pb.DocumentCitations(doc_id="IPC_417", section="417", source=source),
                pb.DocumentCitations(doc_id="IPC_379", section="379", source=source),
            ],
        )

        cli._print_human(response, verbose=False)

        out = capsys.readouterr().out
        assert out.count("Note on the Indian Penal Code, 1860:") == 1
        assert "  Abridged text." in out

    def test_print_human_tells_evidence_documents_from_cited_ones(
        self, capsys: pytest.CaptureFixture[str]
    ) -> None:
        response = pb.SynthesizeAnswerResponse(
            status=pb.ANSWER_STATUS_ANSWERED,
            answer="Whoever commits adultery [IPC_497_0].",
            synthesis_mode=True,
            source_doc_count=3,
            citations=[pb.DocumentCitations(doc_id="IPC_497", section="497")],
        )

        cli._print_human(response, verbose=False)

        assert "evidence from 3 documents, the answer cites 1 document" in capsys.readouterr().out

    def test_print_human_has_no_token_line_without_an_llm(
        self, capsys: pytest.CaptureFixture[str]
    ) -> None:
        cli._print_human(pb.SynthesizeAnswerResponse(answer=REFUSAL), verbose=False)

        assert "tokens:" not in capsys.readouterr().out

    def test_print_human_keeps_source_headings_and_lists_source_relations(
        self, capsys: pytest.CaptureFixture[str]
    ) -> None:
        response = pb.SynthesizeAnswerResponse(
            status=pb.ANSWER_STATUS_ANSWERED,
            answer="IPC section 379:\nWhoever commits theft [IPC_379_0].",
            synthesis_mode=True,
            source_doc_count=2,
            source_relations=[
                pb.SourceRelation(
                    first_semantic_id="IPC_379_0",
                    second_semantic_id="IPC_380_0",
                    kind=pb.SOURCE_RELATION_KIND_NUMERIC_DISAGREEMENT,
                    description="year: 3 in IPC_379_0, 7 in IPC_380_0",
                )
            ],
        )

        cli._print_human(response, verbose=False)

        out = capsys.readouterr().out
        assert "  IPC section 379:\n  Whoever commits theft" in out
        assert "    numeric disagreement: year: 3 in IPC_379_0, 7 in IPC_380_0" in out


class TestCliStatementVerdict:
    """A statement is answered with the evidence that decides it, which may contradict it: the
    VALIDATION block says what the verdict is, so the quote is not read as a confirmation. Found
    by a legal professional's audit: "The punishment for theft is seven years." was ANSWERED,
    GROUNDED, quoting s.380, with STATEMENT_VERDICT_UNDECIDED in the JSON alone."""

    CLAIM = "The punishment for theft is seven years."

    @pytest.mark.parametrize(
        ("verdict", "line"),
        [
            (
                pb.STATEMENT_VERDICT_UNDECIDED,
                "  statement:  UNDECIDED: the evidence does not surely state the claim and may "
                "contradict it; the quote is what bears on it, not a confirmation",
            ),
            (
                pb.STATEMENT_VERDICT_STATED,
                "  statement:  STATED: the evidence appears to state the claim (right about four "
                "times in five when measured); check the quoted text",
            ),
        ],
    )
    def test_print_human_says_what_a_statement_s_verdict_means(
        self, capsys: pytest.CaptureFixture[str], verdict: int, line: str
    ) -> None:
        response = pb.SynthesizeAnswerResponse(
            status=pb.ANSWER_STATUS_ANSWERED,
            answer="Whoever commits theft in any building ... seven years [IPC_380_0].",
            sufficiency=pb.SufficiencyReport(sufficient=True, statement_verdict=verdict),
        )

        cli._print_human(response, verbose=False)

        assert line in capsys.readouterr().out.splitlines()

    def test_print_human_says_a_statement_no_model_judged_is_not_confirmed(
        self, capsys: pytest.CaptureFixture[str]
    ) -> None:
        def read_as(kind: int) -> pb.SynthesizeAnswerResponse:
            return pb.SynthesizeAnswerResponse(
                status=pb.ANSWER_STATUS_ANSWERED,
                sufficiency=pb.SufficiencyReport(sufficient=True),
                input_kind=kind,
            )

        cli._print_human(read_as(pb.INPUT_KIND_STATEMENT), verbose=False)
        claim = capsys.readouterr().out
        cli._print_human(read_as(pb.INPUT_KIND_QUESTION), verbose=False)
        question = capsys.readouterr().out

        line = "  statement:  not judged: the quote is what bears on the claim, not a confirmation"
        assert line in claim.splitlines()
        assert "  read as:    statement (a claim to check against the evidence)" in claim
        assert "statement:" not in question
        assert "  read as:    question" in question.splitlines()

    def test_print_human_says_which_part_of_a_question_went_unanswered(
        self, capsys: pytest.CaptureFixture[str]
    ) -> None:
        parts = [
            pb.QuestionPart(question="How is theft punished?", score=0.99, answered=True),
            pb.QuestionPart(question="How is dowry death punished?", score=0.02, answered=False),
        ]
        response = pb.SynthesizeAnswerResponse(
            status=pb.ANSWER_STATUS_REFUSED_INSUFFICIENT_EVIDENCE,
            sufficiency=pb.SufficiencyReport(sufficient=False, parts=parts),
        )

        cli._print_human(response, verbose=False)
        lines = capsys.readouterr().out.splitlines()

        assert "    answered (0.99): How is theft punished?" in lines
        assert "    NOT answered (0.02): How is dowry death punished?" in lines
        cli._print_human(pb.SynthesizeAnswerResponse(), verbose=False)
        assert "parts:" not in capsys.readouterr().out

    async def test_ask_prints_the_audited_statement_s_verdict(self, stack: Stack) -> None:
        run = await run_cli(self.CLAIM, "--address", stack.synthesis)

        validation = run.out[run.out.index("VALIDATION") :]
        assert "  statement:  UNDECIDED: " in validation, run.out
        assert "  read as:    statement (a claim" in validation, run.out


async def run_module(module: str, *args: str, stdin: bytes | None = None) -> Run:
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        module,
        *args,
        cwd=ROOT,
        stdin=asyncio.subprocess.PIPE if stdin is not None else None,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    out, err = await asyncio.wait_for(process.communicate(stdin), timeout=120)
    assert process.returncode is not None
    return Run(process.returncode, out.decode(), err.decode())


class TestChain:
    """retrieve --json → (a generator) → validate, and ask --json → validate, as a user runs them."""

    async def test_retrieval_cli_prints_ranked_passages(self, stack: Stack) -> None:
        run = await run_module(
            "services.retrieval.cli", "search", "punishment for cheating", "--address",
            stack.retrieval, "--top-k", "3",
        )  # fmt: skip

        assert run.code == 0, run.err
        assert run.out.startswith("3 passages (intent punishment")
        assert " 1. [IPC_" in run.out and "timings:" in run.out

    async def test_retrieval_cli_bad_input_exits_2_with_field_violations(
        self, stack: Stack
    ) -> None:
        run = await run_module(
            "services.retrieval.cli", "search", "x", "--address", stack.retrieval,
            "--top-k", "500",
        )  # fmt: skip

        assert run.code == 2
        assert "INVALID_ARGUMENT" in run.err and "top_k" in run.err

    async def test_retrieval_cli_exits_1_when_no_passage_reaches_min_score(
        self, stack: Stack
    ) -> None:
        run = await run_module(
            "services.retrieval.cli", "search", "punishment for cheating", "--address",
            stack.retrieval, "--min-score", "1000",
        )  # fmt: skip
        assert run.code == 1, run.err
        assert run.out.startswith("0 passages")
        bad = await run_module(
            "services.retrieval.cli", "search", "theft", "--address", stack.retrieval,
            "--min-score", "-1",
        )  # fmt: skip
        assert bad.code == 2 and "min_score" in bad.err

    async def test_retrieved_passages_feed_the_validator_cli(
        self, stack: Stack, tmp_path: Path
    ) -> None:
        run = await run_module(
            "services.retrieval.cli", "search", "punishment for cheating section 420",
            "--address", stack.retrieval, "--json", "--act", "IPC",
        )  # fmt: skip
        assert run.code == 0, run.err
        passages = tmp_path / "passages.json"
        passages.write_text(run.out, encoding="utf-8")
        first = json.loads(run.out)["passages"][0]
        # A stand-in for the generation step: quote the first passage and cite it.
        good = tmp_path / "good.txt"
        good.write_text(f"{first['text'].rstrip('.')} [{first['semanticId']}].", encoding="utf-8")
        bad = tmp_path / "bad.txt"
        bad.write_text(f"Cheating is punished with death [{first['semanticId']}].", "utf-8")

        accepted = await run_module(
            "services.validator.cli", "--answer-file", str(good), "--chunks-file", str(passages)
        )
        rejected = await run_module(
            "services.validator.cli", "--answer-file", str(bad), "--chunks-file", str(passages)
        )

        assert accepted.code == 0, accepted.out + accepted.err
        assert rejected.code == 1, rejected.out

    async def test_ask_json_feeds_the_validator_cli(self, stack: Stack) -> None:
        asked = await run_cli(ANSWERABLE, "--address", stack.synthesis, "--json")
        assert asked.code == 0, asked.err

        checked = await run_module(
            "services.validator.cli", "--from-ask", "-", "--json", stdin=asked.out.encode()
        )

        assert checked.code == 0, checked.out + checked.err
        report = json.loads(checked.out)
        assert report["accepted"] is True and report["verdict"] == "grounded"
        served = json.loads(asked.out)["validation"]
        assert len(report["sentences"]) == len(served["sentences"])

"""StreamAnswer: time to the first validated sentence against time to the whole answer.

    .venv/bin/python -m bench.stream [--runs 20] [--token-delay-ms 25] [--index-dir var/index]

Starts Redis and the three services as child processes (stack.processes.ProcessStack) with the
OpenAI generator pointed at the loopback OpenAI-protocol server (tests/support/fake_openai.py),
which streams its draft one word per SSE event with ``--token-delay-ms`` before each (a 7B
model on a shared GPU writes some 20-50 tokens a second). The draft quotes the first
``--sentences`` evidence passages, each cited, so the real validator accepts it. For each
question, alternately: StreamAnswer (time of the evidence event, of the first validated
sentence, of the final event) and SynthesizeAnswer (time to the whole answer). Writes
reports/bench/stream.{json,md} with the command that produced it.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Final

import grpc
from grounded.synthesis.v1 import synthesis_service_pb2 as spb
from grounded.synthesis.v1 import synthesis_service_pb2_grpc as spb_grpc

from bench.load import ensure_index
from bench.loadgen import command_line, machine_context, percentile, write_report
from stack.processes import ProcessStack
from tests.support.fake_openai import FakeOpenAIServer, Messages, Reply, evidence_blocks

QUESTIONS: Final = (
    "What is the punishment for cheating under section 420?",
    "What is the punishment for theft?",
    "What is the punishment for criminal breach of trust?",
    "What is the punishment for extortion?",
    "What is the punishment for murder?",
)


def quoting(sentences: int) -> Any:
    """A draft quoting the first ``sentences`` evidence passages, each with its citation."""

    def draft(messages: Messages) -> str:
        blocks = evidence_blocks(messages)[:sentences]
        return " ".join(f"{text.rstrip(' .;:')} [{sid}]." for sid, text in blocks)

    return draft


def one_stream(stub: spb_grpc.SynthesisServiceStub, question: str) -> dict[str, Any]:
    started = time.perf_counter()
    marks: dict[str, float] = {}
    sentences = 0
    status = ""
    retract = False
    for event in stub.StreamAnswer(spb.SynthesizeAnswerRequest(question=question), timeout=120):
        now = (time.perf_counter() - started) * 1000
        kind = event.WhichOneof("event")
        if kind == "sentence":
            sentences += 1
            marks.setdefault("first_sentence_ms", now)
        elif kind == "evidence":
            marks["evidence_ms"] = now
        elif kind == "finished":
            marks["finished_ms"] = now
            status = spb.AnswerStatus.Name(event.finished.response.status)
            retract = event.finished.retract
    return {**marks, "sentences": sentences, "status": status, "retract": retract}


def one_unary(stub: spb_grpc.SynthesisServiceStub, question: str) -> dict[str, Any]:
    started = time.perf_counter()
    response = stub.SynthesizeAnswer(spb.SynthesizeAnswerRequest(question=question), timeout=120)
    return {
        "total_ms": (time.perf_counter() - started) * 1000,
        "status": spb.AnswerStatus.Name(response.status),
    }


def summarise(rows: Sequence[float]) -> dict[str, float]:
    return {
        "p50": round(statistics.median(rows), 1),
        "p95": round(percentile(list(rows), 95), 1),
        "mean": round(statistics.fmean(rows), 1),
    }


def run(args: argparse.Namespace, command: str) -> dict[str, Any]:
    index_dir = Path(args.index_dir)
    ensure_index(index_dir)
    report: dict[str, Any] = {
        "command": command,
        "runs": args.runs,
        "token_delay_ms": args.token_delay_ms,
        "sentences_per_answer": args.sentences,
        "machine_before": machine_context(),
    }
    reply = Reply(quoting(args.sentences), token_delay_s=args.token_delay_ms / 1000)
    streams: list[dict[str, Any]] = []
    unaries: list[dict[str, Any]] = []
    with FakeOpenAIServer(reply) as llm, tempfile.TemporaryDirectory(prefix="stream-") as tmp:
        env = {
            "SYNTHESIS_GENERATOR": "openai",
            "SYNTHESIS_OPENAI_BASE_URL": llm.base_url,
            "SYNTHESIS_OPENAI_API_KEY": "sk-bench",
            "SYNTHESIS_OPENAI_MODEL": "fake-streaming-7b",
            "SYNTHESIS_OPENAI_TIMEOUT_S": "60",
            "SYNTHESIS_OPENAI_STREAM": "true",  # the unary path streams from the endpoint too
        }
        with ProcessStack(index_dir, Path(tmp), settings=env) as stack:
            address = stack.synthesis
            with grpc.insecure_channel(address) as channel:
                stub = spb_grpc.SynthesisServiceStub(channel)
                for question in QUESTIONS:  # warm-up: caches, first calls
                    one_unary(stub, question)
                for n in range(args.runs):
                    question = QUESTIONS[n % len(QUESTIONS)]
                    # Alternate which goes first so that drift affects both alike.
                    if n % 2:
                        unaries.append(one_unary(stub, question))
                        streams.append(one_stream(stub, question))
                    else:
                        streams.append(one_stream(stub, question))
                        unaries.append(one_unary(stub, question))
    answered = [s for s in streams if s["status"] == "ANSWER_STATUS_ANSWERED"]
    report["machine_after"] = machine_context()
    report["answered"] = {"stream": len(answered), "unary": sum(
        u["status"] == "ANSWER_STATUS_ANSWERED" for u in unaries
    ), "of": args.runs}  # fmt: skip
    report["retracted"] = sum(bool(s["retract"]) for s in streams)
    if answered:
        first = [s["first_sentence_ms"] for s in answered]
        full = [s["finished_ms"] for s in answered]
        report["stream_first_sentence_ms"] = summarise(first)
        report["stream_finished_ms"] = summarise(full)
        report["stream_evidence_ms"] = summarise([s["evidence_ms"] for s in answered])
        report["first_over_finished_p50"] = round(
            statistics.median(f / t for f, t in zip(first, full, strict=True)), 3
        )
    report["unary_total_ms"] = summarise([u["total_ms"] for u in unaries])
    report["stream_rows"] = streams
    report["unary_rows"] = unaries
    return report


def to_markdown(report: dict[str, Any]) -> str:
    lines = [
        "# StreamAnswer: first validated sentence vs whole answer",
        "",
        f"Command: `{report['command']}`",
        "",
        f"Fake OpenAI-protocol endpoint, one word per SSE event after {report['token_delay_ms']} "
        f"ms; drafts quote {report['sentences_per_answer']} evidence passages. "
        f"Load average before/after: {report['machine_before']['loadavg'][0]:.2f} / "
        f"{report['machine_after']['loadavg'][0]:.2f} on {report['machine_before']['cpus']} CPUs; "
        f"revision {report['machine_before']['git_revision']}.",
        "",
        f"Answered: stream {report['answered']['stream']}, unary {report['answered']['unary']} "
        f"of {report['answered']['of']}; retracted streams: {report['retracted']}.",
        "",
        "| measure | p50 ms | p95 ms | mean ms |",
        "| --- | --- | --- | --- |",
    ]
    for key, label in (
        ("stream_evidence_ms", "StreamAnswer: evidence event"),
        ("stream_first_sentence_ms", "StreamAnswer: first validated sentence"),
        ("stream_finished_ms", "StreamAnswer: final event (whole answer validated)"),
        ("unary_total_ms", "SynthesizeAnswer: whole answer"),
    ):
        if key in report:
            r = report[key]
            lines.append(f"| {label} | {r['p50']} | {r['p95']} | {r['mean']} |")
    if "first_over_finished_p50" in report:
        lines += [
            "",
            f"Median ratio first sentence / final event: {report['first_over_finished_p50']}.",
        ]
    return "\n".join(lines) + "\n"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--token-delay-ms", type=float, default=25.0)
    parser.add_argument("--sentences", type=int, default=3)
    parser.add_argument("--index-dir", default="var/index")
    parser.add_argument("--out", type=Path, default=Path("reports/bench/stream.json"))
    args = parser.parse_args(argv)
    report = run(args, command_line("bench.stream", argv))
    write_report(args.out, report, to_markdown(report))
    # The two RPCs must agree (the stream's final event is the unary answer); a question whose
    # scripted quote the validator refuses is refused by both.
    return 0 if report["answered"]["stream"] == report["answered"]["unary"] else 1


if __name__ == "__main__":
    sys.exit(main())

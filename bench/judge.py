"""The judge tier's cost: what the local tiers escalate, and what an escalation adds.

    .venv/bin/python -m bench.judge [--calls 30] [--judge-ms 250] [--per-item-ms 30]
                                    [--limit 300] [--skip-synthesis]

No model judges anything here: there are no LLM weights on this machine. The judge is the
loopback OpenAI-protocol server (tests/support/fake_openai.py) reached by the real ``openai``
client; it answers "yes" to every item after a scripted delay. What is measured is what the
cascade decides to send, and what sending it costs on our side.

1. **Validator escalation by band** (offline, shipped entailment model). The labelled cases of
   ``bench.validator_accuracy`` stand in for sentences an LLM writes: paraphrases, dataset
   claims, hand-written IPC contradictions. The extractive generator's verbatim quotes are
   never escalated. For each band: the share of cases with a sentence escalated, per half
   (tune: the band may be chosen on it; report: never read to choose). Also an **oracle
   ceiling**: the figures if the judge were right on every escalated case. That is an upper
   bound on what any judge could add with that band, not a measurement of a judge.
2. **Synthesis escalation by band.** One evaluation run per dataset (``python -m evaluation``,
   ``SYNTHESIS_ANSWERABILITY=both``) with the judge on every question the model decides
   (band [0, 1)). The items it asked about are the eligible ones, and their answerability
   scores say how many each band would send.
3. **Latency.** ValidateAnswer over gRPC on the validator app (shipped model), with the judge
   asked about k = 1..5 sentences (request band [0, 1)) against the same request with
   ``check_judge`` off, alternating. The judge replies after ``--judge-ms`` + ``--per-item-ms``
   per item. The difference between the added time and that scripted delay is the cascade's
   own cost. Then the same with every verdict cached in a real redis-server.

Writes reports/bench/judge.{json,md} with the command that produced it.
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import json
import re
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Final

from grounded.type.v1 import validation_pb2
from grounded.validator.v1 import validator_service_pb2 as pb
from grounded.validator.v1 import validator_service_pb2_grpc as pb_grpc
from grpc import aio

from bench.loadgen import command_line, machine_context, percentile, write_report
from bench.validator_accuracy import (
    ACCEPT,
    REPORT,
    TUNE,
    Case,
    adversarial_summary,
    build_cases,
    dataset_labelled,
    load_tier,
)
from bench.validator_model import workload
from bench.validator_perf import grpc_request
from services.common.judge import Band
from services.common.validation import Reason, ValidationOptions
from services.validator import cascade
from services.validator.config import DEFAULT_MODEL_DIR, ValidatorConfig
from services.validator.engine import validate
from services.validator.server import create_app
from tests.support.fake_openai import FakeOpenAIServer, Messages, Reply
from tests.support.redis_server import RedisServer

ROOT: Final = Path(__file__).resolve().parents[1]
REPORTS: Final = ROOT / "reports" / "bench"
VALIDATOR_BANDS: Final = ((0.05, 0.9), (0.1, 0.8), (0.2, 0.7), (0.02, 0.95), (0.0, 1.0))
SYNTHESIS_BANDS: Final = ((0.2, 0.9), (0.3, 0.6), (0.1, 0.95), (0.0, 1.0))
# What the judge may review besides the model's band: nothing but paraphrases the model scored
# (the coverage rule with a model score), or the default (coverage and missing citation).
REVIEWS: Final = {
    "model band only": frozenset({Reason.LOW_COVERAGE}),
    "coverage + missing citation (default)": cascade.DEFAULT_REVIEW,
}
DATASETS: Final = ("ipc", "squad2", "hotpotqa", "scifact")
_ITEM = re.compile(r'<item number="\d+">')


def yes_after(base_ms: float, per_item_ms: float) -> Reply:
    """A judge that answers yes to every item after base + per-item milliseconds."""

    def reply(messages: Messages) -> str:
        count = len(_ITEM.findall(messages[-1]["content"]))
        time.sleep((base_ms + per_item_ms * count) / 1000)
        return "\n".join(f"{n}: yes" for n in range(1, count + 1))

    return Reply(reply)


# ------------------------------------------------------------------ 1. validator escalation


def validator_escalation() -> dict[str, Any]:
    cases = build_cases()
    tier = load_tier("model", DEFAULT_MODEL_DIR)
    options = ValidationOptions()
    widest = Band(0.0, 1.0)
    # Per review set, per case: the local scores of the sentences the widest band would send
    # (None: a reviewed rule alone rejected it, sent whatever the band).
    found: dict[str, list[list[float | None]]] = {name: [] for name in REVIEWS}
    for case in cases:
        report = validate(case.answer, case.evidence, options, tier)
        case.outcome = {
            "accepted": report.accepted,
            "reason": report.reason.value,
            "correct": report.accepted == (case.expected == ACCEPT),
        }
        for name, review in REVIEWS.items():
            found[name].append(
                [e.local_score for e in cascade.uncertain(report, case.evidence, widest, review)]
            )
    out: dict[str, Any] = {"cases": len(cases), "reviews": {}}
    for name, per_case in found.items():
        bands: dict[str, Any] = {}
        for low, high in VALIDATOR_BANDS:
            band = Band(low, high)
            escalated = [any(s is None or band.contains(s) for s in scores) for scores in per_case]
            entry: dict[str, Any] = {}
            for half in (TUNE, REPORT):
                picked = [(c, e) for c, e in zip(cases, escalated, strict=True) if c.split == half]
                oracle = [_oracle(c) if e else c for c, e in picked]
                entry[half] = {
                    "cases": len(picked),
                    "escalated": sum(e for _, e in picked),
                    "escalated_by_source": _by_source(picked),
                    "local": _figures([c for c, _ in picked]),
                    "oracle_ceiling": _figures(oracle),
                }
            bands[f"{low}-{high}"] = entry
        out["reviews"][name] = bands
    return out


def _oracle(case: Case) -> Case:
    outcome = {"accepted": case.expected == ACCEPT, "reason": "JUDGE", "correct": True}
    return dataclasses.replace(case, outcome=outcome)


def _by_source(picked: Sequence[tuple[Case, bool]]) -> dict[str, list[int]]:
    counts: dict[str, list[int]] = {}
    for case, escalated in picked:
        key = "adversarial" if case.source == "adversarial" else case.category
        n = counts.setdefault(key, [0, 0])
        n[0] += escalated
        n[1] += 1
    return counts


def _figures(cases: Sequence[Case]) -> dict[str, Any]:
    adversarial = adversarial_summary([c for c in cases if c.source == "adversarial"])
    dataset = dataset_labelled([c for c in cases if c.source != "adversarial"])
    return {
        "contradictions_rejected": adversarial["contradiction"],
        "paraphrases_accepted": adversarial["paraphrase"],
        "scifact_contradict_accepted": dataset["scifact_contradict_accepted"],
        "scifact_support_rejected": dataset["scifact_support_rejected"],
    }


# ------------------------------------------------------------------ 2. synthesis escalation


def synthesis_escalation(limit: int) -> dict[str, Any]:
    out: dict[str, Any] = {}
    with FakeOpenAIServer(yes_after(0, 0)) as judge, tempfile.TemporaryDirectory() as tmp:
        for dataset in DATASETS:
            reports = Path(tmp) / dataset
            command = [
                sys.executable, "-m", "evaluation", "--dataset", dataset, "--limit", str(limit),
                "--no-docs", "--reports", str(reports),
                "--set", "SYNTHESIS_ANSWERABILITY=both",
                "--set", f"SYNTHESIS_JUDGE_BASE_URL={judge.base_url}",
                "--set", "SYNTHESIS_JUDGE_MODEL=loopback-yes",
                "--set", "SYNTHESIS_JUDGE_BAND_LOW=0", "--set", "SYNTHESIS_JUDGE_BAND_HIGH=1",
                # The validator's judge at its defaults: which answer sentences it would send.
                "--set", f"VALIDATOR_JUDGE_BASE_URL={judge.base_url}",
                "--set", "VALIDATOR_JUDGE_MODEL=loopback-yes",
            ]  # fmt: skip
            before = len(judge.requests)
            subprocess.run(command, check=True, cwd=ROOT, stdout=subprocess.DEVNULL)
            claims = sum(
                len(_ITEM.findall(r.messages[-1]["content"]))
                for r in judge.requests[before:]
                if "<claim>" in r.messages[-1]["content"]
            )
            (path,) = reports.glob("*/report.json")
            items = json.loads(path.read_text())["items"]
            eligible = [
                i["answerability"]
                for i in items
                if i["answerability_effect"].startswith("judge_") and i["answerability"] is not None
            ]
            answered = sum(i["status"] == "answered" for i in items)
            out[dataset] = {
                "items": len(items),
                "answered": answered,
                "validator_sentences_escalated": claims,
                "eligible": len(eligible),
                "bands": {
                    f"{low}-{high}": sum(Band(low, high).contains(s) for s in eligible)
                    for low, high in SYNTHESIS_BANDS
                },
            }
    return out


# ------------------------------------------------------------------ 3. latency


async def latency(calls: int, judge_ms: float, per_item_ms: float) -> dict[str, Any]:
    answer, chunks = workload()
    sentences = re.split(r"(?<=\]\.)\s+", answer)
    out: dict[str, Any] = {"judge_ms": judge_ms, "per_item_ms": per_item_ms, "by_k": {}}
    with FakeOpenAIServer(yes_after(judge_ms, per_item_ms)) as judge, RedisServer() as redis:
        env = {
            "VALIDATOR_PORT": "0",
            "VALIDATOR_METRICS_PORT": "0",
            "VALIDATOR_JUDGE_BASE_URL": judge.base_url,
            "VALIDATOR_JUDGE_MODEL": "loopback-yes",
            "VALIDATOR_JUDGE_TIMEOUT_S": "30",
        }
        for cached in (False, True):
            extra = (
                {"VALIDATOR_JUDGE_CACHE_URL": redis.url, "VALIDATOR_JUDGE_CACHE_KEY": "bench-key"}
                if cached
                else {}
            )
            app = create_app(ValidatorConfig.from_env({**env, **extra}))
            await app.start()
            try:
                async with aio.insecure_channel(f"127.0.0.1:{app.port}") as channel:
                    stub = pb_grpc.ValidatorServiceStub(channel)
                    for k in range(1, len(sentences) + 1):
                        text = " ".join(sentences[:k])
                        result = await _pairs(stub, grpc_request(text, chunks), calls)
                        out["by_k"].setdefault(str(k), {})["cached" if cached else "fresh"] = result
            finally:
                await app.stop(None)
    return out


async def _pairs(
    stub: pb_grpc.ValidatorServiceStub, request: pb.ValidateAnswerRequest, calls: int
) -> dict[str, Any]:
    judged = pb.ValidateAnswerRequest()
    judged.CopyFrom(request)
    judged.options.judge_band_low, judged.options.judge_band_high = 0.0, 1.0
    local = pb.ValidateAnswerRequest()
    local.CopyFrom(request)
    local.options.check_judge = False
    with_judge: list[float] = []
    without: list[float] = []
    escalated = 0
    await stub.ValidateAnswer(local, timeout=60)  # warm the model and the connection
    for _ in range(calls):
        for message, times in ((judged, with_judge), (local, without)):
            started = time.perf_counter()
            response = await stub.ValidateAnswer(message, timeout=60)
            times.append((time.perf_counter() - started) * 1000)
            if message is judged:
                escalated = sum(
                    s.decided_by == validation_pb2.VALIDATION_TIER_JUDGE for s in response.sentences
                )
    added = [a - b for a, b in zip(with_judge, without, strict=True)]
    return {
        "escalated_sentences": escalated,
        "with_judge_p50_ms": round(percentile(with_judge, 50), 1),
        "with_judge_p95_ms": round(percentile(with_judge, 95), 1),
        "local_p50_ms": round(percentile(without, 50), 1),
        "added_p50_ms": round(statistics.median(added), 1),
        "added_p95_ms": round(percentile(added, 95), 1),
    }


# ------------------------------------------------------------------ report


def markdown(report: dict[str, Any]) -> str:
    context = report["machine"]
    load = ", ".join(f"{x:.2f}" for x in context["loadavg"])
    lines = [
        "# The judge tier's cost",
        "",
        f"Command: `{report['command']}` (git {context['git_revision']}; load average {load} "
        f"on {context['cpus']} CPUs; {report['seconds']} s). The judge is the loopback "
        "OpenAI-protocol server answering yes: no model judged anything.",
        "",
    ]
    v = report.get("validator")
    if v:
        lines += [
            "## Validator: cases escalated, by band (shipped entailment model)",
            "",
            "Tune half: the band may be chosen on it. Report half: never read to choose. "
            "Oracle ceiling: the figures if the judge were right on every escalated case "
            "(an upper bound, not a judge's result). Each cell: local → ceiling.",
            "",
        ]
        for review, bands in v["reviews"].items():
            lines += [
                f"### Reviewed: {review}",
                "",
                "| band | half | escalated | contradictions rejected | paraphrases accepted | "
                "SciFact CONTRADICT accepted | SciFact SUPPORT rejected |",
                "| --- | --- | --- | --- | --- | --- | --- |",
            ]
            for band, entry in bands.items():
                for half in (TUNE, REPORT):
                    e = entry[half]
                    loc, orc = e["local"], e["oracle_ceiling"]
                    cells = [
                        f"{_pct(loc[name])} → {_pct(orc[name])}"
                        for name in (
                            "contradictions_rejected",
                            "paraphrases_accepted",
                            "scifact_contradict_accepted",
                            "scifact_support_rejected",
                        )
                    ]
                    share = e["escalated"] / e["cases"] if e["cases"] else 0.0
                    lines.append(
                        f"| [{band.replace('-', ', ')}) | {half} | {e['escalated']}/{e['cases']} "
                        f"({share:.1%}) | " + " | ".join(cells) + " |"
                    )
            lines.append("")
    s = report.get("synthesis")
    if s:
        bands = list(next(iter(s.values()))["bands"])
        lines += [
            "## Synthesis: questions escalated, by band (`SYNTHESIS_ANSWERABILITY=both`)",
            "",
            "Eligible: questions the answerability model decides (not a named section, a "
            "comparison or a structural refusal).",
            "",
            "| dataset | items | eligible | "
            + " | ".join(f"[{b.replace('-', ', ')})" for b in bands)
            + " | answers | validator sentences escalated (default band and review) |",
            "| --- | --- | --- | " + " | ".join("---" for _ in bands) + " | --- | --- |",
        ]
        for dataset, entry in s.items():
            n = entry["items"]
            tail = f" {entry['answered']} | {entry['validator_sentences_escalated']} |"
            lines.append(
                f"| {dataset} | {n} | {entry['eligible']} | "
                + " | ".join(f"{entry['bands'][b]} ({entry['bands'][b] / n:.1%})" for b in bands)
                + " |"
                + tail
            )
        lines.append("")
    lat = report.get("latency")
    if lat:
        lines += [
            "## Latency added by the judge (ValidateAnswer over gRPC, shipped model)",
            "",
            f"Scripted judge time: {lat['judge_ms']:.0f} ms + {lat['per_item_ms']:.0f} ms per "
            "item, one batched call per request. 'Overhead' is the added p50 less that "
            "scripted time: the cascade's own cost.",
            "",
            "| sentences escalated | local p50 | with judge p50 / p95 | added p50 / p95 | "
            "overhead p50 | cached: added p50 |",
            "| --- | --- | --- | --- | --- | --- |",
        ]
        for k, entry in lat["by_k"].items():
            fresh, cached = entry["fresh"], entry["cached"]
            scripted = lat["judge_ms"] + lat["per_item_ms"] * fresh["escalated_sentences"]
            lines.append(
                f"| {fresh['escalated_sentences']} (of {k}) | {fresh['local_p50_ms']} ms | "
                f"{fresh['with_judge_p50_ms']} / {fresh['with_judge_p95_ms']} ms | "
                f"{fresh['added_p50_ms']} / {fresh['added_p95_ms']} ms | "
                f"{fresh['added_p50_ms'] - scripted:.1f} ms | {cached['added_p50_ms']} ms |"
            )
        lines.append("")
    return "\n".join(lines)


def _pct(p: dict[str, Any]) -> str:
    return f"{p['k']}/{p['n']}" if p.get("n") else "–"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--calls", type=int, default=30, help="calls per variant and k")
    parser.add_argument("--judge-ms", type=float, default=250.0)
    parser.add_argument("--per-item-ms", type=float, default=30.0)
    parser.add_argument("--limit", type=int, default=300, help="questions per dataset")
    parser.add_argument("--skip-synthesis", action="store_true")
    parser.add_argument("--skip-latency", action="store_true")
    parser.add_argument("--out", type=Path, default=REPORTS / "judge.json")
    args = parser.parse_args(argv)
    started = time.perf_counter()
    report: dict[str, Any] = {
        "command": command_line("bench.judge", argv),
        "machine": machine_context(),
        "validator": validator_escalation(),
    }
    if not args.skip_latency:
        report["latency"] = asyncio.run(latency(args.calls, args.judge_ms, args.per_item_ms))
    if not args.skip_synthesis:
        report["synthesis"] = synthesis_escalation(args.limit)
    report["seconds"] = round(time.perf_counter() - started, 1)
    write_report(args.out, report, markdown(report))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

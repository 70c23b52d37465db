"""How often a statement's verdict is right: ``python -m evaluation.statement_verdict``.

For every statement of the IPC statement set (``data/golden/ipc_statements_v1.jsonl``; its
rationale says TRUE or FALSE) and of SciFact's first 300 claims (SUPPORT / CONTRADICT / NEI),
SynthesizeAnswer is asked on an in-process stack (default settings, the evaluation indexes) for
the evidence it judges the statement on. That evidence is then read as synthesis reads it:
``score_statement`` with the shipped entailment model loaded as synthesis loads it (the model's
verdict, "A"), and, for STATED, the validator engine on the claim cited to the stating passage
(what ships, "B": docs/SYNTHESIS.md, "Claims"). CONTRADICTED (the best P(contradiction) at 0.9 or
more, above every P(entailment)) is measured too; it is not offered.

Prints, per half (tune = even crc32, ``in_tune_half``; odd = never tuned), how many verdicts of
each kind were given and how many were right, pooled and per set. The odd halves are printed
because this reports what ships; choosing anything from them would make them tuned.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
from collections import Counter
from collections.abc import Sequence
from pathlib import Path

import grpc
from grounded.synthesis.v1 import synthesis_service_pb2 as spb
from grounded.synthesis.v1 import synthesis_service_pb2_grpc as spb_grpc

from evaluation.datasets import EvalDataset, in_tune_half, load_dataset
from evaluation.indexes import prepare_index
from services.common.answerability_model import CONTRADICTION, ENTAILMENT, load_scorer
from services.common.passages import scored_from_proto
from services.common.validation import Verdict
from services.synthesis.answerability import StatementVerdict, claim_citing, score_statement
from services.synthesis.config import (
    DEFAULT_STATEMENT_CONTRADICTION_AT,
    DEFAULT_STATEMENT_MODEL_DIR,
    DEFAULT_STATEMENT_RESCUE_AT,
)
from services.validator.config import DEFAULT_MODEL_DIR
from services.validator.engine import validate
from services.validator.nli_onnx import load_tier
from stack.inprocess import start_in_process

STATEMENTS = Path("data/golden/ipc_statements_v1.jsonl")
TRUE = {"TRUE", "SUPPORT"}
FALSE = {"FALSE", "CONTRADICT"}


def labels(dataset: EvalDataset, path: Path | None) -> dict[str, str]:
    """TRUE / FALSE / NEI for the IPC statements (from their rationale), SciFact's subset."""
    if path is None:
        return {item.item_id: item.subset for item in dataset.items}
    rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line]
    return {
        r["id"]: r["rationale"].split(":", 1)[0].strip() if r["answerable"] else "NEI" for r in rows
    }


async def verdicts(dataset: EvalDataset, index_dir: Path) -> list[tuple[str, str, str, str]]:
    """(item id, A's verdict, B's verdict, contradicted or not) per statement."""
    scorer = load_scorer(
        DEFAULT_STATEMENT_MODEL_DIR,
        label=ENTAILMENT,
        counter_label=CONTRADICTION,
        counter_at=DEFAULT_STATEMENT_CONTRADICTION_AT,
        cache_size=0,
    )
    tier = load_tier(DEFAULT_MODEL_DIR)
    stack = await start_in_process(index_dir)
    out = []
    try:
        async with grpc.aio.insecure_channel(stack.synthesis) as channel:
            stub = spb_grpc.SynthesisServiceStub(channel)
            for item in dataset.items:
                request = spb.SynthesizeAnswerRequest(question=item.question)
                response = await stub.SynthesizeAnswer(request, timeout=60)
                evidence = [scored_from_proto(p) for p in response.evidence]
                reading = score_statement(
                    scorer, item.question, evidence, DEFAULT_STATEMENT_RESCUE_AT
                )
                model = reading.verdict
                confirmed = StatementVerdict.UNDECIDED
                if model is StatementVerdict.STATED and reading.stating is not None:
                    chunk = reading.stating.chunk
                    claim = claim_citing(item.question, chunk.semantic_id)
                    if validate(claim, [chunk], tier=tier).verdict is Verdict.GROUNDED:
                        confirmed = StatementVerdict.STATED
                rows = scorer.label_scores(item.question, [s.chunk.text for s in evidence])
                entails = max((p for _, p, _ in rows), default=0.0)
                contradicts = max((c for _, _, c in rows), default=0.0)
                against = (
                    contradicts >= DEFAULT_STATEMENT_CONTRADICTION_AT and contradicts > entails
                )
                out.append((item.item_id, model.value, confirmed.value, str(against)))
    finally:
        await stack.stop()
    return out


def table(
    results: dict[str, list[tuple[str, str, str, str]]], gold: dict[str, dict[str, str]]
) -> str:
    lines = ["| half | verdict | right / given (pooled) | per set |", "| --- | --- | --- | --- |"]
    for half, tune in (("tune (tuned)", True), ("odd (never tuned)", False)):
        # Each verdict: which column of a row gives it, and the value that means it.
        verdicts: tuple[tuple[str, int, str, set[str]], ...] = (
            ("A: STATED, the model alone", 1, "stated", TRUE),
            ("B: STATED, model + validator (ships)", 2, "stated", TRUE),
            ("CONTRADICTED (not offered)", 3, "True", FALSE),
        )
        for name, column, value, good in verdicts:
            right, given, per = 0, 0, []
            for dataset, rows in results.items():
                count = Counter(
                    gold[dataset][r[0]] in good
                    for r in rows
                    if in_tune_half(r[0]) == tune and r[column] == value
                )
                right, given = right + count[True], given + count[True] + count[False]
                per.append(f"{dataset} {count[True]}/{count[True] + count[False]}")
            share = f"{right / given:.3f}" if given else "n/a"
            lines.append(f"| {half} | {name} | {share} ({right}/{given}) | {', '.join(per)} |")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    argparse.ArgumentParser(
        prog="python -m evaluation.statement_verdict", description=__doc__
    ).parse_args(argv)
    logging.basicConfig(level=logging.WARNING)
    sets = {
        "ipc": (load_dataset("ipc", STATEMENTS), STATEMENTS),
        "scifact": (load_dataset("scifact", limit=300), None),
    }
    results, gold = {}, {}
    for name, (dataset, path) in sets.items():
        index = prepare_index(dataset, progress=False)
        results[name] = asyncio.run(verdicts(dataset, index.index_dir))
        gold[name] = labels(dataset, path)
    print(table(results, gold))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

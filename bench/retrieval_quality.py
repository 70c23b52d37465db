"""Retrieval quality on the dev slices: SciFact evidence-document nDCG@10 / recall@20 and
HotpotQA supporting-paragraph recall@10, for each stage configuration (ablations).

    .venv/bin/python -m bench.retrieval_quality [--limit N] [--datasets scifact hotpotqa]

Corpora are written as JSONL ({doc_id, title, text, metadata}) under var/bench/<name>/ and
ingested with the store API; the index is reused while the JSONL and model are unchanged.
Writes reports/retrieval_quality.json and prints a Markdown table.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import logging
import math
import os
import platform
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

ROOT: Final = Path(__file__).resolve().parents[1]
DATA: Final = ROOT / "data" / "eval"
WORK: Final = ROOT / "var" / "bench"
REPORTS: Final = ROOT / "reports"

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

import torch  # noqa: E402

from services.retrieval.embedding import Encoder, load_encoder  # noqa: E402
from services.retrieval.limits import MAX_TOP_K  # noqa: E402
from services.retrieval.search import (  # noqa: E402
    Searcher,
    SearchRequest,
    SearchSettings,
    StageSwitches,
)
from services.retrieval.store import build_artifacts, load_artifacts  # noqa: E402

logger = logging.getLogger("bench.retrieval_quality")

_OFF = StageSwitches(
    dense=False, lexical=False, expansion=False, rerank=False, aggregation=False, cache=False
)
# name → switches; aggregation is off where document metrics are read (it only reorders
# chunks inside a document's group, which leaves the document ranking unchanged).
CONFIGS: Final[dict[str, StageSwitches]] = {
    "dense": dataclasses.replace(_OFF, dense=True),
    "bm25": dataclasses.replace(_OFF, lexical=True),
    "hybrid": dataclasses.replace(_OFF, dense=True, lexical=True),
    "hybrid+expansion": dataclasses.replace(_OFF, dense=True, lexical=True, expansion=True),
    "hybrid+rerank": dataclasses.replace(_OFF, dense=True, lexical=True, rerank=True),
    "hybrid+expansion+rerank": dataclasses.replace(
        _OFF, dense=True, lexical=True, expansion=True, rerank=True
    ),
}


@dataclass(frozen=True, slots=True)
class Query:
    qid: str
    text: str
    gold: frozenset[str]


# --- datasets --------------------------------------------------------------------------------


def write_if_changed(path: Path, lines: Sequence[str]) -> Path:
    """Write ``lines`` as a file unless identical bytes are there (keeps the index reusable)."""
    data = ("\n".join(lines) + "\n").encode()
    if not path.exists() or path.read_bytes() != data:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
    return path


def _record(doc_id: str, title: str, sentences: list[str]) -> str:
    return json.dumps(
        {"doc_id": doc_id, "title": title, "text": [s.strip() for s in sentences], "metadata": {}},
        ensure_ascii=False,
        sort_keys=True,
    )


def scifact(data: Path, work: Path, limit: int = 0) -> tuple[Path, list[Query]]:
    """Abstracts as documents (one sentence per line), claims with evidence as queries."""
    records = [
        json.loads(line)
        for line in (data / "scifact" / "corpus.jsonl").read_text().splitlines()
        if line
    ]
    lines = [_record(str(r["doc_id"]), r["title"], r["abstract"]) for r in records]
    corpus = write_if_changed(work / "scifact" / "corpus.jsonl", lines)
    queries = []
    for line in (data / "scifact" / "claims.jsonl").read_text().splitlines():
        if not line:
            continue
        claim = json.loads(line)
        if claim["evidence"]:
            queries.append(Query(str(claim["id"]), claim["claim"], frozenset(claim["evidence"])))
    return corpus, queries


def hotpotqa(data: Path, work: Path, limit: int = 0) -> tuple[Path, list[Query]]:
    """Every distinct context paragraph as a document, questions as queries.

    With ``limit`` only the first ``limit`` questions and their own context paragraphs are used
    (fewer distractors than the full dev slice: the numbers are not comparable to a full run).
    """
    doc_ids: dict[str, str] = {}
    lines: list[str] = []
    queries: list[Query] = []
    for line in (data / "hotpotqa" / "dev.jsonl").read_text().splitlines():
        if not line:
            continue
        if limit and len(queries) >= limit:
            break
        record = json.loads(line)
        context = record["context"]
        for title, sentences in zip(context["title"], context["sentences"], strict=True):
            if title not in doc_ids:
                doc_ids[title] = f"hp{len(doc_ids):05d}"
                lines.append(_record(doc_ids[title], title, sentences))
        gold = frozenset(doc_ids[t] for t in record["supporting_facts"]["title"])
        queries.append(Query(record["id"], record["question"], gold))
    name = f"hotpotqa-{limit}" if limit else "hotpotqa"
    corpus = write_if_changed(work / name / "corpus.jsonl", lines)
    return corpus, queries


# --- metrics ---------------------------------------------------------------------------------


def doc_ranking(doc_ids: Sequence[str]) -> list[str]:
    """Documents in order of their first (best) chunk."""
    return list(dict.fromkeys(doc_ids))


def ndcg_at(ranked: Sequence[str], gold: frozenset[str], k: int) -> float:
    dcg = sum(1 / math.log2(i + 2) for i, d in enumerate(ranked[:k]) if d in gold)
    ideal = sum(1 / math.log2(i + 2) for i in range(min(len(gold), k)))
    return dcg / ideal if ideal else 0.0


def recall_at(ranked: Sequence[str], gold: frozenset[str], k: int) -> float:
    return len(set(ranked[:k]) & gold) / len(gold) if gold else 0.0


Metric = Callable[[Sequence[str], frozenset[str]], float]
METRICS: Final[dict[str, dict[str, Metric]]] = {
    "scifact": {
        "ndcg@10": lambda r, g: ndcg_at(r, g, 10),
        "recall@20": lambda r, g: recall_at(r, g, 20),
    },
    "hotpotqa": {
        "recall@10": lambda r, g: recall_at(r, g, 10),
        "all_gold@10": lambda r, g: float(g <= set(r[:10])),
    },
}


def evaluate(
    searcher: Searcher, queries: Sequence[Query], stages: StageSwitches, metrics: dict[str, Metric]
) -> dict[str, float]:
    totals = dict.fromkeys(metrics, 0.0)
    started = time.perf_counter()
    for q in queries:
        result = searcher.search(SearchRequest(query=q.text, top_k=MAX_TOP_K, stages=stages))
        ranked = doc_ranking([s.chunk.doc_id for s in result.chunks])
        for name, metric in metrics.items():
            totals[name] += metric(ranked, q.gold)
    elapsed = time.perf_counter() - started
    out = {name: round(total / len(queries), 4) for name, total in totals.items()}
    out["ms_per_query"] = round(elapsed * 1000 / len(queries), 1)
    return out


# --- main ------------------------------------------------------------------------------------


def build_searcher(
    name: str, corpus: Path, encoder: Encoder, settings: SearchSettings, work: Path
) -> tuple[Searcher, dict[str, Any]]:
    out_dir = work / name / "index"
    manifest = build_artifacts([corpus], out_dir, encoder, fmt="jsonl", progress=False)
    artifacts = load_artifacts(out_dir, expected_model=encoder.name, expected_dim=encoder.dim)
    info = {
        "documents": manifest.document_count,
        "chunks": manifest.chunk_count,
        "index_version": manifest.index_version,
        "index_reused": manifest.reused,
    }
    return Searcher(artifacts, encoder, settings), info


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=DATA, help="dev data directory")
    parser.add_argument("--work", type=Path, default=WORK, help="corpus + index cache directory")
    parser.add_argument("--out", type=Path, default=REPORTS / "retrieval_quality.json")
    parser.add_argument("--datasets", nargs="+", default=["scifact", "hotpotqa"])
    parser.add_argument("--configs", nargs="+", default=list(CONFIGS), choices=list(CONFIGS))
    parser.add_argument("--limit", type=int, default=0, help="first N queries only (0: all)")
    parser.add_argument(
        "--settings",
        default="{}",
        help="JSON overrides of SearchSettings fields, e.g. '{\"rrf_k\": 60}'",
    )
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    if "/heldout" in str(args.data.resolve()):
        raise SystemExit("refusing to evaluate on held-out data")
    settings = SearchSettings(**json.loads(args.settings))
    encoder = load_encoder()
    builders: dict[str, Callable[[Path, Path, int], tuple[Path, list[Query]]]] = {
        "scifact": scifact,
        "hotpotqa": hotpotqa,
    }
    report: dict[str, Any] = {
        "command": " ".join(
            ["python -m bench.retrieval_quality", *(sys.argv[1:] if argv is None else argv)]
        ),
        "torch_threads": torch.get_num_threads(),
        "settings": dataclasses.asdict(settings),
        "model": encoder.name,
        "host": {"machine": platform.machine(), "load_avg": os.getloadavg()},
        "datasets": {},
    }
    for name in args.datasets:
        corpus, queries = builders[name](args.data, args.work, args.limit)
        if args.limit:
            queries = queries[: args.limit]
        searcher, info = build_searcher(corpus.parent.name, corpus, encoder, settings, args.work)
        results = {}
        for config in args.configs:
            results[config] = evaluate(searcher, queries, CONFIGS[config], METRICS[name])
            print(f"{name:9s} {config:24s} {results[config]}", flush=True)
        report["datasets"][name] = {**info, "queries": len(queries), "results": results}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=2) + "\n")
    print(markdown(report))
    return 0


def markdown(report: dict[str, Any]) -> str:
    rows = []
    for name, data in report["datasets"].items():
        results = data["results"]
        metrics = [m for m in next(iter(results.values())) if m != "ms_per_query"]
        rows.append(
            f"\n{name} ({data['queries']} queries, {data['documents']} documents, "
            f"{data['chunks']} chunks)\n"
        )
        rows.append("| configuration | " + " | ".join(metrics) + " | ms/query |")
        rows.append("|---" * (len(metrics) + 2) + "|")
        for config, values in results.items():
            cells = " | ".join(f"{values[m]:.3f}" for m in metrics)
            rows.append(f"| {config} | {cells} | {values['ms_per_query']:.1f} |")
    return "\n".join(rows)


if __name__ == "__main__":
    raise SystemExit(main())

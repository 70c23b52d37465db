"""Probe a trained answerability model as a refusal gate, before any service uses it (issue 13).

    python -m training.export_onnx --model var/train/answerability/final \\
        --data training/data/answerability --out var/models/answerability --name answerability-v0
    python -m training.probe_answerability --model-dir var/models/answerability

For each question: retrieval's top 10 chunks (the project's own searcher over the dataset's
evaluation index, built by ``python -m evaluation``), then the model's best P(answers) over
them; the gate refuses below a threshold. The threshold is chosen on the **tune half** of SQuAD
2.0 dev (by a checksum of the question id): the highest correct-refusal rate with false refusal
at most 0.15 (issue 13's target). Reported on SQuAD's report half, the team's IPC golden set
and the plain-language IPC set (never tuned on), beside what the system does today (its refusal
decisions from the latest ``python -m evaluation`` reports).
"""

from __future__ import annotations

import argparse
import glob
import json
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from evaluation.datasets import in_tune_half, load_dataset
from evaluation.report import newest_report
from services.common.answerability_model import OnnxAnswerabilityScorer
from services.common.evidence import passage_text
from services.retrieval.config import RetrievalConfig
from services.retrieval.search import SearchRequest
from services.retrieval.server import build_searcher

TARGET_FALSE_REFUSAL = 0.15


def scores(model: OnnxAnswerabilityScorer, index_dir: Path, questions: Sequence[str]) -> np.ndarray:
    """Each question's best P(answers) over retrieval's top 10 chunks (the serving scorer)."""
    searcher = build_searcher(RetrievalConfig.from_env({"RETRIEVAL_INDEX_DIR": str(index_dir)}))
    out = []
    for question in questions:
        chunks = searcher.search(SearchRequest(query=question, top_k=10)).chunks
        passages = [passage_text(c.chunk, model.passage_format) for c in chunks]
        out.append(max(model.score(question, passages), default=0.0))
    return np.array(out)


def rates(score: np.ndarray, answerable: np.ndarray, threshold: float) -> dict[str, float]:
    refused = score < threshold
    return {
        "correct_refusal": round(float(refused[~answerable].mean()), 3)
        if (~answerable).any()
        else float("nan"),
        "false_refusal": round(float(refused[answerable].mean()), 3),
    }


def today(dataset: str, data: str) -> dict[str, float] | None:
    """The system's current refusal rates from the newest evaluation report on the same data."""
    path = newest_report(dataset, data)
    if path is None:
        return None
    m = json.loads(path.read_text())["metrics"]
    return {
        k: round(m[k]["value"], 3)
        for k in ("correct_refusal_rate", "false_refusal_rate")
        if m.get(k, {}).get("value") is not None
    }


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model-dir", type=Path, default=Path("models/answerability-minilm-l6"))
    args = parser.parse_args(argv)
    model = OnnxAnswerabilityScorer(args.model_dir, threads=2)
    index = {name: Path(glob.glob(f"var/eval/{name}/*/index")[0]) for name in ("squad2", "ipc")}

    squad = load_dataset("squad2").items
    s_score = scores(model, index["squad2"], [i.question for i in squad])
    s_ans = np.array([i.answerable for i in squad])
    tune = np.array([in_tune_half(i.item_id) for i in squad])
    grid = np.round(np.arange(0.02, 1.0, 0.02), 2)
    ok = [
        t
        for t in grid
        if rates(s_score[tune], s_ans[tune], t)["false_refusal"] <= TARGET_FALSE_REFUSAL
    ]
    best = (
        max(ok, key=lambda t: (rates(s_score[tune], s_ans[tune], t)["correct_refusal"], -t))
        if ok
        else 0.0
    )
    result = {
        "threshold (chosen on SQuAD tune half)": float(best),
        "squad2 tune half": rates(s_score[tune], s_ans[tune], best),
        "squad2 report half": rates(s_score[~tune], s_ans[~tune], best),
        "squad2 today (all 300)": today("squad2", "squad2/dev.json"),
    }
    for name, path in (
        ("ipc golden (tuned)", "data/golden/ipc_golden_v1.jsonl"),
        ("ipc plain (untuned)", "data/golden/ipc_plain_v1.jsonl"),
    ):
        items = load_dataset("ipc", Path(path)).items
        sc = scores(model, index["ipc"], [i.question for i in items])
        result[name] = rates(sc, np.array([i.answerable for i in items]), best)
        result[name + " today"] = today("ipc", Path(path).name)
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()

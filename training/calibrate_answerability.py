"""Choose the answerability thresholds on tuned data only, and write them into the manifest.

    python -m evaluation --dataset squad2 --limit 300 --no-docs --set SYNTHESIS_ANSWERABILITY=shadow
    python -m evaluation --dataset ipc --no-docs --set SYNTHESIS_ANSWERABILITY=shadow
    python -m evaluation --dataset ipc --data data/golden/ipc_plain_tune_v1.jsonl --no-docs \
        --set SYNTHESIS_ANSWERABILITY=shadow
    python -m training.calibrate_answerability

A shadow run scores every question's evidence with the model and lets the keyword rules
decide, so each item of its report carries the keyword outcome and the model's best score.
From those, this simulates each mode (answerability.py) over a grid of thresholds:

- veto: an answered item whose score is below ``veto_below`` becomes a refusal;
- rescue: an item refused for words alone (``RESCUABLE``) whose score reaches ``rescue_at``
  becomes an answer (optimistic for answerable items: generation and validation may still
  refuse it; the real runs afterwards measure what happens);
- model: refused when a structural rule refused, or the score is below ``veto_below``.

It picks, for each mode, the thresholds that maximise the mean of the per-set balanced
accuracies (correct-refusal rate and answered rate of answerable items) **without raising any
set's false-refusal rate, or lowering its correct-refusal rate, by more than
``MAX_RATE_CHANGE`` against the keyword rules** (do no harm: unconstrained, the objective bought
SQuAD correct refusals with 40 % false refusals; with the false-refusal cap alone it rescued
out-of-corpus IPC questions, golden-set correct refusal 0.846 -> 0.731). ``--baseline`` takes
the bound against what ships instead: three end-to-end ``report.json`` files of the shipped
configuration (SQuAD, IPC golden, plain IPC tune), whose measured rates on the same tune items
replace the keyword rules' (``--max-rate-change`` sets the bound). It
reads the **tune sets only**: the
SQuAD 2.0 items whose id has an even crc32 (the same split ``probe_answerability`` uses), the
team's IPC golden set (tuned on since the keyword rules were written) and, since v2, the
plain-language IPC tune set (``ipc_plain_tune_v1``, written for tuning and never trained on).
The SQuAD report half and the report-only plain-language IPC set (``ipc_plain_v1``) are never
read here. The shadow reports must be of the model in ``--model-dir``: reports name each model's
``model.onnx`` sha256 (``evaluation.models``); the newest report of that model is picked, and a
report given by path that names another model is refused.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from evaluation.datasets import in_tune_half, load_dataset
from evaluation.models import ANSWERABILITY, sha_key
from evaluation.report import newest_report
from services.common.cross_encoder import sha256
from services.common.language.key_terms import extract_key_terms
from services.synthesis.answerability import RESCUABLE, STRUCTURAL

MODEL_DIR = Path("models/answerability-minilm-l6")
PLAIN_TUNE = Path("data/golden/ipc_plain_tune_v1.jsonl")
GRID = np.round(np.arange(0.02, 1.0, 0.01), 2)
MAX_RATE_CHANGE = 0.05
_RESCUABLE = {r.value for r in RESCUABLE}
_STRUCTURAL = {r.value for r in STRUCTURAL}


@dataclass(frozen=True, slots=True)
class Row:
    answerable: bool
    answered: bool  # what the keyword rules (and generation, validation) did
    failed: str  # the failed sufficiency requirement, "" if none
    score: float
    names_section: bool = False  # left to the keyword rules in every mode (answerability.py)
    item_id: str = ""


def tune_rows(report: Path, *, split: bool, dataset: str, data: Path | None = None) -> list[Row]:
    """The tune items of a shadow report (``split``: only even-crc32 ids, as for SQuAD)."""
    questions = {i.item_id: i.question for i in load_dataset(dataset, data).items}
    rows = []
    for item in json.loads(report.read_text())["items"]:
        if split and not in_tune_half(item["item_id"]):
            continue  # the report half: never read
        if item["status"] == "error" or item.get("answerability") is None:
            continue
        reason = item.get("refusal_reason") or ""
        failed = reason[reason.find("(") + 1 : reason.find(")")] if "(" in reason else ""
        named = bool(extract_key_terms(questions[item["item_id"]]).sections)
        rows.append(
            Row(
                item["answerable"],
                item["status"] == "answered",
                failed,
                item["answerability"],
                named,
                item["item_id"],
            )
        )
    return rows


def measured_rates(report: Path, rows: Sequence[Row]) -> dict[str, float]:
    """Correct- and false-refusal rates an end-to-end report measured on the items of ``rows``
    (the same tune items a shadow report gave), for the do-no-harm bound against what ships."""
    status = {i["item_id"]: i["status"] for i in json.loads(report.read_text())["items"]}
    missing = [r.item_id for r in rows if r.item_id not in status]
    if missing:
        raise SystemExit(f"{report}: {len(missing)} tune items missing (e.g. {missing[0]})")
    refused = np.array([status[r.item_id] != "answered" for r in rows])
    return refusal_rates(refused, np.array([r.answerable for r in rows]))


def refusal_rates(refused: np.ndarray, answerable: np.ndarray) -> dict[str, float]:
    """Correct refusal (of the unanswerable items) and false refusal (of the answerable ones)."""
    correct = float(refused[~answerable].mean()) if (~answerable).any() else float("nan")
    false = float(refused[answerable].mean()) if answerable.any() else float("nan")
    return {"correct_refusal": round(correct, 3), "false_refusal": round(false, 3)}


def simulate(rows: Sequence[Row], mode: str, veto: float, rescue: float) -> dict[str, float]:
    answerable = np.array([r.answerable for r in rows])
    answered = np.array([r.answered for r in rows])
    score = np.array([r.score for r in rows])
    rescuable = np.array([r.failed in _RESCUABLE for r in rows])
    structural = np.array([r.failed in _STRUCTURAL for r in rows])
    free = ~np.array([r.names_section for r in rows])  # the model may change these
    out = answered.copy()
    if mode in ("veto", "both"):
        out &= (score >= veto) | ~free
    if mode in ("rescue", "both"):
        out |= ~answered & rescuable & (score >= rescue) & free
    if mode == "model":
        out = np.where(free, ~structural & (score >= veto), answered)
    return refusal_rates(~out, answerable)


def balanced(sets: Sequence[Sequence[Row]], mode: str, veto: float, rescue: float) -> float:
    values = []
    for rows in sets:
        r = simulate(rows, mode, veto, rescue)
        values.append((r["correct_refusal"] + 1 - r["false_refusal"]) / 2)
    return float(np.mean(values))


def harmless(
    sets: Sequence[Sequence[Row]],
    mode: str,
    veto: float,
    rescue: float,
    baselines: Sequence[dict[str, float]] | None = None,
    max_change: float = MAX_RATE_CHANGE,
) -> bool:
    """Do no harm, both ways: on no set does false refusal rise, or correct refusal fall, by
    more than ``max_change`` against the keyword rules (or the given measured ``baselines``)."""
    for i, rows in enumerate(sets):
        now = simulate(rows, mode, veto, rescue)
        before = baselines[i] if baselines else simulate(rows, "veto", 0.0, 1.0)
        if now["false_refusal"] > before["false_refusal"] + max_change + 1e-9:
            return False
        if now["correct_refusal"] < before["correct_refusal"] - max_change - 1e-9:
            return False
    return True


def choose(
    sets: Sequence[Sequence[Row]],
    mode: str,
    baselines: Sequence[dict[str, float]] | None = None,
    max_change: float = MAX_RATE_CHANGE,
) -> tuple[float, float]:
    vetoes = GRID if mode in ("veto", "both", "model") else [0.0]
    rescues = GRID if mode in ("rescue", "both") else [1.0]
    # "model" is the model-alone ablation: it replaces the keyword rules, so it cannot be held
    # to them; it gets the best threshold by the objective alone.
    allowed = [
        (v, r)
        for v in vetoes
        for r in rescues
        if mode == "model" or harmless(sets, mode, v, r, baselines, max_change)
    ]
    if not allowed:
        return 0.0, 1.0  # nothing helps without harm: the model changes no decision
    best = max(
        allowed,
        # ties: the least intervention (lowest veto, highest rescue threshold)
        key=lambda vr: (round(balanced(sets, mode, *vr), 4), -vr[0], vr[1]),
    )
    return float(best[0]), float(best[1])


def newest_shadow(dataset: str, data_name: str, model_sha: str) -> Path:
    """The newest shadow-mode report of ``dataset`` made with the model whose ``model.onnx`` has
    ``model_sha`` (reports name it since evaluation.models; older ones are passed over)."""
    report = newest_report(dataset, data_name, "SYNTHESIS_ANSWERABILITY=shadow", model_sha)
    if report is None:
        raise SystemExit(
            f"no shadow-mode report for {dataset} ({data_name}) made with this model "
            f"(model.onnx sha256 {model_sha[:12]}…); run the evaluation"
        )
    return report


def check_model(report: Path, model_sha: str) -> None:
    """A report made with another answerability model is refused; one that does not name its
    model (made before reports did, or against a deployed stack) is used with a note."""
    config = json.loads(report.read_text())["run"].get("config") or {}
    measured = config.get(sha_key(ANSWERABILITY))
    if measured is None:
        print(f"note: {report} does not name its answerability model; not checked")
    elif measured != model_sha:
        raise SystemExit(
            f"{report} measured another answerability model (model.onnx sha256 "
            f"{measured[:12]}…, not {model_sha[:12]}…): its scores say nothing of this one"
        )


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model-dir", type=Path, default=MODEL_DIR)
    parser.add_argument("--squad", type=Path, help="shadow report.json for SQuAD 2.0")
    parser.add_argument("--ipc", type=Path, help="shadow report.json for the IPC golden set")
    parser.add_argument(
        "--plain", type=Path, help="shadow report.json for the plain-language IPC tune set"
    )
    parser.add_argument(
        "--baseline",
        type=Path,
        nargs=3,
        metavar=("SQUAD", "IPC", "PLAIN"),
        help="end-to-end report.json files of the shipped configuration: bound the change "
        "against their measured rates instead of the keyword rules'",
    )
    parser.add_argument("--max-rate-change", type=float, default=MAX_RATE_CHANGE)
    parser.add_argument("--dry-run", action="store_true", help="print, do not write the manifest")
    args = parser.parse_args(argv)
    model_sha = sha256(args.model_dir / "model.onnx")
    squad = args.squad or newest_shadow("squad2", "squad2", model_sha)
    ipc = args.ipc or newest_shadow("ipc", "ipc_golden_v1", model_sha)
    plain = args.plain or newest_shadow("ipc", PLAIN_TUNE.name, model_sha)
    for report in (squad, ipc, plain):  # the baselines measured what ships: another model
        check_model(report, model_sha)
    sets = [
        tune_rows(squad, split=True, dataset="squad2"),
        tune_rows(ipc, split=False, dataset="ipc"),
        tune_rows(plain, split=False, dataset="ipc", data=PLAIN_TUNE),
    ]
    names = ["squad2 tune half", "ipc golden (tuned)", "ipc plain tune set (tuned)"]
    result: dict[str, object] = {
        "reports": [str(squad), str(ipc), str(plain)],
        "n": [len(s) for s in sets],
    }
    baselines = (
        [measured_rates(b, rows) for b, rows in zip(args.baseline, sets, strict=True)]
        if args.baseline
        else None
    )
    if baselines:
        result["baseline"] = {
            "reports": [str(b) for b in args.baseline],
            **dict(zip(names, baselines, strict=True)),
        }
    chosen = {}
    for mode in ("veto", "rescue", "both", "model"):
        veto, rescue = choose(sets, mode, baselines, args.max_rate_change)
        chosen[mode] = (veto, rescue)
        result[mode] = {
            "veto_below": veto if mode != "rescue" else None,
            "rescue_at": rescue if mode in ("rescue", "both") else None,
            **{n: simulate(rows, mode, veto, rescue) for n, rows in zip(names, sets, strict=True)},
        }
    result["keyword rules alone"] = {
        n: simulate(rows, "veto", 0.0, 1.0) for n, rows in zip(names, sets, strict=True)
    }
    print(json.dumps(result, indent=2))
    if args.dry_run:
        return
    manifest_path = args.model_dir / "manifest.json"
    manifest = json.loads(manifest_path.read_text())
    veto, rescue = chosen["both"]
    manifest["calibration"] = {
        "veto_below": veto,
        "rescue_at": rescue,
        "model_only_threshold": chosen["model"][0],
        "veto_only_below": chosen["veto"][0],
        "rescue_only_at": chosen["rescue"][1],
        "chosen_on": "tune sets only: SQuAD 2.0 dev items with even crc32(id) (first 300), "
        "IPC golden v1, IPC plain tune set v1; objective: mean balanced accuracy of each "
        "simulated mode, with no set's false refusal rising, or correct refusal falling, "
        f"more than {args.max_rate_change} against "
        + ("the shipped configuration's measured rates" if baselines else "the keyword rules"),
        "simulated": result,
    }
    manifest_path.write_text(json.dumps(manifest, indent=2) + "\n")
    print(f"wrote veto_below={veto} rescue_at={rescue} into {manifest_path}")


if __name__ == "__main__":
    main()

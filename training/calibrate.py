"""Choose the entailment tier's thresholds on the tune half of the validator's labelled cases.

    python -m training.calibrate [--model-dir models/entailment-minilm-l6]

Cases are ``bench.validator_accuracy``'s (SciFact SUPPORT / CONTRADICT / NEI, HotpotQA
statements, paraphrase rewrites and perturbations, the hand-written IPC adversarial set), of
which only the **tune** half is read here; the report half stays untouched for reporting.
The model runs once per distinct (evidence, claim) pair (cached); every grid point then
re-validates the cases. The objective is balanced accuracy: the mean, over case groups, of the
share judged right, so no group's size dominates. The contradiction threshold only decides the
reason code (CONTRADICTED vs NOT_ENTAILED, both rejections), so it stays at 0.5 (the most likely
label). The result is written into the model's manifest.json under "calibration".

Two figures are reported beside that pooled objective, and a ship rule should use them, not it:

- **accuracy**: balanced accuracy over the ``ACCURACY_GROUPS``, claims someone else wrote (the
  hand-written adversarial set) or a dataset labelled (SciFact claims, HotpotQA statements);
- **regression gates**: each other group's accuracy. Those cases are made by this project's own
  rules (number, negation and citation perturbations, light rewrites, a missing paragraph): a
  check that nothing regressed, not evidence of accuracy. A rule names how far each may fall.

The pooled objective averages 18 groups of which 11 are gates, so a model could win on them
alone; v3's and v4's ship decisions used it (models/entailment-minilm-l6/MODEL_CARD.md).
Choosing the thresholds on the accuracy groups instead would move the shipped ones: a decision
left to the lead. ``--summarise MANIFEST [--against MANIFEST]`` prints both figures from a
manifest's recorded per-group accuracy, without running the model.
"""

from __future__ import annotations

import argparse
import itertools
import json
from collections import defaultdict
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from bench.validator_accuracy import TUNE, Case, build_cases, run
from services.common.validation import ValidationOptions
from services.validator.config import DEFAULT_MODEL_DIR
from services.validator.engine import EntailmentTier
from services.validator.entailment import NliModel, Thresholds
from services.validator.nli_onnx import OnnxNliModel

ENTAIL_GRID = (0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9)
VETO_GRID = (0.5, 0.6, 0.7, 0.8, 0.9, 0.95)
# docs/VALIDATOR.md, "M": how far a gate may fall, and how much the accuracy figure must rise.
VETO_GATE_TOLERANCE = 0.01
VETO_MIN_GAIN = 0.005
RESCUE_GRID = (0.5, 0.6, 0.7, 0.8, 0.9, 0.95, 0.98, 1.01)  # 1.01: never rescue
CONTRADICTION = 0.5


class CachedModel:
    """An ``NliModel`` that remembers every pair it has scored (the grid re-asks the same)."""

    def __init__(self, model: NliModel) -> None:
        self.model = model
        self.name = model.name
        self.cache: dict[tuple[str, str], tuple[float, float, float]] = {}

    def window_tokens(self) -> int:
        return self.model.window_tokens()

    def token_spans(self, text: str) -> list[tuple[int, int]]:
        return self.model.token_spans(text)

    def predict(self, pairs: Sequence[tuple[str, str]]) -> list[tuple[float, float, float]]:
        todo = [p for p in dict.fromkeys(pairs) if p not in self.cache]
        if todo:
            self.cache.update(zip(todo, self.model.predict(todo), strict=True))
        return [self.cache[p] for p in pairs]


# The groups whose accuracy is evidence: claims not made by this project's rules. Every other
# group (perturbations, rewrites) is a regression gate.
ACCURACY_GROUPS = frozenset(
    {
        "adversarial:contradiction",
        "adversarial:paraphrase",
        "adversarial:unsupported",
        "scifact_support_claim",
        "scifact_contradict_claim",
        "scifact_nei_claim",
        "hotpot_qa_statement",
    }
)


def group_of(case: Case) -> str:
    if case.source == "adversarial":
        return "adversarial:" + case.category.split(":")[1]
    return case.category


def balanced_accuracy(cases: Sequence[Case]) -> tuple[float, dict[str, float]]:
    groups: dict[str, list[bool]] = defaultdict(list)
    for case in cases:
        groups[group_of(case)].append(bool(case.outcome["correct"]))
    per = {g: sum(v) / len(v) for g, v in sorted(groups.items())}
    return sum(per.values()) / len(per), per


def two_figures(per: dict[str, float]) -> dict[str, Any]:
    """Balanced accuracy over the accuracy groups, and every other group as a regression gate."""
    accuracy = {g: v for g, v in sorted(per.items()) if g in ACCURACY_GROUPS}
    gates = {g: v for g, v in sorted(per.items()) if g not in ACCURACY_GROUPS}
    return {
        "accuracy_balanced_accuracy": (
            round(sum(accuracy.values()) / len(accuracy), 4) if accuracy else None
        ),
        "accuracy_groups": accuracy,
        "regression_gates": gates,
        "lowest_gate": min(gates.items(), key=lambda kv: kv[1]) if gates else None,
    }


def gate_changes(per: dict[str, float], baseline: dict[str, float]) -> dict[str, float]:
    """Each regression gate's change against ``baseline`` (groups both have), lowest first."""
    changes = {
        g: round(v - baseline[g], 4)
        for g, v in per.items()
        if g not in ACCURACY_GROUPS and g in baseline
    }
    return dict(sorted(changes.items(), key=lambda kv: kv[1]))


def summarise(manifest: Path, against: Path | None = None) -> dict[str, Any]:
    """The two figures from a manifest's recorded ``per_group_accuracy`` (and the gates' change
    against another manifest's): no model is run."""

    def per_group(path: Path) -> dict[str, float]:
        return dict(json.loads(path.read_text())["calibration"]["per_group_accuracy"])

    out = {"manifest": str(manifest), **two_figures(per_group(manifest))}
    if against is not None:
        base = two_figures(per_group(against))
        out["against"] = str(against)
        out["against_accuracy_balanced_accuracy"] = base["accuracy_balanced_accuracy"]
        out["gate_changes"] = gate_changes(per_group(manifest), per_group(against))
    return out


def choose_veto(
    off: dict[str, float], grid: dict[float, dict[str, float]]
) -> tuple[float | None, list[str]]:
    """The contradiction veto rule "M" (docs/VALIDATOR.md) over per-group accuracies: the veto
    with the best accuracy figure among those holding every gate within
    ``VETO_GATE_TOLERANCE`` of veto-off's (a tie: the higher veto), adopted only if it beats
    veto-off's accuracy figure by ``VETO_MIN_GAIN`` and the pooled figure does not fall.
    Returns the veto (None: stays off) and the reasons, one line each."""

    def pooled(per: dict[str, float]) -> float:
        return sum(per.values()) / len(per)

    base = two_figures(off)["accuracy_balanced_accuracy"]
    notes = [f"veto off: accuracy {base:.4f}, pooled {pooled(off):.4f}"]
    eligible = []
    for veto, per in sorted(grid.items()):
        accuracy = two_figures(per)["accuracy_balanced_accuracy"]
        falls = {g: d for g, d in gate_changes(per, off).items() if d < -VETO_GATE_TOLERANCE}
        notes.append(
            f"veto {veto}: accuracy {accuracy:.4f}, pooled {pooled(per):.4f}"
            + (f", gates fall: {falls}" if falls else "")
        )
        if not falls:
            eligible.append((accuracy, veto, per))
    if not eligible:
        return None, [*notes, "no veto keeps every gate: off"]
    accuracy, veto, per = max(eligible, key=lambda e: (e[0], e[1]))
    if accuracy < base + VETO_MIN_GAIN or pooled(per) < pooled(off):
        return None, [*notes, f"best eligible veto {veto} does not gain enough: off"]
    return veto, [*notes, f"veto {veto} adopted"]


def parse_floors(raw: Sequence[str]) -> dict[str, float]:
    """``GROUP=ACCURACY`` options as a mapping; a malformed one is an error, not ignored."""
    floors: dict[str, float] = {}
    for item in raw:
        group, sep, value = item.partition("=")
        try:
            floor = float(value)
        except ValueError:
            floor = -1.0
        if not sep or not group or not 0.0 <= floor <= 1.0:
            raise SystemExit(f"--min-group-accuracy wants GROUP=ACCURACY in [0, 1], got {item!r}")
        floors[group] = floor
    return floors


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model-dir", type=Path, default=DEFAULT_MODEL_DIR)
    parser.add_argument(
        "--exclude-source",
        action="append",
        default=[],
        help="leave a case source out (repeatable): one the model was trained on, e.g. scifact "
        "when its tune-half documents are in the training mix",
    )
    parser.add_argument(
        "--min-group-accuracy",
        action="append",
        default=[],
        metavar="GROUP=ACCURACY",
        help="only thresholds that judge at least this share of a case group right (repeatable), "
        "e.g. scifact_contradict_claim=0.9 for a deployment that must accept at most 10 %% of "
        "contradicted scientific claims; the best balanced accuracy among them wins",
    )
    parser.add_argument(
        "--summarise",
        type=Path,
        metavar="MANIFEST",
        help="print the accuracy figure and the regression gates from this manifest's recorded "
        "per-group accuracy and stop (no model is run)",
    )
    parser.add_argument(
        "--against", type=Path, metavar="MANIFEST", help="with --summarise: the gates' change"
    )
    parser.add_argument(
        "--veto-grid",
        action="store_true",
        help="keep the manifest's entail, contradiction and rescue thresholds and choose the "
        "contradiction veto by rule M (docs/VALIDATOR.md); writes it only if adopted",
    )
    parser.add_argument(
        "--measure",
        action="store_true",
        help="only measure: the tune half's per-group accuracy and both figures with the "
        "manifest's thresholds and today's validator code (writes nothing; a before/after check "
        "of a rule change)",
    )
    args = parser.parse_args(argv)
    if args.measure:
        print(json.dumps(measure(args.model_dir), indent=2))
        return
    if args.veto_grid:
        _veto_grid(args.model_dir)
        return
    if args.summarise:
        print(json.dumps(summarise(args.summarise, args.against), indent=2))
        return
    floors = parse_floors(args.min_group_accuracy)
    cases = [c for c in build_cases() if c.split == TUNE and c.source not in args.exclude_source]
    model = CachedModel(OnnxNliModel(args.model_dir, threads=2))
    results = []
    for entail, rescue in itertools.product(ENTAIL_GRID, RESCUE_GRID):
        tier = EntailmentTier(model, Thresholds(entail, CONTRADICTION, max(entail, rescue)))
        run(cases, ValidationOptions(), tier)
        score, per = balanced_accuracy(cases)
        results.append((score, entail, rescue, per))
        print(f"entail {entail:.2f} rescue {rescue:.2f}: balanced accuracy {score:.4f}", flush=True)
    allowed = [r for r in results if all(r[3].get(g, 0.0) >= f for g, f in floors.items())]
    if not allowed:
        raise SystemExit(f"no grid point meets {floors}: nothing written")
    score, entail, rescue, per = max(allowed, key=lambda r: (r[0], r[1]))
    manifest_path = args.model_dir / "manifest.json"
    manifest = json.loads(manifest_path.read_text())
    manifest["calibration"] = {
        "entail_threshold": entail,
        "contradiction_threshold": CONTRADICTION,
        "coverage_rescue_threshold": max(entail, rescue),
        "calibrated_on": (
            f"tune half of bench.validator_accuracy's cases ({len(cases)} cases"
            + (f", without {', '.join(args.exclude_source)}" if args.exclude_source else "")
            + "); objective: balanced accuracy over case groups"
            + (f", subject to {floors}" if floors else "")
        ),
        "command": "python -m training.calibrate"
        + "".join(f" --exclude-source {s}" for s in args.exclude_source)
        + "".join(f" --min-group-accuracy {g}={f}" for g, f in floors.items()),
        "balanced_accuracy": round(score, 4),
        "per_group_accuracy": {k: round(v, 4) for k, v in per.items()},
    }
    figures = two_figures(manifest["calibration"]["per_group_accuracy"])
    # What a ship rule reads: accuracy over the accuracy groups; the rest are gates.
    manifest["calibration"]["accuracy_balanced_accuracy"] = figures["accuracy_balanced_accuracy"]
    manifest["calibration"]["regression_gates"] = figures["regression_gates"]
    manifest_path.write_text(json.dumps(manifest, indent=2) + "\n")
    print(json.dumps(manifest["calibration"], indent=2))


def measure(model_dir: Path) -> dict[str, Any]:
    """The tune half judged with the manifest's thresholds (veto included) and today's code."""
    calibration = json.loads((model_dir / "manifest.json").read_text())["calibration"]
    cases = [c for c in build_cases() if c.split == TUNE]
    thresholds = Thresholds(
        calibration["entail_threshold"],
        calibration["contradiction_threshold"],
        calibration["coverage_rescue_threshold"],
        calibration.get("contradiction_veto_threshold"),
    )
    run(cases, ValidationOptions(), EntailmentTier(OnnxNliModel(model_dir, threads=2), thresholds))
    score, per = balanced_accuracy(cases)
    return {
        "cases": len(cases),
        "pooled_balanced_accuracy": round(score, 4),
        **two_figures({k: round(v, 4) for k, v in per.items()}),
    }


def _veto_grid(model_dir: Path) -> None:
    manifest_path = model_dir / "manifest.json"
    manifest = json.loads(manifest_path.read_text())
    calibration = manifest["calibration"]
    cases = [c for c in build_cases() if c.split == TUNE]
    model = CachedModel(OnnxNliModel(model_dir, threads=2))

    def per_group(veto: float | None) -> dict[str, float]:
        thresholds = Thresholds(
            calibration["entail_threshold"],
            calibration["contradiction_threshold"],
            calibration["coverage_rescue_threshold"],
            veto,
        )
        run(cases, ValidationOptions(), EntailmentTier(model, thresholds))
        return {k: round(v, 4) for k, v in balanced_accuracy(cases)[1].items()}

    off = per_group(None)
    grid = {veto: per_group(veto) for veto in VETO_GRID}
    veto, notes = choose_veto(off, grid)
    print("\n".join(notes))
    print(json.dumps({"off": off, **{str(v): per for v, per in grid.items()}}, indent=1))
    if veto is None:
        return
    per = grid[veto]
    figures = two_figures(per)
    calibration.update(
        {
            "contradiction_veto_threshold": veto,
            "veto_command": "python -m training.calibrate --veto-grid",
            "balanced_accuracy": round(sum(per.values()) / len(per), 4),
            "per_group_accuracy": per,
            "accuracy_balanced_accuracy": figures["accuracy_balanced_accuracy"],
            "regression_gates": figures["regression_gates"],
        }
    )
    manifest_path.write_text(json.dumps(manifest, indent=2) + "\n")
    print(f"wrote contradiction_veto_threshold {veto} into {manifest_path}")


if __name__ == "__main__":
    main()

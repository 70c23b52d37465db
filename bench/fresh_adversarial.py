"""The validator on a fresh adversarial IPC set, headline figures only: ``python -m
bench.fresh_adversarial [--data FILE]``.

The set (``data/eval/ipc_adversarial_fresh/pairs.jsonl``, SOURCE.md there) was written on
2026-11-27 by a helper who read only the IPC corpus: never the validator, its code, docs,
results or any other set of the project. It is run with the shipped configuration (every tier,
the shipped entailment model and thresholds) and reports contradictions rejected and
paraphrases accepted with 95 % intervals over cases and over sections, as
``bench.validator_accuracy`` reports its adversarial set. It prints and writes **no** breakdown
by category or reason, and no case: a figure stays **never tuned** only while nobody reads
what it got wrong (docs/VALIDATOR.md, "A fresh adversarial set"). Writes
reports/fresh_adversarial.json with the command that produced it.
"""

from __future__ import annotations

import argparse
import json
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Final

from bench.loadgen import machine_context
from bench.validator_accuracy import (
    DATA,
    REPORTS,
    adversarial_cases,
    adversarial_summary,
    load_tier,
    pct,
    run,
)
from services.common.validation import ValidationOptions
from services.validator.config import DEFAULT_MODEL_DIR

FRESH_FILE: Final = DATA / "eval" / "ipc_adversarial_fresh" / "pairs.jsonl"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--data", type=Path, default=FRESH_FILE)
    parser.add_argument("--out", type=Path, default=REPORTS / "fresh_adversarial.json")
    parser.add_argument("--model-dir", type=Path, default=DEFAULT_MODEL_DIR)
    args = parser.parse_args(argv)
    cases = list(adversarial_cases(args.data))
    if not cases:
        parser.error(f"no pairs in {args.data}")
    tier = load_tier("model", args.model_dir)
    started = time.perf_counter()
    run(cases, ValidationOptions(), tier)
    summary = adversarial_summary(cases, per_category=False)
    sections = len({c.cluster for c in cases})
    report = {
        "command": "python -m bench.fresh_adversarial" + (" " + " ".join(argv) if argv else ""),
        "machine": machine_context(),
        "data": str(args.data),
        "model": tier.model.name if tier else "",
        "seconds": round(time.perf_counter() - started, 2),
        "pairs": len(cases),
        "sections": sections,
        # Headline groups only: no category, reason or case (see the module docstring).
        "contradiction": summary["contradiction"],
        "paraphrase": summary["paraphrase"],
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    print(f"fresh adversarial IPC set ({len(cases)} pairs over {sections} sections; never tuned)")
    print(f"| contradictions rejected (target ≥ 95 %) | {pct(summary['contradiction'])} |")
    print(f"| paraphrases accepted (target ≥ 90 %) | {pct(summary['paraphrase'])} |")
    print(f"report: {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

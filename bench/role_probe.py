"""The validator's role check (rule 8a) on the role probe set: how often it flags a faithful
claim (a false flag) and a swapped one (a catch), and the whole validator's verdicts with the
check on and off.

The set (``data/eval/ipc_role_probe/claims.jsonl``, see its SOURCE.md) was written after the
check by a writer who read only the corpus; it is report-only (nothing in the check was changed
after reading its results). Each claim cites its section's text as one chunk.
"""

from __future__ import annotations

import argparse
import json
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Final

from bench.validator_accuracy import load_tier, proportion
from services.common.evidence import Chunk
from services.common.validation import Reason, ValidationOptions
from services.validator.config import DEFAULT_MODEL_DIR
from services.validator.engine import validate
from services.validator.roles import problems

ROOT: Final = Path(__file__).resolve().parents[1]
PROBE: Final = ROOT / "data" / "eval" / "ipc_role_probe" / "claims.jsonl"
CORPUS: Final = ROOT / "data" / "corpora" / "indian_law" / "ipc.json"


def run(tier_kind: str = "model", model_dir: Path = DEFAULT_MODEL_DIR) -> dict[str, Any]:
    sections = {str(r["Section"]): r["section_desc"] for r in json.loads(CORPUS.read_text("utf-8"))}
    claims = [json.loads(line) for line in PROBE.read_text("utf-8").splitlines() if line.strip()]
    tier = load_tier(tier_kind, model_dir)
    counts: Counter[tuple[str, str]] = Counter()
    for c in claims:
        chunk = Chunk(f"IPC_{c['section']}_0", f"IPC_{c['section']}", sections[c["section"]])
        flagged = bool(problems(c["claim"], [chunk.text]))
        counts[(c["label"], "flagged" if flagged else "silent")] += 1
        answer = f"{c['claim'].rstrip('.')} [{chunk.semantic_id}]."
        for on in (False, True):
            report = validate(answer, [chunk], ValidationOptions(check_roles=on), tier)
            verdict = "accepted" if report.accepted else "rejected"
            counts[(c["label"], f"roles {'on' if on else 'off'}: {verdict}")] += 1
            if on and report.reason is Reason.ROLE_MISMATCH:
                counts[(c["label"], "rejected as ROLE_MISMATCH")] += 1
    n = Counter(c["label"] for c in claims)
    return {
        "n": dict(n),
        "false_flags": proportion(counts[("faithful", "flagged")], n["faithful"]),
        "catches": proportion(counts[("swapped", "flagged")], n["swapped"]),
        "validator": {
            label: {
                "accepted_roles_off": proportion(counts[(label, "roles off: accepted")], n[label]),
                "accepted_roles_on": proportion(counts[(label, "roles on: accepted")], n[label]),
            }
            for label in ("faithful", "swapped")
        },
    }


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--tier", choices=("model", "lexical"), default="model")
    parser.add_argument("--model-dir", type=Path, default=DEFAULT_MODEL_DIR)
    args = parser.parse_args(argv)
    print(json.dumps(run(args.tier, args.model_dir), indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

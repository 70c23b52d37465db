"""Sanity checks for the hand-written statute NLI pairs in training/sources/.

ipc_nli_pairs_v1.jsonl (pairs of every label) and ipc_nli_contrasts_v1.jsonl (a faithful
paraphrase of the same premise for each contradiction of the first, with ``contrast_of``).

Run from the repository root:
    .venv/bin/python training/sources/check_ipc_nli_pairs.py

Checks: valid JSON per line with the required fields, unique ids and (premise, hypothesis), the section
exists in the IPC corpus, the premise is a verbatim span of that section (after collapsing
whitespace), label and category agree, and no section is one of the validator's adversarial
evaluation set (data/eval/ipc_adversarial/): the pairs are trained on, the set is reported on,
so they must not share a section. Exits non-zero if any problem is found.
"""

from __future__ import annotations

import json
import sys
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "training" / "sources" / "ipc_nli_pairs_v1.jsonl"
CONTRASTS = ROOT / "training" / "sources" / "ipc_nli_contrasts_v1.jsonl"
CORPUS = ROOT / "data" / "corpora" / "indian_law" / "ipc.json"
ADVERSARIAL = ROOT / "data" / "eval" / "ipc_adversarial" / "pairs.jsonl"
# The second and third batches (contradictions, each with its contrasting paraphrase in the
# same file, and neutrals) keep off the two probes' sections as well: the probes are read to
# tune the rules.
MORE = [ROOT / "training" / "sources" / f"ipc_nli_pairs_v2{part}.jsonl" for part in "abcd"]
PROBES = [
    ROOT / "data" / "eval" / "ipc_paraphrase_probe" / "pairs.jsonl",
    ROOT / "data" / "eval" / "ipc_role_probe" / "claims.jsonl",
]

FIELDS = ("id", "section", "premise", "hypothesis", "label", "category")
CATEGORIES = {
    "entailment": {
        "paraphrase_plain", "paraphrase_reordered", "paraphrase_numeric", "paraphrase_partial",
        "paraphrase_legal",
    },
    "contradiction": {
        "bound_direction", "term_changed", "simple_rigorous", "or_and", "penalty_kind",
        "may_must", "role_swap", "antonym", "condition_changed", "scope_changed", "negation",
    },
    "neutral": {"unsupported_extra", "related_unsettled"},
}  # fmt: skip


def norm(text: str) -> str:
    return " ".join(text.split())


def main() -> int:
    corpus = {
        f"IPC_{row['Section']}".strip(): norm(row["section_desc"])
        for row in json.loads(CORPUS.read_text(encoding="utf-8"))
    }
    held_out = {
        json.loads(line)["section"]
        for line in ADVERSARIAL.read_text(encoding="utf-8").splitlines()
        if line.strip()
    }
    problems: list[str] = []
    by_id: dict[str, dict[str, str]] = {}
    ids: Counter[str] = Counter()
    pairs: Counter[tuple[str, str]] = Counter()
    labels: Counter[str] = Counter()
    probed = {
        section if section.startswith("IPC_") else f"IPC_{section}"
        for path in PROBES
        for section in (json.loads(line)["section"] for line in path.read_text().splitlines())
    }
    lines = [(DATA.name, line) for line in DATA.read_text(encoding="utf-8").splitlines()]
    lines += [(CONTRASTS.name, line) for line in CONTRASTS.read_text(encoding="utf-8").splitlines()]
    more = [path for path in MORE if path.exists()]
    more_rows = [
        json.loads(line) for path in more for line in path.read_text(encoding="utf-8").splitlines()
    ]
    by_id.update({row["id"]: row for row in more_rows if row.get("label") == "contradiction"})
    lines += [(MORE[0].name, json.dumps(row)) for row in more_rows]
    for n, (name, line) in enumerate(lines, 1):
        try:
            row = json.loads(line)
        except json.JSONDecodeError as exc:
            problems.append(f"line {n}: not JSON ({exc})")
            continue
        if name == MORE[0].name and row["section"] in probed:
            problems.append(f"{row['id']}: {row['section']} is a probe's section")
        if name == CONTRASTS.name or (name == MORE[0].name and "contrast_of" in row):
            target = by_id.get(row.get("contrast_of", ""))
            if target is None or target["label"] != "contradiction":
                problems.append(f"{row.get('id')}: contrast_of names no contradiction")
            elif target["premise"] != row.get("premise") or row.get("label") != "entailment":
                problems.append(f"{row.get('id')}: not an entailment of its contrast's premise")
        else:
            by_id[row.get("id", "")] = row
        missing = [f for f in FIELDS if not isinstance(row.get(f), str) or not row[f].strip()]
        if missing:
            problems.append(f"line {n}: missing or empty {missing}")
            continue
        ids[row["id"]] += 1
        pairs[norm(row["premise"]), norm(row["hypothesis"]).casefold()] += 1
        labels[row["label"]] += 1
        section = corpus.get(row["section"])
        if section is None:
            problems.append(f"{row['id']}: no section {row['section']} in the corpus")
        elif norm(row["premise"]) not in section:
            problems.append(f"{row['id']}: premise is not a span of {row['section']}")
        if row["section"] in held_out:
            problems.append(f"{row['id']}: {row['section']} is in the adversarial evaluation set")
        if row["category"] not in CATEGORIES.get(row["label"], set()):
            problems.append(f"{row['id']}: category {row['category']} with label {row['label']}")
    problems += [f"id {i} repeated" for i, c in ids.items() if c > 1]
    problems += [f"pair repeated: {p[1]!r}" for p, c in pairs.items() if c > 1]
    for problem in problems:
        print(problem)
    if problems:
        return 1
    print(f"{sum(ids.values())} pairs {dict(labels)} in {2 + len(more)} files: all checks passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())

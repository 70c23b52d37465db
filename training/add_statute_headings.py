"""Derive the statute-heading answerability mix from the plain one (no ../shared read).

    python -m training.build_answerability_data      # -> var/train/data/answerability_plain
    python -m training.add_statute_headings          # -> training/data/answerability (vendored)

The training file is written as ``train.jsonl.xz`` (xz: about a quarter of the gzip size; the
trainer reads it first, and a stale ``train.jsonl.gz`` beside it is removed).

Every IPC pair's premise (a sentence of the bundled IPC, split as retrieval splits it) becomes
the passage a ``statute-heading`` model reads at serving time
(``services.common.evidence.passage_text``): ``Section 380. Theft in dwelling house, &c.:
Whoever commits theft …``. A sentence whose exact text occurs in more than one section (a
shared penalty clause) keeps its bare text, since its own section is not known; the count is
printed and written to the manifest. SQuAD and HotpotQA pairs are unchanged (their serving
passages are sentences alone under this format too). Deterministic: same input, same bytes.
"""

from __future__ import annotations

import argparse
import collections
import json
from collections.abc import Sequence
from pathlib import Path

from services.common.evidence import passage_text
from services.retrieval.store import load_corpus
from training import vendored
from training.build_data import write_jsonl_gz
from training.train_entailment import read_pairs

PASSAGE_FORMAT = "statute-heading"
IPC = Path("data/corpora/indian_law/ipc.json")


def headed_premises(corpus: Path = IPC) -> tuple[dict[str, str], set[str]]:
    """Sentence text -> its passage with the heading, and the texts found in several sections."""
    _, chunks = load_corpus([corpus])
    by_text: dict[str, set[str]] = collections.defaultdict(set)
    for chunk in chunks:
        by_text[chunk.text].add(passage_text(chunk, PASSAGE_FORMAT))
    unique = {text: next(iter(p)) for text, p in by_text.items() if len(p) == 1}
    return unique, {text for text, p in by_text.items() if len(p) > 1}


def convert(
    rows: Sequence[dict[str, str]], unique: dict[str, str], shared: set[str]
) -> tuple[list[dict[str, str]], collections.Counter[str]]:
    counts: collections.Counter[str] = collections.Counter()
    out: list[dict[str, str]] = []
    for row in rows:
        if not row["source"].startswith("ipc"):
            out.append(row)
            continue
        premise = row["premise"]
        if premise in unique:
            counts["headed"] += 1
            out.append({**row, "premise": unique[premise]})
        else:
            counts["shared_text" if premise in shared else "not_in_corpus"] += 1
            out.append(row)
    return out, counts


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=Path("var/train/data/answerability_plain"))
    parser.add_argument("--out", type=Path, default=Path("training/data/answerability"))
    parser.add_argument(
        "--force",
        action="store_true",
        help="replace the mix in --out even when this build's bytes differ (without it such a "
        "build stops, naming the differences: training/vendored.py)",
    )
    args = parser.parse_args(argv)
    unique, shared = headed_premises()
    manifest = json.loads((args.data / "manifest.json").read_text())
    files: dict[str, str] = {}
    counts: dict[str, dict[str, int]] = {}
    with vendored.staging(args.out) as built:
        for name in manifest["files"]:
            rows, counted = convert(read_pairs(args.data / name), unique, shared)
            # xz: the trainer reads it first; install removes a train.jsonl.gz left beside it
            out_name = "train.jsonl.xz" if name.startswith("train.") else name
            files[out_name] = write_jsonl_gz(built / out_name, rows)
            counts[name] = dict(sorted(counted.items()))
            print(name, counts[name])
        manifest.update(
            files=files,
            passage_format=PASSAGE_FORMAT,
            derived_from={
                "data": str(args.data),
                "files": manifest["files"],
                "ipc_premises": counts,
            },
        )
        (built / "manifest.json").write_text(json.dumps(manifest, indent=2) + "\n")
        vendored.install(built, args.out, force=args.force)


if __name__ == "__main__":
    main()

"""Sentence-level NLI pairs from ContractNLI (legal text, CC BY 4.0): ``python -m
training.contract_nli --source DIR [--out FILE]``.

ContractNLI (Koreeda and Manning, Findings of EMNLP 2021) labels 17 fixed hypotheses about
non-disclosure agreements against whole contracts: ``Entailment`` or ``Contradiction`` with the
evidence spans that decide it, or ``NotMentioned``. A pair here is:

- Entailment / Contradiction: the decided spans, joined in document order, as the premise;
- NotMentioned: the one span of the same contract that shares the most words with the
  hypothesis, as a **neutral** premise: legal text that is related but does not say it (the
  dataset marks evidence exhaustively, so no span of such a contract decides the hypothesis).

Premises over ``MAX_PREMISE_WORDS`` words are left out (a 256-token window would cut them and
could cut the evidence), as ``../shared/data/train/nli`` does. The output is deterministic:
documents in id order, hypotheses in key order. The source is the ``data/contract-nli/`` folder
of ``TAOC0002/contract-nli`` (training/sources/SOURCE.md: commit, files, licence); only the
files present in that snapshot are read (``dev.json``, ``test.json``, ``train_truncated.json``).
"""

from __future__ import annotations

import argparse
import json
import lzma
import re
from collections import Counter
from collections.abc import Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any, Final

FILES: Final = ("train_truncated.json", "dev.json", "test.json")
OUT: Final = Path("training/sources/contract_nli_pairs.jsonl.xz")
MAX_PREMISE_WORDS: Final = 150
LABELS: Final = {
    "Entailment": "entailment",
    "Contradiction": "contradiction",
    "NotMentioned": "neutral",
}
_WORD: Final = re.compile(r"[a-z0-9]{3,}")


def _words(text: str) -> set[str]:
    return set(_WORD.findall(text.lower()))


def _span_texts(doc: Mapping[str, Any]) -> list[str]:
    return [" ".join(doc["text"][start:end].split()) for start, end in doc["spans"]]


def pairs(
    documents: Iterable[Mapping[str, Any]], hypotheses: Mapping[str, str]
) -> Iterator[dict[str, str]]:
    """One pair per (contract, hypothesis) label, in document id and hypothesis key order."""
    for doc in sorted(documents, key=lambda d: int(d["id"])):
        spans = _span_texts(doc)
        span_words = [_words(span) for span in spans]
        annotations = doc["annotation_sets"][0]["annotations"]
        for key in sorted(annotations, key=lambda k: int(k.split("-")[1])):
            choice = annotations[key]["choice"]
            hypothesis = hypotheses[key]
            if choice == "NotMentioned":
                wanted = _words(hypothesis)
                # The most related span (ties: the earliest); none with a shared word is no pair.
                best = max(range(len(spans)), key=lambda i: (len(span_words[i] & wanted), -i))
                if not span_words[best] & wanted:
                    continue
                premise = spans[best]
            else:
                premise = " ".join(spans[i] for i in sorted(annotations[key]["spans"]))
            if not premise or len(premise.split()) > MAX_PREMISE_WORDS:
                continue
            yield {
                "premise": premise,
                "hypothesis": hypothesis,
                "label": LABELS[choice],
                "source": f"contract_nli:{key}",
                "doc": str(doc["id"]),
            }


def read_source(folder: Path, files: Sequence[str] = FILES) -> list[dict[str, str]]:
    """Every pair of the given files (each holds ``documents`` and the shared ``labels``)."""
    out: list[dict[str, str]] = []
    for name in files:
        data = json.loads((folder / name).read_text(encoding="utf-8"))
        hypotheses = {k: v["hypothesis"] for k, v in data["labels"].items()}
        out += pairs(data["documents"], hypotheses)
    return out


def read_pairs(path: Path = OUT) -> list[dict[str, str]]:
    """The vendored pairs as training rows (premise, hypothesis, label, source)."""
    with lzma.open(path, "rt", encoding="utf-8") as handle:
        rows = [json.loads(line) for line in handle if line.strip()]
    return [{k: row[k] for k in ("premise", "hypothesis", "label", "source")} for row in rows]


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--source", type=Path, required=True, help="data/contract-nli/ of the repo")
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args(argv)
    rows = read_source(args.source)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    with lzma.open(args.out, "wt", encoding="utf-8", preset=9) as handle:
        for row in rows:
            handle.write(json.dumps(row, ensure_ascii=False, sort_keys=True) + "\n")
    counts = Counter(r["label"] for r in rows)
    print(json.dumps({"pairs": len(rows), "by_label": dict(sorted(counts.items()))}))


if __name__ == "__main__":
    main()

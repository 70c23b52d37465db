"""What of each evaluation set the shipped models' training data already holds: by text and by
IPC section, with counts only.

    .venv/bin/python -m training.decontamination [--json reports/decontamination.json]

``training.near_duplicates`` keeps hand-written training *questions* away from the IPC
evaluation questions (cosine < 0.75), and only those. This check covers the rest, exactly:

- **claims, verbatim**: each evaluation claim, question or statement (case and spacing aside)
  against every premise and hypothesis of the two vendored training mixes
  (``training/data/entailment``, ``training/data/answerability``) and the hand-written statute
  pairs (``training/sources/ipc_nli_*.jsonl``);
- **evidence, verbatim**: each evaluation premise or gold sentence against the mixes' premises
  (an evaluation premise the model trained on as a premise: the passage is seen, not the pair);
- **sections**: each IPC section an evaluation item is about, against the sections of the
  hand-written statute pairs (written to stay off the adversarial set and the probes, not off
  every set), with the report half (never tuned) counted apart where a set has one;
- **held-back sets**: each mix's held-back premises that are also training premises (the pairs
  are unseen; most passages are not).

It prints counts, and the ids of verbatim claims (never their text, nor any verdict). The
report-only plain-language set (``data/golden/ipc_plain_v1.jsonl``) is left out: it is read
only by the evaluation harness and ``bench.contamination``. No model is loaded.
"""

from __future__ import annotations

import argparse
import gzip
import json
import lzma
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

from evaluation.datasets import in_tune_half
from training.build_data import read_jsonl
from training.near_duplicates import CLAIM_SETS, EVALUATION_SETS

ROOT: Final = Path(__file__).resolve().parents[1]
MIXES: Final = {
    "entailment": ROOT / "training" / "data" / "entailment",
    "answerability": ROOT / "training" / "data" / "answerability",
}
HAND_WRITTEN_PAIRS: Final = tuple(sorted((ROOT / "training" / "sources").glob("ipc_nli_*.jsonl")))
# Read only by the evaluation harness (house rule): never opened here.
NOT_OPENED: Final = frozenset({Path("data/golden/ipc_plain_v1.jsonl")})
# Golden sets with a tune half and a report half by id (``evaluation.datasets.in_tune_half``);
# the others are tuned whole.
SPLIT_BY_ID: Final = frozenset({Path("data/golden/ipc_statements_v1.jsonl")})


def norm(text: str) -> str:
    """Case, spacing and a closing full stop or question mark aside."""
    return " ".join(str(text).casefold().split()).rstrip(" .?!")


def section_id(raw: object) -> str:
    """``IPC_<n>`` whether a set writes ``IPC_128`` or ``128``."""
    text = str(raw)
    return text if text.startswith("IPC_") else f"IPC_{text}"


def odd_half(item_id: str) -> bool:
    """The report half of a golden set (``evaluation.datasets``'s split)."""
    return not in_tune_half(item_id)


@dataclass(frozen=True, slots=True)
class Item:
    """One evaluation item: its id, claim texts, evidence texts and IPC sections."""

    id: str
    claims: tuple[str, ...]
    evidence: tuple[str, ...] = ()
    sections: tuple[str, ...] = ()
    report_half: bool | None = None  # None: the set has no tune/report split by id


@dataclass(slots=True)
class Training:
    """The normalised texts of what the models trained on."""

    premises: dict[str, set[str]] = field(default_factory=dict)  # mix -> premises
    hypotheses: dict[str, set[str]] = field(default_factory=dict)  # mix -> hypotheses
    hand_written: set[str] = field(default_factory=set)  # hand-written pair texts
    hand_written_sections: set[str] = field(default_factory=set)

    def claim_hits(self, text: str) -> list[str]:
        """Where a claim's text occurs verbatim: mix names and/or ``hand-written``."""
        key = norm(text)
        hits = [
            mix
            for mix in sorted(self.premises)
            if key in self.premises[mix] or key in self.hypotheses[mix]
        ]
        return hits + (["hand-written"] if key in self.hand_written else [])


def _lines(path: Path) -> Iterator[dict[str, Any]]:
    opener: Callable[..., Any] = lzma.open if path.suffix == ".xz" else gzip.open
    with opener(path, "rt", encoding="utf-8") as handle:
        for line in handle:
            if line.strip():
                yield json.loads(line)


def training_file(folder: Path) -> Path:
    return next(p for p in (folder / "train.jsonl.xz", folder / "train.jsonl.gz") if p.exists())


def unheaded() -> Callable[[str], str]:
    """A premise without the section heading the answerability mix puts before IPC text."""
    from training.add_statute_headings import headed_premises

    unique, _ = headed_premises()
    back = {headed: text for text, headed in unique.items()}
    return lambda premise: back.get(premise, premise)


def load_training(bare: Callable[[str], str]) -> Training:
    out = Training()
    for mix, folder in MIXES.items():
        rows = list(_lines(training_file(folder)))
        out.premises[mix] = {norm(bare(str(r["premise"]))) for r in rows}
        out.hypotheses[mix] = {norm(str(r["hypothesis"])) for r in rows}
    for path in HAND_WRITTEN_PAIRS:
        for row in read_jsonl(path):
            out.hand_written.update(norm(str(row[k])) for k in ("premise", "hypothesis"))
            out.hand_written_sections.add(section_id(row["section"]))
    return out


FAMILIES: Final = ("ipc_plain", "ipc", "squad", "hotpot", "cad_snli", "snli", "mnli", "fever")


def family_of(source: str) -> str:
    """A pair's source family (``ipc_plain_answer`` -> ``ipc_plain``, ``squad_hard_entity`` ->
    ``squad``, ``ipc_punishment`` -> ``ipc``: the template questions)."""
    return next((f for f in FAMILIES if source.startswith(f)), source)


def heldback_overlap(bare: Callable[[str], str]) -> dict[str, dict[str, dict[str, int]]]:
    """Per mix and source family: held-back pairs, and how many of them have a premise the
    model trained on (in any training pair of the same mix), and the same for distinct
    premises."""
    out: dict[str, dict[str, dict[str, int]]] = {}
    for mix, folder in MIXES.items():
        train = {norm(bare(str(r["premise"]))) for r in _lines(training_file(folder))}
        rows: dict[str, dict[str, int]] = {}
        premises: dict[str, set[str]] = {}
        for r in _lines(folder / "heldback.jsonl.gz"):
            family = family_of(str(r.get("source", "")))
            key = norm(bare(str(r["premise"])))
            row = rows.setdefault(family, {"pairs": 0, "pairs_premise_trained_on": 0})
            row["pairs"] += 1
            row["pairs_premise_trained_on"] += key in train
            premises.setdefault(family, set()).add(key)
        for family, row in rows.items():
            row["premises"] = len(premises[family])
            row["premises_trained_on"] = len(premises[family] & train)
        out[mix] = dict(sorted(rows.items()))
    return out


def hand_written_overlap(path: Path) -> dict[str, Any]:
    """A claim set (adversarial, a probe) against the hand-written statute pairs alone: its
    sections they cover and the ids of its claims they hold verbatim. Cheap (no mix is read):
    ``bench.validator_accuracy`` prints it beside the probes' figures."""
    rows = read_jsonl(path)
    pairs = [r for source in HAND_WRITTEN_PAIRS for r in read_jsonl(source)]
    texts = {norm(str(r[k])) for r in pairs for k in ("premise", "hypothesis")}
    sections = {section_id(r["section"]) for r in rows}
    return {
        "sections": len(sections),
        "sections_in_pairs": len(sections & {section_id(r["section"]) for r in pairs}),
        "claims_verbatim": sorted(
            str(r.get("id", "")) for r in rows if norm(str(r["claim"])) in texts
        ),
    }


# --------------------------------------------------------------------------- evaluation sets


def golden_items(path: Path) -> list[Item]:
    """A golden set (question or statement per row; gold sections; odd crc32 = report half)."""
    return [
        Item(
            str(r["id"]),
            (str(r["question"]),),
            sections=tuple(section_id(s) for s in r.get("gold_doc_ids") or ()),  # type: ignore[attr-defined]
            report_half=odd_half(str(r["id"])) if path in SPLIT_BY_ID else None,
        )
        for r in read_jsonl(ROOT / path)
    ]


def pair_items(path: Path) -> list[Item]:
    """A hand-written claim set (adversarial, probes): claim, premise and section per row."""
    rows = read_jsonl(ROOT / path)
    return [
        Item(
            str(r.get("id") or f"{path.parent.name}-{n:03d}"),
            (str(r["claim"]),),
            evidence=(str(r["premise"]),) if r.get("premise") else (),
            sections=(section_id(r["section"]),),
            # The adversarial set splits by section in bench.validator_accuracy; the probes do not.
            report_half=(
                not in_tune_half(f"adversarial:{r['section']}")  # Case.split's key
                if "adversarial" in path.parent.name
                else None
            ),
        )
        for n, r in enumerate(rows, 1)
    ]


def hotpot_items() -> list[Item]:
    """HotpotQA dev (the validator's and the harness's slice): question, gold sentences."""
    out = []
    for r in read_jsonl(ROOT / "data" / "eval" / "hotpotqa" / "dev.jsonl"):
        by_title = dict(zip(r["context"]["title"], r["context"]["sentences"], strict=True))  # type: ignore[index]
        facts = zip(r["supporting_facts"]["title"], r["supporting_facts"]["sent_id"], strict=True)  # type: ignore[index]
        gold = [by_title[t][i] for t, i in facts if t in by_title and i < len(by_title[t])]
        out.append(Item(str(r["id"]), (str(r["question"]),), evidence=tuple(gold)))
    return out


def scifact_items() -> list[Item]:
    """SciFact claims (labelled and not-enough-info) and their rationale sentences."""
    folder = ROOT / "data" / "eval" / "scifact"
    corpus = {str(d["doc_id"]): d["abstract"] for d in read_jsonl(folder / "corpus.jsonl")}
    out = []
    for name in ("claims.jsonl", "claims_nei.jsonl"):
        for r in read_jsonl(folder / name):
            evidence = [
                corpus[doc][s]  # type: ignore[index]
                for doc, sets in (r.get("evidence") or {}).items()  # type: ignore[attr-defined]
                if doc in corpus
                for rationale in sets
                for s in rationale["sentences"]
            ]
            out.append(Item(f"scifact-{r['id']}", (str(r["claim"]),), evidence=tuple(evidence)))
    return out


def breaking_nli_items() -> list[Item]:
    """Breaking NLI (the validator's outside check): hypothesis as claim, premise as evidence."""
    # Imported here: bench.validator_accuracy, which bench.breaking_nli builds on, imports this module.
    from bench.breaking_nli import BREAKING_NLI_FILE, read_pairs

    return [
        Item(f"bnli-{r['pairID']}", (str(r["sentence2"]),), evidence=(str(r["sentence1"]),))
        for r in read_pairs(BREAKING_NLI_FILE)
    ]


def evaluation_sets() -> dict[str, list[Item]]:
    sets: dict[str, list[Item]] = {}
    for path in EVALUATION_SETS:
        if path not in NOT_OPENED:
            sets[str(path)] = golden_items(path)
    for path in CLAIM_SETS:
        sets[str(path)] = pair_items(path)
    sets["data/eval/hotpotqa/dev.jsonl"] = hotpot_items()
    sets["data/eval/scifact (claims, claims_nei)"] = scifact_items()
    sets["data/eval/breaking_nli/dataset.jsonl.xz"] = breaking_nli_items()
    return sets


def overlaps(items: Sequence[Item], training: Training) -> dict[str, Any]:
    """Counts for one set; ids only for the verbatim claims."""
    verbatim: dict[str, list[str]] = {}
    for item in items:
        for text in item.claims:
            for where in training.claim_hits(text):
                verbatim.setdefault(where, []).append(item.id)
    texts = {norm(e) for i in items for e in i.evidence}
    sectioned = [i for i in items if i.sections]
    in_pairs = [i for i in sectioned if set(i.sections) & training.hand_written_sections]
    out: dict[str, Any] = {
        "items": len(items),
        "claims_verbatim_in_training": {k: sorted(set(v)) for k, v in sorted(verbatim.items())},
        "evidence_texts": len(texts),
        "evidence_texts_that_are_training_premises": {
            mix: len(texts & premises) for mix, premises in sorted(training.premises.items())
        },
    }
    if sectioned:
        sections = {s for i in sectioned for s in i.sections}
        out["sections"] = len(sections)
        out["sections_in_hand_written_pairs"] = len(sections & training.hand_written_sections)
        out["items_about_such_a_section"] = len(in_pairs)
        if any(i.report_half is not None for i in items):
            report = [i for i in sectioned if i.report_half]
            out["report_half_items_with_sections"] = len(report)
            out["report_half_items_about_such_a_section"] = sum(i in in_pairs for i in report)
    return out


def markdown(result: dict[str, Any]) -> str:
    lines = [
        "| set | items | claims verbatim in training (ids) | distinct evidence texts that are "
        "training premises | sections in hand-written pairs | items on those sections (of them "
        "in the report half, where the set has one) |",
        "| --- | --- | --- | --- | --- | --- |",
    ]
    for name, row in result["sets"].items():
        hits = (
            "; ".join(
                f"{where}: {len(ids)} ({', '.join(ids[:8])}{', …' if len(ids) > 8 else ''})"
                for where, ids in row["claims_verbatim_in_training"].items()
            )
            or "0"
        )
        seen = row["evidence_texts_that_are_training_premises"]
        evidence = (
            ", ".join(f"{mix} {n}" for mix, n in seen.items()) + f" of {row['evidence_texts']}"
            if row["evidence_texts"]
            else "–"
        )
        sections = (
            f"{row['sections_in_hand_written_pairs']} of {row['sections']}" if "sections" in row
            else "–"
        )  # fmt: skip
        items = str(row.get("items_about_such_a_section", "–"))
        if "report_half_items_with_sections" in row:
            items += (
                f" ({row['report_half_items_about_such_a_section']} of "
                f"{row['report_half_items_with_sections']})"
            )
        lines.append(f"| {name} | {row['items']} | {hits} | {evidence} | {sections} | {items} |")
    lines += [
        "",
        "| mix | held-back source | pairs | of which the premise is trained on | premises "
        "| of which trained on |",
        "| --- | --- | --- | --- | --- | --- |",
    ]
    for mix, rows in result["heldback"].items():
        lines += [
            f"| {mix} | {family} | {r['pairs']} | {r['pairs_premise_trained_on']} "
            f"| {r['premises']} | {r['premises_trained_on']} |"
            for family, r in rows.items()
        ]
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--json", type=Path, help="also write the counts here")
    args = parser.parse_args(argv)
    bare = unheaded()
    training = load_training(bare)
    result = {
        "sets": {name: overlaps(items, training) for name, items in evaluation_sets().items()},
        "heldback": heldback_overlap(bare),
    }
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(result, indent=2) + "\n")
    print(markdown(result))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

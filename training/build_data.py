"""Build the entailment training mix and vendor it into ``training/data/entailment/``.

The only step that reads ``../shared/data/train`` (``make train-data``); training itself reads
the vendored files, so a clone can retrain without the shared folder. Output:

- ``train.jsonl.xz``: the pairs the model is trained on (xz: the repeated hand-written pairs
  compress to a third of gzip's size);
- ``heldback.jsonl.gz``: general NLI pairs kept out of training (accuracy is reported on them);
- ``manifest.json``: counts per source and label, the seed and the sha256 of each file.

Sources (all with licences that allow shipping a model trained on them; see SOURCE.md):
the permissive NLI mix (SNLI, MNLI, CAD-SNLI, FEVER), "related but not saying that" neutral
pairs made from FEVER and HotpotQA evidence, and rule-made statute pairs over the IPC; with
``--ipc-written-repeats N`` also the team's hand-written statute pairs
(``training/sources/ipc_nli_pairs_v1.jsonl``, on sections the adversarial evaluation set does not
use; first tried in the 2026-11-25 v2 experiment, which was not shipped; ×3 in every shipped mix
since v3, as by default), their contrasting paraphrases and the second hand-written batch (v4's
defaults, below). The restricted NLI file (non-commercial / no licence) is never read.
"""

from __future__ import annotations

import argparse
import collections
import gzip
import json
import lzma
import random
import re
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path

from services.common.cross_encoder import sha256
from training import contract_nli, statute_pairs, vendored

LABELS = ("entailment", "neutral", "contradiction")
DEFAULT_SEED = 20261124
HELDBACK_PER_LABEL = 800
IPC_WRITTEN = Path("training/sources/ipc_nli_pairs_v1.jsonl")
IPC_CONTRASTS = Path("training/sources/ipc_nli_contrasts_v1.jsonl")
IPC_WRITTEN_MORE = (
    Path("training/sources/ipc_nli_pairs_v2a.jsonl"),
    Path("training/sources/ipc_nli_pairs_v2b.jsonl"),
)
_WORD = re.compile(r"[a-z0-9]{3,}")
# Only for picking related-but-neutral pairs by word overlap. Frozen as the shipped model's data
# was built with it: the validator's STOP_WORDS picks other pairs (checked: other sha256).
_OVERLAP_STOP = frozenset(
    {
        "the", "and", "for", "was", "were", "with", "that", "this", "from", "his", "her", "its",
        "are", "has", "had", "have", "which", "who", "whom", "their", "they", "them", "into",
        "also", "not", "but", "one", "two", "been", "than", "after", "before", "when", "where",
        "what",
    }
)  # fmt: skip


def _content(text: str) -> frozenset[str]:
    return frozenset(w for w in _WORD.findall(text.lower()) if w not in _OVERLAP_STOP)


def read_jsonl(path: Path) -> list[dict[str, object]]:
    with path.open(encoding="utf-8") as handle:
        return [json.loads(line) for line in handle if line.strip()]


def split_heldback(
    rows: Sequence[dict[str, object]], per_label: int, rng: random.Random
) -> tuple[list[dict[str, object]], list[dict[str, object]]]:
    """Keep ``per_label`` pairs of each label out of training, stratified by label."""
    by_label: dict[object, list[int]] = collections.defaultdict(list)
    for i, row in enumerate(rows):
        by_label[row["label"]].append(i)
    held: set[int] = set()
    for label in LABELS:
        held.update(rng.sample(by_label[label], per_label))
    train = [r for i, r in enumerate(rows) if i not in held]
    return train, [rows[i] for i in sorted(held)]


def fever_related_neutrals(
    rows: Sequence[dict[str, object]], count: int, rng: random.Random
) -> list[dict[str, object]]:
    """A FEVER claim against another claim's evidence that shares words with it: neutral.

    FEVER in the mix has only entail/contradict pairs, while a retrieval checker mostly meets
    evidence that is about the same thing but does not say what the claim says.
    """
    fever = [r for r in rows if r["source"] == "fever_dev"]
    premises = [str(r["premise"]) for r in fever]
    words = [_content(p) for p in premises]
    out: list[dict[str, object]] = []
    for row in rng.sample(fever, min(len(fever), count * 3)):
        claim = str(row["hypothesis"])
        cw = _content(claim)
        best, best_overlap = -1, 1
        for j in rng.sample(range(len(fever)), 300):
            if premises[j] == row["premise"] or claim in premises[j]:
                continue
            overlap = len(cw & words[j])
            if overlap > best_overlap:
                best, best_overlap = j, overlap
        if best >= 0:
            out.append(
                {"premise": premises[best], "hypothesis": claim, "label": "neutral",
                 "source": "fever_related"}
            )  # fmt: skip
        if len(out) >= count:
            break
    return out


def hotpot_related_neutrals(
    ecm: Sequence[dict[str, object]], rpt: Sequence[dict[str, object]], rng: random.Random
) -> list[dict[str, object]]:
    """Bridge evidence: one gold sentence does not state what the other says (neutral)."""
    out: list[dict[str, object]] = []
    for row in ecm:
        evidence = [str(e) for e in row["evidence"]]  # type: ignore[attr-defined]
        if len(evidence) >= 2:
            a, b = rng.sample(evidence, 2)
            out.append(
                {"premise": a, "hypothesis": b, "label": "neutral", "source": "hotpot_bridge"}
            )
    for row in rpt:
        context = row["context"]
        titles: list[str] = context["title"]  # type: ignore[index]
        sentences: list[list[str]] = context["sentences"]  # type: ignore[index]
        sf = row["supporting_facts"]
        # Sorted: a set's order follows the per-process string hash seed.
        gold = sorted(set(zip(sf["title"], sf["sent_id"], strict=True)))  # type: ignore[index]
        gold_titles = {t for t, _ in gold}
        gold_sents = [
            sentences[titles.index(t)][i]
            for t, i in gold
            if t in titles and i < len(sentences[titles.index(t)])
        ]
        distractors = [
            s.strip()
            for t, sents in zip(titles, sentences, strict=True)
            if t not in gold_titles
            for s in sents
            if len(s.split()) >= 6
        ]
        for claim in gold_sents[:2]:
            cw = _content(claim)
            ranked = sorted(distractors, key=lambda s: -len(cw & _content(s)))
            if ranked and len(cw & _content(ranked[0])) >= 2:
                out.append(
                    {"premise": ranked[0], "hypothesis": claim.strip(), "label": "neutral",
                     "source": "hotpot_distractor"}
                )  # fmt: skip
    return out


SCIFACT = Path("data/eval/scifact")


def scifact_tune_pairs(folder: Path, rng: random.Random) -> list[dict[str, object]]:
    """SciFact pairs from the **tune half** of the validator benchmark's documents only.

    ``bench.validator_accuracy`` splits SciFact cases by evidence document
    (``in_tune_half("scifact:<doc_id>")``); a claim is used only when every document it cites
    is in the tune half, so no claim or abstract of the report half is trained on. Pairs:
    the claim against its rationale sentences joined (SUPPORT -> entailment, CONTRADICT ->
    contradiction); the claim against the abstract's non-rationale sentence sharing most words
    with it (neutral: about the same thing, not saying it); a not-enough-info claim against
    the two sentences of its cited abstract sharing most words with it (neutral).
    """
    from evaluation.datasets import in_tune_half

    def tune(doc: object) -> bool:
        return in_tune_half(f"scifact:{doc}")

    corpus = {
        str(d["doc_id"]): [str(s) for s in d["abstract"]]  # type: ignore[attr-defined]
        for d in read_jsonl(folder / "corpus.jsonl")
    }
    out: list[dict[str, object]] = []

    def add(premise: str, claim: str, label: str, source: str) -> None:
        out.append({"premise": premise, "hypothesis": claim, "label": label, "source": source})

    def closest(claim: str, sentences: Sequence[str], n: int) -> list[str]:
        cw = _content(claim)
        ranked = sorted(sentences, key=lambda s: -len(cw & _content(s)))
        return [s for s in ranked[:n] if len(cw & _content(s)) >= 2]

    for claim in read_jsonl(folder / "claims.jsonl"):
        evidence: dict[str, list[dict[str, object]]] = claim["evidence"]  # type: ignore[assignment]
        if not evidence or not all(tune(doc) for doc in evidence):
            continue
        text = str(claim["claim"])
        for doc, sets in sorted(evidence.items()):
            abstract = corpus[doc]
            used: set[int] = set()
            for rationale in sets:
                idx = sorted(int(i) for i in rationale["sentences"])  # type: ignore[attr-defined]
                used.update(idx)
                label = "entailment" if rationale["label"] == "SUPPORT" else "contradiction"
                add(" ".join(abstract[i] for i in idx), text, label, "scifact_tune")
            rest = [s for i, s in enumerate(abstract) if i not in used]
            for premise in closest(text, rest, 1):
                add(premise, text, "neutral", "scifact_tune_related")
    for claim in read_jsonl(folder / "claims_nei.jsonl"):
        docs = [str(d) for d in claim["cited_doc_ids"]]  # type: ignore[attr-defined]
        if not docs or not all(tune(doc) for doc in docs):
            continue
        for doc in docs:
            if doc in corpus:
                picked = closest(str(claim["claim"]), corpus[doc], 2)
                if picked:
                    add(" ".join(picked), str(claim["claim"]), "neutral", "scifact_tune_nei")
    rng.shuffle(out)
    return out


def ipc_written_pairs(path: Path) -> list[dict[str, object]]:
    """The hand-written statute pairs as training rows (source ``ipc_written:<category>``)."""
    return [
        {
            "premise": row["premise"],
            "hypothesis": row["hypothesis"],
            "label": row["label"],
            "source": f"ipc_written:{row['category']}",
        }
        for row in read_jsonl(path)
    ]


def ipc_sections(corpus: Path) -> list[statute_pairs.Section]:
    """The corpus's sections split into sentences by the project's own chunker."""
    from services.retrieval.chunking import chunk_document
    from services.retrieval.corpus import load_statutes

    return [
        statute_pairs.Section(d.doc_id, d.title, tuple(c.text for c in chunk_document(d)))
        for d in load_statutes(corpus)
    ]


def write_jsonl_gz(path: Path, rows: Iterable[dict[str, object]]) -> str:
    """Write rows deterministically (fixed gzip mtime; xz for a ``.xz`` path) and return the
    file's sha256."""
    lines = ((json.dumps(row, ensure_ascii=False, sort_keys=True) + "\n").encode() for row in rows)
    if path.suffix == ".xz":
        with lzma.open(path, "wb", preset=9 | lzma.PRESET_EXTREME) as xz:
            xz.writelines(lines)
        return sha256(path)
    with (
        path.open("wb") as raw,
        gzip.GzipFile(filename="", mode="wb", fileobj=raw, mtime=0) as gz,
    ):
        gz.writelines(lines)
    return sha256(path)


def write_mix(
    out: Path,
    train: Sequence[Mapping[str, object]],
    heldback: Sequence[Mapping[str, object]],
    seed: int,
    labels: Sequence[str] | None = None,
    train_name: str = "train.jsonl.gz",
) -> dict[str, object]:
    """Write a training mix (train, held-back, manifest with counts and sha256s); return the manifest."""
    out.mkdir(parents=True, exist_ok=True)
    counts: dict[str, collections.Counter[str]] = collections.defaultdict(collections.Counter)
    for row in train:
        counts[str(row["source"]).split(":")[0]][str(row["label"])] += 1
    manifest: dict[str, object] = {"seed": seed}
    if labels is not None:
        manifest["labels"] = list(labels)
    manifest |= {
        "files": {
            train_name: write_jsonl_gz(out / train_name, train),
            "heldback.jsonl.gz": write_jsonl_gz(out / "heldback.jsonl.gz", heldback),
        },
        "train_pairs": len(train),
        "heldback_pairs": len(heldback),
        "train_by_source": {k: dict(v) for k, v in sorted(counts.items())},
        "heldback_by_label": dict(collections.Counter(str(r["label"]) for r in heldback)),
    }
    (out / "manifest.json").write_text(json.dumps(manifest, indent=2) + "\n")
    return manifest


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--shared", type=Path, default=Path("../shared/data/train"))
    parser.add_argument("--corpus", type=Path, default=Path("data/corpora/indian_law/ipc.json"))
    parser.add_argument("--out", type=Path, default=Path("training/data/entailment"))
    parser.add_argument("--seed", type=int, default=DEFAULT_SEED)
    parser.add_argument(
        "--scifact-tune-repeats",
        type=int,
        default=0,
        help="add the SciFact tune-half pairs this many times (0: not at all, as in the shipped "
        "mix; 3 was the 2026-11-25 experiment, see the model card)",
    )
    parser.add_argument(
        "--ipc-written",
        type=Path,
        default=IPC_WRITTEN,
        help="hand-written statute NLI pairs ('' leaves them out: the v1 mix)",
    )
    parser.add_argument(
        "--ipc-written-repeats",
        type=int,
        default=3,
        help="how many times the hand-written pairs are added (3: the shipped v3 mix; 0: the v1 mix)",
    )
    parser.add_argument(
        "--ipc-contrasts",
        type=Path,
        default=IPC_CONTRASTS,
        help="a faithful paraphrase for each hand-written contradiction (same premise)",
    )
    parser.add_argument(
        "--ipc-contrasts-repeats",
        type=int,
        default=3,
        help="how many times the contrasting paraphrases are added (3: the shipped v3 mix)",
    )
    parser.add_argument(
        "--ipc-written-more",
        type=Path,
        nargs="*",
        default=list(IPC_WRITTEN_MORE),
        help="further hand-written statute pair files (contradictions with their contrasting "
        "paraphrases, and neutrals); default: the second batch, as in the shipped v4 mix "
        "(none given: v3's mix)",
    )
    parser.add_argument(
        "--ipc-written-more-repeats",
        type=int,
        default=3,
        help="how many times each --ipc-written-more file is added",
    )
    parser.add_argument(
        "--contract-nli",
        type=Path,
        default=None,
        help="add ContractNLI's sentence-level pairs (training/sources/contract_nli_pairs.jsonl.xz, "
        "training.contract_nli; the 2026-11-28 v7 experiment); default: not added, as in v4's mix",
    )
    parser.add_argument(
        "--force",
        action="store_true",
        help="replace a mix already in --out even when this build's bytes differ "
        "(without it such a build stops, naming the differences: training/vendored.py)",
    )
    args = parser.parse_args(argv)
    rng = random.Random(args.seed)

    nli = read_jsonl(args.shared / "nli" / "train.jsonl")
    train, heldback = split_heldback(nli, HELDBACK_PER_LABEL, rng)
    extra = fever_related_neutrals(train, 2500, rng)
    extra += hotpot_related_neutrals(
        read_jsonl(args.shared / "hotpotqa" / "train_evidence_only_ecm.jsonl"),
        read_jsonl(args.shared / "hotpotqa" / "train_rpt_devsample.jsonl"),
        rng,
    )
    statute = [
        {"premise": p.premise, "hypothesis": p.hypothesis, "label": p.label, "source": p.source}
        for p in statute_pairs.generate(ipc_sections(args.corpus), args.seed)
    ]
    rows = train + extra + statute
    if args.ipc_written_repeats > 0 and str(args.ipc_written) not in ("", "."):
        rows += ipc_written_pairs(args.ipc_written) * args.ipc_written_repeats
    if args.ipc_contrasts_repeats > 0 and str(args.ipc_contrasts) not in ("", "."):
        rows += ipc_written_pairs(args.ipc_contrasts) * args.ipc_contrasts_repeats
    for path in args.ipc_written_more:
        rows += ipc_written_pairs(path) * args.ipc_written_more_repeats
    if args.contract_nli is not None:
        rows += contract_nli.read_pairs(args.contract_nli)
    if args.scifact_tune_repeats > 0:
        rows += scifact_tune_pairs(SCIFACT, rng) * args.scifact_tune_repeats
    rng.shuffle(rows)

    with vendored.staging(args.out) as built:
        manifest = write_mix(built, rows, heldback, args.seed, train_name="train.jsonl.xz")
        print(json.dumps(manifest, indent=2))
        vendored.install(built, args.out, force=args.force)


if __name__ == "__main__":
    main()

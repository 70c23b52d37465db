"""training.contract_nli: ContractNLI's document labels as sentence-level NLI pairs."""

from __future__ import annotations

import json
import lzma
from pathlib import Path

from training import contract_nli

HYPOTHESES = {
    "nda-1": "Receiving Party shall not disclose Confidential Information to third parties.",
    "nda-2": "Receiving Party may retain copies of Confidential Information.",
    "nda-3": "Receiving Party shall return all Confidential Information upon termination.",
}


def _doc(doc_id: int, sentences: list[str], annotations: dict[str, dict[str, object]]) -> dict:
    text, spans = "", []
    for sentence in sentences:
        spans.append([len(text), len(text) + len(sentence)])
        text += sentence + "\n"
    return {"id": doc_id, "text": text, "spans": spans,
            "annotation_sets": [{"annotations": annotations}]}  # fmt: skip


SENTENCES = [
    "MUTUAL NON-DISCLOSURE AGREEMENT",
    "The Recipient shall keep the Information secret and shall not give it to any third party.",
    "The Recipient shall return all copies of the Information upon termination.",
    "This Agreement is governed by the laws of Delaware.",
]


def test_decided_labels_take_their_spans_and_not_mentioned_the_most_related_span() -> None:
    doc = _doc(
        7,
        SENTENCES,
        {
            "nda-2": {"choice": "Contradiction", "spans": [2, 1]},
            "nda-1": {"choice": "Entailment", "spans": [1]},
            "nda-3": {"choice": "NotMentioned", "spans": []},
        },
    )

    rows = list(contract_nli.pairs([doc], HYPOTHESES))

    # Hypotheses in key order; evidence spans in document order, whatever order they are listed in.
    assert [(r["source"], r["label"]) for r in rows] == [
        ("contract_nli:nda-1", "entailment"),
        ("contract_nli:nda-2", "contradiction"),
        ("contract_nli:nda-3", "neutral"),
    ]
    assert rows[1]["premise"] == f"{SENTENCES[1]} {SENTENCES[2]}"
    # The span sharing most words with "... return all Confidential Information upon termination".
    assert rows[2]["premise"] == SENTENCES[2]
    assert all(r["doc"] == "7" for r in rows)


def test_long_premises_are_left_out_not_cut() -> None:
    long = " ".join(["word"] * (contract_nli.MAX_PREMISE_WORDS + 1)) + "."
    doc = _doc(1, [long], {"nda-1": {"choice": "Entailment", "spans": [0]}})

    assert list(contract_nli.pairs([doc], HYPOTHESES)) == []


def test_the_written_file_reads_back_as_training_rows(tmp_path: Path) -> None:
    folder = tmp_path / "contract-nli"
    folder.mkdir()
    labels = {k: {"hypothesis": v, "short_description": k} for k, v in HYPOTHESES.items()}
    doc = _doc(3, SENTENCES, {"nda-1": {"choice": "Entailment", "spans": [1]}})
    for name in contract_nli.FILES:
        (folder / name).write_text(json.dumps({"documents": [doc], "labels": labels}))
    out = tmp_path / "pairs.jsonl.xz"

    contract_nli.main(["--source", str(folder), "--out", str(out)])

    assert len(lzma.decompress(out.read_bytes()).decode().splitlines()) == 3  # one per file
    rows = contract_nli.read_pairs(out)
    assert rows[0] == {
        "premise": SENTENCES[1],
        "hypothesis": HYPOTHESES["nda-1"],
        "label": "entailment",
        "source": "contract_nli:nda-1",
    }


def test_the_vendored_pairs_are_the_documented_ones() -> None:
    rows = contract_nli.read_pairs()
    labels = [r["label"] for r in rows]
    assert (len(rows), labels.count("entailment"), labels.count("contradiction")) == (
        3765,
        1733,
        383,
    )

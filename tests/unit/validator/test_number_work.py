"""Rule 5 (numbers) compares a claim's numbers with each passage's distinct quantities
(``coverage.Analysis.numbers``), not with every repetition: the same judgement, at a cost that
does not grow with how often a passage repeats a number. Work is counted, not timed."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest

from services.common.evidence import Chunk
from services.common.language import quantities
from services.common.validation import Reason
from services.validator.coverage import analyse, analyse_evidence
from services.validator.engine import validate

ROOT = Path(__file__).resolve().parents[3]


def test_a_passage_s_distinct_numbers_keep_the_first_of_each_value_unit_and_context() -> None:
    text = "IPC 1 " * 500 + "imprisonment for 7 years, and 7 years more"
    analysis = analyse(text, evidence=True)

    assert len(analysis.quantities) == 502
    firsts = [q.start for q, _ in analysis.numbers]
    assert len(analysis.numbers) < 10 and firsts == sorted(firsts)
    assert analysis.numbers[0][0] == analysis.quantities[0]  # the first of its kind is kept
    for quantity, context in zip(analysis.quantities, analysis.contexts, strict=True):
        key = (quantity.value, quantity.unit, quantity.reference, context)
        assert key in {(q.value, q.unit, q.reference, c) for q, c in analysis.numbers}


def test_the_number_rule_compares_each_distinct_quantity_once(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    calls = 0
    matches = quantities._matches

    def counted(claim: quantities.Quantity, evidence: quantities.Quantity) -> bool:
        nonlocal calls
        calls += 1
        return matches(claim, evidence)

    monkeypatch.setattr(quantities, "_matches", counted)
    passage = Chunk(semantic_id="IPC_1_0", doc_id="IPC_1", text="IPC 1 " * 3000)
    report = validate("Under section 2 of the IPC it applies [IPC_1_0].", [passage])

    assert report.sentences[0].reason is not Reason.SUPPORTED
    assert calls < 20  # one per distinct quantity (it was 3,000: one per repetition)


def test_the_judgement_is_the_same_as_over_every_quantity() -> None:
    """Against every quantity of the passage (the rule before ``numbers``): the same mismatches,
    with the same evidence number in a claim number's place, for claims with a number changed
    in real IPC sentences, each read against its own section."""
    sections = json.loads((ROOT / "data/corpora/indian_law/ipc.json").read_text("utf-8"))
    rng = random.Random(20261127)
    texts = [
        str(r["section_desc"]) for r in sections if any(c.isdigit() for c in str(r["section_desc"]))
    ]
    compared = 0
    for text in rng.sample(texts, 60):
        evidence = analyse_evidence(text)
        every = list(zip(evidence.quantities, evidence.contexts, strict=True))
        for claim_text in (text, text.replace("seven", "ten").replace("10", "12")):
            claim = analyse(claim_text)
            stated = list(zip(claim.quantities, claim.contexts, strict=True))
            assert quantities.unsupported(stated, list(evidence.numbers)) == (
                quantities.unsupported(stated, every)
            )
            references = [p for p in stated if p[0].reference]
            assert quantities.displaced_references(references, list(evidence.numbers)) == (
                quantities.displaced_references(references, every)
            )
            compared += len(stated)
    assert compared > 100

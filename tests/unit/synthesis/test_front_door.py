"""The front-door probe set (data/probes/front_door_probes.jsonl) is well formed and agrees with
the corpus, so the integration test that asks it (tests/integration/test_front_door.py) and the
evaluation harness read it as written."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

from evaluation.golden import check_against_corpus, load_golden, load_ipc_sections

ROOT = Path(__file__).resolve().parents[3]
PROBES = ROOT / "data/probes/front_door_probes.jsonl"
IPC = ROOT / "data/corpora/indian_law/ipc.json"


class TestFrontDoorProbes:
    def test_probes_load_and_agree_with_the_corpus(self) -> None:
        probes = load_golden(PROBES)

        assert check_against_corpus(probes, load_ipc_sections(IPC)) == []

    def test_probes_cover_each_category_the_front_door_fixes(self) -> None:
        probes = load_golden(PROBES)
        categories = Counter(p.rationale.split(":", 1)[0] for p in probes)

        assert len(probes) >= 40
        assert set(categories) == {
            "gibberish", "greeting", "chit-chat", "request", "look-alike", "full-width",
            "bare-section", "section-sign", "plain", "ordinary-word", "other-script",
            "transliterated",
        }  # fmt: skip
        assert categories["plain"] >= 10
        assert all(
            p.answerable for p in probes if p.rationale.startswith(("plain", "bare", "ordinary"))
        )
        assert not any(p.answerable for p in probes if p.rationale.startswith(("other", "trans")))

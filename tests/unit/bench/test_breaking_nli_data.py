"""The vendored Breaking NLI file is the upstream one (data/eval/breaking_nli/SOURCE.md)."""

from __future__ import annotations

import hashlib
import lzma
from collections import Counter

from bench.breaking_nli import BREAKING_NLI_FILE, cases, read_pairs


def test_vendored_file_is_upstream_byte_for_byte() -> None:
    # The checksums SOURCE.md gives: the compressed file, and the upstream dataset.jsonl inside.
    assert hashlib.sha256(BREAKING_NLI_FILE.read_bytes()).hexdigest() == (
        "7c9fadce0b578364817932a98a25f6b2a5393576e272a5fbb3ebe3a173c81ffd"
    )
    assert hashlib.sha256(lzma.decompress(BREAKING_NLI_FILE.read_bytes())).hexdigest() == (
        "72d182edc66b20e404295567d2dc5c50751071c7ab980e791273a51df4334cf1"
    )


def test_every_pair_becomes_one_case_citing_its_premise() -> None:
    rows = read_pairs()
    assert Counter(r["gold_label"] for r in rows) == {
        "contradiction": 7164,
        "entailment": 982,
        "neutral": 47,
    }
    built = cases(rows)
    assert len(built) == len(rows) == 8193
    assert len({c.evidence[0].semantic_id for c in built}) == 8193  # one passage id a pair
    assert len({c.cluster for c in built}) == 1796  # clustered by premise
    assert Counter(c.expected for c in built) == {"reject": 7164 + 47, "accept": 982}
    first = built[0]
    assert first.answer.endswith(f"[{first.evidence[0].semantic_id}]")

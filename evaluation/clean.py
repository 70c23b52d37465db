"""The clean subset of a split set, and how close it still sits to the items that were read.

The register (``evaluation.datasets.Tuning``) says what of a set was read to choose anything.
The clean subset is what it leaves of the report half: odd crc32, past the items read for the
keyword rules, not of a subset read in both halves. It is fixed by item position and id alone,
before any outcome is looked at.

The split is by item id, so a clean item can still sit next to a read one:

- a **near-twin**: a read question whose word set overlaps its own by ``TWIN_JACCARD`` or more
  (SQuAD 2.0's unanswerable questions are often one-word edits of an answerable one);
- a **shared source**: a read question written from the same document (a SQuAD paragraph, a
  SciFact abstract; ``EvalItem.sources``).

``clean_subset`` returns the ids of each; the harness scores the clean subset, the clean subset
without near-twins and the clean subset without near-twins or shared sources (each of the last
two only with ``MIN_ITEMS`` or more).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from evaluation.datasets import TWIN_JACCARD, Tuning
from evaluation.records import EvalItem

_WORD = re.compile(r"[a-z0-9]+")
# The parts without near-twins (and shared sources) are given only with this many items.
MIN_ITEMS = 30


def question_words(text: str) -> frozenset[str]:
    """Lower-cased words (letters and digits) of a question."""
    return frozenset(_WORD.findall(text.lower()))


def jaccard(a: frozenset[str], b: frozenset[str]) -> float:
    """|a ∩ b| / |a ∪ b|; 0 for two empty sets."""
    union = len(a | b)
    return len(a & b) / union if union else 0.0


@dataclass(frozen=True, slots=True)
class CleanSubset:
    """Ids of the clean subset of a run, and of those clean items with a near-twin or a shared
    source among the read items of the same run."""

    ids: frozenset[str]
    twin_ids: frozenset[str]
    shared_source_ids: frozenset[str]
    n_read: int

    @property
    def no_twin_ids(self) -> frozenset[str]:
        """The clean items without a near-twin."""
        return self.ids - self.twin_ids

    @property
    def unshared_ids(self) -> frozenset[str]:
        """The clean items with neither a near-twin nor a shared source document."""
        return self.ids - self.twin_ids - self.shared_source_ids

    def counts(self) -> dict[str, int]:
        """Sizes, for the report: clean, near-twin, shared source, clean without twin, read."""
        return {
            "clean": len(self.ids),
            "twin": len(self.twin_ids),
            "shared_source": len(self.shared_source_ids),
            "clean_no_twin": len(self.no_twin_ids),
            "clean_unshared": len(self.unshared_ids),
            "read": self.n_read,
        }


def clean_subset(tuning: Tuning, items: Sequence[EvalItem]) -> CleanSubset | None:
    """The clean subset of ``items`` (a run's items, in loader order from the first), or None
    when the register gives the set none. Near-twins and shared sources are looked for among
    the read items of the same run (with LIMIT 300, all of them)."""
    if not tuning.has_clean:
        return None
    clean = [
        item
        for index, item in enumerate(items)
        if tuning.in_clean(index, item.item_id, item.subset)
    ]
    read = [
        item
        for index, item in enumerate(items)
        if tuning.was_read(index, item.item_id, item.subset)
    ]
    read_words = [question_words(item.question) for item in read]
    read_sources = {doc for item in read for doc in item.sources}
    twins = frozenset(
        item.item_id
        for item, words in ((item, question_words(item.question)) for item in clean)
        if any(jaccard(words, w) >= TWIN_JACCARD for w in read_words)
    )
    shared = frozenset(item.item_id for item in clean if set(item.sources) & read_sources)
    return CleanSubset(
        ids=frozenset(item.item_id for item in clean),
        twin_ids=twins,
        shared_source_ids=shared,
        n_read=len(read),
    )

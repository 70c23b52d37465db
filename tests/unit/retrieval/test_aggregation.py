"""Tests for cross-chunk aggregation (grouping a document's sentences, capped per document)."""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from services.common.evidence import Chunk, ScoredChunk
from services.retrieval.aggregation import aggregate


def scored(doc: str, n: int, score: float) -> ScoredChunk:
    return ScoredChunk(
        chunk=Chunk(semantic_id=f"{doc}_{n}", doc_id=doc, text=f"{doc} {n}", sentence_index=n),
        score=score,
    )


def ids(chunks: list[ScoredChunk]) -> list[str]:
    return [s.chunk.semantic_id for s in chunks]


class TestAggregate:
    def test_aggregate_groups_a_document_in_sentence_order(self) -> None:
        ranked = [scored("A", 3, 0.9), scored("B", 0, 0.8), scored("A", 1, 0.7)]
        assert ids(aggregate(ranked, top_k=5)) == ["A_1", "A_3", "B_0"]

    def test_aggregate_caps_chunks_per_document(self) -> None:
        ranked = [scored("A", i, 1.0 - i / 100) for i in range(6)] + [scored("B", 0, 0.5)]
        out = aggregate(ranked, top_k=10, per_doc_cap=2)
        assert ids(out) == ["A_0", "A_1", "B_0"]

    def test_aggregate_drops_siblings_far_below_the_best(self) -> None:
        ranked = [scored("A", 0, 1.0), scored("A", 1, 0.4), scored("A", 2, 0.6)]
        assert ids(aggregate(ranked, top_k=5, sibling_ratio=0.5)) == ["A_0", "A_2"]

    def test_aggregate_groups_keep_the_order_of_their_best_chunks(self) -> None:
        ranked = [scored("B", 0, 0.9), scored("A", 0, 0.8), scored("B", 1, 0.7)]
        assert ids(aggregate(ranked, top_k=5)) == ["B_0", "B_1", "A_0"]

    def test_aggregate_truncated_last_group_keeps_its_best_members(self) -> None:
        ranked = [scored("A", 0, 0.9), scored("B", 5, 0.8), scored("B", 1, 0.75)]
        assert ids(aggregate(ranked, top_k=2)) == ["A_0", "B_5"]

    def test_aggregate_never_returns_more_than_top_k(self) -> None:
        ranked = [scored(f"D{i}", 0, 1 - i / 100) for i in range(20)]
        assert len(aggregate(ranked, top_k=7)) == 7

    def test_aggregate_empty_input(self) -> None:
        assert aggregate([], top_k=3) == []

    def test_aggregate_completing_passages_follow_every_group_outside_the_cap(self) -> None:
        # A named section's operative text (A_0, A_1) completes a group of three provisos.
        ranked = [
            scored("A", 4, 1.9),
            scored("A", 3, 1.8),
            scored("A", 5, 1.7),
            scored("B", 0, 0.8),
        ]

        def complete(group: Sequence[ScoredChunk]) -> list[ScoredChunk]:
            if group[0].chunk.doc_id != "A":
                return []
            return [scored("A", 1, 1.7), scored("A", 0, 1.7)]

        out = aggregate(ranked, top_k=10, complete=complete)

        # After every ranked group: the first four are what a search without them returns.
        assert ids(out) == ["A_3", "A_4", "A_5", "B_0", "A_0", "A_1"]
        assert ids(aggregate(ranked, top_k=10)) == ["A_3", "A_4", "A_5", "B_0"]

    def test_aggregate_completing_passages_count_against_top_k_after_the_members(self) -> None:
        ranked = [scored("A", 4, 1.9), scored("A", 3, 1.8), scored("B", 0, 0.8)]

        def complete(group: Sequence[ScoredChunk]) -> list[ScoredChunk]:
            return (
                [scored("A", 0, 1.8), scored("A", 1, 1.8)] if group[0].chunk.doc_id == "A" else []
            )

        assert ids(aggregate(ranked, top_k=3, complete=complete)) == ["A_3", "A_4", "A_0"]
        assert ids(aggregate(ranked, top_k=1, complete=complete)) == ["A_4"]

    @pytest.mark.parametrize(("top_k", "cap"), [(0, 3), (5, 0)])
    def test_aggregate_rejects_non_positive_limits(self, top_k: int, cap: int) -> None:
        with pytest.raises(ValueError):
            aggregate([scored("A", 0, 1.0)], top_k=top_k, per_doc_cap=cap)

"""Tests for reciprocal rank fusion and best-score merging."""

from __future__ import annotations

import pytest

from services.retrieval.fusion import merge_best, reciprocal_rank_fusion


class TestReciprocalRankFusion:
    def test_rrf_top_of_every_list_scores_one(self) -> None:
        fused = reciprocal_rank_fusion([[7, 1], [7, 2]], k=60)
        assert fused[0] == (7, pytest.approx(1.0))

    def test_rrf_scores_follow_the_formula(self) -> None:
        fused = dict(reciprocal_rank_fusion([[1, 2], [2, 3]], k=10))
        best = 2 / 11
        assert fused[2] == pytest.approx((1 / 12 + 1 / 11) / best)
        assert fused[1] == pytest.approx((1 / 11) / best)
        assert fused[3] == pytest.approx((1 / 12) / best)

    def test_rrf_rewards_agreement_between_lists(self) -> None:
        fused = reciprocal_rank_fusion([[1, 2, 3], [3, 2, 1], [2, 9, 8]])
        assert fused[0][0] == 2

    def test_rrf_weights_favour_a_list(self) -> None:
        fused = reciprocal_rank_fusion([[1], [2]], weights=[1.0, 2.0])
        assert [p for p, _ in fused] == [2, 1]

    def test_rrf_ties_go_to_lower_position(self) -> None:
        fused = reciprocal_rank_fusion([[5], [4]])
        assert [p for p, _ in fused] == [4, 5]

    def test_rrf_counts_duplicates_in_a_list_once(self) -> None:
        assert dict(reciprocal_rank_fusion([[1, 1, 2]], k=1))[2] == pytest.approx(1 / 3 / (1 / 2))

    def test_rrf_empty_input_is_empty(self) -> None:
        assert reciprocal_rank_fusion([]) == []
        assert reciprocal_rank_fusion([[], []]) == []

    @pytest.mark.parametrize(
        ("kwargs", "message"),
        [
            ({"k": 0}, "k must be"),
            ({"weights": [1.0]}, "weights for"),
            ({"weights": [-1.0, 1.0]}, ">= 0"),
        ],
    )
    def test_rrf_rejects_bad_parameters(self, kwargs: dict[str, object], message: str) -> None:
        with pytest.raises(ValueError, match=message):
            reciprocal_rank_fusion([[1], [2]], **kwargs)  # type: ignore[arg-type]


class TestMergeBest:
    def test_merge_best_keeps_best_score_and_its_source(self) -> None:
        merged = merge_best([[(1, 0.9), (2, 0.5)], [(2, 0.8), (3, 0.1)]])
        assert merged == [(1, 0.9, 0), (2, 0.8, 1), (3, 0.1, 1)]

    def test_merge_best_tie_keeps_earliest_source(self) -> None:
        assert merge_best([[(1, 0.5)], [(1, 0.5)]]) == [(1, 0.5, 0)]

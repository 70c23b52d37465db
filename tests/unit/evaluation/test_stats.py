"""The shared Wilson interval and exact McNemar test on known values and edge cases."""

from __future__ import annotations

import pytest

from evaluation.stats import mcnemar_exact, proportion, wilson, wilson_share


class TestWilson:
    def test_a_known_value(self) -> None:
        # 21 of 27 (the STATED verdicts of docs/SYNTHESIS.md): 59–89 %.
        low, high = wilson(21, 27)
        assert (round(low, 4), round(high, 4)) == (0.5924, 0.8939)

    def test_zero_of_n_starts_at_zero_and_is_not_a_point(self) -> None:
        low, high = wilson(0, 30)
        assert low == 0.0
        assert high == pytest.approx(0.1135, abs=1e-4)

    def test_n_of_n_ends_at_one_and_is_not_a_point(self) -> None:
        low, high = wilson(30, 30)
        assert high == 1.0
        assert low == pytest.approx(0.8865, abs=1e-4)

    def test_symmetric_in_k_and_n_minus_k(self) -> None:
        low, high = wilson(7, 19)
        flipped = wilson(12, 19)
        assert (low, high) == pytest.approx((1 - flipped[1], 1 - flipped[0]))

    def test_no_items_is_the_whole_range(self) -> None:
        assert wilson(0, 0) == (0.0, 1.0)

    def test_narrower_at_lower_confidence(self) -> None:
        wide, narrow = wilson(10, 40, 0.99), wilson(10, 40, 0.90)
        assert wide[0] < narrow[0] and narrow[1] < wide[1]

    @pytest.mark.parametrize(("k", "n"), [(-1, 3), (4, 3), (0, -1)])
    def test_impossible_counts_are_refused(self, k: int, n: int) -> None:
        with pytest.raises(ValueError):
            wilson(k, n)

    def test_an_effective_sample_size_need_not_be_whole(self) -> None:
        # The validator bench's intervals over claims: Wilson over cases / design effect.
        assert wilson_share(12 / 83, 83.0) == pytest.approx(wilson(12, 83))
        low, high = wilson_share(12 / 83, 83 / 1.24)
        assert low < wilson(12, 83)[0] and high > wilson(12, 83)[1]
        with pytest.raises(ValueError):
            wilson_share(0.5, 0.0)

    def test_proportion_rounds_for_reports(self) -> None:
        assert proportion(21, 27) == {"k": 21, "n": 27, "rate": 0.7778, "ci95": (0.5924, 0.8939)}
        assert proportion(0, 0)["rate"] is None


class TestMcNemar:
    def test_no_discordant_items_is_p_one(self) -> None:
        result = mcnemar_exact([True, False, True], [True, False, True])
        assert (result.gained, result.lost, result.p_value) == (0, 0, 1.0)

    def test_all_discordant_one_way(self) -> None:
        # 6 gained, none lost: p = 2 * 0.5**6.
        result = mcnemar_exact([False] * 6 + [True] * 4, [True] * 10)
        assert (result.before, result.after, result.gained, result.lost) == (4, 10, 6, 0)
        assert result.p_value == pytest.approx(2 / 64)

    def test_balanced_discordance_is_p_one(self) -> None:
        result = mcnemar_exact([True, False, True, False], [False, True, False, True])
        assert result.p_value == 1.0

    def test_a_known_value(self) -> None:
        # 9 gained, 3 lost: two-sided exact p = 2 * P(X <= 3 | n=12, 1/2) = 0.146.
        before = [False] * 9 + [True] * 3 + [True] * 10
        after = [True] * 9 + [False] * 3 + [True] * 10
        result = mcnemar_exact(before, after)
        assert result.p_value == pytest.approx(2 * (1 + 12 + 66 + 220) / 4096)
        assert result.describe() == "13 → 19 of 22; 9 gained, 3 lost; exact McNemar p = 0.146"

    def test_unpaired_lengths_are_refused(self) -> None:
        with pytest.raises(ValueError):
            mcnemar_exact([True], [True, False])

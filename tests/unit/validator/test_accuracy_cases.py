"""The accuracy benchmark's perturbations: an edit that keeps the meaning makes no reject case."""

from __future__ import annotations

import random

from bench.validator_accuracy import remove_negation, swap_numbers


class TestPerturbations:
    def test_remove_negation_leaves_the_number_sign_of_a_ranking(self) -> None:
        text = "He achieved a career-high ranking of World No. 19"

        assert remove_negation(text) == text

    def test_remove_negation_deletes_a_real_cue(self) -> None:
        assert remove_negation("The groups did not differ") == "The groups did differ"

    def test_swap_numbers_leaves_a_day_and_year_around_a_month(self) -> None:
        text = "Tony Roche (born 17 May 1945) is a former tennis player"

        assert swap_numbers(text, random.Random(0)) == text

    def test_swap_numbers_exchanges_two_numbers(self) -> None:
        text = "From 1937 to 1945 he was imprisoned"

        assert swap_numbers(text, random.Random(0)) == "From 1945 to 1937 he was imprisoned"

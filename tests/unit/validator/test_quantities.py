"""Numbers in text: signs, decimal middle dots, written pairs and ranges, and calendar dates."""

from __future__ import annotations

import math

import pytest

from services.common.language.quantities import (
    compare_dates,
    extract_dates,
    extract_quantities,
    ordered_pairs,
    ranges,
    repaired,
    swapped,
    unsupported,
)
from services.validator.coverage import analyse


def values(text: str) -> list[float]:
    return [q.value for q in extract_quantities(text)]


def unbacked(claim: str, evidence: str) -> list[str]:
    """Terms of the claim numbers that ``unsupported`` reports against ``evidence``."""
    c, e = analyse(claim), analyse(evidence, evidence=True)
    found = unsupported(
        list(zip(c.quantities, c.contexts, strict=True)),
        list(zip(e.quantities, e.contexts, strict=True)),
    )
    return [m.quantity.term for m in found]


def pairs(text: str) -> frozenset[tuple[str, str]]:
    return ordered_pairs(text, extract_quantities(text))


def dates(text: str, *, evidence: bool = False) -> list[tuple[int, int | None, int | None]]:
    found = extract_dates(text, extract_quantities(text, lenient_months=evidence))
    return [
        (
            int(d.month.value),
            int(d.day.value) if d.day else None,
            int(d.year.value) if d.year else None,
        )
        for d in found
    ]


class TestSigns:
    def test_extract_quantities_reads_a_leading_minus_as_a_sign(self) -> None:
        assert values("difference, −0.29% (95% CI, −0.35% to −0.23%)") == [
            -0.29,
            95,
            -0.35,
            -0.23,
        ]

    def test_extract_quantities_reads_a_hyphen_after_a_space_as_a_sign(self) -> None:
        assert values("mean difference -1.29 and (-0.80, -2.63 to 0.02)") == [
            -1.29,
            -0.80,
            -2.63,
            0.02,
        ]

    @pytest.mark.parametrize(
        ("text", "expected"),
        [
            ("aged 26-56", [26, 56]),
            ("from 10 – 20 days", [10, 20]),
            ("between 5% - 9%", [5, 9]),
            ("the U-20 Championship", [20]),
        ],
    )
    def test_extract_quantities_keeps_a_dash_after_a_number_or_word_unsigned(
        self, text: str, expected: list[float]
    ) -> None:
        assert values(text) == expected

    def test_unsupported_rejects_a_negative_claim_number_against_a_positive_one(self) -> None:
        assert unbacked("The mean change was -0.39 points", "The mean change was 0.39 points") == [
            "-0.39"
        ]

    def test_unsupported_accepts_equal_signed_values(self) -> None:
        assert (
            unbacked("The mean change was −0.39 points", "The mean change was -0.39 points") == []
        )

    def test_unsupported_accepts_a_claim_that_states_a_decrease_without_the_sign(self) -> None:
        assert unbacked("EED fell by 33.21%", "EED changed by −33.21%") == []


class TestMiddleDot:
    def test_extract_quantities_reads_a_middle_dot_between_digits_as_a_decimal_point(
        self,
    ) -> None:
        assert values("increased by 34·3% (95% CI 30·4-38·2)") == [34.3, 95, 30.4, 38.2]

    def test_unsupported_rejects_digits_moved_across_a_middle_dot(self) -> None:
        claim = "interleukin 6 rose by 6·14% (10·7-18·4)"
        evidence = "interleukin 6 rose by 14·6% (10·7-18·4)"

        assert unbacked(claim, evidence) == ["6.14"]


class TestPairs:
    @pytest.mark.parametrize(
        ("claim", "evidence"),
        [
            ("His best was 9' 71\"", "His best was 71' 9\""),
            ("the 3'-->5' exonucleases", "the 5'-->3' exonucleases"),
            ("{'2': \", '1': \"}", "{'1': \", '2': \"}"),
            (
                "Lord of Stoutenburg (1638 – before 1590)",
                "Lord of Stoutenburg (1590 – before 1638)",
            ),
            ("not provided for in section 225 or section 224", "in section 224 or section 225"),
            ("CI, −22.81% to −43.61%", "CI, −43.61% to −22.81%"),
        ],
    )
    def test_swapped_finds_a_pair_written_the_other_way_round(
        self, claim: str, evidence: str
    ) -> None:
        assert swapped(pairs(claim), pairs(evidence))

    def test_ordered_pairs_needs_provision_numbers_on_both_sides_of_a_reference_word(
        self,
    ) -> None:
        assert pairs("in section 224 or section 225") == {("224", "225")}
        assert pairs("fined 224 or section 225") == frozenset()

    def test_repaired_finds_range_ends_taken_from_two_intervals(self) -> None:
        evidence = "(-0.80, -2.63 to 0.02 and -0.20, -0.60 to 0.19)"
        claim = "(-0.80, -2.63 to 0.19 and -0.20, -0.60 to 0.02)"

        claim_ranges = ranges(claim, extract_quantities(claim))

        assert repaired(claim_ranges, pairs(evidence)) == [("-0.6", "0.02"), ("-2.63", "0.19")]
        assert repaired(ranges(evidence, extract_quantities(evidence)), pairs(evidence)) == []

    def test_repaired_leaves_a_list_that_is_no_range_alone(self) -> None:
        evidence = "rates were 35% (95% CI 30-40) and 55% (50-60)"
        claim = "rates were 35% and 55%"

        assert ranges(claim, extract_quantities(claim)) == frozenset()
        assert repaired(ranges(claim, extract_quantities(claim)), pairs(evidence)) == []


class TestDates:
    @pytest.mark.parametrize(
        ("text", "expected"),
        [
            ("Nelson Algren (March 9, 1909 – May 28, 1981)", [(3, 9, 1909), (5, 28, 1981)]),
            ("born 17 May 1945", [(5, 17, 1945)]),
            ("born 1945 May 17", [(5, 17, 1945)]),
            ("(June 9, 15 – May 1964, 2009)", [(6, 9, None), (5, None, 1964)]),
            ("amended in March 1983", [(3, None, 1983)]),
        ],
    )
    def test_extract_dates_reads_the_written_forms(
        self, text: str, expected: list[tuple[int, int | None, int | None]]
    ) -> None:
        assert dates(text) == expected

    def test_extract_dates_skips_may_as_a_verb_in_evidence(self) -> None:
        assert dates("a term which may extend to 7 years", evidence=True) == []

    @pytest.mark.parametrize(
        ("claim", "evidence", "wrong"),
        [
            ("born 1945 May 17", "born 17 May 1945", 0),
            ("born March 1909", "born March 28, 1909", 0),
            ("born on 9 March", "born March 9, 1909", 0),
            ("(March 9, 1909 – May 28, 1981)", "(March 28, 1909 – May 9, 1981)", 2),
            ("(June 9, 15 – May 1964, 2009)", "(June 9, 1964 – May 15, 2009)", 1),
        ],
    )
    def test_compare_dates_checks_the_parts_a_claim_date_states(
        self, claim: str, evidence: str, wrong: int
    ) -> None:
        claimed = analyse(claim).dates
        found, backed = compare_dates(claimed, analyse(evidence, evidence=True).dates)

        assert len(found) == wrong
        if not wrong:
            assert backed

    def test_compare_dates_leaves_dates_to_the_number_check_when_evidence_writes_none(
        self,
    ) -> None:
        assert compare_dates(analyse("born March 9, 1909").dates, ()) == ([], set())


class TestDurationUnits:
    @pytest.mark.parametrize(
        ("claim", "evidence"),
        [
            ("a maximum of 12 months", "may extend to one year"),
            ("up to two years", "may extend to 24 months"),
            ("within 14 days", "within two weeks"),
        ],
    )
    def test_a_duration_in_another_unit_is_the_same_duration(
        self, claim: str, evidence: str
    ) -> None:
        assert unbacked(claim, evidence) == []

    @pytest.mark.parametrize(
        ("claim", "evidence"),
        [
            ("a maximum of 18 months", "may extend to one year"),
            ("within 12 days", "within 12 months"),  # days and months do not convert
            ("up to 12 years", "may extend to 12 months"),
        ],
    )
    def test_a_different_duration_is_not_backed(self, claim: str, evidence: str) -> None:
        assert unbacked(claim, evidence)


class TestShares:
    @pytest.mark.parametrize(
        ("claim", "evidence"),
        [
            ("may not exceed 25 per cent of the maximum term", "shall not exceed one-fourth of it"),
            ("50% of the fine", "one-half of the fine"),
            ("three-fourths of the term", "75 percent of the term"),
        ],
    )
    def test_a_percentage_is_the_same_fraction(self, claim: str, evidence: str) -> None:
        assert unbacked(claim, evidence) == []

    @pytest.mark.parametrize(
        ("claim", "evidence"),
        [
            ("may not exceed 50 per cent of the maximum term", "shall not exceed one-fourth of it"),
            ("one-third of the term", "30 percent of the term"),  # close is not equal
            ("25 years", "one-fourth of the term"),  # a duration is no share
        ],
    )
    def test_another_share_is_not_backed(self, claim: str, evidence: str) -> None:
        assert unbacked(claim, evidence)


class TestHugeNumbers:
    def test_a_number_too_large_for_a_float_is_infinite_not_an_error(self) -> None:
        """ "hundred" said 160 times is 10**320: float() raised OverflowError, and the validator
        answered INTERNAL (found by a security audit)."""
        found = extract_quantities("Theft is punished with " + "one hundred " * 160 + "years.")
        assert found and all(q.value == math.inf for q in found)

    def test_such_an_answer_fails_the_number_rule(self) -> None:
        from services.common.evidence import Chunk
        from services.validator.engine import validate

        evidence = [Chunk(semantic_id="X_0", doc_id="X", text="Theft is punished.")]
        report = validate(
            "Theft is punished with " + "one hundred " * 160 + "years [X_0].", evidence
        )
        assert report.reason.value == "NUMBER_MISMATCH"

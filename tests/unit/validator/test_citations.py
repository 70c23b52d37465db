"""Citation scanning: which brackets are citations, and which are text quoted from the evidence."""

from __future__ import annotations

from services.common.language.citations import EvidenceIndex, scan
from services.common.validation import Reason, Verdict
from services.validator.engine import validate
from tests.unit.validator.samples import chunk

TRIAL = chunk(
    "T_1_0", "Aspirin lowered the risk of stroke (OR, 0.69 [95% CI, 0.64-0.74]) in adults."
)


class TestScan:
    def test_scan_leaves_editorial_brackets_as_text(self) -> None:
        index = EvidenceIndex.build([TRIAL])

        assert scan("The clause [Repealed] and [sic] remain [T_1_0].", index)[0].ids == ("T_1_0",)
        assert len(scan("The clause [Repealed] and [sic] remain [T_1_0].", index)) == 1

    def test_scan_reads_a_word_written_like_the_evidence_ids_as_a_citation(self) -> None:
        # The evidence ids are plain words ("A"), so "[B]" is a citation to an id the evidence
        # lacks, not editorial text: it was NO_CITATION with missing_ids ["A"].
        evidence = [chunk("A", "Theft is punishable.")]

        report = validate("Theft is punishable [B].", evidence)

        assert report.reason is Reason.INVALID_CITATION
        assert report.invalid_citations == ("B",)
        assert report.sentences[0].invalid_ids == ("B",)

    def test_scan_leaves_words_written_unlike_the_evidence_ids_as_text(self) -> None:
        index = EvidenceIndex.build([chunk("A", "Theft is punishable.")])

        (citation,) = scan("Theft is punishable [A] [sic] [Repealed] [emphasis added].", index)

        assert citation.ids == ("A",)
        # With ids written as code ("T_1_0") a bracketed word is never an id.
        assert scan("Theft is punishable [B].", EvidenceIndex.build([TRIAL])) == []

    def test_scan_treats_a_bracket_quoted_from_the_evidence_as_text(self) -> None:
        answer = "Aspirin lowered the risk of stroke (OR, 0.69 [95% CI, 0.64-0.74]) [T_1_0]."

        report = validate(answer, [TRIAL])

        assert report.verdict is Verdict.GROUNDED
        assert report.malformed_citations == ()

    def test_scan_checks_the_numbers_of_a_quoted_bracket_that_changed(self) -> None:
        answer = "Aspirin lowered the risk of stroke (OR, 0.69 [95% CI, 0.61-0.74]) [T_1_0]."

        report = validate(answer, [TRIAL])

        assert report.reason is Reason.NUMBER_MISMATCH
        assert report.malformed_citations == ()
        assert "'0.61'" in report.sentences[0].detail

    def test_scan_checks_a_quoted_percentage_bracket_whose_number_changed(self) -> None:
        evidence = [chunk("V_1_0", "The area fell by 8% [9%] in treated monkeys vs 47% [5%].")]

        report = validate(
            "The area fell by 8% [12%] in treated monkeys vs 47% [5%] [V_1_0].", evidence
        )

        assert report.reason is Reason.NUMBER_MISMATCH
        assert report.invalid_citations == ()

    def test_scan_keeps_a_bare_number_out_of_range_as_an_invalid_citation(self) -> None:
        evidence = [chunk("V_1_0", "The area fell by 8% [9] in treated monkeys.")]

        report = validate("The area fell by 8% in treated monkeys [12].", evidence)

        assert report.reason is Reason.INVALID_CITATION
        assert report.invalid_citations == ("12",)

    def test_scan_still_reports_a_spaced_id_as_malformed(self) -> None:
        index = EvidenceIndex.build([TRIAL])

        (citation,) = scan("Aspirin helps [T 1 0].", index)

        assert citation.problem
        assert citation.ids == ()

"""Citation scanning: which brackets are citations, and which are text quoted from the evidence."""

from __future__ import annotations

import unicodedata

import pytest

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

    def test_cited_ids_hold_only_ids_among_the_evidence(self) -> None:
        # What the contract says of cited_ids (answer and sentence): an id the evidence lacks
        # is reported in invalid_citations / invalid_ids, not among the cited ids.
        evidence = [chunk("A_1", "Theft is punishable with three years.")]

        report = validate("Theft is punishable with three years [A_1][Z_9].", evidence)

        assert report.cited_ids == ("A_1",) and report.invalid_citations == ("Z_9",)
        assert report.sentences[0].cited_ids == ("A_1",)
        assert report.sentences[0].invalid_ids == ("Z_9",)

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


class TestCitationsInOtherScripts:
    """Audit LOW-1 and LOW-3: a citation written with look-alike brackets or another script's
    digits was read as text ("factual sentence without a citation"); an id typed in another
    normalisation form named no evidence."""

    EVIDENCE = (
        chunk("IPC_379_0", "Whoever commits theft shall be punished with imprisonment."),
        chunk("café_1", "Theft in a café is theft."),
    )
    SENTENCE = "Whoever commits theft shall be punished with imprisonment "

    @pytest.mark.parametrize(
        ("token", "named", "as_ascii"),
        [
            ("［1］", "U+FF3B FULLWIDTH LEFT SQUARE BRACKET", "'[1]'"),
            ("【1】", "U+3010 LEFT BLACK LENTICULAR BRACKET", "'[1]'"),
            ("[１]", "U+FF11 FULLWIDTH DIGIT ONE", "'1'"),
            ("[١]", "U+0661 ARABIC-INDIC DIGIT ONE", "'1'"),
            ("[१]", "U+0967 DEVANAGARI DIGIT ONE", "'1'"),
            ("［IPC_379_0］", "U+FF3D FULLWIDTH RIGHT SQUARE BRACKET", "'[IPC_379_0]'"),
            ("[IPC_３７９_0]", "U+FF13 FULLWIDTH DIGIT THREE", "'IPC_379_0'"),
        ],
    )
    def test_a_citation_not_in_ascii_is_malformed_naming_the_character(
        self, token: str, named: str, as_ascii: str
    ) -> None:
        prefix = "😀 " + self.SENTENCE  # offsets are code points, an astral one included
        report = validate(prefix + token + ".", self.EVIDENCE)

        assert report.verdict is Verdict.NOT_GROUNDED
        assert report.reason is Reason.MALFORMED_CITATION
        (malformed,) = report.malformed_citations
        assert malformed.token == token
        assert (prefix + token)[malformed.char_start : malformed.char_end] == token
        assert named in malformed.problem and as_ascii in malformed.problem

    def test_look_alike_brackets_that_are_no_citation_stay_text(self) -> None:
        index = EvidenceIndex.build(self.EVIDENCE)

        assert scan("Theft 【注】 is theft [1].", index)[0].ids == ("IPC_379_0",)
        assert len(scan("Theft 【注】 [sic] is theft [1].", index)) == 1
        quoted = EvidenceIndex.build([chunk("T_1", "Theft ［1］ as printed.")])
        assert scan("Theft ［1］ as printed [T_1].", quoted)[0].ids == ("T_1",)
        assert len(scan("Theft ［1］ as printed [T_1].", quoted)) == 1

    def test_an_id_in_another_normalisation_form_names_the_passage(self) -> None:
        nfd = unicodedata.normalize("NFD", "café_1")
        index = EvidenceIndex.build(self.EVIDENCE)

        (citation,) = scan(f"Theft in a café is theft [{nfd}].", index)
        assert citation.ids == ("café_1",) and not citation.invalid
        report = validate(f"Theft in a café is theft [{nfd}].", self.EVIDENCE)
        assert report.invalid_citations == () and report.cited_ids == ("café_1",)
        # and the other way round: the evidence id decomposed, the citation composed
        decomposed = [chunk(nfd, "Theft in a café is theft.")]
        assert scan("Theft in a café is theft [café_1].", EvidenceIndex.build(decomposed))[
            0
        ].ids == (nfd,)

    def test_an_exact_id_wins_over_one_equal_in_nfc(self) -> None:
        nfd = unicodedata.normalize("NFD", "café_1")
        index = EvidenceIndex.build([chunk(nfd, "a"), chunk("café_1", "b")])

        assert scan("A [café_1].", index)[0].ids == ("café_1",)
        assert scan(f"A [{nfd}].", index)[0].ids == (nfd,)

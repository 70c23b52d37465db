"""A statute section's layout (services/common/language/provisions.py): lead-ins, lists, parts.

The sentences are the shipped IPC's (data/corpora/indian_law/ipc.json), as the chunker cuts them.
"""

from __future__ import annotations

import pytest

from services.common.language.provisions import (
    MAX_LIST_ITEMS,
    completing,
    list_spans,
    opens_list,
    opens_part,
    opens_proviso,
    operative_positions,
)

# s.320 as stored: a lead-in run into its first item, then seven items.
S320 = dict(
    enumerate(
        [
            "The following kinds of hurt only are designated as “grievous”: Emasculation.",
            "Permanent privation of the sight of either eye.",
            "Permanent privation of the hearing of either ear.",
            "Privation of any member or joint.",
            "Destruction or permanent impairing of the powers of any member or joint.",
            "Permanent disfiguration of the head or face.",
            "Fracture or dislocation of a bone or tooth.",
            "Any hurt which endangers life or which causes the sufferer to be during the space of "
            "twenty days in severe bodily pain, or unable to follow his ordinary pursuits.",
        ]
    )
)
# s.376, shortened: three sub-sections, then two provisos and an Explanation.
S376 = dict(
    enumerate(
        [
            "Whoever, except in the cases provided for in sub-section (2), commits rape, shall be "
            "punished with rigorous imprisonment ... and shall also be liable to fine.",
            "Whoever being a police officer, commits rape ... shall also be liable to fine.",
            "Whoever, commits rape on a woman under sixteen years of age shall be punished ... "
            "and shall also be liable to fine:1",
            "Provided that such fine shall be just and reasonable to meet the medical expenses "
            "and rehabilitation of the victim:",
            "Provided further that any fine imposed under this sub-section shall be paid to the "
            "victim.",
            "Explanations\nFor the purposes of sub-section 2",
        ]
    )
)
# s.375, shortened: the definition ends with its lead-in; two descriptions; an Explanation.
S375 = {
    0: "A man is said to commit “rape” if he, penetrates ... under the circumstances falling "
    "under any of the following seven descriptions:",
    1: "Against her will.",
    2: "Without her consent.",
    3: "Explanations\nFor the purposes of this section, “vagina” shall also include labia majora.",
}


class TestOpensList:
    @pytest.mark.parametrize(
        "sentence",
        [
            # a colon at the end (s.21, s.375)
            "The words “public servant” denote a person falling under any of the descriptions "
            "hereinafter following, namely:",
            "... under the circumstances falling under any of the following seven descriptions:",
            # the cue word at the end, without its colon
            "The following persons are designated, namely",
            "shall be punished in the manner following, that is to say",
            # a lead-in and its first item run into one sentence (s.320, s.97, s.107)
            "The following kinds of hurt only are designated as “grievous”: Emasculation.",
            "Every person has a right, subject to the restrictions contained in section 99, to "
            "defend: His own body, and the body of any other person, against any offence "
            "affecting the human body;",
            "A person abets the doing of a thing, who: Instigates any person to do that thing; or",
        ],
    )
    def test_opens_list_a_lead_in(self, sentence: str) -> None:
        assert opens_list(sentence)

    @pytest.mark.parametrize(
        "sentence",
        [
            "Whoever commits theft shall be punished with imprisonment of either description.",
            # a short label before the colon names a defined term (s.23), not a list
            "“Wrongful gain”: Wrongful gain is gain by unlawful means of property.",
            # a colon followed by lower case continues the sentence (s.120A)
            "When two or more persons agree to do, or cause to be done: an illegal act, or an act "
            "which is not illegal by illegal means, such an agreement is designated a criminal "
            "conspiracy;",
            "This is done in the following way.",
        ],
    )
    def test_opens_list_not_other_sentences(self, sentence: str) -> None:
        assert not opens_list(sentence)


class TestOpensPart:
    @pytest.mark.parametrize(
        "text",
        [
            "Provided that such fine shall be just and reasonable.",
            "Provided further that any fine imposed under this sub-section shall be paid.",
            "Explanations\nFor the purposes of this section",
            "Explanation 1.—A person is said to ...",
            "Exceptions\nA medical procedure or intervention shall not constitute rape.",
            "Illustrations\n(a) A, a police officer ...",
        ],
    )
    def test_opens_part_a_proviso_explanation_exception_or_illustration(self, text: str) -> None:
        assert opens_part(text)

    @pytest.mark.parametrize(
        "text",
        [
            "Whoever commits theft shall be punished.",
            "Nothing is an offence which is done in the exercise of the right of private defence.",
            "provided that the court so orders",  # a word inside a sentence
        ],
    )
    def test_opens_part_not_operative_text(self, text: str) -> None:
        assert not opens_part(text)

    def test_opens_proviso_only_a_proviso(self) -> None:
        assert opens_proviso("Provided that no agreement ... shall amount to a conspiracy.")
        assert opens_proviso("Provided further that any fine shall be paid to the victim.")
        assert not opens_proviso("Explanation.—It is immaterial whether the illegal act is ...")
        assert not opens_proviso("provided that the court so orders")


class TestListSpans:
    def test_list_spans_a_lead_in_and_all_its_items(self) -> None:
        assert list_spans(S320) == [range(0, 8)]

    def test_list_spans_items_end_at_the_next_part(self) -> None:
        assert list_spans(S375) == [range(0, 3)]

    def test_list_spans_a_lead_in_without_items_stands_alone(self) -> None:
        # s.21: the corpus holds the lead-in only; s.376's first proviso ends with ':', and a
        # second proviso is no item of it.
        assert list_spans({0: "..., namely:"}) == [range(0, 1)]
        assert list_spans(S376) == [range(3, 4)]

    def test_list_spans_a_gap_ends_the_items(self) -> None:
        held = {0: S320[0], 1: S320[1], 2: S320[2], 5: S320[5]}
        assert list_spans(held) == [range(0, 3)]

    def test_list_spans_a_list_longer_than_the_bound_is_no_list(self) -> None:
        texts = {0: "The following, namely:"} | {
            i: f"Item number {i}." for i in range(1, MAX_LIST_ITEMS + 2)
        }
        assert list_spans(texts) == [range(0, 1)]
        within = {i: texts[i] for i in range(MAX_LIST_ITEMS + 1)}
        assert list_spans(within) == [range(0, MAX_LIST_ITEMS + 1)]


class TestOperativePositions:
    def test_operative_positions_stop_at_the_first_proviso(self) -> None:
        assert operative_positions(S376) == range(3)

    def test_operative_positions_at_most_three(self) -> None:
        assert operative_positions(S320) == range(3)

    def test_operative_positions_need_the_first_passage(self) -> None:
        assert operative_positions({3: S376[3], 4: S376[4]}) == range(0)


class TestCompleting:
    def test_completing_a_named_section_adds_its_operative_text(self) -> None:
        # "What is the punishment under section 376?": retrieval ranked the provisos first.
        assert completing(S376, [4, 5], operative=True, lists=True) == [0, 1, 2]

    def test_completing_an_unnamed_section_adds_nothing_operative(self) -> None:
        assert completing(S376, [4, 5], operative=False, lists=True) == []

    def test_completing_a_list_member_adds_the_whole_list(self) -> None:
        assert completing(S320, [0, 3, 6], operative=False, lists=True) == [1, 2, 4, 5, 7]
        assert completing(S320, [5], operative=False, lists=True) == [0, 1, 2, 3, 4, 6, 7]

    def test_completing_the_operative_text_brings_its_list(self) -> None:
        assert completing(S375, [3], operative=True, lists=True) == [0, 1, 2]
        assert completing(S375, [3], operative=True, lists=False) == [0, 1, 2]
        assert completing(S375, [0], operative=False, lists=False) == []

    def test_completing_a_lone_lead_in_adds_nothing(self) -> None:
        assert completing(S376, [3], operative=False, lists=True) == []

"""What the index holds, and the words a refusal uses for what it lacks. Found by a legal
professional's audit (docs/EVALUATION.md, "Then K"): "Under the BNS, ..." was answered from the
IPC, and "s. 420 CrPC" or "What is section 304B?" was told only that no evidence came from the
named section."""

from __future__ import annotations

import pytest

from services.common.language.references import SectionRef, asked_acts
from services.synthesis.holdings import HeldDocument, Holdings

IPC_ONLY = Holdings.of(
    "v1",
    [
        HeldDocument("IPC", "Indian Penal Code, 1860", "378"),
        HeldDocument("IPC", "Indian Penal Code, 1860", "420"),
        HeldDocument("IPC", "Indian Penal Code, 1860", "498A"),
    ],
)


class TestHoldings:
    def test_of_reads_acts_in_index_order_and_their_sections(self) -> None:
        held = Holdings.of(
            "v2",
            [
                HeldDocument("CRPC", "Code of Criminal Procedure, 1973", "41"),
                HeldDocument("IPC", "Indian Penal Code, 1860", "498-A"),
                HeldDocument("", "", ""),  # a passage of no act (a SQuAD document)
            ],
        )

        assert list(held.acts) == ["CRPC", "IPC"]
        assert held.provisions == {("CRPC", "41"), ("IPC", "498A")}
        assert held.index_version == "v2"

    @pytest.mark.parametrize(
        ("question", "unheld"),
        [
            ("Under the BNS, what is the punishment for cheating?", ("BNS",)),
            ("What is murder under the new criminal law that replaced the IPC?", ("BNS",)),
            ("s. 420 CrPC", ("CRPC",)),
            ("What does Article 21 say?", ("COI",)),
            ("Is s. 420 IPC the same as s. 318 of the Bharatiya Nyaya Sanhita?", ("BNS",)),
            ("What is the punishment for cheating under the IPC?", ()),
            ("What is the constitution of an unlawful assembly?", ()),
            ("What is theft?", ()),
        ],
    )
    def test_unheld_names_the_registered_acts_asked_about_that_the_index_lacks(
        self, question: str, unheld: tuple[str, ...]
    ) -> None:
        assert IPC_ONLY.unheld(asked_acts(question)) == unheld

    def test_an_index_of_no_registered_act_holds_every_act_a_question_names(self) -> None:
        # A SQuAD passage may discuss a constitution: its questions are judged on the evidence.
        squad = Holdings.of("v3", [HeldDocument("", "", ""), HeldDocument("WIKI", "Wiki", "")])

        assert not squad.of_statutes
        assert squad.unheld(("COI", "BNS")) == ()
        assert squad.absent((SectionRef("5"),)) == ()

    def test_an_unregistered_act_is_not_the_registry_s_to_name(self) -> None:
        assert IPC_ONLY.unheld(("MTA",)) == ()

    def test_unheld_reason_names_the_act_and_what_the_index_holds(self) -> None:
        assert IPC_ONLY.unheld_reason(("BNS",)) == (
            "the Bharatiya Nyaya Sanhita, 2023 is not among the documents: this index holds "
            "the Indian Penal Code, 1860"
        )
        two = Holdings.of(
            "v1",
            [
                HeldDocument("IPC", "Indian Penal Code, 1860", "1"),
                HeldDocument("CRPC", "Code of Criminal Procedure, 1973", "1"),
            ],
        )
        assert two.unheld_reason(("BNS", "BNSS")) == (
            "the Bharatiya Nyaya Sanhita, 2023 and the Bharatiya Nagarik Suraksha Sanhita, 2023 "
            "are not among the documents: this index holds the Indian Penal Code, 1860 and the "
            "Code of Criminal Procedure, 1973"
        )

    @pytest.mark.parametrize(
        ("refs", "absent"),
        [
            ((SectionRef("304B", "IPC"),), (SectionRef("304B", "IPC"),)),
            ((SectionRef("304B"),), (SectionRef("304B"),)),
            ((SectionRef("420", "IPC"), SectionRef("498A")), ()),
            ((SectionRef("41", "CRPC"),), ()),  # the act is not held: unheld's to say
        ],
    )
    def test_absent_names_the_provisions_the_index_holds_no_text_of(
        self, refs: tuple[SectionRef, ...], absent: tuple[SectionRef, ...]
    ) -> None:
        assert IPC_ONLY.absent(refs) == absent

    def test_absent_reason_names_each_section_with_its_act(self) -> None:
        assert IPC_ONLY.absent_reason((SectionRef("304B", "IPC"),)) == (
            "section 304B of the Indian Penal Code, 1860 is not in this index: its text is "
            "absent from the corpus"
        )
        assert IPC_ONLY.absent_reason((SectionRef("304B", "IPC"), SectionRef("999", "IPC"))) == (
            "sections 304B and 999 of the Indian Penal Code, 1860 are not in this index: their "
            "text is absent from the corpus"
        )

    def test_absent_reason_of_no_act_named_says_what_the_index_holds(self) -> None:
        assert IPC_ONLY.absent_reason((SectionRef("304B"),)) == (
            "section 304B is not in this index, which holds the Indian Penal Code, 1860: its "
            "text is absent from the corpus"
        )

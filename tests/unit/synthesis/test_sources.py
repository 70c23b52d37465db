"""How passages of different documents relate: real IPC penalties that differ, agree or do not
compare, read with the validator's quantity and negation parsers."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping

from services.common.evidence import Chunk
from services.synthesis.sources import RelationKind, SourceRelation, relate


def kinds(relations: tuple[SourceRelation, ...]) -> list[tuple[str, str, RelationKind]]:
    return [(r.first_id, r.second_id, r.kind) for r in relations]


class TestRelate:
    def test_relate_flags_a_numeric_difference_between_two_penalties(
        self, ipc: Mapping[str, Chunk]
    ) -> None:
        # s.379: theft, up to three years; s.380: theft in a dwelling house, up to seven.
        (relation,) = relate([ipc["IPC_379_0"], ipc["IPC_380_0"]])

        assert relation.kind is RelationKind.NUMERIC
        assert relation.description == "year: 3 in IPC_379_0, 7 in IPC_380_0"

    def test_relate_leaves_section_references_out_of_the_numbers(
        self, ipc: Mapping[str, Chunk]
    ) -> None:
        # "except in the case provided for by section 334" / "... section 335": references.
        (relation,) = relate([ipc["IPC_323_0"], ipc["IPC_325_0"]])

        assert relation.description == "year: 1 in IPC_323_0, 7 in IPC_325_0"

    def test_relate_reads_a_duration_in_another_unit_as_the_same_duration(
        self, ipc: Mapping[str, Chunk]
    ) -> None:
        # As the validator's number rule equates them: "one year" is "twelve months".
        base = ipc["IPC_379_0"]
        year = dataclasses.replace(
            base, semantic_id="A_0", doc_id="A",
            text="Whoever commits theft shall be punished with imprisonment for one year.",
        )  # fmt: skip
        months = dataclasses.replace(
            base, semantic_id="B_0", doc_id="B",
            text="Whoever commits theft shall be punished with imprisonment for twelve months.",
        )  # fmt: skip
        longer = dataclasses.replace(
            months, text=months.text.replace("twelve", "eighteen"), semantic_id="C_0", doc_id="C"
        )

        (same,) = relate([year, months])
        (differ,) = relate([year, longer])

        assert same.kind is RelationKind.AGREEMENT
        assert same.description == "A_0 and B_0 state the same (year: 1)"
        assert differ.kind is RelationKind.NUMERIC
        assert differ.description == "duration: 1 year in A_0, 18 month in C_0"

    def test_relate_flags_a_negation_difference(self, ipc: Mapping[str, Chunk]) -> None:
        # s.302 punishes murder; s.304 culpable homicide "not amounting to murder".
        (relation,) = relate([ipc["IPC_302_0"], ipc["IPC_304_0"]])

        assert relation.kind is RelationKind.NEGATION
        assert relation.description == (
            '"not amounting to murder" in IPC_304_0, stated without a negation in IPC_302_0'
        )

    def test_relate_states_agreement_when_two_sources_give_the_same_penalty(
        self, ipc: Mapping[str, Chunk]
    ) -> None:
        # Theft (s.379) and extortion (s.384): the same three years, or fine, or both.
        (relation,) = relate([ipc["IPC_379_0"], ipc["IPC_384_0"]])

        assert relation.kind is RelationKind.AGREEMENT
        assert relation.description == "IPC_379_0 and IPC_384_0 state the same (year: 3)"

    def test_relate_a_negation_both_passages_make_is_no_difference(
        self, ipc: Mapping[str, Chunk]
    ) -> None:
        # ss.82 and 83 both say "Nothing is an offence ..." and both name seven years of age.
        assert relate([ipc["IPC_82_0"], ipc["IPC_83_0"]]) == ()

    def test_relate_passages_about_different_points_do_not_relate(
        self, ipc: Mapping[str, Chunk]
    ) -> None:
        # The definitions of theft and of extortion share too few words to compare.
        assert relate([ipc["IPC_378_0"], ipc["IPC_383_0"]]) == ()

    def test_relate_compares_only_passages_of_different_documents(
        self, ipc: Mapping[str, Chunk]
    ) -> None:
        same_document = dataclasses.replace(ipc["IPC_380_0"], doc_id="IPC_379")

        assert relate([ipc["IPC_379_0"], same_document]) == ()

    def test_relate_orders_each_pair_as_given_and_reads_a_repeat_once(
        self, ipc: Mapping[str, Chunk]
    ) -> None:
        relations = relate([ipc["IPC_380_0"], ipc["IPC_379_0"], ipc["IPC_380_0"]])

        assert kinds(relations) == [("IPC_380_0", "IPC_379_0", RelationKind.NUMERIC)]

    def test_relate_reports_every_pair_and_each_difference_of_a_pair(
        self, ipc: Mapping[str, Chunk]
    ) -> None:
        # s.304 vs s.304A differ on the term (10 vs 2 years) and on what each negates.
        relations = relate([ipc["IPC_302_0"], ipc["IPC_304_0"], ipc["IPC_304A_0"]])

        assert kinds(relations) == [
            ("IPC_302_0", "IPC_304_0", RelationKind.NEGATION),
            ("IPC_304_0", "IPC_304A_0", RelationKind.NUMERIC),
            ("IPC_304_0", "IPC_304A_0", RelationKind.NEGATION),
        ]

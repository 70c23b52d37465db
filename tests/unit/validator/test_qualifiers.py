"""Rule 6b (docs/VALIDATOR.md, "N"): a quote that leaves out its sentence's exception or
condition states a rule the cited text does not make."""

from __future__ import annotations

import pytest

from services.common.language.sentences import split_sentences
from services.common.validation import Reason, ValidationOptions, Verdict
from services.validator.convert import EvidenceItem
from services.validator.engine import validate
from services.validator.qualifiers import dropped

S300 = "Except in the cases hereinafter excepted, culpable homicide is murder."
S34 = (
    "When a criminal act is done by several persons in furtherance of the common intention of "
    "all, each of such persons is liable for that act in the same manner as if it were done by "
    "him alone."
)
S307 = (
    "Whoever does any act with such intention or knowledge shall be punished with imprisonment "
    "of either description for a term which may extend to ten years, and shall also be liable "
    "to fine; and, if hurt is caused to any person by such act, the offender shall be liable "
    "either to imprisonment for life, or to such punishment as is hereinbefore mentioned."
)
S375_EXCEPTION = "Exception 1.—A medical procedure or intervention shall not constitute rape."
EVIDENCE = [
    EvidenceItem("IPC_300_0", S300),
    EvidenceItem("IPC_34_0", S34),
    EvidenceItem("IPC_307_0", S307),
    EvidenceItem("IPC_375_11", S375_EXCEPTION),
]


def _split(text: str) -> list[tuple[int, int]]:
    return split_sentences(text)


@pytest.mark.parametrize(
    ("answer", "left_out"),
    [
        ("Culpable homicide is murder [IPC_300_0].", "except in the cases"),
        ("Under the Code, culpable homicide is murder [IPC_300_0].", "except in the cases"),
        (
            "Each of such persons is liable for that act in the same manner as if it were done "
            "by him alone [IPC_34_0].",
            "when a criminal act",
        ),
        (
            "The offender shall be liable either to imprisonment for life, or to such "
            "punishment as is hereinbefore mentioned [IPC_307_0].",
            "if hurt is caused",
        ),
    ],
)
def test_a_quote_without_its_exception_or_condition_fails(answer: str, left_out: str) -> None:
    report = validate(answer, EVIDENCE)
    assert report.verdict is Verdict.NOT_GROUNDED
    assert report.reason is Reason.QUALIFIER_DROPPED
    assert left_out in report.sentences[0].detail


@pytest.mark.parametrize(
    "answer",
    [
        # The whole sentence: nothing is left out.
        "Except in the cases hereinafter excepted, culpable homicide is murder [IPC_300_0].",
        # A clause that ends where the condition of the next clause begins keeps its meaning.
        "Whoever does any act with such intention or knowledge shall be punished with "
        "imprisonment of either description for a term which may extend to ten years, and "
        "shall also be liable to fine [IPC_307_0].",
        # "Exception 1.—" is a label, not a condition ("exception" is not "except").
        "A medical procedure or intervention shall not constitute rape [IPC_375_11].",
    ],
)
def test_a_quote_that_keeps_what_limits_it_passes_this_rule(answer: str) -> None:
    report = validate(answer, EVIDENCE)
    assert Reason.QUALIFIER_DROPPED not in report.sentences[0].failed
    assert report.reason is not Reason.QUALIFIER_DROPPED


def test_where_and_when_after_a_quote_are_read_as_relative_clauses() -> None:
    node = (
        "Cardiac macrophages facilitate conduction through the distal node, where conducting "
        "cells densely intersperse with macrophages."
    )
    cited = [("d_1", node)]
    assert (
        dropped("Cardiac macrophages facilitate conduction through the distal node", cited, _split)
        == []
    )
    unless = node.replace("where", "unless")
    assert (
        dropped(
            "Cardiac macrophages facilitate conduction through the distal node",
            [("d_1", unless)],
            _split,
        )
        != []
    )


def test_short_runs_and_parts_of_words_are_not_quotes() -> None:
    cited = [("IPC_300_0", S300)]
    assert dropped("is murder", cited, _split) == []  # fewer than three words
    assert dropped("homicide is murder", cited, _split) != []
    # Not at a word boundary: "ulpable homicide is murder" is no run of s.300's words.
    assert dropped("ulpable homicide is murder", cited, _split) == []


def test_the_negation_switch_turns_the_rule_off() -> None:
    answer = "Culpable homicide is murder [IPC_300_0]."
    off = validate(answer, EVIDENCE, ValidationOptions(check_negation=False))
    assert off.reason is not Reason.QUALIFIER_DROPPED

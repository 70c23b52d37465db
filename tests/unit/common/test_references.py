"""The section-reference parser (services/common/language/references.py): which act a reference
belongs to, which numbers are read once, what names an act; and that the parser's work grows
linearly with the text. A security review found it quadratic: one ValidateAnswer request of
references ("IPC 1 IPC 1 ...") or of a long run of spaces held a validator core for seconds to
minutes."""

from __future__ import annotations

import re
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from types import FrameType
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from services.common.language import references
from services.common.language.references import (
    SectionRef,
    named_acts,
    parse_section_refs,
    reference_spans,
)

PROPERTY = settings(max_examples=300, deadline=None)


class TestActOfAReference:
    """An act written right after a reference wins, through a joiner (", ", " (", " of the ",
    " under ", spaces and line breaks); else the nearest act written before it; else none."""

    @pytest.mark.parametrize(
        "query",
        [
            "section 420 IPC",
            "section 420, IPC",
            "section 420 (IPC)",
            "section 420 of the IPC",
            "section 420 of\nthe\nIPC",
            "section 420 OF THE ipc",
            "section 420 under the IPC",
            "section 420 in IPC",
            "section 420 Indian Penal Code",  # the act's name starts with the joiner "in"
            "section 420 , ( of   the IPC",
            "section 420" + " " * 500 + "IPC",
            "CrPC, and section 420 of the IPC",  # after wins over before
        ],
    )
    def test_the_act_written_after_it_through_a_joiner(self, query: str) -> None:
        assert parse_section_refs(query) == (SectionRef("420", "IPC"),)

    @pytest.mark.parametrize(
        ("query", "act"),
        [
            ("IPC section 420", "IPC"),
            ("IPC and CrPC: section 420", "CRPC"),  # the nearest before
            ("CrPC section 420 of theft IPC", "CRPC"),  # "of theft" is no joiner
            ("CrPC section 420" + " " * 500 + "x IPC", "CRPC"),
            ("section 420" + " " * 500 + "x IPC", None),
            ("section 420 the IPC", None),
            ("section 420 ofIPC", None),
        ],
    )
    def test_else_the_nearest_act_before_it(self, query: str, act: str | None) -> None:
        assert parse_section_refs(query)[0] == SectionRef("420", act)

    def test_every_reference_of_a_long_text_takes_its_own_act(self) -> None:
        text = " ".join(f"section {n} of the IPC" for n in range(1, 300))
        text += " and section 300 CrPC; IPC section 301"
        refs = parse_section_refs(text)

        assert refs[:299] == tuple(SectionRef(str(n), "IPC") for n in range(1, 300))
        assert refs[299:] == (SectionRef("300", "CRPC"), SectionRef("301", "IPC"))


class TestNumbersReadOnce:
    def test_a_number_inside_a_reference_is_not_read_again(self) -> None:
        # "302" is both "s. 302" and "302 IPC": one reference.
        assert reference_spans("s. 302 IPC") == [(0, 6)]
        assert parse_section_refs("s. 302 IPC") == (SectionRef("302", "IPC"),)

    def test_overlapping_references_are_each_read(self) -> None:
        # "5-ss" is a number (its letters "ss") and "ss. 7" a list: the spans overlap, and only
        # a reference's start decides whether it lies inside another.
        assert reference_spans("IPC 5-ss. 7") == [(4, 8), (6, 11)]
        assert parse_section_refs("IPC 5-ss. 7") == (
            SectionRef("5SS", "IPC"),
            SectionRef("7", "IPC"),
        )

    @pytest.mark.parametrize(
        ("query", "refs"),
        [
            ("420", ("420",)),
            ("420?  ", ("420",)),
            ("498-A ?! ", ("498A",)),
            ("1" + " " * 300 + "?" + " " * 300, ("1",)),
            ("1" + " " * 300 + "x", ()),
            ("10th", ()),
        ],
    )
    def test_a_number_alone_is_a_section(self, query: str, refs: tuple[str, ...]) -> None:
        assert tuple(r.section for r in parse_section_refs(query)) == refs


class TestHowLawyersWriteReferences:
    """Rule M (docs/EVALUATION.md, "Then M"): the legal audit's notation."""

    @pytest.mark.parametrize(
        ("query", "sections"),
        [
            ("What is the punishment u/s 376(2)?", ("376",)),
            ("What does section 376(2)(a) say?", ("376",)),
            ("s. 304 (ii) of the IPC", ("304",)),
            ("sections 3(1) and 4 of the IPC", ("3", "4")),
            ("Punishment for 302 r/w 34 IPC", ("302", "34")),
            ("Section 302 read with Section 34 IPC", ("302", "34")),
            ("s.34 r/w s.149", ("34", "149")),
            ("ss. 299 and 300", ("299", "300")),
        ],
    )
    def test_sub_divisions_and_read_with_are_part_of_the_reference(
        self, query: str, sections: tuple[str, ...]
    ) -> None:
        from services.common.language.key_terms import extract_key_terms

        assert tuple(r.section for r in parse_section_refs(query)) == sections
        terms = extract_key_terms(query)
        # Neither the sub-section's number nor the connector is something to find in a passage.
        assert not {"2", "ii", "read", "r", "w"} & set(terms.terms)

    def test_a_word_in_brackets_is_no_sub_division(self) -> None:
        from services.common.language.key_terms import extract_key_terms

        assert "theft" in extract_key_terms("Section 379 (theft) punishment").terms


class TestBareNumbersIpcSAndRanges:
    """Rule Q (docs/EVALUATION.md, "Then Q"): numbers listed right before an act, "IPC s 420",
    and short ranges; and what must stay no section. (The last were no sections before Q either:
    each fails once its guard is taken out of the parser: the act after the list, the unit, the
    sum of money, the three digits.)"""

    @pytest.mark.parametrize(
        ("query", "refs"),
        [
            ("What is the difference between 379 and 380 IPC?", ("379", "380")),
            ("379, 380 and 381 IPC", ("379", "380", "381")),
            ("379 or 380 I.P.C.", ("379", "380")),
            ("379 & 380 of the Indian Penal Code", ("379", "380")),
            ("302, 307 r/w 34 IPC", ("302", "307", "34")),
            ("376(2) and 377 IPC", ("376", "377")),
            ("498A/34 IPC", ("498A", "34")),
            ("IPC s 420", ("420",)),
            ("What is the punishment under IPC s 420?", ("420",)),
        ],
    )
    def test_numbers_before_an_act_and_an_s_without_its_dot_after_one(
        self, query: str, refs: tuple[str, ...]
    ) -> None:
        from services.common.language.key_terms import extract_key_terms

        assert parse_section_refs(query) == tuple(SectionRef(n, "IPC") for n in refs)
        # No number stays behind as a key term no passage holds.
        assert not any(t[0].isdigit() for t in extract_key_terms(query).terms)

    @pytest.mark.parametrize(
        ("query", "refs"),
        [
            # Rule U (docs/EVALUATION.md, "Then U"): a list after the act is read whole too.
            ("What do IPC 379 and 380 say?", ("379", "380")),
            ("IPC 379, 380 and 381", ("379", "380", "381")),
            ("IPC 378 to 380", ("378", "379", "380")),
            ("IPC 420 & 406", ("420", "406")),
            ("IPC 304(2) and 302", ("304", "302")),
            ("IPC 420 and 7 years", ("420",)),
            ("IPC 420, 3 years", ("420",)),
        ],
    )
    def test_a_list_after_the_act_names_each_section(
        self, query: str, refs: tuple[str, ...]
    ) -> None:
        assert parse_section_refs(query) == tuple(SectionRef(n, "IPC") for n in refs)

    @pytest.mark.parametrize(
        ("query", "sections", "act"),
        [
            ("sections 378 to 382", ("378", "379", "380", "381", "382"), None),
            ("ss. 378-382", ("378", "379", "380", "381", "382"), None),
            ("sections 378\u2013382 IPC", ("378", "379", "380", "381", "382"), "IPC"),
            ("378 to 380 IPC", ("378", "379", "380"), "IPC"),
            ("sections 376A to 376D IPC", ("376A", "376B", "376C", "376D"), "IPC"),
            ("ss. 1-10 IPC", tuple(str(n) for n in range(1, 11)), "IPC"),
            # Longer than ten, reversed or mixed: the ends only, nothing guessed between.
            ("ss. 1-11 IPC", ("1", "11"), "IPC"),
            ("sections 299 to 377", ("299", "377"), None),
            ("ss. 382-378", ("382", "378"), None),
            ("sections 375 to 376D", ("375", "376D"), None),
            ("sections 376 to 377 and 379 IPC", ("376", "377", "379"), "IPC"),
        ],
    )
    def test_a_short_range_names_the_sections_in_it(
        self, query: str, sections: tuple[str, ...], act: str | None
    ) -> None:
        assert parse_section_refs(query) == tuple(SectionRef(n, act) for n in sections)

    @pytest.mark.parametrize(
        ("query", "refs"),
        [
            ("between 10 and 20 years", ()),
            ("fine of 500 rupees", ()),
            ("Rs 500 IPC", ()),
            ("Rs. 500, 379 IPC", (SectionRef("379", "IPC"),)),
            ("\u20b9500 IPC", ()),
            ("Rs 1000 and IPC", ()),
            ("Rs 100 and 379 IPC", (SectionRef("379", "IPC"),)),
            ("IPC 1860", ()),
            ("Indian Penal Code 1860 section 302", (SectionRef("302", "IPC"),)),
            ("sections 3 to 5 of the Act", tuple(SectionRef(n) for n in ("3", "4", "5"))),
            ("section 304 and 10 years", (SectionRef("304"),)),
            ("section 326 to 7 years", (SectionRef("326"),)),
            ("it's 5 years under the IPC", ()),
            ("punishment is 7 years and fine IPC", ()),
        ],
    )
    def test_quantities_years_and_another_act_are_no_ipc_sections(
        self, query: str, refs: tuple[SectionRef, ...]
    ) -> None:
        assert parse_section_refs(query) == refs

    @pytest.mark.parametrize("question", ["What is 379 and 380 IPC?", "What is IPC s 420?"])
    def test_the_intent_cue_reads_the_same_forms(self, question: str) -> None:
        from services.common.intent import Intent, classify_intent

        assert classify_intent(question) is Intent.GENERAL


class TestNamedActs:
    @pytest.mark.parametrize(
        ("text", "codes"),
        [
            ("Constitution says so", ()),  # a capital where a sentence starts
            ('  "(Constitution says so', ()),  # after the sentence's opening marks
            ("x Constitution", ("COI",)),
            (" " * 200 + "Constitution x Constitution", ("COI",)),  # the second is a name
            ("section 420" + " " * 200 + "IPC", ("IPC",)),
        ],
    )
    def test_a_one_word_name_names_an_act_except_where_a_sentence_starts(
        self, text: str, codes: tuple[str, ...]
    ) -> None:
        assert named_acts(text) == codes


# The forms the two rewritten patterns replaced: they read a run of spaces two ways (quadratic
# time), and the rewrites must read the same strings.
_JOINER_BEFORE = re.compile(r"[\s,(]*(?:(?:of|under|in)(?:\s+the)?)?\s*", re.I)
_WHOLE_NUMBER_TAIL_BEFORE = re.compile(r"\s*[?.!]*\s*", re.I)
_WHOLE_NUMBER_TAIL = re.compile(r"\s*(?:[?.!]+\s*)?", re.I)
_JOINER_TEXT = st.lists(
    st.sampled_from(
        [" ", "  ", "\n", "\t", ",", "(", "of", "OF", "under", "in", "the", "The", "x"]
    ),
    max_size=8,
).map("".join)


class TestPatternsReadTheSameStrings:
    @PROPERTY
    @given(_JOINER_TEXT)
    def test_joiner(self, gap: str) -> None:
        assert bool(references._JOINER.fullmatch(gap)) == bool(_JOINER_BEFORE.fullmatch(gap))

    @PROPERTY
    @given(st.lists(st.sampled_from([" ", "\n", "?", "!", ".", "#"]), max_size=10).map("".join))
    def test_a_number_alones_tail(self, tail: str) -> None:
        assert bool(_WHOLE_NUMBER_TAIL.fullmatch(tail)) == bool(
            _WHOLE_NUMBER_TAIL_BEFORE.fullmatch(tail)
        )
        query = f"420{tail}"
        expected = ("420",) if _WHOLE_NUMBER_TAIL_BEFORE.fullmatch(tail) else ()
        assert tuple(r.section for r in parse_section_refs(query)) == expected


class _CountingPattern:
    """A compiled pattern that adds the length of every text it is handed to ``work``."""

    def __init__(self, pattern: re.Pattern[str], work: list[int]) -> None:
        self._pattern = pattern
        self._work = work

    def __getattr__(self, name: str) -> Any:
        method = getattr(self._pattern, name)
        if not callable(method):
            return method

        def counted(*args: Any) -> Any:
            if name in ("sub", "subn"):
                self._work[0] += len(args[1])
            else:
                text, pos, endpos = (*args, 0, sys.maxsize)[:3]
                self._work[0] += max(0, min(endpos, len(text)) - pos)
            return method(*args)

        return counted


@contextmanager
def _work_counted(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[int]]:
    """Counts the parser's work: each line of references.py that Python runs (loops, and the
    generator expressions a quadratic scan was written in), and each character handed to one of
    its patterns (a pattern run on every prefix of a text costs quadratically many). Regular
    expressions' backtracking inside a call is not counted (the C engine does it): the rewritten
    patterns are tested above for the strings they read, and timed by
    bench.validator_pathological."""
    work = [0]
    for name, value in vars(references).items():
        if isinstance(value, re.Pattern):
            monkeypatch.setattr(references, name, _CountingPattern(value, work))
    source = references.__file__

    def tracer(frame: FrameType, event: str, _: object) -> Callable[..., Any] | None:
        if frame.f_code.co_filename != source:
            return None

        def lines(frame: FrameType, event: str, _: object) -> Callable[..., Any]:
            if event == "line":
                work[0] += 1
            return lines

        return lines

    previous = sys.gettrace()
    sys.settrace(tracer)
    try:
        yield work
    finally:
        sys.settrace(previous)


def _work(monkeypatch: pytest.MonkeyPatch, fn: Callable[[str], object], text: str) -> int:
    with monkeypatch.context() as patch, _work_counted(patch) as work:
        fn(text)
    return work[0]


_SHAPES: dict[str, Callable[[int], str]] = {
    "IPC 1": lambda n: "IPC 1 " * n,
    "s 1 IPC": lambda n: "s 1 IPC " * n,
    "1 of the IPC": lambda n: "1 of the IPC " * n,
    "spaces, then names": lambda n: " " * (20 * n) + "Constitution x " * n,
}
_READERS: dict[str, Callable[[str], object]] = {
    "parse_section_refs": parse_section_refs,
    "named_acts": named_acts,
    "named_acts(any_case)": lambda text: named_acts(text, any_case=True),
}
# Each shape with each reader it was quadratic in (a one-word name is read for where a sentence
# starts only when names are read strictly).
_QUADRATIC = [
    *((shape, reader) for shape in ("IPC 1", "s 1 IPC", "1 of the IPC") for reader in _READERS),
    ("spaces, then names", "named_acts"),
]


class TestLinearWork:
    """Four times the text costs about four times the work (the quadratic forms: sixteen)."""

    @pytest.mark.parametrize(("shape", "reader"), _QUADRATIC)
    def test_work_grows_linearly(
        self, monkeypatch: pytest.MonkeyPatch, shape: str, reader: str
    ) -> None:
        make, read = _SHAPES[shape], _READERS[reader]
        small = _work(monkeypatch, read, make(150))
        large = _work(monkeypatch, read, make(600))

        assert large <= 5 * small, (small, large)

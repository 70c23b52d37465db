"""Footnote reference markers glued to statute words (legal audit 2026-11-27, finding L2)."""

from __future__ import annotations

import pytest

from services.common.language.footnotes import without_footnote_markers


class TestWithoutFootnoteMarkers:
    @pytest.mark.parametrize(
        ("text", "expected"),
        [
            # glued to a word (IPC s.370, s.509, s.354, s.166B; CrPC s.438; CPC s.2)
            ("commits the offence of trafficking1.", "commits the offence of trafficking."),
            ("and also with fine1.", "and also with fine."),
            ("outrage her modesty1, shall be punished", "outrage her modesty, shall be punished"),
            (
                "the provisions of section1 357C of the Code",
                "the provisions of section 357C of the Code",
            ),
            ("of the Indian Penal Code1.", "of the Indian Penal Code."),
            ("a Magistrate1, shall be proved", "a Magistrate, shall be proved"),
            ("public notification6 , specify", "public notification , specify"),
            ("forces of7\n[the Union]", "forces of\n[the Union]"),
            ("the offence of trafficking12 of", "the offence of trafficking of"),
            # after the line's closing mark (CrPC s.54A, s.197, s.273)
            ("shall be video graphed.1\n1 Criminal Law", "shall be video graphed.\n1 Criminal Law"),
            ("comfortable with;1 \nProvided", "comfortable with; \nProvided"),
            ("of the Indian Penal Code.1", "of the Indian Penal Code."),
        ],
    )
    def test_without_footnote_markers_removes_the_digits(self, text: str, expected: str) -> None:
        assert without_footnote_markers(text) == expected

    @pytest.mark.parametrize(
        "text",
        [
            "section 304B of the Indian Penal Code",  # letters after the digits
            "section 376AB or section 376DA",
            "Act, 1956, s. 29and Sch.",
            "the Second Repealing and Amending Act, 1914 (17 of1914).",  # a year: four digits
            "1. The expression “exploitation” shall include",  # an enumeration
            "1A. The presence of the informant",
            "1 Criminal Law (Amendment) Act, 2018",  # the footnote's own line
            "in Form A1 or B12",  # upper-case labels
            "COVID19 and H1N1",
            "(w.e.f.1-1- 1964)",
            "a fine of Rs.10\nor both",  # an abbreviation's number is a reference
            "see para.2",
            "under s.1\nof the Act",
            "a term of 10 years, or with fine, or with both.",
            "section 2(1) of the Act",
            "the 3rd Schedule",
            # after a colon: the line would become a list's lead-in (IPC s.376, s.376DA)
            "shall also be liable to fine:1\nProvided that",
            "and with fine:1",
        ],
    )
    def test_without_footnote_markers_leaves_legitimate_forms(self, text: str) -> None:
        assert without_footnote_markers(text) == text

"""Small text helpers: a count and its noun in the CLIs, and how the validator reads look-alike
characters."""

from __future__ import annotations

import pytest

from services.common.language.links import links, links_not_in
from services.common.language.text import counted, fold_lookalikes


@pytest.mark.parametrize(
    ("n", "expected"), [(0, "0 passages"), (1, "1 passage"), (2, "2 passages"), (21, "21 passages")]
)
def test_counted_is_singular_for_one_only(n: int, expected: str) -> None:
    assert counted(n, "passage") == expected


@pytest.mark.parametrize(
    ("text", "read"),
    [
        ("tеn years", "ten years"),  # Cyrillic е in a Latin word
        ("shall nоt", "shall not"),  # Cyrillic о
        ("１０ years, Ｒｓ. ５００", "10 years, Rs. 500"),  # full-width forms
        ("१० years", "10 years"),  # Devanagari digits
        ("٣ years", "3 years"),  # Arabic-Indic digit
        # Left as written: real words of other scripts, Greek in science, superscripts.
        ("Москва", "Москва"),
        ("TNFα and IFNγ", "TNFα and IFNγ"),
        ("2.08 km²", "2.08 km²"),
        ("naïve café Müller", "naïve café Müller"),
    ],
)
def test_fold_lookalikes_reads_what_a_reader_sees(text: str, read: str) -> None:
    folded = fold_lookalikes(text)
    assert folded == read
    assert len(folded) == len(text)  # offsets hold


@pytest.mark.parametrize(
    ("text", "found"),
    [
        ("see [details](https://evil.example/x).", ["https://evil.example/x"]),
        ("![x](https://evil.example/p.png?q=secret)", ["https://evil.example/p.png?q=secret"]),
        ('<img src="https://a.example/i.png">', ["https://a.example/i.png"]),
        (
            "Visit www.indiacode.nic.in, then HTTPS://X.ORG/a.",
            ["www.indiacode.nic.in", "HTTPS://X.ORG/a"],
        ),
        ("No link: 3.5 years, e.g. s. 420, [IPC_420_0].", []),
    ],
)
def test_links_are_found_without_trailing_punctuation(text: str, found: list[str]) -> None:
    assert links(text) == found


def test_a_link_the_evidence_holds_is_not_missing() -> None:
    evidence = ["The Code is at https://IndiaCode.nic.in/ipc for all."]
    assert links_not_in("See https://indiacode.nic.in/ipc.", evidence) == []
    assert links_not_in("See https://indiacode.nic.in/ipc?x=1.", evidence) == [
        "https://indiacode.nic.in/ipc?x=1"
    ]

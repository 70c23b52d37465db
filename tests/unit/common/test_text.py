"""Small text helpers: a count and its noun in the CLIs, and how the validator and synthesis
read look-alike characters."""

from __future__ import annotations

import pytest

from services.common.language.links import links, links_not_in
from services.common.language.text import as_read, counted, fold_lookalikes


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
    ("text", "read"),
    [
        (
            "What is the punishment for th\u0435ft?",
            "What is the punishment for theft?",
        ),  # Cyrillic е
        ("Ｗｈａｔ ｉｓ § ３０２？", "What is § 302?"),  # full-width
        ("\u202eWhat is \ufb01ne?", "What is fine?"),  # a direction mark; the "fi" ligature
        ("s.\u00a0302", "s. 302"),  # a no-break space
        ("What is theft?", "What is theft?"),
        ("TNFα in Москва", "TNFα in Москва"),  # Greek in science, a Russian word: kept
    ],
)
def test_as_read_is_nfkc_then_lookalikes_folded(text: str, read: str) -> None:
    assert as_read(text) == read
    assert as_read(read) == read  # once is enough


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


@pytest.mark.parametrize(
    "link",
    [
        "![x](//evil.com/p.png?q=secret)",  # no scheme
        "![x](https:/evil.com/p.png)",  # one slash
        "https:\\\\evil.com\\p.png",  # backslashes
        "[click](javascript:alert(1))",
        "![x](https://h.com/p_(a)?q=secret)",  # balanced parentheses stay in the link
        "https://example.com/d",  # a prefix of a held link is another link
        "https://exаmple.com/docs/ipc302",  # a Cyrillic а: another host
    ],
)
def test_forms_a_browser_follows_are_links_compared_whole(link: str) -> None:
    """Found by a review: these slipped past a scheme-only, substring comparison."""
    evidence = ["Held: https://example.com/docs/ipc302 and https://h.com/p_(a)."]
    assert links_not_in(f"See {link} here.", evidence) != []


@pytest.mark.parametrize(
    "same",
    [
        "https://www.example.com/docs/ipc302/",
        "http://example.com/docs/ipc302",
        "WWW.EXAMPLE.COM/docs/ipc302",
    ],
)
def test_scheme_www_and_a_final_slash_do_not_make_another_link(same: str) -> None:
    assert links_not_in(same, ["See example.com at https://example.com/docs/ipc302."]) == []


def test_a_source_heading_reads_back_as_its_notes() -> None:
    # One definition written (source_heading, the extractive generator's) and read (SOURCE_NOTE_RE,
    # the validator's rule K): a note the writer makes is one the reader sets aside.
    from services.common.language.text import SOURCE_NOTE_RE, SOURCE_NOTES, source_heading

    notes = [note.format("IPC section 379") for note in SOURCE_NOTES.values()]
    heading = source_heading("IPC section 380", notes)

    match = SOURCE_NOTE_RE.search(heading)
    assert match is not None and heading[: match.start()] == "IPC section 380"
    assert source_heading("IPC section 380") == "IPC section 380:"

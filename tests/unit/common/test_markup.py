"""What a reader would not see as written: markup a client renders or runs, and characters that
reorder, hide or control the display (a security audit delivered each of these as GROUNDED)."""

from __future__ import annotations

import pytest

from services.common.language.links import links
from services.common.language.markup import unsafe, visible

EVIDENCE = ["Whoever commits theft shall be punished. See https://indiacode.nic.in/ipc."]


@pytest.mark.parametrize(
    ("text", "named"),
    [
        ("<svg onload=alert()> Theft.", "'<svg onload=alert()>'"),
        ("Theft <iframe srcdoc='x'></iframe>.", "'</iframe>'"),
        ("<img src=/collect?d=x> Theft.", "'<img src=/collect?d=x>'"),
        ("![](/collect?d=x) Theft.", "'![](/collect?d=x)'"),
        ("[Whoever](/login) commits theft.", "'[Whoever](/login)'"),
        ("[ref]: /evil", "'[ref]: /evil'"),
        ("<!-- hidden --> Theft.", "'<!-- hidden -->'"),
        ("\u202eTheft.", "U+202E RIGHT-TO-LEFT OVERRIDE"),
        ("\u2067Theft.", "U+2067 RIGHT-TO-LEFT ISOLATE"),
        ("the\u200bft", "U+200B ZERO WIDTH SPACE"),
        ("x\U000e0069y", "U+E0069 TAG LATIN SMALL LETTER I"),
        ("\x1bc Theft.", "U+001B control character"),
        ("a\x00b", "U+0000 control character"),
        ("a\ue000b", "U+E000 control character"),
    ],
)
def test_what_a_reader_would_not_see_is_named(text: str, named: str) -> None:
    assert named in unsafe(text, EVIDENCE)


@pytest.mark.parametrize(
    "text",
    [
        "Whoever commits theft shall be punished.",
        "a < b > c, and 3<4.",
        "[Whoever](https://indiacode.nic.in/ipc) commits theft.",  # absolute: links.py's rule
        "Tabs\tand\nlines\r\n.",
        "क्ष\u200dत्रिय and \u200cZWNJ",  # joiners belong to Indic and Persian script
        "Wikipedia marks direction\u200e here.",  # LRM reorders nothing
        "soft\u00adhyphen",
        "Theft [IPC_379_0].",
    ],
)
def test_ordinary_text_passes(text: str) -> None:
    assert unsafe(text, EVIDENCE) == []


def test_markup_and_invisible_characters_the_evidence_holds_are_a_quote() -> None:
    evidence = ["The form reads <b>Name</b>, and the\u200bft is spelt so."]
    assert unsafe("The form reads <b>Name</b>.", evidence) == []
    assert unsafe("the\u200bft", evidence) == []


def test_reordering_and_control_characters_never_pass_even_when_held() -> None:
    evidence = ["\u202eA poisoned passage\x1b[2J."]
    assert unsafe("\u202eA poisoned passage\x1b[2J.", evidence) == [
        "U+202E RIGHT-TO-LEFT OVERRIDE",
        "U+001B control character",
    ]


def test_each_finding_is_named_once_and_long_markup_is_shortened() -> None:
    found = unsafe("<b>" * 3 + "<a title='" + "x" * 200 + "'>", EVIDENCE)
    assert found[0] == "'<b>'" and len(found) == 2
    assert found[1].endswith('…"') and len(found[1]) <= 62


def test_visible_escapes_hidden_characters_only() -> None:
    assert visible("\u202eTheft é") == "\\u202eTheft é"
    assert visible("plain") == "plain"


def test_a_bare_email_address_is_a_mail_link() -> None:
    """Markdown renderers (GitHub's) link a bare address."""
    assert links("write to help@evil.example, or see https://x.y/p?e=a@b.c") == [
        "mailto:help@evil.example",
        "https://x.y/p?e=a@b.c",
    ]

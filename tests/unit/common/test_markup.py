"""What a reader would not see as written: markup a client renders or runs, and characters that
reorder, hide or control the display (a security audit delivered each of these as GROUNDED)."""

from __future__ import annotations

import pytest

from services.common.language.links import links
from services.common.language.markup import clip, unsafe, visible

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
        "क्ष\u200dत्रिय and می\u200cخواهم",  # joiners belong to Indic and Persian words
        "👩\u200d💻 and ❤\ufe0f",  # an emoji sequence, an emoji-style selector
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


@pytest.mark.parametrize(
    ("text", "named"),
    [
        ("Theft &#x202E;&#x2066; is punished.", "U+202E RIGHT-TO-LEFT OVERRIDE"),
        ("Theft &#8203; is punished.", "U+200B ZERO WIDTH SPACE"),
        ("the" + "\u200c\u200d" * 56 + "ft", "U+200C ZERO WIDTH NON-JOINER"),
        ("\u200dTheft", "U+200D ZERO WIDTH JOINER"),
        ("th\U000e0100e\U000e0101ft", "U+E0100 VARIATION SELECTOR-17"),
        ("Theft\nis punished.\n<!--\nWhoever\n", "'<!--\\nWhoever\\n'"),
    ],
    ids=["entity-override", "entity-zwsp", "joiner-run", "joiner-at-edge", "selectors", "unclosed"],
)
def test_the_reviewers_ways_round_are_closed(text: str, named: str) -> None:
    """A review of the first version got hidden text past it: character references a renderer
    decodes, joiner runs carrying bytes, variation selectors, a comment left open."""
    assert named in unsafe(text, EVIDENCE)


@pytest.mark.parametrize(
    ("text", "limit", "clipped"),
    [
        ("short", 10, "short"),
        ("theft of movable property", 10, "theft of…"),
        # Vietnamese written decomposed: "đê" + U+0301 is "đế"; a cut after "ê" showed "đê".
        ("phạt tù đe\u0302\u0301n", 11, "phạt tù đ…"),
        ("ab đe\u0302\u0301", 6, "ab đ…"),
        ("ab đe\u0302\u0301", 7, "ab đe\u0302\u0301"),
        # An emoji family (ZWJ sequence) and a skin tone stay whole or go whole.
        ("ok 👨\u200d👩\u200d👧 x", 6, "ok…"),
        ("ok 👍\U0001f3fd x", 5, "ok…"),
        # A text that is one character, or marks only, is cut as before.
        ("e" + "\u0301" * 20, 5, "e\u0301\u0301\u0301…"),
    ],
)
def test_clip_never_cuts_inside_a_character(text: str, limit: int, clipped: str) -> None:
    assert clip(text, limit) == clipped
    assert len(clip(text, limit)) <= max(limit, len(text))

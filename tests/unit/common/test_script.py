"""Which texts the models and rules read: Latin script, whatever the language."""

from __future__ import annotations

import pytest

from services.common.language.script import unreadable_script
from services.common.language.text import words


@pytest.mark.parametrize(
    ("text", "script"),
    [
        ("चोरी की सज़ा क्या है?", "Devanagari"),
        ("چوری کی سزا کیا ہے؟", "Arabic"),
        ("ما هي عقوبة السرقة؟", "Arabic"),
        ("திருட்டுக்கான தண்டனை என்ன?", "Tamil"),
        ("盗窃罪的刑罚是什么？", "CJK"),
        ("Какое наказание за кражу?", "Cyrillic"),
        ("IPC की धारा 379 क्या है?", "Devanagari"),  # a Latin acronym in a Hindi question
    ],
)
def test_a_text_mostly_in_another_script_is_not_read(text: str, script: str) -> None:
    assert unreadable_script(text) == script


@pytest.mark.parametrize(
    "text",
    [
        "What is the punishment for theft?",
        "chori ki saza kya hai",  # transliterated: Latin script, read (as words it may not know)
        "Quelle est la peine pour le vol ?",
        "Vietnamese: Điều này có nghĩa là gì?",
        "ｗｈａｔ ｉｓ ｔｈｅｆｔ？",  # full-width Latin
        "The word “चोरी” means theft under the Code.",  # a few quoted words of another script
        "TNF-α and β-catenin levels rose by 20 %.",
        "420",
        "",
        "?!",
    ],
)
def test_latin_script_and_texts_without_letters_are_read(text: str) -> None:
    assert unreadable_script(text) is None


def test_words_keep_their_combining_marks() -> None:
    # Python's \w holds no combining mark: Hindi fell apart into letters, an NFD accent dropped.
    assert words("चोरी की सज़ा क्या है?") == ["चोरी", "की", "सज़ा", "क्या", "है"]
    assert words("திருட்டு தண்டனை") == ["திருட்டு", "தண்டனை"]
    assert words("cafe\u0301 au lait") == words("café au lait") == ["café", "au", "lait"]
    assert words("the person’s don't") == ["the", "person", "don't"]

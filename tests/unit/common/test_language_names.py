"""services.common.language.names: how a text names a document."""

from __future__ import annotations

from services.common.language.names import names, names_beyond_question, title_name


def test_title_names_match_whole_words_and_case() -> None:
    assert title_name("Tinted Windows (band)") == "Tinted Windows"
    assert title_name("Melanie") == "Melanie" and title_name("Oz") == ""
    assert names("a song by Tinted Windows in 2009", "Tinted Windows")
    assert not names("a song by tinted windows", "Tinted Windows")  # a name keeps its capitals
    assert names("a song by tinted windows", "Tinted Windows", fold_case=True)
    assert not names("Ti' Punched the clock", "Punch")  # whole words only
    assert not names("anything", "")
    assert names_beyond_question("paid for by John Archbold", "John Archbold (donor)", "Who?")
    assert not names_beyond_question("by John Archbold", "John Archbold", "Did john archbold pay?")
    # A document titled like the one the text comes from is no bridge.
    assert not names_beyond_question(
        "the Normans of Normandy", "Normans", "Who?", own_titles={"Normans"}
    )

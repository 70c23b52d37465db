"""One stop-word base with named extensions (issue 14): what each use ignores, from one module."""

from __future__ import annotations

from services.common.language import stopwords
from services.common.language.key_terms import STOP_WORDS as SUFFICIENCY
from services.common.language.key_terms import extract_key_terms
from services.common.language.text import STOP_WORDS as VALIDATOR
from services.retrieval.lexical import STOPWORDS as BM25_STOPWORDS


def test_each_use_is_the_base_and_its_named_extensions() -> None:
    base = stopwords.FUNCTION_WORDS
    assert base | stopwords.STATUTE_CONNECTIVES | stopwords.NUMBER_WORDS == VALIDATOR
    assert base | stopwords.REQUEST_WORDS == SUFFICIENCY


def test_the_extensions_do_not_repeat_the_base_or_each_other() -> None:
    parts = (
        stopwords.FUNCTION_WORDS,
        stopwords.STATUTE_CONNECTIVES,
        stopwords.NUMBER_WORDS,
        stopwords.REQUEST_WORDS,
    )
    for i, a in enumerate(parts):
        for b in parts[i + 1 :]:
            assert not a & b


def test_bm25s_english_list_is_within_the_base() -> None:
    # Retrieval keeps the library's list (changing it changes the index); it drops nothing the
    # base would keep.
    assert BM25_STOPWORDS <= stopwords.FUNCTION_WORDS


def test_contractions_of_function_words_are_function_words() -> None:
    # "didn't" is "did not": not a key term a passage must hold (Then Z), as "did" and "not"
    # are not; the validator ignored them already.
    assert {"didn't", "he'll", "i'm", "you're", "can't"} <= stopwords.FUNCTION_WORDS
    assert extract_key_terms("I didn't know he'll sell stolen goods").effective == (
        "know",
        "sell",
        "stolen",
        "good",
    )


def test_happen_asks_for_an_outcome_and_names_no_topic() -> None:
    # "What happens to a bank manager who ...": the evidence need not say "happens" (Then AA).
    assert extract_key_terms("What happens to a bank manager who steals money?").effective == (
        "bank",
        "manager",
        "steal",
        "money",
    )


def test_get_and_actually_name_no_topic() -> None:
    # "What punishment can he get?": no passage need say "get" (Then AC).
    assert extract_key_terms("What punishment can he actually get for theft?").effective == (
        "theft",
    )
    assert extract_key_terms("I got caught with a stolen bike").effective == (
        "caught",
        "stolen",
        "bike",
    )


def test_negation_words_are_function_words_as_not_is() -> None:
    # "never" was a key term to sufficiency while "not" was not (Then AE); the validator's
    # stop words, the union, are unchanged.
    assert {"never", "nothing", "cannot"} <= stopwords.FUNCTION_WORDS
    assert extract_key_terms("He never returned the money").effective == ("return", "money")

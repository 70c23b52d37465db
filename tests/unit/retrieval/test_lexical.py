"""Tests for the BM25 lexical index and its tokeniser."""

from __future__ import annotations

import numpy as np
import pytest

from services.common.language.lay_terms import alternatives
from services.common.language.text import stem, words
from services.retrieval.lexical import (
    LexicalIndex,
    chunk_search_text,
    query_tokens,
    tokenize,
    top_k,
)
from tests.unit.retrieval.search_fakes import statute_chunks


class TestTokenize:
    def test_tokenize_lowercases_stems_and_drops_stopwords(self) -> None:
        # The stem is the shared one (tests/unit/common/test_stem.py).
        assert tokenize("The Punishment for THEFT under Section 379") == [
            "punish",
            "theft",
            "under",
            "sect",
            "379",
        ]

    def test_tokenize_keeps_stopwords_when_asked(self) -> None:
        assert tokenize("the theft", keep_stopwords=True) == ["the", "theft"]

    def test_tokenize_drops_single_characters(self) -> None:
        assert tokenize("clause (a) of s 5") == ["claus"]


class TestLexicalIndex:
    def test_lexical_search_ranks_matching_chunk_first(self) -> None:
        chunks = statute_chunks()
        index = LexicalIndex.from_chunks(chunks)
        scores, positions, _ = index.search("cognizable offence information", 3)
        assert chunks[int(positions[0])].doc_id == "CRPC_154"
        assert list(scores) == sorted(scores, reverse=True)

    def test_lexical_search_indexes_titles(self) -> None:
        chunks = statute_chunks()
        index = LexicalIndex.from_chunks(chunks)
        _, positions, _ = index.search("education", 5)
        assert {chunks[int(p)].doc_id for p in positions} == {"COI_21A"}
        assert "Right to education" in chunk_search_text(chunks[int(positions[0])])

    def test_lexical_search_respects_mask(self) -> None:
        chunks = statute_chunks()
        index = LexicalIndex.from_chunks(chunks)
        mask = np.array([c.act == "CRPC" for c in chunks])
        _, positions, _ = index.search("punished imprisonment property", 10, mask=mask)
        assert len(positions) > 0
        assert all(chunks[int(p)].act == "CRPC" for p in positions)

    def test_lexical_search_returns_only_positive_scores(self) -> None:
        index = LexicalIndex(["alpha beta", "gamma delta", "alpha gamma"])
        scores, positions, all_scores = index.search("alpha", 10)
        assert sorted(positions.tolist()) == [0, 2]
        assert (scores > 0).all()
        assert all_scores.shape == (3,)

    def test_lexical_search_unknown_terms_match_nothing(self) -> None:
        index = LexicalIndex(["alpha beta"])
        scores, positions, _ = index.search("zeta the of", 5)
        assert positions.size == 0 and scores.size == 0

    def test_lexical_index_empty_corpus_matches_nothing(self) -> None:
        index = LexicalIndex([])
        _, positions, _ = index.search("anything", 5)
        assert len(index) == 0 and positions.size == 0

    def test_lexical_idf_is_higher_for_rarer_terms(self) -> None:
        index = LexicalIndex(["common rare", "common", "common"])
        assert index.idf("rare") > index.idf("common") > 0
        assert index.idf("absent") == 0.0


class TestTopK:
    def test_top_k_breaks_ties_by_position(self) -> None:
        scores = np.array([1.0, 2.0, 2.0, 2.0, 0.5], dtype=np.float32)
        values, positions = top_k(scores, 2)
        assert positions.tolist() == [1, 2]
        assert values.tolist() == [2.0, 2.0]

    def test_top_k_zero_returns_nothing(self) -> None:
        _, positions = top_k(np.array([1.0], dtype=np.float32), 0)
        assert positions.size == 0


class TestLayWords:
    def test_query_tokens_add_the_statutes_words_for_everyday_ones(self) -> None:
        tokens = query_tokens("Can I be punished for stealing a phone?")
        assert tokens[: len(tokenize("Can I be punished for stealing a phone?"))] == tokenize(
            "Can I be punished for stealing a phone?"
        )
        assert stem("theft") in tokens

    def test_query_without_everyday_words_is_unchanged(self) -> None:
        query = "What is the punishment for theft?"
        assert query_tokens(query) == tokenize(query)

    def test_an_everyday_word_finds_the_statute_that_never_uses_it(self) -> None:
        texts = [
            "Whoever commits theft shall be punished with imprisonment.",
            "Whoever commits mischief shall be punished with fine.",
        ]
        index = LexicalIndex(texts)
        _, positions, _ = index.search("Someone was stealing my bicycle", 2)
        assert list(positions[:1]) == [0]
        assert alternatives(stem("stole")) == {stem("theft")}

    @pytest.mark.parametrize(
        ("lay", "statute"),
        [
            ("old", "age"),
            ("crowd", "assembly"),
            ("arrested", "apprehension"),
            ("scared", "fear"),
            ("wedding", "marriage"),
        ],
    )
    def test_the_second_count_of_everyday_words_names_the_statute_word(
        self, lay: str, statute: str
    ) -> None:
        # Then AD: "a 15-year-old girl" is about "age"; "he died" about "death".
        assert stem(statute) in alternatives(stem(lay))

    @pytest.mark.parametrize(("lay", "statute"), [("died", "death"), ("dying", "death")])
    def test_a_word_of_the_statute_words_family_needs_no_entry(
        self, lay: str, statute: str
    ) -> None:
        # Since rule BN the stemmer reads "died" as "death" itself: the query holds the
        # statute's word, so an everyday-word entry would add nothing.
        assert stem(lay) == stem(statute)
        assert not alternatives(stem(lay))

    def test_no_entry_names_the_word_it_is_read_as(self) -> None:
        # An entry whose statute word has the everyday word's own stem searches nothing more
        # (query_tokens and key_terms.holds skip a term the question already holds): dead.
        from services.common.language.lay_terms import _LAY

        dead = [
            lay
            for lay, statute in _LAY.items()
            if stem(lay) in {stem(w) for s in statute for w in words(s)}
        ]
        assert dead == []

    def test_a_hyphenated_statute_word_is_searched_as_the_index_splits_it(self) -> None:
        # "house-breaking" is indexed as "hous" + "break"; one token "house-breaking" would
        # never match anything.
        assert alternatives(stem("burglar")) >= {stem("house"), stem("breaking")}
        index = LexicalIndex(
            [
                "Whoever commits house-breaking by night shall be punished.",
                "Whoever commits mischief shall be punished with fine.",
            ]
        )
        _, positions, _ = index.search("a burglar", 2)
        assert list(positions) == [0]

"""BM25 lexical search over chunks with bm25s, and the BM25 tokeniser (shared stemmer) that
rerank and expansion share."""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable, Sequence
from typing import Final

import bm25s
import numpy as np
import numpy.typing as npt
from bm25s.stopwords import STOPWORDS_EN

from services.common.evidence import Chunk
from services.common.language.lay_terms import alternatives
from services.common.language.text import stem, words

Scores = npt.NDArray[np.float32]
Positions = npt.NDArray[np.int64]
Mask = npt.NDArray[np.bool_]

# bm25s's English stop words (scikit-learn's list), a subset of the shared base
# (services/common/language/stopwords.py); changing it changes the index.
STOPWORDS: Final = frozenset(STOPWORDS_EN)

# Bump when tokenize() maps any text to other tokens (its word pattern, its stop words or the
# shared stemmer it calls): BM25 is rebuilt from the chunks at every start, but result-cache keys
# include this, so entries computed with the old tokens read as misses.
# 1: retrieval's own suffix stripper; 2: the shared stemmer, services.common.language.text.stem;
# 3: the shared words (services.common.language.text.words) instead of scikit-learn's pattern.
# 4: queries also search the statute's words for everyday ones (query_tokens, lay_terms).
# 5: 13 more everyday words (lay_terms, from the answerability training questions).
# 6: a word runs through the combining marks after its letters (text.WORD_PATTERN: Indic vowel
#    signs, NFD accents), so "चोरी" is one token, not "च", "र".
# 7: the stemmer reads currency and unit spellings as their word first ("Rs", "rupees" and
#    "rupee" are one token, as the validator already read them).
# 8: "-ed"/"-ing" leave the silent "e" of a three-letter syllable: "fined" is "fine", not "fin".
# 9: six more everyday words (lay_terms: "old" -> "age", "died" -> "death", ...).
# 10: "used", "using" -> "use"; "aged", "aging" -> "age" (two letters before -ed/-ing).
# 11: "sentenced", "sentencing" -> "sentence"'s stem; "received" -> "receive"'s (the "e" that
#     completes a suffix with -ed/-ing).
# 12: an offence's noun and its doer read as its verb: "bribery", "bribing" -> "brib";
#     "robber", "robbery" -> "rob"; "death", "dies" -> "die" (text._FAMILIES; Then BN).
TOKENIZER_VERSION: Final = 12


def tokenize(text: str, *, keep_stopwords: bool = False) -> list[str]:
    """Stemmed words of two or more characters ("498a" and "420" stay, "s" and "(a)" go);
    stop words (bm25s's English list) dropped by default.

    Words and stems are the ones every service uses (``services.common.language.text``).
    """
    return [stem(w) for w in words(text) if len(w) > 1 and (keep_stopwords or w not in STOPWORDS)]


def query_tokens(query: str) -> list[str]:
    """A query's BM25 tokens, each everyday word followed by the statute's words for it
    (``services.common.language.lay_terms``): "steal" also searches "theft"."""
    tokens = tokenize(query)
    extra = [alt for t in tokens for alt in sorted(alternatives(t)) if alt not in tokens]
    return tokens + list(dict.fromkeys(extra))


def chunk_search_text(chunk: Chunk) -> str:
    """What BM25 indexes for a chunk: the section/document title and the sentence itself."""
    return f"{chunk.title}\n{chunk.text}" if chunk.title else chunk.text


class LexicalIndex:
    """BM25 (Lucene variant) over tokenised texts; position ``i`` is text ``i``.

    Scoring reads immutable arrays only, so concurrent searches are safe.
    """

    def __init__(self, texts: Sequence[str], *, k1: float = 1.2, b: float = 0.75) -> None:
        tokens = [tokenize(t) for t in texts]
        self._size = len(tokens)
        # bm25s refuses an empty corpus; an empty index simply never matches.
        self._bm25: bm25s.BM25 | None = None
        if tokens:
            self._bm25 = bm25s.BM25(k1=k1, b=b, method="lucene")
            self._bm25.index(tokens, show_progress=False)
        self._df: Counter[str] = Counter(t for doc in tokens for t in set(doc))

    @classmethod
    def from_chunks(
        cls, chunks: Sequence[Chunk], *, k1: float = 1.2, b: float = 0.75
    ) -> LexicalIndex:
        return cls([chunk_search_text(c) for c in chunks], k1=k1, b=b)

    def __len__(self) -> int:
        return self._size

    def idf(self, token: str) -> float:
        """BM25 inverse document frequency of a (stemmed) token; 0 for unknown tokens."""
        df = self._df.get(token, 0)
        if df == 0:
            return 0.0
        return math.log(1 + (self._size - df + 0.5) / (df + 0.5))

    def scores(self, tokens: Iterable[str]) -> Scores:
        """BM25 score of every position for query ``tokens`` (unknown tokens are ignored)."""
        if self._bm25 is None:
            return np.zeros(self._size, dtype=np.float32)
        vocab = self._bm25.vocab_dict
        ids = [vocab[t] for t in dict.fromkeys(tokens) if t in vocab and t != ""]
        if not ids:
            return np.zeros(self._size, dtype=np.float32)
        return np.asarray(self._bm25.get_scores_from_ids(ids), dtype=np.float32)

    def search(
        self, query: str, k: int, *, mask: Mask | None = None
    ) -> tuple[Scores, Positions, Scores]:
        """Top-``k`` matching positions (score > 0, inside ``mask``), best first.

        Also returns the full score array, which the caller uses to score provisions named in
        the query that did not make the top ``k``.
        """
        all_scores = self.scores(query_tokens(query))
        return *top_k(all_scores, k, mask=mask), all_scores


def top_k(scores: Scores, k: int, *, mask: Mask | None = None) -> tuple[Scores, Positions]:
    """The ``k`` best positive scores (inside ``mask``), best first; ties broken by position."""
    candidates = scores if mask is None else np.where(mask, scores, 0.0)
    positive = np.flatnonzero(candidates > 0)
    if k <= 0:
        positive = positive[:0]
    elif positive.size > k:
        # Keep everything tied with the k-th score so the cut below is deterministic.
        kth = np.partition(candidates[positive], positive.size - k)[positive.size - k]
        positive = positive[candidates[positive] >= kth]
    order = np.lexsort((positive, -candidates[positive]))
    chosen = positive[order][:k].astype(np.int64)
    return candidates[chosen].astype(np.float32), chosen

"""Tests for the search pipeline (Searcher) and its cache key, on the hashing encoder."""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Sequence

import numpy as np
import numpy.typing as npt
import pytest

from services.common.errors import DeadlineExceededError, InvalidInputError, TooLongForModelError
from services.common.evidence import Chunk, ScoredChunk, StageScores, StageSkip
from services.common.language.text import NOT_BLANK
from services.retrieval import search
from services.retrieval.expansion import QueryAnalysis
from services.retrieval.rerank import HeuristicReranker, Scores
from services.retrieval.search import (
    STAGES,
    CachedPassage,
    CachedResult,
    Resolve,
    Searcher,
    SearchRequest,
    SearchResult,
    SearchSettings,
    StageSwitches,
    _CostEstimate,
    cache_key,
)
from tests.unit.retrieval.search_fakes import HashingEncoder, make_artifacts, statute_chunks

ALL_ON = StageSwitches(
    dense=True, lexical=True, expansion=True, rerank=True, aggregation=True, cache=True
)


class DictCache:
    """An in-memory ResultCache that records what the searcher asked of it, and which entries
    the searcher refused (``refused``: the reason, as RedisResultCache logs it)."""

    def __init__(self) -> None:
        self.entries: dict[str, CachedResult] = {}
        self.gets: list[str] = []
        self.sets: list[str] = []
        self.refused: list[str] = []

    def get(self, key: str, resolve: Resolve) -> SearchResult | None:
        self.gets.append(key)
        entry = self.entries.get(key)
        if entry is None:
            return None
        try:
            return resolve(entry)
        except ValueError as exc:
            self.refused.append(str(exc))
            return None

    def set(self, key: str, entry: CachedResult) -> None:
        self.sets.append(key)
        self.entries[key] = entry


class SpyReranker:
    """Records the slate size it is given; scores chunks by their prior."""

    name = "spy"

    def __init__(self) -> None:
        self.slates: list[int] = []

    def score(
        self, analysis: QueryAnalysis, chunks: Sequence[Chunk], prior: Sequence[float]
    ) -> Scores:
        self.slates.append(len(chunks))
        return np.asarray(prior, dtype=np.float64)


class SlowEncoder(HashingEncoder):
    """A hashing encoder that takes ``delay_s`` per call, like a loaded model on a busy box."""

    def __init__(self, delay_s: float) -> None:
        super().__init__()
        self.delay_s = delay_s

    def encode(
        self, texts: Sequence[str], *, batch_size: int = 64, show_progress: bool = False
    ) -> npt.NDArray[np.float32]:
        time.sleep(self.delay_s)
        return super().encode(texts, batch_size=batch_size, show_progress=show_progress)


def make_searcher(
    chunks: Sequence[Chunk] | None = None,
    *,
    encoder: HashingEncoder | None = None,
    settings: SearchSettings | None = None,
    cache: DictCache | None = None,
    reranker: SpyReranker | None = None,
) -> Searcher:
    # Artifacts are built with a fast encoder; queries go through ``encoder``.
    artifacts = make_artifacts(list(chunks or statute_chunks()), HashingEncoder())
    return Searcher(
        artifacts,
        encoder or HashingEncoder(),
        settings or SearchSettings(),
        cache,
        reranker=reranker,
    )


def filler_chunks(n: int) -> list[Chunk]:
    """``n`` one-sentence documents sharing the word "property" (so every one is a candidate)."""
    return [
        Chunk(
            semantic_id=f"FILL_{i}_0",
            doc_id=f"FILL_{i}",
            text=f"Clause {i} concerns property number {i} held in trust.",
            title=f"Filler {i}",
        )
        for i in range(n)
    ]


def ran(result: SearchResult) -> set[str]:
    return {t.stage for t in result.timings if t.ran}


@pytest.fixture(scope="module")
def searcher() -> Searcher:
    return make_searcher()


class TestNamedProvisions:
    @pytest.mark.parametrize(
        ("query", "doc_id"),
        [
            ("What is the punishment for cheating under section 420?", "IPC_420"),
            ("s. 302 IPC", "IPC_302"),
            ("Article 21A", "COI_21A"),
            ("what does sec. 154 CrPC require", "CRPC_154"),
        ],
    )
    def test_search_named_provision_ranks_first(
        self, searcher: Searcher, query: str, doc_id: str
    ) -> None:
        result = searcher.search(SearchRequest(query, top_k=5))
        assert result.chunks[0].chunk.doc_id == doc_id

    def test_search_section_without_act_ranks_that_number_first(self, searcher: Searcher) -> None:
        result = searcher.search(SearchRequest("section 420", top_k=5))
        sections = [s.chunk.section for s in result.chunks]
        assert sections[:3] == ["420", "420", "420"]
        assert {s.chunk.act for s in result.chunks[:3]} == {"IPC", "CRPC"}

    def test_search_named_provision_added_when_retrieval_misses_it(
        self, searcher: Searcher
    ) -> None:
        # Nothing in Article 21A's text says "21A"; lexical-only retrieval cannot find it alone.
        stages = StageSwitches(dense=False, lexical=True)
        result = searcher.search(SearchRequest("Article 21A", top_k=3, stages=stages))
        assert result.chunks[0].chunk.doc_id == "COI_21A"
        assert result.chunks[0].stages.lexical is None

    def test_search_article_21a_is_not_article_21(self, searcher: Searcher) -> None:
        result = searcher.search(SearchRequest("Article 21A", top_k=5))
        assert result.chunks[0].score > result.chunks[1].score
        assert result.chunks[1].chunk.doc_id != "COI_21A"


class TestUnknownTerms:
    """The query's key terms no passage holds (RetrievePassagesResponse.unknown_terms)."""

    @pytest.mark.parametrize(
        ("query", "unknown"),
        [
            ("chori ki saza kya hai", ["chori", "ki", "saza", "kya", "hai"]),
            ("What is the punishment for theft?", []),
            ("what if I steal a bike", ["bike"]),  # "steal" is held as the statute's "theft"
            ("Punishment for Murder of a BICYCLE", ["bicycle"]),  # as written, lower-cased
            ("section 420", []),  # a section reference is no key term
            ("What is it?", []),  # no key term at all
        ],
    )
    def test_unknown_terms_are_the_key_terms_the_corpus_never_holds(
        self, searcher: Searcher, query: str, unknown: list[str]
    ) -> None:
        assert searcher.unknown_terms(query) == unknown


class TestDefinedTerms:
    """A definition question whose key terms are a section's title names it (rule H,
    docs/EVALUATION.md "Then H"): "What is murder?" finds s.300 ("Murder") first, never s.302
    ("Punishment for murder"), even where the words alone would miss it."""

    @pytest.mark.parametrize(
        ("query", "doc_id"),
        [
            ("What is murder?", "IPC_300"),
            ("Define theft.", "IPC_378"),
            ("What is the meaning of theft?", "IPC_378"),
            ("Tell me about murder.", "IPC_300"),  # a request asks "What is murder?" (rule BD)
        ],
    )
    def test_a_definition_question_names_the_section_titled_by_its_term(
        self, searcher: Searcher, query: str, doc_id: str
    ) -> None:
        result = searcher.search(SearchRequest(query, top_k=5))
        assert result.chunks[0].chunk.doc_id == doc_id
        assert result.chunks[0].score > 1.0  # the named-provision boost, as for "section 300"

    def test_the_titled_section_is_added_when_retrieval_misses_it(self, searcher: Searcher) -> None:
        # s.300's one sentence says "murder" once; lexical-only retrieval ranks it by words
        # alone, and the title adds it first whatever the words do.
        stages = StageSwitches(dense=False, lexical=True)
        result = searcher.search(SearchRequest("What is murder?", top_k=3, stages=stages))
        assert result.chunks[0].chunk.doc_id == "IPC_300"
        assert result.chunks[0].score > 1.0

    @pytest.mark.parametrize(
        "query",
        [
            "What is the punishment for murder?",  # a punishment question: not by title
            "Tell me how murder is punished.",  # a request for a punishment question
            "What is murder under section 302?",  # a named provision wins
            "What is a murder weapon?",  # more words than the title
        ],
    )
    def test_other_questions_name_no_title(self, searcher: Searcher, query: str) -> None:
        result = searcher.search(SearchRequest(query, top_k=5))
        boosted = {s.chunk.doc_id for s in result.chunks if s.score > 1.0}
        assert "IPC_300" not in boosted

    def test_the_setting_off_names_nothing_by_title(self) -> None:
        off = make_searcher(settings=SearchSettings(defined_terms=False))
        result = off.search(SearchRequest("What is murder?", top_k=5))
        assert all(s.score <= 1.0 for s in result.chunks)
        assert SearchSettings(defined_terms=False).fingerprint() != SearchSettings().fingerprint()


def _section(section: str, title: str, sentences: Sequence[str]) -> list[Chunk]:
    return [
        Chunk(
            semantic_id=f"IPC_{section}_{n}",
            doc_id=f"IPC_{section}",
            text=text,
            title=title,
            section=section,
            act="IPC",
            sentence_index=n,
        )
        for n, text in enumerate(sentences)
    ]


# s.376 and s.320 as the IPC stores them (shortened): the provisos share the question's words
# more than the operative text does, and a list of eight is longer than the cap of three.
LAYOUT = [
    *_section(
        "376",
        "Punishment for rape",
        (
            "Whoever commits rape shall be punished with rigorous imprisonment for ten years.",
            "Whoever being a police officer commits rape shall be punished for life.",
            "Whoever commits rape on a woman under sixteen shall be punished for twenty years.",
            "Provided that such fine shall meet the medical expenses of the victim of rape:",
            "Provided further that any fine for rape under section 376 shall be paid to the "
            "victim of rape.",
        ),
    ),
    *_section(
        "320",
        "Grievous hurt",
        (
            "The following kinds of hurt only are designated as grievous: Emasculation.",
            "Permanent privation of the sight of either eye.",
            "Permanent privation of the hearing of either ear.",
            "Privation of any member or joint.",
            "Permanent disfiguration of the head or face.",
            "Fracture or dislocation of a bone or tooth.",
        ),
    ),
    *statute_chunks(),
]


class TestCompletedGroups:
    """Rule L (docs/EVALUATION.md, "Then L"): a named section's group holds its operative text,
    and a group holding a list's passage holds the whole list, after its ranked members."""

    def test_a_named_sections_operative_text_completes_its_group(self) -> None:
        query = SearchRequest("fine paid to the victim under section 376", 10)
        off = make_searcher(LAYOUT, settings=SearchSettings(operative_text=False))
        found = off.search(query).chunks
        ranked = [s.chunk.sentence_index for s in found if s.chunk.section == "376"]
        assert {3, 4} <= set(ranked) and 0 not in ranked  # the provisos rank first

        result = make_searcher(LAYOUT).search(query)
        own = [s.chunk.sentence_index for s in result.chunks if s.chunk.section == "376"]
        # The ranked members, then the operative text they lack, in sentence order.
        assert own == [*ranked, *(i for i in (0, 1, 2) if i not in ranked)]

    def test_a_list_comes_whole(self) -> None:
        # No section named: a member of the list brings the rest of it.
        query = SearchRequest("privation of the sight of an eye", 10)
        result = make_searcher(LAYOUT).search(query)
        own = [s.chunk.sentence_index for s in result.chunks if s.chunk.section == "320"]

        assert sorted(own) == list(range(6))
        off = make_searcher(LAYOUT, settings=SearchSettings(whole_lists=False))
        assert len([s for s in off.search(query).chunks if s.chunk.section == "320"]) == 3

    def test_a_completing_passage_carries_its_groups_lowest_score(self) -> None:
        result = make_searcher(LAYOUT).search(SearchRequest("privation of the sight of an eye", 10))
        own = [s for s in result.chunks if s.chunk.doc_id == "IPC_320"]

        assert {s.score for s in own[3:]} == {min(s.score for s in own[:3])}

    def test_the_settings_are_part_of_the_cache_key(self) -> None:
        fingerprints = {
            SearchSettings().fingerprint(),
            SearchSettings(operative_text=False).fingerprint(),
            SearchSettings(whole_lists=False).fingerprint(),
        }
        assert len(fingerprints) == 3


class TestFilters:
    def test_search_act_filter_keeps_only_that_act(self, searcher: Searcher) -> None:
        result = searcher.search(SearchRequest("property custody", top_k=10, acts=("CRPC",)))
        assert result.chunks
        assert {s.chunk.act for s in result.chunks} == {"CRPC"}

    def test_search_act_filter_excludes_named_provision_of_other_act(
        self, searcher: Searcher
    ) -> None:
        result = searcher.search(SearchRequest("section 420", top_k=10, acts=("CRPC",)))
        assert result.chunks[0].chunk.doc_id == "CRPC_420"
        assert all(s.chunk.act == "CRPC" for s in result.chunks)

    def test_search_doc_id_filter_keeps_only_those_documents(self, searcher: Searcher) -> None:
        wanted = ("IPC_375", "IPC_379")
        result = searcher.search(SearchRequest("punishment", top_k=10, doc_ids=wanted))
        assert {s.chunk.doc_id for s in result.chunks} == set(wanted)

    def test_search_act_and_doc_filters_must_both_hold(self, searcher: Searcher) -> None:
        request = SearchRequest("theft", top_k=10, acts=("CRPC",), doc_ids=("IPC_378",))
        assert searcher.search(request).chunks == []

    def test_search_unknown_filter_values_match_nothing(self, searcher: Searcher) -> None:
        # The edge reports unknown values (convert.py); a domain caller's filter just matches.
        result = searcher.search(SearchRequest("theft", acts=("XYZ",), doc_ids=("IPC_378",)))
        assert result.chunks == []


class TestRequestInvariants:
    def test_request_breaking_its_rules_is_never_built(self) -> None:
        with pytest.raises(InvalidInputError) as info:
            SearchRequest(
                " ",
                top_k=0,
                min_score=float("nan"),
                stages=StageSwitches(dense=False, lexical=False),
                acts=("IPC",) * 101,
            )
        assert {v.field for v in info.value.violations} == {
            "query",
            "top_k",
            "min_score",
            "stages",
            "filters.acts",
        }

    def test_request_within_the_limits_is_built(self) -> None:
        assert SearchRequest("theft", top_k=100).top_k == 100
        assert SearchRequest("theft", acts=("I" * 256,), doc_ids=("D" * 256,)).acts

    def test_request_filter_value_longer_than_an_id_is_never_built(self) -> None:
        with pytest.raises(InvalidInputError) as info:
            SearchRequest("theft", acts=("IPC", "I" * 1_000_000), doc_ids=("D" * 257,))
        assert [(v.field, v.description) for v in info.value.violations] == [
            ("filters.acts[1]", "must be at most 256 characters (got 1,000,000)"),
            ("filters.doc_ids[0]", "must be at most 256 characters (got 257)"),
        ]


class TestStageSwitches:
    @pytest.mark.parametrize("stage", ["dense", "lexical", "expansion", "rerank", "aggregation"])
    def test_search_stage_switched_off_does_not_run(self, stage: str) -> None:
        encoder = HashingEncoder()
        searcher = make_searcher(encoder=encoder)
        stages = dataclasses.replace(ALL_ON, cache=False, **{stage: False})
        query = "What is the punishment for theft?"
        result = searcher.search(SearchRequest(query, top_k=5, stages=stages))
        on = {"dense", "lexical", "expansion", "rerank", "aggregation"} - {stage}
        expected = on | ({"fusion"} if {"dense", "lexical"} <= on else set())
        assert ran(result) == expected
        scores = [s.stages for s in result.chunks if s.stages.dense or s.stages.lexical]
        assert scores, "no chunk carries first-stage scores"
        if stage == "dense":
            assert encoder.calls == 0
            assert all(s.stages.dense is None and s.stages.fused is None for s in result.chunks)
        if stage == "lexical":
            assert all(s.stages.lexical is None and s.stages.fused is None for s in result.chunks)
        if stage == "expansion":
            assert result.expanded_queries == []
        else:
            assert result.expanded_queries
        if stage == "rerank":
            assert all(s.stages.rerank is None for s in result.chunks)
        else:
            assert all(s.stages.rerank is not None for s in result.chunks)

    def test_search_all_stages_on_reports_every_stage(self) -> None:
        result = make_searcher(cache=DictCache()).search(
            SearchRequest("punishment for theft", stages=ALL_ON)
        )
        assert [t.stage for t in result.timings] == list(STAGES)
        assert ran(result) == set(STAGES)
        assert all(t.duration_ms > 0 for t in result.timings)
        fused = [s for s in result.chunks if s.stages.fused is not None]
        assert fused and all(s.stages.dense is not None or s.stages.lexical for s in fused)

    def test_search_stages_not_run_report_zero_time(self, searcher: Searcher) -> None:
        stages = StageSwitches(dense=False, lexical=True, aggregation=False, cache=False)
        result = searcher.search(SearchRequest("theft", stages=stages))
        idle = [t for t in result.timings if not t.ran]
        assert {t.stage for t in idle} == {
            "cache",
            "dense",
            "expansion",
            "fusion",
            "rerank",
            "aggregation",
        }
        assert all(t.duration_ms == 0 for t in idle)

    def test_search_dense_and_lexical_both_off_is_rejected(self) -> None:
        with pytest.raises(InvalidInputError) as info:
            SearchRequest("theft", stages=StageSwitches(dense=False, lexical=False))
        assert [v.field for v in info.value.violations] == ["stages"]

    def test_search_cache_switch_off_skips_the_cache(self) -> None:
        cache = DictCache()
        searcher = make_searcher(cache=cache)
        result = searcher.search(SearchRequest("theft", stages=StageSwitches(cache=False)))
        assert cache.gets == [] and cache.sets == []
        assert "cache" not in ran(result)

    def test_search_second_identical_request_is_a_cache_hit(self) -> None:
        cache = DictCache()
        encoder = HashingEncoder()
        searcher = make_searcher(cache=cache, encoder=encoder)
        first = searcher.search(SearchRequest("punishment for theft"))
        calls = encoder.calls
        second = searcher.search(SearchRequest("  punishment   for theft "))
        assert (first.cache_hit, second.cache_hit) == (False, True)
        assert second.chunks == first.chunks
        assert encoder.calls == calls
        assert ran(second) == {"cache"}

    def test_search_default_switches_leave_expansion_and_rerank_off(self) -> None:
        # The measured defaults (docs/RETRIEVAL.md); flipping one must be a deliberate change.
        defaults = StageSwitches()
        assert (defaults.dense, defaults.lexical, defaults.aggregation, defaults.cache) == (
            True,
            True,
            True,
            True,
        )
        assert (defaults.expansion, defaults.rerank) == (False, False)


class TestCacheEntries:
    """A hit is rebuilt from the index: the entry gives passage ids and scores, never text, and
    an entry a search of the request could not have written is refused (a miss, recomputed)."""

    REQUEST = SearchRequest("punishment for theft", top_k=3)

    def cached(self) -> tuple[Searcher, DictCache, str, SearchResult]:
        cache = DictCache()
        searcher = make_searcher(cache=cache)
        first = searcher.search(self.REQUEST)
        (key,) = cache.entries
        return searcher, cache, key, first

    def test_cache_entry_holds_ids_and_scores_not_text(self) -> None:
        _, cache, key, first = self.cached()
        entry = cache.entries[key]
        assert [p.semantic_id for p in entry.passages] == [
            s.chunk.semantic_id for s in first.chunks
        ]
        assert [p.score for p in entry.passages] == [s.score for s in first.chunks]
        assert not hasattr(entry.passages[0], "chunk") and not hasattr(entry, "chunks")

    def test_cache_hit_takes_each_passage_from_the_index(self) -> None:
        searcher, cache, key, _ = self.cached()
        index = {c.semantic_id: c for c in statute_chunks()}
        # An entry rewritten to name another indexed passage: served with the index's text.
        cache.entries[key] = dataclasses.replace(
            cache.entries[key], passages=(CachedPassage("IPC_379_0", 0.5, StageScores()),)
        )
        hit = searcher.search(self.REQUEST)
        assert hit.cache_hit
        assert [s.chunk for s in hit.chunks] == [index["IPC_379_0"]]
        assert "three years" in hit.chunks[0].chunk.text

    @pytest.mark.parametrize(
        ("passages", "why"),
        [
            ((CachedPassage("IPC_379_9", 0.9, StageScores()),), "not in this index"),
            ((CachedPassage("X" * 10_000, 0.9, StageScores()),), "not in this index"),
            (
                (
                    CachedPassage("IPC_379_0", 0.9, StageScores()),
                    CachedPassage("IPC_379_0", 0.8, StageScores()),
                ),
                "twice",
            ),
            (
                tuple(CachedPassage(c.semantic_id, 0.5, StageScores()) for c in statute_chunks()),
                "for top_k 3",
            ),
            ((CachedPassage("IPC_379_0", float("nan"), StageScores()),), "not a finite score"),
        ],
    )
    def test_cache_entry_the_search_could_not_have_written_is_a_miss(
        self, passages: tuple[CachedPassage, ...], why: str
    ) -> None:
        searcher, cache, key, first = self.cached()
        cache.entries[key] = dataclasses.replace(cache.entries[key], passages=passages)
        result = searcher.search(self.REQUEST)
        assert not result.cache_hit
        assert len(cache.refused) == 1 and why in cache.refused[0]
        assert len(cache.refused[0]) < 200  # a forged id is not echoed whole
        assert result.chunks == first.chunks  # recomputed from the index
        assert cache.entries[key] == CachedResult.of(first)  # and the entry replaced

    def test_cache_entry_outside_the_filters_or_below_min_score_is_a_miss(self) -> None:
        cache = DictCache()
        searcher = make_searcher(cache=cache)
        for request in (
            SearchRequest("punishment for theft", acts=("CRPC",)),
            SearchRequest("punishment for theft", doc_ids=("IPC_378",)),
            SearchRequest("punishment for theft", min_score=0.01),
        ):
            searcher.search(request)
            key = cache.sets[-1]
            low = CachedPassage("IPC_379_0", 0.001, StageScores())
            cache.entries[key] = dataclasses.replace(cache.entries[key], passages=(low,))
            assert not searcher.search(request).cache_hit
        assert len(cache.refused) == 3
        assert "outside the request's filters" in cache.refused[0]
        assert "outside the request's filters" in cache.refused[1]
        assert "not a finite score >= min_score 0.01" in cache.refused[2]


class TestLongQueries:
    """A query longer than the encoder's input is read in windows that cover all of it: each
    window is encoded, and a chunk's dense score is its best window's."""

    DENSE = StageSwitches(dense=True, lexical=False, aggregation=False, rerank=False, cache=False)
    HEAD, TAIL = "custody of seized property", "theft dishonestly moveable property"

    def dense_scores(self, encoder: HashingEncoder, query: str) -> dict[str, float | None]:
        result = make_searcher(encoder=encoder).search(
            SearchRequest(query, top_k=50, stages=self.DENSE)
        )
        return {s.chunk.semantic_id: s.stages.dense for s in result.chunks}

    def test_every_window_is_encoded_and_a_chunk_scores_its_best(self) -> None:
        windowed = HashingEncoder(window_words=4)
        scores = self.dense_scores(windowed, f"{self.HEAD} {self.TAIL}")

        assert windowed.encoded[-2:] == [self.HEAD, self.TAIL]
        head = self.dense_scores(HashingEncoder(), self.HEAD)
        tail = self.dense_scores(HashingEncoder(), self.TAIL)
        best = {i: max(x for x in (head.get(i), tail.get(i)) if x is not None) for i in scores}
        assert scores == pytest.approx(best)
        assert list(scores.values()) == sorted(scores.values(), reverse=True)  # rank order
        # The tail, which a model cut at its window would never read, decides the top chunk.
        assert next(iter(scores)) == next(iter(tail))

    def test_a_query_that_fits_is_encoded_once_as_it_is(self) -> None:
        windowed = HashingEncoder(window_words=40)
        assert self.dense_scores(windowed, self.TAIL) == self.dense_scores(
            HashingEncoder(), self.TAIL
        )
        assert windowed.encoded[-1:] == [self.TAIL]


class TestMinScore:
    def test_search_min_score_drops_lower_scores(self, searcher: Searcher) -> None:
        unfiltered = searcher.search(SearchRequest("punishment for theft", top_k=10))
        threshold = unfiltered.chunks[2].score
        result = searcher.search(
            SearchRequest("punishment for theft", top_k=10, min_score=threshold)
        )
        assert result.chunks
        assert all(s.score >= threshold for s in result.chunks)
        assert len(result.chunks) < len(unfiltered.chunks)

    def test_search_min_score_above_every_score_returns_nothing(self, searcher: Searcher) -> None:
        result = searcher.search(SearchRequest("theft", min_score=100.0))
        assert result.chunks == []

    def test_search_min_score_keeps_only_named_provision(self, searcher: Searcher) -> None:
        # Unnamed chunks score within 0..1; the section boost lifts named ones above 1.
        result = searcher.search(SearchRequest("s. 302 IPC", top_k=10, min_score=1.0))
        assert [s.chunk.doc_id for s in result.chunks] == ["IPC_302"]


class TestAggregation:
    def test_search_aggregation_caps_chunks_per_document(self) -> None:
        searcher = make_searcher(settings=SearchSettings(per_doc_cap=2, sibling_ratio=0.0))
        result = searcher.search(SearchRequest("consent rape fear death", top_k=10))
        per_doc: dict[str, int] = {}
        for s in result.chunks:
            per_doc[s.chunk.doc_id] = per_doc.get(s.chunk.doc_id, 0) + 1
        assert per_doc["IPC_375"] == 2
        assert max(per_doc.values()) == 2

    def test_search_aggregation_returns_a_document_in_sentence_order(self) -> None:
        searcher = make_searcher(settings=SearchSettings(per_doc_cap=3, sibling_ratio=0.0))
        result = searcher.search(SearchRequest("consent rape fear death", top_k=10))
        rape = [i for i, s in enumerate(result.chunks) if s.chunk.doc_id == "IPC_375"]
        assert len(rape) == 3
        assert rape == list(range(rape[0], rape[0] + 3)), "a document's chunks are contiguous"
        indexes = [result.chunks[i].chunk.sentence_index for i in rape]
        assert indexes == sorted(indexes)

    def test_search_without_aggregation_keeps_rank_order(self) -> None:
        searcher = make_searcher(settings=SearchSettings(per_doc_cap=1))
        stages = StageSwitches(aggregation=False)
        result = searcher.search(SearchRequest("consent rape fear death", top_k=10, stages=stages))
        scores = [s.score for s in result.chunks]
        assert scores == sorted(scores, reverse=True)
        assert sum(s.chunk.doc_id == "IPC_375" for s in result.chunks) > 1


class TestRerankSlate:
    @pytest.mark.parametrize(("top_k", "slate"), [(1, 20), (5, 20), (20, 20), (30, 30)])
    def test_search_rerank_slate_is_max_of_top_k_and_20(self, top_k: int, slate: int) -> None:
        reranker = SpyReranker()
        searcher = make_searcher([*statute_chunks(), *filler_chunks(60)], reranker=reranker)
        stages = StageSwitches(rerank=True, cache=False)
        searcher.search(SearchRequest("property held in trust", top_k=top_k, stages=stages))
        assert reranker.slates == [slate]

    def test_search_rerank_can_reorder_the_slate(self) -> None:
        base = make_searcher(reranker=None)
        query = "whoever commits theft shall be punished"
        off = base.search(SearchRequest(query, top_k=5, stages=StageSwitches(aggregation=False)))
        on = base.search(
            SearchRequest(query, top_k=5, stages=StageSwitches(aggregation=False, rerank=True))
        )
        assert base.reranker_name == HeuristicReranker.name
        assert all(s.stages.rerank == s.score for s in on.chunks)
        assert [s.score for s in on.chunks] != [s.score for s in off.chunks]


class TestDeadline:
    def test_search_past_deadline_stops_before_dense(self) -> None:
        cache = DictCache()
        encoder = HashingEncoder()
        searcher = make_searcher(cache=cache, encoder=encoder)
        with pytest.raises(DeadlineExceededError) as info:
            searcher.search(SearchRequest("theft"), deadline=time.monotonic() - 0.001)
        assert info.value.metadata == {"stage": "dense"}
        assert encoder.calls == 0
        assert cache.sets == []

    def test_search_deadline_passing_during_dense_stops_before_lexical(self) -> None:
        cache = DictCache()
        searcher = make_searcher(cache=cache, encoder=SlowEncoder(delay_s=0.05))
        with pytest.raises(DeadlineExceededError) as info:
            searcher.search(SearchRequest("theft"), deadline=time.monotonic() + 0.01)
        assert info.value.metadata == {"stage": "lexical"}
        assert cache.sets == [], "an abandoned search must not finish and fill the cache"

    def test_search_with_time_left_completes(self) -> None:
        searcher = make_searcher(encoder=SlowEncoder(delay_s=0.001))
        result = searcher.search(SearchRequest("theft"), deadline=time.monotonic() + 30)
        assert result.chunks


class TestBlankQuery:
    @pytest.mark.parametrize("query", ["", " \t", "\x00", "\u200b"])
    def test_a_query_with_nothing_visible_is_empty(self, query: str) -> None:
        with pytest.raises(InvalidInputError) as info:
            make_searcher().search(SearchRequest(query))
        assert [(v.field, v.description) for v in info.value.violations] == [("query", NOT_BLANK)]


class TestRerankUnderDeadline:
    def test_rerank_expected_to_overrun_the_deadline_is_skipped_and_said(self) -> None:
        cache = DictCache()
        reranker = SpyReranker()
        searcher = make_searcher(cache=cache, reranker=reranker)
        request = SearchRequest("theft", stages=ALL_ON)
        searcher.search(request)  # measures the rerank's cost
        assert len(reranker.slates) == 1 and searcher._rerank_cost.ms_per_item > 0
        searcher._rerank_cost.ms_per_item = 10_000.0  # a reranker far slower than the deadline
        cache.entries.clear()
        cache.sets.clear()

        result = searcher.search(request, deadline=time.monotonic() + 30)

        assert result.chunks, "answered without rerank rather than not at all"
        (rerank,) = [t for t in result.timings if t.stage == "rerank"]
        assert not rerank.ran and rerank.skipped is StageSkip.DEADLINE
        assert len(reranker.slates) == 1, "the reranker was not called again"
        assert all(s.stages.rerank is None for s in result.chunks)
        assert cache.sets == [], "a result without its rerank must not be cached"

    def test_a_query_too_long_for_the_rerank_model_keeps_the_fused_order_and_says_so(
        self,
    ) -> None:
        class TooLong(SpyReranker):
            def score(
                self, analysis: QueryAnalysis, chunks: Sequence[Chunk], prior: Sequence[float]
            ) -> Scores:
                super().score(analysis, chunks, prior)
                raise TooLongForModelError("the question leaves no room for evidence")

        cache = DictCache()
        request = SearchRequest("theft", stages=ALL_ON)
        no_rerank = StageSwitches(
            dense=True, lexical=True, expansion=True, rerank=False, aggregation=True, cache=True
        )
        fused = make_searcher(cache=DictCache()).search(SearchRequest("theft", stages=no_rerank))
        result = make_searcher(cache=cache, reranker=TooLong()).search(request)

        (rerank,) = [t for t in result.timings if t.stage == "rerank"]
        assert not rerank.ran and rerank.skipped is StageSkip.QUERY_TOO_LONG
        assert [c.chunk.semantic_id for c in result.chunks] == [
            c.chunk.semantic_id for c in fused.chunks
        ]
        assert all(s.stages.rerank is None for s in result.chunks)

    def test_rerank_runs_without_a_deadline_or_with_time_for_it(self) -> None:
        reranker = SpyReranker()
        searcher = make_searcher(cache=DictCache(), reranker=reranker)
        request = SearchRequest("theft", stages=ALL_ON)
        searcher._rerank_cost.ms_per_item = 10_000.0
        unbounded = searcher.search(request)
        searcher._rerank_cost.ms_per_item = 0.01
        roomy = searcher.search(
            SearchRequest("theft", stages=ALL_ON, top_k=3), deadline=time.monotonic() + 30
        )
        for result in (unbounded, roomy):
            (rerank,) = [t for t in result.timings if t.stage == "rerank"]
            assert rerank.ran and rerank.skipped is None
        assert len(reranker.slates) == 2

    def test_cost_estimate_starts_at_the_first_measurement_then_averages(self) -> None:
        cost = _CostEstimate(weight=0.5)
        assert cost.expected_s(20) == 0.0  # unknown: never a reason to skip
        cost.update(40.0, 20)
        assert cost.ms_per_item == 2.0
        cost.update(80.0, 20)
        assert cost.ms_per_item == 3.0 and cost.expected_s(10) == 0.03


class TestCacheKey:
    BASE = SearchRequest("punishment for theft", top_k=5)

    @pytest.mark.parametrize(
        "change",
        [
            {"query": "punishment for murder"},
            {"top_k": 6},
            {"acts": ("IPC",)},
            {"doc_ids": ("IPC_379",)},
            {"min_score": 0.5},
            {"stages": StageSwitches(dense=False)},
            {"stages": StageSwitches(lexical=False)},
            {"stages": StageSwitches(expansion=True)},
            {"stages": StageSwitches(rerank=True)},
            {"stages": StageSwitches(aggregation=False)},
        ],
        ids=lambda change: ",".join(f"{k}={v}" for k, v in change.items()),
    )
    def test_cache_key_changes_with_every_result_changing_parameter(
        self, change: dict[str, object]
    ) -> None:
        changed = dataclasses.replace(self.BASE, **change)  # type: ignore[arg-type]
        assert cache_key(changed, "v1") != cache_key(self.BASE, "v1")

    def test_cache_key_changes_with_index_version(self) -> None:
        assert cache_key(self.BASE, "v1") != cache_key(self.BASE, "v2")

    def test_cache_key_changes_with_tokenizer_version(
        self, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        # BM25 is rebuilt at every start, but cached results computed with other tokens are not.
        first = cache_key(self.BASE, "v1")
        monkeypatch.setattr(search, "TOKENIZER_VERSION", search.TOKENIZER_VERSION + 1)
        assert cache_key(self.BASE, "v1") != first

    def test_cache_key_changes_with_search_settings(self) -> None:
        first = cache_key(self.BASE, "v1", settings=SearchSettings())
        second = cache_key(self.BASE, "v1", settings=SearchSettings(rrf_k=10))
        assert first != second

    def test_cache_key_ignores_default_stages_setting(self) -> None:
        first = cache_key(self.BASE, "v1", settings=SearchSettings())
        other = SearchSettings(default_stages=StageSwitches(rerank=True))
        assert cache_key(self.BASE, "v1", settings=other) == first

    def test_cache_key_same_for_equivalent_requests(self) -> None:
        a = SearchRequest(" punishment   for\ttheft ", acts=("IPC", "CRPC"), doc_ids=("b", "a"))
        b = SearchRequest("punishment for theft", acts=("CRPC", "IPC", "IPC"), doc_ids=("a", "b"))
        assert cache_key(a, "v1") == cache_key(b, "v1")

    def test_cache_key_ignores_the_cache_switch(self) -> None:
        off = dataclasses.replace(self.BASE, stages=StageSwitches(cache=False))
        assert cache_key(off, "v1") == cache_key(self.BASE, "v1")

    def test_cache_key_is_case_sensitive(self) -> None:
        lower = dataclasses.replace(self.BASE, query="section 420 ipc")
        upper = dataclasses.replace(self.BASE, query="section 420 IPC")
        assert cache_key(lower, "v1") != cache_key(upper, "v1")


def test_scored_chunks_carry_full_provenance(searcher: Searcher) -> None:
    result = searcher.search(SearchRequest("Article 21A", top_k=1))
    [top] = result.chunks
    assert isinstance(top, ScoredChunk)
    assert top.chunk == next(c for c in statute_chunks() if c.semantic_id == "COI_21A_0")
    assert result.index_version == searcher.index_version

"""Evaluation metrics: pure functions over items and outcomes, each with n and a 95 % CI.

A proportion (every item counts 0 or 1 over a denominator of 1: refusal rates, gold document
cited, errors) gets a Wilson score interval (``evaluation.stats.wilson``); any other ratio over
items (citation precision and recall, whose items carry several units; recall@k, nDCG) and the
latency percentiles get a percentile bootstrap over items.
"""

from __future__ import annotations

import math
import re
import string
import unicodedata
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt

from evaluation.clean import CleanSubset
from evaluation.matching import text_overlaps
from evaluation.records import Citation, EvalItem, GoldEvidence, Outcome, RunInfo, Status, doc_id_of
from evaluation.stats import wilson
from services.common.validation import Verdict

RECALL_KS = (1, 5, 10)
NDCG_K = 10
LATENCY_QUANTILES = (50, 95)

# The figures the summary table and the bar plot show, in this order.
HEADLINE = (
    "citation_precision",
    "citation_recall",
    "gold_doc_cite_rate",
    "invalid_citation_rate",
    "multi_doc_completeness",
    "correct_refusal_rate",
    "false_refusal_rate",
    "answer_em",
    "answer_f1",
    "answer_containment",
    "retrieval_doc_recall@10",
    "retrieval_doc_ndcg@10",
    "validator_pass_rate",
    "error_rate",
)

_CITATION_MARK = re.compile(r"\[[^\[\]]*\]")
_ARTICLES = re.compile(r"\b(a|an|the)\b", re.UNICODE)
_PUNCT = set(string.punctuation)
_PASSING = (Verdict.GROUNDED.value, Verdict.REFUSAL.value)

FloatArray = npt.NDArray[np.float64]


@dataclass(frozen=True, slots=True)
class BootstrapConfig:
    """Percentile bootstrap over items: ``resamples`` draws with replacement, fixed ``seed``.

    ``confidence`` is also the level of the Wilson intervals of proportions.
    """

    resamples: int = 2000
    seed: int = 20240601
    confidence: float = 0.95


@dataclass(frozen=True, slots=True)
class Metric:
    """One figure: ``value`` over ``n`` units (``unit``) from ``n_items`` items, with its CI.

    ``value`` is None only when nothing could be measured (``n == 0``); the CI is None then too.
    ``ci_method``: ``wilson`` (a proportion: every item 0 or 1 of 1), ``wilson (items)`` (a ratio
    that is 0, or 1, in every item, where no resample can differ: Wilson over those items),
    ``bootstrap`` (percentile bootstrap over items), or empty with no CI.
    """

    name: str
    value: float | None
    n: int
    unit: str
    n_items: int
    ci_low: float | None
    ci_high: float | None
    ci_method: str = ""


@dataclass(frozen=True, slots=True)
class ItemScore:
    """Per-item facts every aggregate is computed from (also written to the JSON report)."""

    item_id: str
    subset: str
    answerable: bool
    status: str
    error: str | None
    refusal_reason: str | None
    n_citations: int
    n_invalid: int
    n_supporting: int
    gold_size: int
    gold_hit: int
    cites_gold_doc: bool
    multi_doc: bool
    complete: bool | None
    invalid_citations: tuple[str, ...]
    em: float | None
    f1: float | None
    contains: bool | None
    doc_recall: dict[int, float] | None
    doc_ndcg: float | None
    sentence_recall: dict[int, float] | None
    sentence_ndcg: float | None
    validator: str | None
    latency_ms: dict[str, float] = field(default_factory=dict)
    # The answerability model's best score and its effect ("", "vetoed", "rescued"), when it ran.
    answerability: float | None = None
    answerability_effect: str = ""
    synthesis_mode: bool = False


@dataclass(frozen=True, slots=True)
class Report:
    """Scores of one run: headline metrics, the same per subset, per-item facts and error counts."""

    n_items: int
    metrics: dict[str, Metric]
    subsets: dict[str, dict[str, Metric]]
    items: tuple[ItemScore, ...]
    errors: dict[str, int]
    bootstrap: BootstrapConfig
    run: RunInfo | None = None
    # Refusal reasons counted separately for answerable (false) and unanswerable (correct) items.
    refusal_reasons: dict[str, dict[str, int]] = field(default_factory=dict)
    # For a split set (RunInfo.tuning "mixed"): the same metrics per half, "tune" (even crc32)
    # and "report" (odd crc32), and where the register gives one (evaluation.clean), "clean"
    # (the report half less every item read), "clean_no_twin" (less near-twins of read
    # questions) and "clean_unshared" (less those sharing a source document with a read one
    # too). What each is labelled comes from the register (Tuning.half_label).
    halves: dict[str, dict[str, Metric]] = field(default_factory=dict)
    # Sizes of the clean subset (CleanSubset.counts): clean, twin, shared_source, ...
    clean_counts: dict[str, int] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict."""
        return asdict(self)


# ------------------------------------------------------------------------- answer correctness


def strip_citations(answer: str) -> str:
    """Answer text without bracketed citation markers such as ``[IPC_420_0]``."""
    return _CITATION_MARK.sub(" ", answer)


def answer_claims(answer: str) -> str:
    """What an answer states, for scoring it against gold answers: citations removed, and the
    headings of a synthesis-mode answer too (a line ending in ":" that cites nothing names a
    source, such as "IPC section 379:" (a statute) or a document title (another source), and states
    nothing)."""
    kept = [
        line
        for line in answer.split("\n")
        if not (line.rstrip().endswith(":") and not _CITATION_MARK.search(line))
    ]
    return strip_citations("\n".join(kept))


def normalize_answer(text: str) -> str:
    """Official SQuAD normalisation: lowercase, drop punctuation and a/an/the, fix whitespace."""
    text = "".join(ch for ch in text.lower() if ch not in _PUNCT)
    return " ".join(_ARTICLES.sub(" ", text).split())


def exact_match(prediction: str, gold: str) -> float:
    """SQuAD exact match (1.0 or 0.0) after normalisation."""
    return float(normalize_answer(prediction) == normalize_answer(gold))


def f1_score(prediction: str, gold: str) -> float:
    """SQuAD token F1 after normalisation (1.0 when both are empty, 0.0 when only one is)."""
    pred, ref = normalize_answer(prediction).split(), normalize_answer(gold).split()
    if not pred or not ref:
        return float(pred == ref)
    same = sum((Counter(pred) & Counter(ref)).values())
    if same == 0:
        return 0.0
    precision, recall = same / len(pred), same / len(ref)
    return 2 * precision * recall / (precision + recall)


def _containment_form(text: str) -> str:
    # Like the SQuAD normalisation, but every Unicode punctuation mark is dropped, not only ASCII
    # ones, so curly quotes in the corpus ("person’s") compare equal to straight ones.
    kept = "".join(ch for ch in text.lower() if not unicodedata.category(ch).startswith("P"))
    return " ".join(_ARTICLES.sub(" ", kept).split())


def contains_answer(prediction: str, gold: str) -> bool:
    """True when the normalised gold answer occurs in the normalised prediction, on word bounds."""
    needle = _containment_form(gold)
    return bool(needle) and f" {needle} " in f" {_containment_form(prediction)} "


# --------------------------------------------------------------------------------- retrieval


def dcg(relevances: Sequence[float]) -> float:
    """Discounted cumulative gain with the log2(rank + 1) discount, ranks from 1."""
    return sum(rel / math.log2(rank + 2) for rank, rel in enumerate(relevances))


def ndcg(relevances: Sequence[float], n_relevant: int, k: int = NDCG_K) -> float:
    """Binary nDCG@k: DCG of the first k relevances over the DCG of ``min(n_relevant, k)`` hits."""
    ideal = dcg([1.0] * min(n_relevant, k))
    return dcg(list(relevances)[:k]) / ideal if ideal > 0 else 0.0


def _doc_relevances(retrieved_ids: Sequence[str], gold_docs: set[str]) -> list[float]:
    # Each gold document earns credit once, at the rank of its first retrieved chunk.
    credited: set[str] = set()
    relevances: list[float] = []
    for chunk_id in retrieved_ids:
        doc = doc_id_of(chunk_id)
        hit = doc in gold_docs and doc not in credited
        credited.add(doc)
        relevances.append(1.0 if hit else 0.0)
    return relevances


def _sentence_relevances(
    retrieved: Sequence[tuple[str, str]], gold: Sequence[GoldEvidence]
) -> list[float]:
    # Each gold sentence earns credit once, so a finer split cannot push nDCG above 1.
    credited: set[int] = set()
    relevances: list[float] = []
    for chunk_id, text in retrieved:
        doc = doc_id_of(chunk_id)
        match = next(
            (
                i
                for i, g in enumerate(gold)
                if i not in credited and g.doc_id == doc and text_overlaps(text, g.text)
            ),
            None,
        )
        if match is not None:
            credited.add(match)
        relevances.append(0.0 if match is None else 1.0)
    return relevances


Located = tuple[str, str]  # (document id, chunk text)


def _covered_by(chunks: Sequence[Located]) -> Callable[[GoldEvidence], bool]:
    """Predicate: is a gold sentence matched by one of ``chunks`` (same document, text overlap)?"""

    def covered(gold: GoldEvidence) -> bool:
        return any(doc == gold.doc_id and text_overlaps(text, gold.text) for doc, text in chunks)

    return covered


def _best_group(
    groups: dict[int, tuple[GoldEvidence, ...]], hit: Callable[[GoldEvidence], bool]
) -> tuple[int, int]:
    """(hits, size) of the gold group with the highest hit fraction (ties: more hits, first)."""
    best: tuple[float, int, int] = (-1.0, 0, 0)
    for members in groups.values():
        hits = sum(1 for g in members if hit(g))
        if (hits / len(members), hits) > best[:2]:
            best = (hits / len(members), hits, len(members))
    return best[1], best[2]


# ------------------------------------------------------------------------------ item scoring


def _unique_gold(item: EvalItem) -> list[GoldEvidence]:
    return list(dict.fromkeys(GoldEvidence(g.doc_id, g.text) for g in item.gold))


@dataclass(frozen=True, slots=True)
class _CitationFacts:
    n_citations: int
    n_invalid: int
    n_supporting: int
    gold_hit: int
    gold_size: int
    cites_gold_doc: bool
    multi_doc: bool
    complete: bool | None


def _citation_facts(
    item: EvalItem, citations: Sequence[Citation], answered: bool
) -> _CitationFacts:
    valid = [(c.document, c.text) for c in citations if c.text is not None]
    groups = item.gold_groups()
    cited = _covered_by(valid)
    n_supporting = sum(1 for chunk in valid if any(map(_covered_by([chunk]), item.gold)))
    gold_hit, gold_size = _best_group(groups, cited) if groups else (0, 0)
    multi_doc = bool(groups) and all(len({g.doc_id for g in m}) >= 2 for m in groups.values())
    complete = None
    if multi_doc and answered:
        # Complete: some gold group has at least one cited sentence in every one of its documents.
        complete = any(
            {g.doc_id for g in members} == {g.doc_id for g in members if cited(g)}
            for members in groups.values()
        )
    return _CitationFacts(
        n_citations=len(citations),
        n_invalid=len(citations) - len(valid),
        n_supporting=n_supporting,
        gold_hit=gold_hit,
        gold_size=gold_size,
        cites_gold_doc=bool(set(item.gold_doc_ids) & {doc for doc, _ in valid}),
        multi_doc=multi_doc,
        complete=complete,
    )


def _answer_facts(item: EvalItem, answer: str) -> tuple[float | None, float | None, bool]:
    """(EM, F1, containment); EM and F1 only for ``answer_match == "any"`` (SQuAD-style) items."""
    text = answer_claims(answer)
    if item.answer_match == "all":
        return None, None, all(contains_answer(text, g) for g in item.gold_answers)
    return (
        max(exact_match(text, g) for g in item.gold_answers),
        max(f1_score(text, g) for g in item.gold_answers),
        any(contains_answer(text, g) for g in item.gold_answers),
    )


@dataclass(frozen=True, slots=True)
class _RetrievalFacts:
    doc_recall: dict[int, float]
    doc_ndcg: float
    sentence_recall: dict[int, float] | None
    sentence_ndcg: float | None


def _retrieval_facts(item: EvalItem, outcome: Outcome) -> _RetrievalFacts:
    gold_docs = set(item.gold_doc_ids)
    ranked = list(outcome.retrieved_ids)
    doc_recall = {
        k: len(gold_docs & {doc_id_of(c) for c in ranked[:k]}) / len(gold_docs) for k in RECALL_KS
    }
    doc_ndcg = ndcg(_doc_relevances(ranked, gold_docs), len(gold_docs))
    if not outcome.retrieved_texts or len(outcome.retrieved_texts) != len(ranked):
        return _RetrievalFacts(doc_recall, doc_ndcg, None, None)
    pairs = list(zip(ranked, outcome.retrieved_texts, strict=True))
    groups = item.gold_groups()
    sentence_recall: dict[int, float] = {}
    for k in RECALL_KS:
        hits, size = _best_group(groups, _covered_by([(doc_id_of(c), t) for c, t in pairs[:k]]))
        sentence_recall[k] = hits / size
    unique = _unique_gold(item)
    sentence_ndcg = ndcg(_sentence_relevances(pairs, unique), len(unique))
    return _RetrievalFacts(doc_recall, doc_ndcg, sentence_recall, sentence_ndcg)


def score_item(item: EvalItem, outcome: Outcome) -> ItemScore:
    """All per-item facts for one item and its outcome."""
    answered = outcome.status is Status.ANSWERED
    cites = _citation_facts(item, outcome.citations if answered else (), answered)
    em = f1 = None
    contains = None
    if answered and item.answerable and item.gold_answers:
        em, f1, contains = _answer_facts(item, outcome.answer)
    retrieval = _retrieval_facts(item, outcome) if item.answerable and item.gold else None
    return ItemScore(
        item_id=item.item_id,
        subset=item.subset,
        answerable=item.answerable,
        status=outcome.status.value,
        error=outcome.error,
        refusal_reason=outcome.refusal_reason if outcome.status is Status.REFUSED else None,
        answerability=outcome.answerability,
        answerability_effect=outcome.answerability_effect,
        synthesis_mode=outcome.synthesis_mode,
        n_citations=cites.n_citations,
        n_invalid=cites.n_invalid,
        n_supporting=cites.n_supporting,
        gold_size=cites.gold_size,
        gold_hit=cites.gold_hit,
        cites_gold_doc=cites.cites_gold_doc,
        multi_doc=cites.multi_doc,
        complete=cites.complete,
        invalid_citations=tuple(c.semantic_id for c in outcome.citations if not c.valid)
        if answered
        else (),
        em=em,
        f1=f1,
        contains=contains,
        doc_recall=retrieval.doc_recall if retrieval else None,
        doc_ndcg=retrieval.doc_ndcg if retrieval else None,
        sentence_recall=retrieval.sentence_recall if retrieval else None,
        sentence_ndcg=retrieval.sentence_ndcg if retrieval else None,
        validator=outcome.validator_verdict.value if outcome.validator_verdict else None,
        latency_ms=dict(outcome.latency_ms),
    )


# -------------------------------------------------------------------------------- aggregation


def bootstrap_ratio(
    numerators: FloatArray, denominators: FloatArray, config: BootstrapConfig
) -> tuple[float | None, float | None]:
    """Percentile-bootstrap CI of sum(numerators) / sum(denominators), resampling items.

    Resamples whose denominator sums to zero are skipped. Returns (None, None) when nothing can be
    measured.
    """
    n = len(numerators)
    if n == 0 or float(denominators.sum()) == 0.0:
        return None, None
    rng = np.random.default_rng(config.seed)
    index = rng.integers(0, n, size=(config.resamples, n))
    sums, dens = numerators[index].sum(axis=1), denominators[index].sum(axis=1)
    keep = dens > 0
    ratios = sums[keep] / dens[keep]
    alpha = (1.0 - config.confidence) / 2
    low, high = np.quantile(ratios, [alpha, 1.0 - alpha])
    return float(low), float(high)


def bootstrap_percentile(
    values: FloatArray, q: float, config: BootstrapConfig
) -> tuple[float | None, float | None]:
    """Percentile-bootstrap CI of the q-th percentile of ``values``."""
    if len(values) == 0:
        return None, None
    rng = np.random.default_rng(config.seed)
    index = rng.integers(0, len(values), size=(config.resamples, len(values)))
    stats = np.percentile(values[index], q, axis=1)
    alpha = (1.0 - config.confidence) / 2
    low, high = np.quantile(stats, [alpha, 1.0 - alpha])
    return float(low), float(high)


def ratio_interval(
    numerators: FloatArray, denominators: FloatArray, config: BootstrapConfig
) -> tuple[float | None, float | None, str]:
    """The CI of sum(numerators) / sum(denominators) over items, and how it was computed.

    A proportion (every denominator 1, every numerator 0 or 1) gets a Wilson interval. A ratio
    that is 0 in every item (or equals 1 in every item) cannot vary under resampling, so the
    bootstrap would collapse to a point; it gets the Wilson interval of 0 (n) of the n items
    that carry it. Anything else gets the percentile bootstrap (``bootstrap_ratio``).
    """
    carried = denominators > 0
    n_items = int(carried.sum())
    if n_items == 0:
        return None, None, ""
    if bool(np.all(denominators == 1.0)) and bool(np.all((numerators == 0) | (numerators == 1))):
        low, high = wilson(int(numerators.sum()), len(numerators), config.confidence)
        return low, high, "wilson"
    if bool(np.all(numerators[carried] == 0)):
        low, high = wilson(0, n_items, config.confidence)
        return low, high, "wilson (items)"
    if bool(np.all(numerators[carried] == denominators[carried])):
        low, high = wilson(n_items, n_items, config.confidence)
        return low, high, "wilson (items)"
    low_b, high_b = bootstrap_ratio(numerators, denominators, config)
    return low_b, high_b, "bootstrap"


def ratio_metric(
    name: str,
    unit: str,
    pairs: Sequence[tuple[float, float]],
    config: BootstrapConfig,
) -> Metric:
    """Metric sum(num) / sum(den) over per-item (num, den) pairs, with its CI (``ratio_interval``)."""
    num = np.array([p[0] for p in pairs], dtype=np.float64)
    den = np.array([p[1] for p in pairs], dtype=np.float64)
    total = float(den.sum())
    value = float(num.sum()) / total if total > 0 else None
    low, high, method = ratio_interval(num, den, config)
    return Metric(name, value, round(total), unit, len(pairs), low, high, method)


def latency_metric(name: str, values: Sequence[float], q: float, config: BootstrapConfig) -> Metric:
    """The q-th percentile of latencies in milliseconds, with a bootstrap CI."""
    array = np.array(values, dtype=np.float64)
    value = float(np.percentile(array, q)) if len(array) else None
    low, high = bootstrap_percentile(array, q, config)
    return Metric(
        name,
        value,
        len(array),
        "outcomes",
        len(array),
        low,
        high,
        "bootstrap" if len(array) else "",
    )


def _is(score: ItemScore, status: Status) -> bool:
    return score.status == status.value


def _aggregate(
    scores: Sequence[ItemScore],
    config: BootstrapConfig,
    *,
    retrieval_reported: bool,
    latency: bool,
) -> dict[str, Metric]:
    answerable = [s for s in scores if s.answerable]
    with_gold = [s for s in answerable if s.gold_size > 0]
    answered_gold = [s for s in with_gold if _is(s, Status.ANSWERED)]
    refused = Status.REFUSED

    def ratio(name: str, unit: str, pairs: Sequence[tuple[float, float]]) -> Metric:
        return ratio_metric(name, unit, pairs, config)

    metrics = [
        ratio(
            "citation_precision",
            "citations",
            [(s.n_supporting, s.n_citations) for s in answered_gold],
        ),
        ratio("citation_recall", "gold sentences", [(s.gold_hit, s.gold_size) for s in with_gold]),
        ratio(
            "gold_doc_cite_rate",
            "items",
            [(float(s.cites_gold_doc), 1.0) for s in with_gold],
        ),
        ratio(
            "citation_recall_answered",
            "gold sentences",
            [(s.gold_hit, s.gold_size) for s in answered_gold],
        ),
        ratio(
            "invalid_citation_rate",
            "citations",
            [(s.n_invalid, s.n_citations) for s in scores if _is(s, Status.ANSWERED)],
        ),
        ratio(
            "multi_doc_completeness",
            "items",
            [(float(bool(s.complete)), 1.0) for s in scores if s.complete is not None],
        ),
        # Issue 16: how often multi-document synthesis mode composed the answer, and the
        # completeness of multi-document items with and without it (an observation across
        # items, not an ablation: the mode follows from the evidence).
        ratio(
            "synthesis_mode_rate",
            "answered items",
            [(float(s.synthesis_mode), 1.0) for s in scores if _is(s, Status.ANSWERED)],
        ),
        ratio(
            "multi_doc_completeness_synthesis_mode",
            "items",
            [
                (float(bool(s.complete)), 1.0)
                for s in scores
                if s.complete is not None and s.synthesis_mode
            ],
        ),
        ratio(
            "multi_doc_completeness_single_mode",
            "items",
            [
                (float(bool(s.complete)), 1.0)
                for s in scores
                if s.complete is not None and not s.synthesis_mode
            ],
        ),
        ratio(
            "correct_refusal_rate",
            "items",
            [(float(_is(s, refused)), 1.0) for s in scores if not s.answerable],
        ),
        ratio("false_refusal_rate", "items", [(float(_is(s, refused)), 1.0) for s in answerable]),
        ratio("error_rate", "items", [(float(_is(s, Status.ERROR)), 1.0) for s in scores]),
        ratio("answer_em", "items", [(s.em, 1.0) for s in scores if s.em is not None]),
        ratio("answer_f1", "items", [(s.f1, 1.0) for s in scores if s.f1 is not None]),
        ratio(
            "answer_containment",
            "items",
            [(float(s.contains), 1.0) for s in scores if s.contains is not None],
        ),
        ratio(
            "validator_pass_rate",
            "items",
            [(float(s.validator in _PASSING), 1.0) for s in scores if s.validator is not None],
        ),
    ]
    # Retrieval figures exist only when the run reported retrieved ids at all; then an item that
    # retrieved nothing (an error, say) scores 0 rather than dropping out.
    retrieved = with_gold if retrieval_reported else []
    for k in RECALL_KS:
        metrics.append(
            ratio(
                f"retrieval_doc_recall@{k}",
                "items",
                [(s.doc_recall[k], 1.0) for s in retrieved if s.doc_recall is not None],
            )
        )
    metrics.append(
        ratio(
            f"retrieval_doc_ndcg@{NDCG_K}",
            "items",
            [(s.doc_ndcg, 1.0) for s in retrieved if s.doc_ndcg is not None],
        )
    )
    for k in RECALL_KS:
        metrics.append(
            ratio(
                f"retrieval_sentence_recall@{k}",
                "items",
                [(s.sentence_recall[k], 1.0) for s in retrieved if s.sentence_recall is not None],
            )
        )
    metrics.append(
        ratio(
            f"retrieval_sentence_ndcg@{NDCG_K}",
            "items",
            [(s.sentence_ndcg, 1.0) for s in retrieved if s.sentence_ndcg is not None],
        )
    )
    if latency:
        for stage in sorted({stage for s in scores for stage in s.latency_ms}):
            values = [s.latency_ms[stage] for s in scores if stage in s.latency_ms]
            for q in LATENCY_QUANTILES:
                metrics.append(latency_metric(f"latency_{stage}_p{q}_ms", values, q, config))
    return {m.name: m for m in metrics}


def _refusal_reasons(scores: Sequence[ItemScore]) -> dict[str, dict[str, int]]:
    reasons: dict[str, dict[str, int]] = {}
    for kind, answerable in (("answerable", True), ("unanswerable", False)):
        counts = Counter(
            s.refusal_reason or "unstated"
            for s in scores
            if s.answerable is answerable and s.status == Status.REFUSED.value
        )
        if counts:
            reasons[kind] = dict(counts.most_common())
    return reasons


def score_run(
    items: Sequence[EvalItem],
    outcomes: Sequence[Outcome],
    *,
    bootstrap: BootstrapConfig | None = None,
    run: RunInfo | None = None,
    tune_half: Callable[[str], bool] | None = None,
    clean: CleanSubset | None = None,
) -> Report:
    """Score a run: every item needs exactly one outcome (matched by item id, any order).

    With ``tune_half`` (item id → in the tune half), each half is scored on its own as well;
    with ``clean`` (evaluation.clean.clean_subset), the clean subset too.

    Outcomes with status ERROR are scored (as neither answer nor refusal) and counted by message.
    Raises ValueError when outcomes and items do not pair up, which is a harness bug.
    """
    by_id: dict[str, Outcome] = {}
    for outcome in outcomes:
        if outcome.item_id in by_id:
            raise ValueError(f"two outcomes for item {outcome.item_id}")
        by_id[outcome.item_id] = outcome
    item_ids = [item.item_id for item in items]
    if len(set(item_ids)) != len(item_ids):
        raise ValueError("item ids are not unique")
    missing = [i for i in item_ids if i not in by_id]
    extra = sorted(set(by_id) - set(item_ids))
    if missing or extra:
        raise ValueError(f"outcomes do not match items: missing {missing[:5]}, extra {extra[:5]}")
    scores = [score_item(item, by_id[item.item_id]) for item in items]
    return build_report(
        scores,
        bootstrap=bootstrap,
        run=run,
        retrieval_reported=any(o.retrieved_ids for o in outcomes),
        tune_half=tune_half,
        clean=clean,
    )


def build_report(
    scores: Sequence[ItemScore],
    *,
    bootstrap: BootstrapConfig | None = None,
    run: RunInfo | None = None,
    retrieval_reported: bool = True,
    tune_half: Callable[[str], bool] | None = None,
    clean: CleanSubset | None = None,
) -> Report:
    """Every aggregate of a run from its per-item facts (``score_run``, or a stored report's
    items: ``evaluation.rescore``)."""
    config = bootstrap or BootstrapConfig()
    subsets = sorted({s.subset for s in scores if s.subset})
    errors = Counter((s.error or "unknown error")[:200] for s in scores if s.status == "error")

    def part(kept: Sequence[ItemScore]) -> dict[str, Metric]:
        return _aggregate(kept, config, retrieval_reported=retrieval_reported, latency=False)

    halves: dict[str, dict[str, Metric]] = {}
    if tune_half is not None:
        for half in ("tune", "report"):
            halves[half] = part([s for s in scores if tune_half(s.item_id) == (half == "tune")])
    if clean is not None:
        halves["clean"] = part([s for s in scores if s.item_id in clean.ids])
        halves["clean_no_twin"] = part([s for s in scores if s.item_id in clean.no_twin_ids])
        halves["clean_unshared"] = part([s for s in scores if s.item_id in clean.unshared_ids])
    return Report(
        n_items=len(scores),
        metrics=_aggregate(scores, config, retrieval_reported=retrieval_reported, latency=True),
        subsets={name: part([s for s in scores if s.subset == name]) for name in subsets},
        items=tuple(scores),
        errors=dict(errors.most_common()),
        refusal_reasons=_refusal_reasons(scores),
        bootstrap=config,
        run=run,
        halves=halves,
        clean_counts=clean.counts() if clean is not None else {},
    )


def item_score_from_dict(data: dict[str, Any]) -> ItemScore:
    """An ItemScore back from ``report.json`` (JSON turned the recall@k keys into strings)."""
    values = dict(data)
    for key in ("doc_recall", "sentence_recall"):
        if values.get(key) is not None:
            values[key] = {int(k): float(v) for k, v in values[key].items()}
    values["invalid_citations"] = tuple(values.get("invalid_citations") or ())
    values["latency_ms"] = dict(values.get("latency_ms") or {})
    known = set(ItemScore.__dataclass_fields__)
    return ItemScore(**{k: v for k, v in values.items() if k in known})

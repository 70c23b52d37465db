"""The entailment tier: does the cited evidence entail each claim, judged by an NLI model?

For each claim the premises are the sentences of every passage it cites (plus the whole passage
and, with several citations, all of them together, where they fit the model's window). A text
longer than the window is cut into overlapping windows that together cover all of it, never
truncated. Per claim:

    verbatim sentence of a cited passage ─────────────────────────────► ENTAILED (no model call)
    max P(entailment) over premises ≥ entail_threshold ───────────────► ENTAILED
    else max P(contradiction) ≥ contradiction_threshold ─────────────► CONTRADICTED
    else ─────────────────────────────────────────────────────────────► NOT_ENTAILED

A claim longer than the window is cut into windows too, and every claim window must be entailed.

Premises are scored lazily, the one sharing most of the claim's content words first (shorter
first on a tie): once every claim window has a premise at or above the threshold that settles
it, the claim is ENTAILED and the other premises are not scored. A claim that is not settled so
has every pair scored, so the outcome is always the one exhaustive scoring gives; only the
premise an ENTAILED report names may differ (the first that settles it, not the best).
The model itself is an adapter behind ``NliModel`` (``nli_onnx.OnnxNliModel`` in service).
"""

from __future__ import annotations

import enum
import math
import re
import time
from collections.abc import Generator, Sequence
from dataclasses import dataclass
from typing import Protocol, cast

from services.common.errors import DeadlineExceededError
from services.common.language.references import ACT_PATTERN
from services.common.language.text import tokenize
from services.common.language.windows import token_windows
from services.common.memo import text_memo
from services.common.validation import EntailmentScores

ENTAILMENT, NEUTRAL, CONTRADICTION = 0, 1, 2
# A claim is judged against at most this many premises (sentences, windows, joined passages).
# More is never cut silently: the claim is then not entailed, and its report says why.
MAX_PREMISES_PER_CLAIM = 64
_SPACE = re.compile(r"\s+")


class NliModel(Protocol):
    """A 3-way NLI classifier over (premise, hypothesis) pairs."""

    name: str

    def window_tokens(self) -> int:
        """How many tokens one (premise, hypothesis) pair may hold, special tokens included."""
        ...

    def token_spans(self, text: str) -> list[tuple[int, int]]:
        """Character spans of the tokens of ``text`` (no special tokens)."""
        ...

    def predict(self, pairs: Sequence[tuple[str, str]]) -> list[tuple[float, float, float]]:
        """P(entailment), P(neutral), P(contradiction) for each (premise, hypothesis)."""
        ...


class Outcome(enum.Enum):
    ENTAILED = "entailed"
    CONTRADICTED = "contradicted"
    NOT_ENTAILED = "not_entailed"


@dataclass(frozen=True, slots=True)
class Thresholds:
    """Decision thresholds on the model's probabilities (calibrated; see docs/VALIDATOR.md)."""

    entail: float
    contradiction: float
    rescue: float  # entailment needed to accept a sentence that failed word coverage alone
    # A premise whose P(contradiction) reaches this does not entail the claim, whatever its
    # P(entailment) (None: no veto; docs/VALIDATOR.md, rule 9).
    veto: float | None = None

    def supports(self, scores: Sequence[float], at: float | None = None) -> bool:
        """Whether one premise's scores entail the claim: P(entailment) at least ``at`` (the
        entail threshold unless given) and no veto by P(contradiction)."""
        entailed = scores[ENTAILMENT] >= (self.entail if at is None else at)
        return entailed and (self.veto is None or scores[CONTRADICTION] < self.veto)


def in_time(deadline: float | None, where: str) -> None:
    """Raise ``DeadlineExceededError`` once ``deadline`` (``time.monotonic()``) has passed: a
    caller that has given up costs no more model or rule time (a review kept a validator core
    busy 26 s past a 2 s deadline). ``where``: what was left undone."""
    if deadline is not None and time.monotonic() > deadline:
        raise DeadlineExceededError(f"the caller's deadline passed {where}")


def active_veto(value: float | None) -> float | None:
    """A contradiction veto as set (a request, a setting, a manifest): 1 or more, or none, is
    no veto."""
    return None if value is None or value >= 1.0 else float(value)


@dataclass(frozen=True, slots=True)
class Premise:
    """A piece of cited evidence: ``text`` is ``passage[char_start:char_end]`` of ``semantic_id``.

    A premise that joins several passages has ``semantic_id`` set to their ids joined by "+".
    """

    semantic_id: str
    char_start: int
    char_end: int
    text: str


@dataclass(frozen=True, slots=True)
class Judgement:
    """The tier's verdict on one claim; ``scores`` go into the sentence's report as they are."""

    outcome: Outcome
    scores: EntailmentScores
    note: str = ""  # why the model could not judge (the report's detail carries it)

    @property
    def entailment(self) -> float:
        return self.scores.entailment

    @property
    def contradiction(self) -> float:
        return self.scores.contradiction


@dataclass(frozen=True, slots=True)
class Claim:
    """A claim to judge: its text (citations blanked) and the passages it cites."""

    text: str
    cited: tuple[tuple[str, str], ...]  # (semantic_id, passage text)
    # Only a score at or above this settles the claim early (a coverage rescue needs more than
    # the entail threshold); None: the entail threshold.
    settle_at: float | None = None


def flatten(text: str) -> str:
    """``text`` on one line, spaces collapsed, case folded: how quotes are compared."""
    return _SPACE.sub(" ", text).strip().casefold()


def normalise(text: str) -> str:
    """A claim or sentence as compared for a verbatim quote (final . ; : dropped)."""
    return flatten(text).rstrip(".;:").strip()


def quoted(claim: str, cited: Sequence[str]) -> bool:
    """True when ``claim`` is a contiguous run of one of the ``cited`` texts."""
    key = normalise(claim).lstrip(" .;:")
    return bool(key) and any(key in flatten(text) for text in cited)


# An attribution that introduces a quote and says nothing of its own: "Under the Code,",
# "According to section 420 of the IPC,", "The statute provides that". Only these forms: a lead-in
# that could change the meaning ("It is not true that", "Some argue that") is no attribution. An
# act is any of the registry's, by any of its names (a wrong one is rule 5b's: ACT_MISMATCH).
_SOURCE = (
    rf"(?:the\s+|this\s+)?(?:code|act|statute|law|{ACT_PATTERN}|provision|"
    rf"section\s+[0-9]+[a-z]*(?:\s+of\s+the\s+(?:code|act|{ACT_PATTERN}))?)"
)
_ATTRIBUTION = re.compile(
    rf"^\s*(?:(?:under|according\s+to|as\s+per|in\s+terms\s+of)\s+{_SOURCE}\s*,\s*"
    rf"|{_SOURCE}\s+(?:says|states|provides|lays\s+down|prescribes|declares)\s+that\s+)",
    re.IGNORECASE,
)


def strip_attribution(claim: str) -> str:
    """``claim`` without a leading attribution ("Under the Code, whoever ..." → "whoever ...")."""
    match = _ATTRIBUTION.match(claim)
    return claim[match.end() :] if match else claim


_BOUNDARY = ".!?;:"


def _whole_run(key: str, text: str) -> bool:
    """``key`` is a run of ``text`` that starts and ends at a sentence or clause boundary.

    The extractive generator and this validator do not split every text alike (an
    abbreviation such as "U.S.A." ends a sentence for one and not the other), so a quote of
    whole sentences or clauses counts as verbatim; a cut inside a clause does not.
    """
    flat = flatten(text)
    start = flat.find(key)
    while start >= 0:
        end = start + len(key)
        opens = start == 0 or (flat[start - 1] == " " and flat[start - 2] in _BOUNDARY)
        closes = end == len(flat) or flat[end] in _BOUNDARY
        if opens and closes:
            return True
        start = flat.find(key, start + 1)
    return False


def judge(
    claims: Sequence[Claim],
    model: NliModel,
    thresholds: Thresholds,
    split_sentences: SentenceSplitter,
    *,
    lazy: bool = True,
    deadline: float | None = None,
) -> list[Judgement]:
    """Judge every claim, scoring its premises lazily (see the module's docstring); with
    ``lazy=False`` every pair is scored (the same outcomes, at the cost lazy scoring saves).

    ``deadline`` (``time.monotonic()``): once it has passed, no further round runs and
    ``DeadlineExceededError`` is raised, so a caller that has given up costs no more model time
    (the answer is then not judged, never judged in part).

    The claims are scored in rounds: each round asks the model, in one call, for the next pair
    of every claim not yet settled (and all remaining pairs of a claim that lazy scoring could
    not settle), so a model that runs a call's pairs side by side (``OnnxCrossEncoder`` with
    threads > 1) judges the sentences of an answer in parallel. Each claim's pairs are scored in
    the order and up to the point sequential scoring would reach, and the model is
    batch-invariant, so the judgements are those of scoring one claim after another.
    """
    cache: dict[tuple[str, str], tuple[float, float, float]] = {}
    plans = [_plan(claim, model, split_sentences) for claim in claims]
    runs = [
        _score_lazily(
            plan,
            claim.text,
            max(thresholds.entail, claim.settle_at or 0.0) if lazy else math.inf,
            thresholds,
        )
        for plan, claim in zip(plans, claims, strict=True)
    ]
    tables: list[Rows | None] = [None] * len(claims)
    wanted: dict[int, list[tuple[str, str]]] = {}
    for i, run in enumerate(runs):
        _advance(i, run, None, wanted, tables)
    while wanted:
        todo = list(dict.fromkeys(p for pairs in wanted.values() for p in pairs if p not in cache))
        if todo:
            in_time(deadline, f"with {len(wanted)} sentence(s) not yet judged")
            cache.update(zip(todo, model.predict(todo), strict=True))
        for i, pairs in list(wanted.items()):
            _advance(i, runs[i], [cache[p] for p in pairs], wanted, tables)
    return [
        _decide(plan, table, thresholds)
        for plan, table in zip(plans, cast(list[Rows], tables), strict=True)
    ]


Scores = tuple[float, float, float]
Rows = list[list[Scores | None]]
# A claim's scoring as a generator: it yields the pairs it needs next, is sent their scores, and
# returns its table of scores.
_Run = Generator[list[tuple[str, str]], list[Scores], Rows]


def _advance(
    i: int,
    run: _Run,
    scores: list[Scores] | None,
    wanted: dict[int, list[tuple[str, str]]],
    tables: list[Rows | None],
) -> None:
    try:
        wanted[i] = next(run) if scores is None else run.send(scores)
    except StopIteration as done:
        wanted.pop(i, None)
        tables[i] = done.value


def _score_lazily(plan: _Plan, claim: str, settle: float, thresholds: Thresholds) -> _Run:
    """Rows (one per claim window) of premise scores; None where a premise was not scored."""
    n = len(plan.premises)
    rows: Rows = [[None] * n for _ in plan.hypotheses]
    if plan.verbatim is not None or plan.overflow or n == 0:
        return rows
    wanted = _content_terms(claim)
    shared = [len(wanted & _content_terms(p.text)) for p in plan.premises]
    order = sorted(range(n), key=lambda k: (-shared[k], len(plan.premises[k].text), k))
    settled = True
    for h, hypothesis in enumerate(plan.hypotheses):
        for k in order:
            (rows[h][k],) = yield [(plan.premises[k].text, hypothesis)]
            if thresholds.supports(rows[h][k], settle):  # type: ignore[arg-type]
                break
        else:
            settled = False
            break
    if not settled:  # the outcome needs every score (the strongest contradiction among them)
        rest = [(h, k) for h in range(len(plan.hypotheses)) for k in range(n) if rows[h][k] is None]
        if rest:
            scores = yield [(plan.premises[k].text, plan.hypotheses[h]) for h, k in rest]
            for (h, k), s in zip(rest, scores, strict=True):
                rows[h][k] = s
    return rows


class SentenceSplitter(Protocol):
    def __call__(self, text: str) -> list[tuple[int, int]]: ...


@dataclass(slots=True)
class _Plan:
    premises: list[Premise]
    hypotheses: list[str]
    split: bool
    verbatim: Premise | None
    overflow: int = 0  # premises beyond MAX_PREMISES_PER_CLAIM (then nothing is judged)


def _plan(claim: Claim, model: NliModel, split_sentences: SentenceSplitter) -> _Plan:
    window = model.window_tokens()
    # A quote may be introduced by an attribution ("Under the Code, whoever ..."): the quote is
    # what must be verbatim.
    keys = {normalise(claim.text), normalise(strip_attribution(claim.text))}
    sentences: list[Premise] = []
    for sid, text in claim.cited:
        spans = split_sentences(text) or [(0, len(text))]
        for start, end in spans:
            sentences.append(Premise(sid, start, end, text[start:end]))
            if normalise(text[start:end]) in keys:
                return _Plan([], [], False, sentences[-1])
        if normalise(text) in keys or any(_whole_run(key, text) for key in keys):
            return _Plan([], [], False, Premise(sid, 0, len(text), text))

    # Hypothesis windows: a claim is rarely long, but one longer than half the window is cut so
    # that each piece leaves room for evidence; every piece must then be entailed.
    claim_budget = window // 2
    hypotheses = [
        claim.text[start:end]
        for start, end in token_windows(claim.text, model, claim_budget, overlap=16)
    ]
    longest_claim = max(len(model.token_spans(h)) for h in hypotheses)
    budget = max(16, window - longest_claim - 3)  # [CLS] premise [SEP] claim [SEP]

    premises: list[Premise] = []
    split = len(hypotheses) > 1
    for p in sentences:
        pieces = _windowed_premise(p, model, budget)
        split = split or len(pieces) > 1
        premises.extend(pieces)
    # Whole passages of several sentences and, with several citations, all cited text joined:
    # a claim may combine facts that no single sentence states.
    wholes = [Premise(sid, 0, len(text), text) for sid, text in claim.cited]
    for whole in wholes:
        n_sent = sum(1 for s in sentences if s.semantic_id == whole.semantic_id)
        if n_sent > 1 and len(model.token_spans(whole.text)) <= budget:
            premises.append(whole)
    if len(wholes) > 1:
        joined = " ".join(w.text for w in wholes)
        if len(model.token_spans(joined)) <= budget:
            premises.append(Premise("+".join(w.semantic_id for w in wholes), 0, 0, joined))
    if len(premises) > MAX_PREMISES_PER_CLAIM:
        return _Plan([], hypotheses, True, None, overflow=len(premises))
    return _Plan(premises, hypotheses, split, None)


def _windowed_premise(p: Premise, model: NliModel, budget: int) -> list[Premise]:
    # A quarter of each window overlaps the next.
    windows = token_windows(p.text, model, budget, overlap=budget // 4)
    if len(windows) == 1:
        return [p]
    return [
        Premise(p.semantic_id, p.char_start + start, p.char_start + end, p.text[start:end])
        for start, end in windows
    ]


@text_memo()
def _content_terms(text: str) -> frozenset[str]:
    """Content terms of ``text``, memoised: the same evidence sentences recur across claims and
    requests."""
    return frozenset(t.term for t in tokenize(text) if t.term)


def content_terms_cache_clear() -> None:
    """Forget the memoised content terms (``engine.clear_caches``: benchmarks' cold path)."""
    _content_terms.cache_clear()


def _decide(
    plan: _Plan, table: Sequence[Sequence[tuple[float, float, float] | None]], t: Thresholds
) -> Judgement:
    if plan.verbatim is not None:
        v = plan.verbatim
        scores = EntailmentScores(
            1.0, 0.0, 0.0, v.semantic_id, v.char_start, v.char_end, 0, verbatim=True
        )
        return Judgement(Outcome.ENTAILED, scores)
    if plan.overflow:
        note = (
            f"the cited evidence makes {plan.overflow} pieces for the model (limit "
            f"{MAX_PREMISES_PER_CLAIM}); cite fewer or shorter passages"
        )
        scores = EntailmentScores(0.0, 1.0, 0.0, "", 0, 0, 0, split=True)
        return Judgement(Outcome.NOT_ENTAILED, scores, note)
    n = len(plan.premises)
    if n == 0:  # nothing cited that has text: nothing can entail the claim
        return Judgement(
            Outcome.NOT_ENTAILED, EntailmentScores(0.0, 1.0, 0.0, "", 0, 0, 0, plan.split)
        )
    # Per claim window: the premise that entails it best. The claim is as entailed as its
    # least-entailed window; a contradiction of any window contradicts the claim.
    best_rows: list[tuple[int, tuple[float, float, float]]] = []
    contra: tuple[float, int, tuple[float, float, float]] = (-1.0, 0, (0.0, 0.0, 0.0))
    entailed = True
    for row in table:
        scored = {i: p for i, p in enumerate(row) if p is not None}
        # The best premise that entails this window; none: the best by P(entailment) (reported).
        supporting = [i for i in scored if t.supports(scored[i])]
        entailed = entailed and bool(supporting)
        k = max(supporting or scored, key=lambda i: scored[i][ENTAILMENT])
        best_rows.append((k, scored[k]))
        c = max(scored, key=lambda i: scored[i][CONTRADICTION])
        if scored[c][CONTRADICTION] > contra[0]:
            contra = (scored[c][CONTRADICTION], c, scored[c])
    weakest_k, weakest = min(best_rows, key=lambda kr: kr[1][ENTAILMENT])
    windows = sum(p is not None for row in table for p in row)  # pairs actually scored
    if entailed:
        return _judgement(Outcome.ENTAILED, weakest, plan.premises[weakest_k], windows, plan.split)
    if contra[0] >= t.contradiction:
        return _judgement(
            Outcome.CONTRADICTED, contra[2], plan.premises[contra[1]], windows, plan.split
        )
    return _judgement(Outcome.NOT_ENTAILED, weakest, plan.premises[weakest_k], windows, plan.split)


def _judgement(
    outcome: Outcome, p: tuple[float, float, float], premise: Premise, windows: int, split: bool
) -> Judgement:
    return Judgement(
        outcome,
        EntailmentScores(
            float(p[ENTAILMENT]),
            float(p[NEUTRAL]),
            float(p[CONTRADICTION]),
            premise.semantic_id,
            premise.char_start,
            premise.char_end,
            windows,
            split,
        ),
    )

"""The validator's entry point: is every sentence of an answer grounded in the evidence it cites?"""

from __future__ import annotations

import bisect
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from functools import lru_cache

from services.validator import negation
from services.validator.citations import (
    Citation,
    EvidenceIndex,
    EvidenceLike,
    resolve_citations,
    scan,
)
from services.validator.coverage import (
    Analysis,
    analyse,
    analyse_evidence,
    coverage,
    missing_citations,
    support_span,
)
from services.validator.quantities import (
    Mismatch,
    Quantity,
    compare_dates,
    displaced_references,
    ranges,
    repaired,
    swapped,
    unsupported,
)
from services.validator.report import (
    REFUSAL,
    MalformedCitation,
    Reason,
    SentenceReport,
    SentenceVerdict,
    SupportSpan,
    ValidationOptions,
    ValidationReport,
    Verdict,
)
from services.validator.text import (
    META_TERMS,
    blank_meta,
    id_terms,
    list_marker_length,
    split_sentences,
)

__all__ = [
    "MAX_ANSWER_BYTES",
    "MAX_EVIDENCE",
    "EvidenceLike",
    "clear_caches",
    "resolve_citations",
    "validate",
]

# Request limits enforced by the RPC layer (not here: the engine accepts any input).
MAX_EVIDENCE = 200
MAX_ANSWER_BYTES = 65536

# When a sentence breaks several rules, its reason is the first of these that applies; the
# detail text lists all of them. MISSING_CITATION comes early because adding the citation is
# the fix, after which the other checks run against the full cited set.
_SENTENCE_PRIORITY = (
    Reason.MALFORMED_CITATION,
    Reason.INVALID_CITATION,
    Reason.MISSING_CITATION,
    Reason.NEGATION_MISMATCH,
    Reason.NUMBER_MISMATCH,
    Reason.LOW_COVERAGE,
)
_ANSWER_PRIORITY = (
    Reason.CITATION_IN_REFUSAL,
    Reason.MALFORMED_CITATION,
    Reason.INVALID_CITATION,
    Reason.NO_CITATION,
    *_SENTENCE_PRIORITY[2:],
)
# A number inside a cited evidence id (the section number of "IPC_420_0", the "11" of a title-based
# id "Apollo 11_3") backs an equal claim number only where the claim uses it as a name: after a
# reference word ("Section 420") or next to a word of that id ("IPC 420", "Apollo 11"). Anywhere
# else it must appear in the evidence text, so a document number ("4983_3") never excuses an
# unrelated "4983 patients". The trailing sentence index never counts.
_ID_INDEX_RE = re.compile(r"_[0-9]+$")
_ID_NUMBER_RE = re.compile(r"[0-9]+")
_ID_WORD_RE = re.compile(r"[^\W\d_]+")
_REFUSAL_KEY = REFUSAL.casefold().rstrip(".")


@dataclass(slots=True)
class _Evidence:
    """Per-request view of the evidence: unique items and their analyses, computed on demand."""

    index: EvidenceIndex
    _items: list[tuple[str, frozenset[str]]] | None = None

    def analysis(self, semantic_id: str) -> Analysis:
        return analyse_evidence(self.index.texts[self.index.position[semantic_id]])

    def terms(self, semantic_id: str) -> frozenset[str]:
        return _item_terms(semantic_id, self.index.texts[self.index.position[semantic_id]])

    def items(self) -> list[tuple[str, frozenset[str]]]:
        """Every unique evidence id with its terms (built once per request)."""
        if self._items is None:
            texts = self.index.texts
            self._items = [(i, _item_terms(i, texts[p])) for i, p in self.index.position.items()]
        return self._items


@lru_cache(maxsize=8192)
def _item_terms(semantic_id: str, text: str) -> frozenset[str]:
    """Terms of an evidence item: its text's and its id's (memoised like ``analyse_evidence``)."""
    return analyse_evidence(text).terms | id_terms(semantic_id)


def clear_caches() -> None:
    """Forget the memoised evidence analyses (benchmarks measure the cold path with it)."""
    analyse_evidence.cache_clear()
    _item_terms.cache_clear()


def validate(
    answer: str,
    evidence: Sequence[EvidenceLike],
    options: ValidationOptions = ValidationOptions(),  # noqa: B008 - frozen, so sharing is safe
) -> ValidationReport:
    """Check ``answer`` against ``evidence`` sentence by sentence; never raises on odd text."""
    if not answer.strip():
        return ValidationReport(Verdict.NOT_GROUNDED, Reason.EMPTY_ANSWER, 0.0)
    if answer.strip() == REFUSAL:
        only = SentenceReport(0, REFUSAL, SentenceVerdict.EXEMPT, Reason.REFUSAL, 0.0)
        return ValidationReport(Verdict.REFUSAL, Reason.REFUSAL, 0.0, sentences=(only,))
    view = _Evidence(EvidenceIndex.build(evidence))
    citations = scan(answer, view.index)
    spans = split_sentences(answer, [(c.start, c.end) for c in citations])
    owned: list[list[Citation]] = [[] for _ in spans]
    k = 0
    for citation in citations:
        while k + 1 < len(spans) and spans[k + 1][0] <= citation.start:
            k += 1
        owned[k].append(citation)
    reports = [
        _judge(i, answer, span, owned[i], view, options, last=i == len(spans) - 1)
        for i, span in enumerate(spans)
    ]
    return _summarise(reports, citations)


def _judge(
    index: int,
    answer: str,
    span: tuple[int, int],
    citations: Sequence[Citation],
    view: _Evidence,
    options: ValidationOptions,
    *,
    last: bool,
) -> SentenceReport:
    start, end = span
    text = answer[start:end]
    claim_text = _claim_text(text, start, citations)
    ids = _unique(i for c in citations for i in c.ids)
    invalid = _unique(i for c in citations for i in c.invalid)
    malformed = [c for c in citations if c.problem]

    def report(
        verdict: SentenceVerdict,
        reason: Reason,
        cov: float = 0.0,
        *,
        missing_ids: tuple[str, ...] = (),
        spans: tuple[SupportSpan, ...] = (),
        detail: str = "",
    ) -> SentenceReport:
        return SentenceReport(
            index, text, verdict, reason, cov, ids, invalid, missing_ids, spans, detail
        )

    if " ".join(claim_text.split()).casefold().rstrip(" .") == _REFUSAL_KEY:
        if citations:
            return report(
                SentenceVerdict.UNSUPPORTED,
                Reason.CITATION_IN_REFUSAL,
                detail="the refusal must not carry citations",
            )
        return report(SentenceVerdict.EXEMPT, Reason.REFUSAL)
    claim = analyse(blank_meta(claim_text))
    terms = claim.terms
    if not citations:
        stripped = claim_text.rstrip()
        if terms <= META_TERMS or stripped.endswith("?") or (stripped.endswith(":") and not last):
            return report(SentenceVerdict.EXEMPT, Reason.META_STATEMENT)
        return report(
            SentenceVerdict.UNSUPPORTED,
            Reason.NO_CITATION,
            missing_ids=tuple(_missing(terms, frozenset(), (), view, options)),
            detail="factual sentence without a citation",
        )
    if not terms and not malformed and not invalid:
        return report(SentenceVerdict.EXEMPT, Reason.META_STATEMENT, 1.0)

    problems: dict[Reason, str] = {}
    if malformed:
        problems[Reason.MALFORMED_CITATION] = "malformed citation " + ", ".join(
            f"{c.raw!r} ({c.problem})" for c in malformed
        )
    if invalid:
        problems[Reason.INVALID_CITATION] = "no evidence item " + ", ".join(map(repr, invalid))
    cited_terms = frozenset().union(*(view.terms(i) for i in ids)) if ids else frozenset()
    cov = coverage(terms, cited_terms) if ids else 0.0
    spans: list[SupportSpan] = []
    missing: list[str] = []
    if ids:
        analyses = [view.analysis(i) for i in ids]
        for semantic_id, analysis in zip(ids, analyses, strict=True):
            window = support_span(terms, analysis)
            if window is not None:
                spans.append(SupportSpan(semantic_id, window[0], window[1]))
        threshold = (
            options.single_citation_threshold if len(ids) == 1 else options.multi_citation_threshold
        )
        if cov + 1e-9 < threshold:
            problems[Reason.LOW_COVERAGE] = (
                f"{cov:.0%} of the sentence's content words are in the cited evidence "
                f"(needs {threshold:.0%})"
            )
        if options.check_numbers:
            number_problems = _number_problems(claim_text, claim, ids, analyses)
            if number_problems:
                problems[Reason.NUMBER_MISMATCH] = "; ".join(number_problems)
        evidence_scopes = [s for a in analyses for s in a.negations]
        # With no negation on either side there is nothing to disagree on (and no clauses to build).
        if options.check_negation and (claim.negations or evidence_scopes):
            # Claim clauses only matter for an evidence-negated term the claim holds at all.
            aligned = any(t in terms for scope in evidence_scopes for t in scope.terms)
            disagreements = negation.mismatches(
                claim.negations,
                claim.clauses if aligned else (),
                claim.norms,
                evidence_scopes,
                [c for a in analyses for c in a.clauses],
            ) + negation.edits(
                claim.tokens, claim.negations, [(a.tokens, a.negations) for a in analyses]
            )
            if disagreements:
                problems[Reason.NEGATION_MISMATCH] = "; ".join(disagreements)
        missing = _missing(terms, cited_terms, ids, view, options)
        if missing:
            problems[Reason.MISSING_CITATION] = "uses uncited evidence " + ", ".join(
                map(repr, missing)
            )
    if not problems:
        return report(SentenceVerdict.SUPPORTED, Reason.SUPPORTED, cov, spans=tuple(spans))
    reason = next(r for r in _SENTENCE_PRIORITY if r in problems)
    return report(
        SentenceVerdict.UNSUPPORTED,
        reason,
        cov,
        missing_ids=tuple(missing),
        spans=tuple(spans),
        detail="; ".join(problems[r] for r in _SENTENCE_PRIORITY if r in problems),
    )


def _number_problems(
    claim_text: str, claim: Analysis, ids: Sequence[str], analyses: Sequence[Analysis]
) -> list[str]:
    """Rule 5: claim numbers, pairs, ranges and dates that the cited evidence does not back."""
    evidence = [pair for a in analyses for pair in zip(a.quantities, a.contexts, strict=True)]
    stated = list(zip(claim.quantities, claim.contexts, strict=True))
    wrong_dates, dated = compare_dates(claim.dates, [d for a in analyses for d in a.dates])
    named = _id_named_quantities(claim, ids, evidence)
    exempt = named | dated
    absent = unsupported([p for p in stated if p[0] not in exempt] if exempt else stated, evidence)
    if named:
        absent += displaced_references(
            [p for p in stated if p[0] in named and p[0].reference], evidence
        )
    evidence_pairs: frozenset[tuple[str, str]] = frozenset().union(
        *(a.number_pairs for a in analyses)
    )
    return (
        [_describe_number(claim_text, m) for m in absent]
        + [
            f"'{a}' and '{b}' are the other way round in the cited evidence"
            for a, b in swapped(claim.number_pairs, evidence_pairs)
        ]
        + [
            f"'{a}' to '{b}' is not a range in the cited evidence, which pairs them with others"
            for a, b in (
                repaired(ranges(claim_text, claim.quantities), evidence_pairs)
                if claim.number_pairs and evidence_pairs
                else ()
            )
        ]
        + [
            f"{claim_text[d.start : d.end]!r} matches no date in the cited evidence"
            for d in wrong_dates
        ]
    )


def _id_named_quantities(
    claim: Analysis, ids: Sequence[str], evidence: Sequence[tuple[Quantity, frozenset[str]]]
) -> set[Quantity]:
    """Claim quantities that name a cited item by the number in its id (see ``_ID_INDEX_RE``).

    A number the cited text itself holds is not exempt: there the usual context check decides
    ("The OFC U-1986 Championship 20" against "The OFC U-20 Championship 1986").
    """
    stems = [_ID_INDEX_RE.sub("", i) for i in ids]
    numbers = {n for s in stems for n in _ID_NUMBER_RE.findall(s)}
    if not numbers:
        return set()
    words = {w.casefold() for s in stems for w in _ID_WORD_RE.findall(s)}
    named: set[Quantity] = set()
    starts = [t.start for t in claim.tokens]
    for q in claim.quantities:
        if q.term not in numbers or any(e.value == q.value for e, _ in evidence):
            continue
        if q.reference:
            named.add(q)
            continue
        k = bisect.bisect_left(starts, q.start)
        before = claim.tokens[k - 1].norm if k > 0 else ""
        after = next((t.norm for t in claim.tokens[k:] if t.start >= q.end), "")
        if before in words or after in words:
            named.add(q)
    return named


def _describe_number(claim_text: str, mismatch: Mismatch) -> str:
    said = repr(claim_text[mismatch.quantity.start : mismatch.quantity.end])
    if mismatch.instead is None:
        return f"{said} is not in the cited evidence"
    return f"{said} does not match the cited evidence, which has {mismatch.instead.term} there"


def _claim_text(text: str, offset: int, citations: Sequence[Citation]) -> str:
    """The sentence with citations and any leading list marker blanked (offsets kept)."""
    chars = list(text)
    for citation in citations:
        for i in range(max(citation.start - offset, 0), min(citation.end - offset, len(chars))):
            chars[i] = " "
    blanked = "".join(chars)
    marker = list_marker_length(blanked)
    return " " * marker + blanked[marker:]


def _missing(
    terms: frozenset[str],
    cited_terms: frozenset[str],
    cited_ids: Sequence[str],
    view: _Evidence,
    options: ValidationOptions,
) -> list[str]:
    if not options.require_complete_citation:
        return []
    cited = set(cited_ids)
    return missing_citations(
        terms,
        cited_terms,
        [item for item in view.items() if item[0] not in cited],
        min_terms=options.missing_min_terms,
        min_fraction=options.missing_min_fraction,
        min_alone=options.single_citation_threshold,
    )


def _summarise(
    reports: Sequence[SentenceReport], citations: Sequence[Citation]
) -> ValidationReport:
    judged = [r for r in reports if r.verdict is not SentenceVerdict.EXEMPT]
    supported = sum(r.verdict is SentenceVerdict.SUPPORTED for r in judged)
    cited = _unique(i for c in citations for i in c.ids)
    invalid = _unique(i for c in citations for i in c.invalid)
    malformed = tuple(
        MalformedCitation(c.raw, c.start, c.end, c.problem) for c in citations if c.problem
    )
    missing = _unique(i for r in reports for i in r.missing_ids)
    uncovered = tuple(r.index for r in judged if r.verdict is not SentenceVerdict.SUPPORTED)
    reasons = {r.reason for r in reports}
    if not citations:
        reasons.add(Reason.NO_CITATION)
    if invalid:
        reasons.add(Reason.INVALID_CITATION)
    if malformed:
        reasons.add(Reason.MALFORMED_CITATION)
    failing = next((r for r in _ANSWER_PRIORITY if r in reasons), None)
    if failing is None and not supported:
        failing = Reason.EMPTY_ANSWER  # citations but no sentence with checkable content
    return ValidationReport(
        verdict=Verdict.NOT_GROUNDED if failing else Verdict.GROUNDED,
        reason=failing or Reason.SUPPORTED,
        support_score=supported / len(judged) if judged else 0.0,
        cited_ids=cited,
        invalid_citations=invalid,
        malformed_citations=malformed,
        missing_citations=missing,
        uncovered_sentences=uncovered,
        sentences=tuple(reports),
    )


def _unique(items: Iterable[str]) -> tuple[str, ...]:
    return tuple(dict.fromkeys(items))

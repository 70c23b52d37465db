"""Ablations in one run: retrieval stage switches and validator coverage thresholds.

SynthesizeAnswer exposes neither retrieval stage switches nor validator options, so:

- retrieval variants call RetrievePassages with explicit stage switches and are scored on the
  retrieval metrics only (an answer-level effect cannot be measured without a synthesis switch);
- threshold variants re-validate each draft the synthesis service sent to its validator (the
  delivered answer, or the rejected draft rebuilt from the validator's sentence reports) against
  the same evidence with other ValidationOptions. A draft that passes becomes the answer and one
  that fails becomes the refusal, exactly as in the pipeline; questions refused before generation
  stay refused. The extractive generator is deterministic, so the drafts do not depend on the
  thresholds.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass

from evaluation.metrics import Metric, Report
from evaluation.report import format_metric

# Explicit switches (never "the server default"), so each row means the same on any deployment.
RETRIEVAL_VARIANTS: dict[str, dict[str, bool]] = {
    "hybrid (dense + BM25)": {"dense": True, "lexical": True, "expansion": False, "rerank": False},
    "dense only": {"dense": True, "lexical": False, "expansion": False, "rerank": False},
    "BM25 only": {"dense": False, "lexical": True, "expansion": False, "rerank": False},
    "hybrid + expansion": {"dense": True, "lexical": True, "expansion": True, "rerank": False},
    "hybrid + rerank": {"dense": True, "lexical": True, "expansion": False, "rerank": True},
    "hybrid + expansion + rerank": {
        "dense": True,
        "lexical": True,
        "expansion": True,
        "rerank": True,
    },
}
RETRIEVAL_METRICS = (
    "retrieval_doc_recall@1",
    "retrieval_doc_recall@10",
    "retrieval_doc_ndcg@10",
    "retrieval_sentence_recall@10",
    "retrieval_sentence_ndcg@10",
)

# (single-citation, multi-citation) coverage thresholds; the validator's default is 0.30 / 0.21.
DEFAULT_THRESHOLDS = (0.30, 0.21)
THRESHOLD_VARIANTS: tuple[tuple[float, float], ...] = (
    (0.20, 0.14),
    DEFAULT_THRESHOLDS,
    (0.40, 0.28),
    (0.50, 0.35),
)
ANSWER_METRICS = (
    "citation_precision",
    "citation_recall",
    "gold_doc_cite_rate",
    "correct_refusal_rate",
    "false_refusal_rate",
    "invalid_citation_rate",
    "validator_pass_rate",
)


def threshold_label(thresholds: tuple[float, float]) -> str:
    """``coverage 0.30 / 0.21 (default)``."""
    single, multi = thresholds
    suffix = " (default)" if thresholds == DEFAULT_THRESHOLDS else ""
    return f"coverage {single:.2f} / {multi:.2f}{suffix}"


@dataclass(frozen=True, slots=True)
class AblationRow:
    """One variant: its name, the switches or options it set, and the chosen metrics."""

    kind: str
    variant: str
    settings: Mapping[str, object]
    metrics: Mapping[str, Metric]
    n_items: int = 0


def ablation_row(
    kind: str, variant: str, settings: Mapping[str, object], report: Report, names: Sequence[str]
) -> AblationRow:
    """The row for ``variant``, keeping only ``names`` from its report."""
    metrics = {n: report.metrics[n] for n in names if n in report.metrics}
    return AblationRow(kind, variant, dict(settings), metrics, report.n_items)


def render_ablations(rows: Sequence[AblationRow]) -> str:
    """Markdown tables, one per kind of ablation, value (95 % CI) per metric."""
    lines = ["## Ablations", ""]
    if not rows:
        return "\n".join([*lines, "None run.", ""])
    for kind in dict.fromkeys(row.kind for row in rows):
        kind_rows = [row for row in rows if row.kind == kind]
        names = list(dict.fromkeys(n for row in kind_rows for n in row.metrics))
        n_items = max(row.n_items for row in kind_rows)
        lines += [f"### {kind} ({n_items} items; each figure's own n is in report.json)", ""]
        lines.append("| variant | " + " | ".join(names) + " |")
        lines.append("|" + " --- |" * (len(names) + 1))
        for row in kind_rows:
            cells = [format_metric(row.metrics.get(n)) for n in names]
            lines.append(f"| {row.variant} | " + " | ".join(cells) + " |")
        lines.append("")
    return "\n".join(lines)


def ablations_to_dict(rows: Sequence[AblationRow]) -> list[dict[str, object]]:
    """JSON-ready rows."""
    return [
        {
            "kind": row.kind,
            "variant": row.variant,
            "settings": dict(row.settings),
            "n_items": row.n_items,
            "metrics": {name: asdict(metric) for name, metric in row.metrics.items()},
        }
        for row in rows
    ]

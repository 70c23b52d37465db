"""The issue's targets on the dev slices, and whether a report meets them."""

from __future__ import annotations

from dataclasses import dataclass

from evaluation.metrics import Metric, Report
from evaluation.report import format_metric


@dataclass(frozen=True, slots=True)
class Target:
    """``metric`` must be ``>=`` or ``<=`` ``bound``."""

    metric: str
    op: str
    bound: float

    def met(self, metric: Metric | None) -> bool | None:
        """True or False on the point estimate; None when the metric was not measured."""
        if metric is None or metric.value is None:
            return None
        return metric.value >= self.bound if self.op == ">=" else metric.value <= self.bound

    def describe(self) -> str:
        return f"{self.metric} {self.op} {self.bound:g}"


_EVERY = (Target("invalid_citation_rate", "<=", 0.0),)
TARGETS: dict[str, tuple[Target, ...]] = {
    "ipc": (Target("gold_doc_cite_rate", ">=", 0.90), *_EVERY),
    "squad2": (
        Target("correct_refusal_rate", ">=", 0.90),
        Target("false_refusal_rate", "<=", 0.10),
        *_EVERY,
    ),
    "hotpotqa": (
        Target("citation_recall", ">=", 0.80),
        Target("citation_precision", ">=", 0.85),
        *_EVERY,
    ),
    "scifact": _EVERY,
}


def render_targets(dataset: str, report: Report) -> str:
    """A Markdown table: each target, the measured value with its CI and n, and whether it is met."""
    lines = [
        "## Targets",
        "",
        "| target | measured (95 % CI) | n | met |",
        "| --- | --- | --- | --- |",
    ]
    for target in TARGETS.get(dataset, _EVERY):
        metric = report.metrics.get(target.metric)
        met = target.met(metric)
        verdict = "n/a" if met is None else ("yes" if met else "**no**")
        n = f"{metric.n} {metric.unit}" if metric is not None else "0"
        lines.append(f"| {target.describe()} | {format_metric(metric)} | {n} | {verdict} |")
    return "\n".join(lines) + "\n"

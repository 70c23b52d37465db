"""The issue's targets on the dev slices, and whether a report meets them.

A target is **met** only when the whole 95 % CI is on the right side of it (the lower bound for
``>=``, the upper bound for ``<=``); a point estimate on the right side with a CI that crosses
the bound is "point estimate meets, CI does not".
"""

from __future__ import annotations

from dataclasses import dataclass

from evaluation.metrics import Metric, Report
from evaluation.report import format_metric, half_label

MET = "met"
POINT_ONLY = "point estimate meets, CI does not"
NOT_MET = "not met"


@dataclass(frozen=True, slots=True)
class Target:
    """``metric`` must be ``>=`` or ``<=`` ``bound``."""

    metric: str
    op: str
    bound: float

    def _meets(self, value: float) -> bool:
        return value >= self.bound if self.op == ">=" else value <= self.bound

    def verdict(self, metric: Metric | None) -> str | None:
        """``met`` (the CI's bound clears the target), ``point estimate meets, CI does not``,
        or ``not met``; None when the metric was not measured. Without a CI, never ``met``."""
        if metric is None or metric.value is None:
            return None
        if not self._meets(metric.value):
            return NOT_MET
        bound = metric.ci_low if self.op == ">=" else metric.ci_high
        return MET if bound is not None and self._meets(bound) else POINT_ONLY

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


def _shown(verdict: str | None) -> str:
    if verdict is None:
        return "n/a"
    return verdict if verdict == MET else f"**{verdict}**"


def render_targets(dataset: str, report: Report) -> str:
    """A Markdown table: each target, the measured value with its CI and n, and whether it is
    met (by the CI). A split set with a clean subset is judged on it too, labelled."""
    populations: list[tuple[str, dict[str, Metric]]] = [
        (f"all items (**{report.run.tuning if report.run else 'unrecorded'}**)", report.metrics)
    ]
    if "clean" in report.halves:
        label = half_label(report.run.data_path if report.run else "", "clean")
        populations.append((f"clean subset ({label})", report.halves["clean"]))
    lines = [
        "## Targets",
        "",
        "Met only when the 95 % CI clears the target, not the point estimate alone.",
        "",
        "| target | items | measured (95 % CI) | n | met |",
        "| --- | --- | --- | --- | --- |",
    ]
    for target in TARGETS.get(dataset, _EVERY):
        for population, metrics in populations:
            metric = metrics.get(target.metric)
            n = f"{metric.n} {metric.unit}" if metric is not None else "0"
            lines.append(
                f"| {target.describe()} | {population} | {format_metric(metric)} | {n} "
                f"| {_shown(target.verdict(metric))} |"
            )
    return "\n".join(lines) + "\n"

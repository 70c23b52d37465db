"""Writes an evaluation Report as JSON, Markdown and PNG plots; keeps the docs summary current."""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from evaluation.clean import MIN_ITEMS
from evaluation.datasets import DEFAULT_PATHS, TWIN_JACCARD, tuning_of
from evaluation.metrics import HEADLINE, Metric, Report

REPORT_ROOT = Path("reports/eval")


def newest_report(dataset: str, *needles: str, root: Path = REPORT_ROOT) -> Path | None:
    """The newest ``report.json`` of ``dataset`` whose run description contains every needle
    (a data file name, a server setting such as ``SYNTHESIS_ANSWERABILITY=shadow``)."""
    for folder in sorted(root.glob(f"*-{dataset}"), reverse=True):
        path = folder / "report.json"
        if not path.is_file():
            continue
        run = json.dumps(json.loads(path.read_text())["run"])
        if all(needle in run for needle in needles):
            return path
    return None


SUMMARY_START = "<!-- eval-summary:start -->"
SUMMARY_END = "<!-- eval-summary:end -->"
_ROW = re.compile(r"^<!-- eval-row (?P<json>\{.*\}) -->$")

# Columns of the docs summary table: (header, metric names joined with " / ").
_SUMMARY_COLUMNS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("citation precision", ("citation_precision",)),
    ("citation recall", ("citation_recall",)),
    ("cites a gold doc", ("gold_doc_cite_rate",)),
    ("invalid citations", ("invalid_citation_rate",)),
    ("correct refusal", ("correct_refusal_rate",)),
    ("false refusal", ("false_refusal_rate",)),
    ("answer contains", ("answer_containment",)),
    ("EM / F1", ("answer_em", "answer_f1")),
    ("doc recall@10", ("retrieval_doc_recall@10",)),
    ("errors", ("error_rate",)),
)


# The parts of a split set, in the order reports show them (Report.halves); what each is
# labelled comes from the register (evaluation.datasets.Tuning.half_label).
HALF_ORDER = ("clean", "clean_no_twin", "clean_unshared", "report", "tune")
_HALF_TITLES = {
    "clean": "Clean subset",
    "clean_no_twin": "Clean subset without near-twins",
    "clean_unshared": "Clean subset without near-twins or shared sources",
    "report": "Report half",
    "tune": "Tune half",
}
# The columns of the summary's table of halves.
_HALF_COLUMNS: tuple[tuple[str, str], ...] = (
    ("citation precision", "citation_precision"),
    ("citation recall", "citation_recall"),
    ("cites a gold doc", "gold_doc_cite_rate"),
    ("all gold docs cited", "multi_doc_completeness"),
    ("correct refusal", "correct_refusal_rate"),
    ("false refusal", "false_refusal_rate"),
)


def half_label(data_path: str, half: str) -> str:
    """What a part of a split set is, by the register entry of its data file."""
    return tuning_of(Path(data_path)).half_label(half)


def _clean_caveats(report: Report) -> list[str]:
    """The sentences under the clean subset: its near-twins and shared sources, in counts."""
    counts = report.clean_counts
    if not counts:
        return []
    lines = [
        f"Of the {counts['clean']} clean items, {counts['twin']} have a near-twin (question "
        f"word sets with Jaccard ≥ {TWIN_JACCARD:g}) among the {counts['read']} items of this "
        f"run that were read, and {counts['shared_source']} share a source document (a "
        "paragraph, an abstract) with one of them: the split is by item id, not by document."
    ]
    for part, without in (("clean_no_twin", "the near-twins"), ("clean_unshared", "both")):
        if counts.get(part, 0) < MIN_ITEMS:
            lines.append(
                f"Without {without}, {counts.get(part, 0)} items remain, under {MIN_ITEMS}: "
                "not scored apart."
            )
    return lines


def _span_caveat(report: Report) -> list[str]:
    """A run past the register's read span labels its tune half too broadly: say so."""
    run = report.run
    if run is None:
        return []
    span = tuning_of(Path(run.data_path)).read_span
    if span is None or report.n_items <= span:
        return []
    return [
        f"This run goes past item {span}: the items after it were never read, in either half, "
        f"but are counted in the halves above. The headline command is LIMIT {span} "
        "(docs/EVALUATION.md, How to run)."
    ]


def _shown_halves(report: Report) -> list[str]:
    """The parts a report shows: a part without near-twins (or shared sources) only when it
    leaves out some item of the part before it and keeps ``MIN_ITEMS`` or more."""
    counts = report.clean_counts
    before = {"clean_no_twin": "clean", "clean_unshared": "clean_no_twin"}
    return [
        half
        for half in HALF_ORDER
        if half in report.halves
        and not (
            half in before
            and (counts.get(half, 0) < MIN_ITEMS or counts.get(half) == counts.get(before[half]))
        )
    ]


@dataclass(frozen=True, slots=True)
class ReportFiles:
    """Paths of everything ``write_report`` wrote."""

    directory: Path
    json: Path
    markdown: Path
    plots: tuple[Path, ...]


def format_metric(metric: Metric | None, *, with_ci: bool = True) -> str:
    """``0.812 (0.774–0.850)``; ``n/a`` when nothing was measured."""
    if metric is None or metric.value is None:
        return "n/a"
    digits = 1 if metric.unit == "outcomes" else 3
    text = f"{metric.value:.{digits}f}"
    if with_ci and metric.ci_low is not None and metric.ci_high is not None:
        text += f" ({metric.ci_low:.{digits}f}–{metric.ci_high:.{digits}f})"
    return text


def _dataset(report: Report) -> str:
    return report.run.dataset if report.run else "run"


def _metrics_table(metrics: dict[str, Metric], names: Sequence[str]) -> list[str]:
    lines = ["| metric | value (95 % CI) | n | items |", "| --- | --- | --- | --- |"]
    for name in names:
        metric = metrics.get(name)
        if metric is not None:
            lines.append(
                f"| {name} | {format_metric(metric)} | {metric.n} {metric.unit} | "
                f"{metric.n_items} |"
            )
    return lines


def render_markdown(report: Report, plots: Sequence[Path] = (), extra: str = "") -> str:
    """The Markdown report: provenance (data files, checksums, n, command), then the figures.

    ``extra`` is Markdown (e.g. ablation tables) placed after the errors, before the plots.
    """
    run = report.run
    lines = [f"# Evaluation report: {_dataset(report)}", ""]
    if run is not None:
        limit = "none" if run.limit is None else str(run.limit)
        lines += [
            f"- Data: `{run.data_path}`",
            f"- Items scored: {report.n_items} of {run.n_total} (LIMIT: {limit})",
            f"- Corpus checksum (sha256): `{run.corpus_checksum}`",
            f"- Started: {run.started_at}",
            f"- Command: `{run.command}`",
            f"- Tuned on: **{run.tuning or 'unrecorded'}**"
            + (f" ({run.tuning_note})" if run.tuning_note else ""),
            "",
            "| input file | sha256 | bytes |",
            "| --- | --- | --- |",
            *(f"| `{f.path}` | `{f.sha256}` | {f.size_bytes} |" for f in run.inputs),
        ]
        if run.config:
            lines += ["", "| setting | value |", "| --- | --- |"]
            lines += [f"| {key} | `{value}` |" for key, value in sorted(run.config.items())]
    else:
        lines.append(f"- Items scored: {report.n_items}")
    boot = report.bootstrap
    lines += [
        "",
        f"Confidence intervals, {boot.confidence:.0%}: Wilson score intervals for proportions "
        "(every item 0 or 1: refusal rates, gold document cited, errors; and a ratio that is 0, "
        "or 1, in every item, over its items), otherwise a percentile bootstrap over items, "
        f"{boot.resamples} resamples, seed {boot.seed}. Definitions: docs/EVALUATION.md.",
        "",
        "## Headline",
        "",
        *_metrics_table(report.metrics, HEADLINE),
        "",
    ]
    data_path = run.data_path if run is not None else ""
    for half in _shown_halves(report):
        lines += [
            f"## {_HALF_TITLES[half]} ({half_label(data_path, half)})",
            "",
            *_metrics_table(report.halves[half], HEADLINE),
            "",
        ]
        if half == "clean":
            lines += [*_clean_caveats(report), ""]
    span = _span_caveat(report) if report.halves else []
    if span:
        lines += [*span, ""]
    lines += [
        "## All metrics",
        "",
        *_metrics_table(report.metrics, sorted(report.metrics)),
    ]
    for subset, metrics in report.subsets.items():
        lines += ["", f"## Subset: {subset}", "", *_metrics_table(metrics, HEADLINE)]
    if report.refusal_reasons:
        reasons = list(
            dict.fromkeys(r for counts in report.refusal_reasons.values() for r in counts)
        )
        false_refusals = report.refusal_reasons.get("answerable", {})
        correct = report.refusal_reasons.get("unanswerable", {})
        lines += [
            "",
            "## Refusal reasons",
            "",
            "| reason | answerable items (false refusals) | unanswerable items (correct) |",
            "| --- | --- | --- |",
            *(f"| {r} | {false_refusals.get(r, 0)} | {correct.get(r, 0)} |" for r in reasons),
        ]
    lines += ["", "## Errors", ""]
    if report.errors:
        lines += ["| count | error |", "| --- | --- |"]
        lines += [f"| {count} | {message} |" for message, count in report.errors.items()]
    else:
        lines.append("None.")
    if extra:
        lines += ["", extra.rstrip("\n")]
    if plots:
        lines += ["", "## Plots", ""]
        lines += [f"![{p.stem}]({p.name})" for p in plots]
    return "\n".join(lines) + "\n"


def clean_summary(report: Report) -> str | None:
    """One line on the clean subset for the console: its label, n and the halves' columns."""
    metrics = report.halves.get("clean")
    if metrics is None:
        return None
    label = half_label(report.run.data_path if report.run else "", "clean")
    cells = "; ".join(
        f"{header} {format_metric(metrics.get(name))}"
        for header, name in _HALF_COLUMNS
        if metrics.get(name) is not None and metrics[name].value is not None
    )
    counts = report.clean_counts
    return (
        f"{_dataset(report)} clean subset ({label}): {counts.get('clean', 0)} items "
        f"({counts.get('twin', 0)} with a near-twin among read items); {cells}"
    )


def _new_figure(width: float, height: float) -> Figure:
    figure = Figure(figsize=(width, height), layout="constrained")
    FigureCanvasAgg(figure)  # Agg renders to files without a display
    return figure


def _whisker(metric: Metric) -> tuple[float, float]:
    """Distances from the value down to the CI's low end and up to its high end (never negative)."""
    value = metric.value or 0.0
    low = metric.ci_low if metric.ci_low is not None else value
    high = metric.ci_high if metric.ci_high is not None else value
    return max(value - low, 0.0), max(high - value, 0.0)


def plot_metrics(report: Report, path: Path) -> Path:
    """Horizontal bars of the headline rates with 95 % CI whiskers."""
    shown = [report.metrics[n] for n in HEADLINE if n in report.metrics]
    shown = [m for m in shown if m.value is not None]
    figure = _new_figure(8, 0.45 * max(len(shown), 2) + 1.2)
    axes = figure.add_subplot()
    if shown:
        values = [m.value or 0.0 for m in shown]
        whiskers = [_whisker(m) for m in shown]
        low, high = [w[0] for w in whiskers], [w[1] for w in whiskers]
        positions = list(range(len(shown)))
        axes.barh(positions, values, xerr=[low, high], capsize=3, color="#4C72B0")
        for position, value in zip(positions, values, strict=True):
            axes.annotate(
                f"{value:.3f}", (value, position), xytext=(4, 4), textcoords="offset points"
            )
        axes.set_yticks(positions, [f"{m.name} (n={m.n})" for m in shown])
        axes.invert_yaxis()
    else:
        axes.text(0.5, 0.5, "no metrics measured", ha="center", va="center")
    axes.set_xlim(0, 1)
    axes.set_xlabel("value (95 % CI)")
    axes.set_title(f"{_dataset(report)}: headline metrics (n = {report.n_items} items)")
    figure.savefig(path, dpi=110)
    return path


def plot_latency(report: Report, path: Path) -> Path:
    """Histogram of per-stage latency in milliseconds."""
    stages: dict[str, list[float]] = {}
    for item in report.items:
        for stage, value in item.latency_ms.items():
            stages.setdefault(stage, []).append(value)
    figure = _new_figure(8, 4.5)
    axes = figure.add_subplot()
    if stages:
        # Shared bin edges so that stages are comparable bar for bar.
        edges = np.histogram_bin_edges([v for vs in stages.values() for v in vs], bins=40)
        for stage, values in sorted(stages.items()):
            axes.hist(values, bins=edges.tolist(), alpha=0.55, label=f"{stage} (n={len(values)})")
        axes.legend()
    else:
        axes.text(0.5, 0.5, "no latency recorded", ha="center", va="center")
    axes.set_xlabel("latency (ms)")
    axes.set_ylabel("outcomes")
    axes.set_title(f"{_dataset(report)}: latency per stage")
    figure.savefig(path, dpi=110)
    return path


def write_report(
    report: Report,
    root: Path = REPORT_ROOT,
    *,
    now: datetime | None = None,
    plots: bool = True,
    extra_markdown: str = "",
    extra_json: dict[str, Any] | None = None,
) -> ReportFiles:
    """Write report.json, report.md and (with ``plots``) metrics.png and latency.png.

    ``extra_json`` keys are added to report.json and ``extra_markdown`` to report.md.

    The files go to a new directory ``root/<UTC time>-<dataset>/``.
    """
    moment = now or datetime.now(UTC)
    base = root / f"{moment:%Y%m%dT%H%M%SZ}-{_dataset(report)}"
    directory, suffix = base, 1
    while directory.exists():
        suffix += 1
        directory = base.with_name(f"{base.name}-{suffix}")
    directory.mkdir(parents=True)
    images: tuple[Path, ...] = ()
    if plots:
        images = (
            plot_metrics(report, directory / "metrics.png"),
            plot_latency(report, directory / "latency.png"),
        )
    json_path = directory / "report.json"
    json_path.write_text(
        json.dumps({**report.to_dict(), **(extra_json or {})}, indent=2, ensure_ascii=False) + "\n",
        encoding="utf-8",
    )
    markdown = directory / "report.md"
    markdown.write_text(render_markdown(report, images, extra_markdown), encoding="utf-8")
    return ReportFiles(directory, json_path, markdown, images)


# ---------------------------------------------------------------------------- docs summary


def _summary_key(report: Report) -> str:
    """The summary row a run replaces: its dataset, or with another data file than the
    dataset's default, the dataset and that file ("ipc (ipc_plain_v1.jsonl)")."""
    run = report.run
    if run is None:
        return "run"
    default = DEFAULT_PATHS.get(run.dataset)
    data = Path(run.data_path)
    if default is None or data.parts[-2:] == default.parts[-2:]:
        return run.dataset
    return f"{run.dataset} ({data.name})"


def _summary_row(report: Report) -> dict[str, Any]:
    run = report.run
    cells = {
        header: " / ".join(
            format_metric(report.metrics.get(name), with_ci=len(names) == 1) for name in names
        )
        for header, names in _SUMMARY_COLUMNS
    }
    latency = [report.metrics.get(f"latency_total_p{q}_ms") for q in (50, 95)]
    data = run.data_path if run else ""
    halves = {
        half: {
            "n": _half_size(report.halves[half]),
            "label": half_label(data, half),
            "cells": {
                header: format_metric(report.halves[half].get(name))
                for header, name in _HALF_COLUMNS
            },
        }
        for half in _shown_halves(report)
    }
    return {
        "dataset": _summary_key(report),
        "n": report.n_items,
        "tuning": run.tuning if run and run.tuning else "unrecorded",
        "tuning_note": run.tuning_note if run else "",
        "halves": halves,
        "clean_counts": dict(report.clean_counts),
        "cells": cells,
        "latency": " / ".join(format_metric(m, with_ci=False) for m in latency),
        "data": run.data_path if run else "",
        "inputs": [f"{Path(f.path).name} {f.sha256}" for f in run.inputs] if run else [],
        "checksum": run.corpus_checksum[:16] if run else "",
        "date": run.started_at if run else "",
        "command": run.command if run else "",
    }


def _half_size(metrics: dict[str, Metric]) -> int:
    """Items in a half: the largest item count any of its metrics saw."""
    return max((m.n_items for m in metrics.values()), default=0)


def _render_summary(rows: list[dict[str, Any]]) -> list[str]:
    headers = [
        "dataset",
        "tuned on?",
        "n",
        *(h for h, _ in _SUMMARY_COLUMNS),
        "latency p50 / p95 (ms)",
    ]
    lines = [
        "Latest run per dataset (value and 95 % CI: Wilson for proportions, where every item "
        "counts 0 or 1, otherwise a percentile bootstrap over items; written by "
        '`update_summary`). "Tuned on?" says whether the set was read to choose anything: '
        "**tuned**, **never tuned**, or **mixed** (a split set: the next table gives its parts).",
        "",
        "| " + " | ".join(headers) + " |",
        "|" + " --- |" * len(headers),
    ]
    for row in rows:
        tuning = f"**{row.get('tuning', 'unrecorded')}**"
        cells = [row["dataset"], tuning, str(row["n"]), *row["cells"].values(), row["latency"]]
        lines.append("| " + " | ".join(cells) + " |")
    split = [row for row in rows if row.get("halves")]
    if split:
        half_headers = ["dataset", "part", "n", *(h for h, _ in _HALF_COLUMNS)]
        lines += [
            "",
            "The split sets by part (`evaluation.datasets.in_tune_half` and the register's "
            "clean subset, `evaluation.clean`; each part labelled from the register, and the "
            "clean subset is the figure to quote):",
            "",
            "| " + " | ".join(half_headers) + " |",
            "|" + " --- |" * len(half_headers),
        ]
        for row in split:
            for half in HALF_ORDER:
                found = row["halves"].get(half)
                if found:
                    label = found.get("label") or half_label(row.get("data", ""), half)
                    cells = [row["dataset"], f"{half} ({label})", str(found["n"])]
                    values = [found["cells"].get(header, "–") for header, _ in _HALF_COLUMNS]
                    lines.append("| " + " | ".join([*cells, *values]) + " |")
        for row in split:
            counts = row.get("clean_counts") or {}
            if counts:
                lines.append("")
                lines.append(
                    f"{row['dataset']}: of {counts['clean']} clean items, {counts['twin']} have a "
                    f"near-twin (Jaccard ≥ {TWIN_JACCARD:g}) among the {counts['read']} read "
                    f"items and {counts['shared_source']} share a source document with one."
                )
    lines.append("")
    for row in rows:
        inputs = "; ".join(row.get("inputs", [])) or "n/a"
        note = f" Tuned on: {row['tuning_note']}." if row.get("tuning_note") else ""
        lines.append(
            f"- {row['dataset']}: `{row['command']}` on `{row['data']}` "
            f"(sha256: {inputs}; corpus {row['checksum']}; {row['date']}).{note}"
        )
    lines.append("")
    # ">" is escaped so that no value can close the HTML comment early.
    lines += [f"<!-- eval-row {_row_json(row)} -->" for row in rows]
    return lines


def update_summary(docs_path: Path, report: Report) -> None:
    """Rewrite the marked summary block of ``docs_path`` with this report's row (others are kept).

    Raises ValueError when the file lacks the ``eval-summary`` start and end markers.
    """
    text = docs_path.read_text(encoding="utf-8")
    start, end = text.find(SUMMARY_START), text.find(SUMMARY_END)
    if start < 0 or end < start:
        raise ValueError(f"{docs_path}: no {SUMMARY_START} ... {SUMMARY_END} block")
    block = text[start + len(SUMMARY_START) : end]
    rows: dict[str, dict[str, Any]] = {}
    for line in block.splitlines():
        match = _ROW.match(line.strip())
        if match:
            row = json.loads(match.group("json"))
            rows[str(row["dataset"])] = row
    new = _summary_row(report)
    rows[new["dataset"]] = new
    body = "\n".join(_render_summary([rows[k] for k in sorted(rows)]))
    docs_path.write_text(
        text[: start + len(SUMMARY_START)] + "\n" + body + "\n" + text[end:], encoding="utf-8"
    )


def _row_json(row: dict[str, Any]) -> str:
    return json.dumps(row, ensure_ascii=False).replace(">", "\\u003e")

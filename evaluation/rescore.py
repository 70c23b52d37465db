"""Score a stored run again from its per-item facts: ``python -m evaluation.rescore``.

    .venv/bin/python -m evaluation.rescore reports/eval/<run>/report.json [...] \\
        [--reports DIR] [--docs docs/EVALUATION.md]

Nothing is asked of the services: ``report.json`` keeps every item's facts (status, citations
supporting and not, gold hit, ...), so today's aggregates, intervals, labels from the register
and the clean subset (``evaluation.clean``) can be recomputed from it. The data file is read
again only for the item order, the questions (near-twins) and their source documents; its
sha256 must be the one the run recorded. With ``--reports`` the rescored report files are
written there (a new folder per run); with ``--docs`` the summary block is updated from them,
each row still naming the command, data checksums and time of the run that produced the items.

Prints aggregates only: per part of a split set, the figures of its table.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from evaluation.clean import clean_subset
from evaluation.datasets import file_sha256, in_tune_half, load_dataset, tuning_of
from evaluation.metrics import BootstrapConfig, Report, build_report, item_score_from_dict
from evaluation.records import InputFile, RunInfo
from evaluation.report import clean_summary, update_summary, write_report
from evaluation.targets import render_targets


def run_info_from_dict(data: dict[str, Any]) -> RunInfo:
    """A stored run description, relabelled by today's register."""
    tuning = tuning_of(Path(data["data_path"]))
    return RunInfo(
        dataset=data["dataset"],
        data_path=data["data_path"],
        inputs=tuple(InputFile(**f) for f in data["inputs"]),
        corpus_checksum=data["corpus_checksum"],
        n_total=data["n_total"],
        limit=data["limit"],
        command=data["command"],
        started_at=data["started_at"],
        config=dict(data.get("config") or {}),
        tuning=tuning.label,
        tuning_note=tuning.note,
    )


def rescore(path: Path, *, root: Path = Path()) -> tuple[Report, dict[str, Any]]:
    """The report at ``path`` scored again with today's code; the stored JSON too.

    ``root`` is where the run's data paths are relative to (the repository). Raises ValueError
    when the data file is not the one the run read, or its items are not in the run's order.
    """
    stored = json.loads(path.read_text(encoding="utf-8"))
    run = run_info_from_dict(stored["run"])
    for recorded in run.inputs:
        actual = file_sha256(root / recorded.path)
        if actual != recorded.sha256:
            raise ValueError(
                f"{recorded.path}: sha256 {actual[:12]}…, the run read {recorded.sha256[:12]}…"
            )
    scores = [item_score_from_dict(item) for item in stored["items"]]
    tuning = tuning_of(Path(run.data_path))
    clean = None
    if tuning.has_clean:  # only then are the questions needed (a reserved set is not read)
        dataset = load_dataset(run.dataset, root / run.data_path, limit=run.limit)
        if [i.item_id for i in dataset.items] != [s.item_id for s in scores]:
            raise ValueError(f"{path}: items are not the data file's first {len(scores)}, in order")
        clean = clean_subset(tuning, dataset.items)
    report = build_report(
        scores,
        bootstrap=BootstrapConfig(**stored["bootstrap"]),
        run=run,
        retrieval_reported=stored["metrics"]["retrieval_doc_recall@10"]["n"] > 0,
        tune_half=in_tune_half if tuning.split else None,
        clean=clean,
    )
    return report, stored


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m evaluation.rescore", description=__doc__.splitlines()[0]
    )
    parser.add_argument("reports", nargs="+", type=Path, help="report.json files of stored runs")
    parser.add_argument("--reports", dest="out", type=Path, help="write rescored report files here")
    parser.add_argument("--docs", type=Path, help="update this page's summary block from them")
    args = parser.parse_args(sys.argv[1:] if argv is None else list(argv))
    for path in args.reports:
        report, stored = rescore(path)
        dataset = report.run.dataset if report.run else "run"
        print(
            f"{path}: {dataset}, {report.n_items} items, tuned on: {report.run.tuning if report.run else ''}"
        )
        line = clean_summary(report)
        if line:
            print(f"  {line}")
        if args.out is not None:
            files = write_report(
                report,
                args.out,
                plots=False,
                extra_markdown=render_targets(dataset, report),
                extra_json={"ablations": stored.get("ablations", []), "rescored_from": str(path)},
            )
            print(f"  -> {files.markdown}")
        if args.docs is not None:
            update_summary(args.docs, report)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

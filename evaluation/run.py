"""The evaluation runner: every question of a dataset over real gRPC, scored, reported, summarised.

    dataset file ─ load_dataset ─┬─ prepare_index (var/eval/<dataset>/<checksum>/, reused)
                                 └─ stack.inprocess.start_in_process (or --synthesis/...)
    per question: SynthesizeAnswer ─ RetrievePassages(top 10, cache off) ─> Outcome
    (an RPC failure is logged, counted as an error outcome, and the run goes on)
    score_run ─> reports/eval/<time>-<dataset>/ (JSON, Markdown, PNG) ─> docs/EVALUATION.md summary

``--ablations`` adds the retrieval stage and coverage threshold variants (evaluation/ablations.py).
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import logging
import os
import shlex
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cache, partial
from pathlib import Path
from typing import TypeVar

from grounded.synthesis.v1 import synthesis_service_pb2 as spb
from grounded.validator.v1 import validator_service_pb2 as vpb
from grpc import aio

from evaluation.ablations import (
    ANSWER_METRICS,
    RETRIEVAL_METRICS,
    RETRIEVAL_VARIANTS,
    THRESHOLD_VARIANTS,
    AblationRow,
    ablation_row,
    ablations_to_dict,
    render_ablations,
    threshold_label,
)
from evaluation.clean import clean_subset
from evaluation.client import (
    Client,
    Retrieved,
    draft_of,
    error_message,
    outcome_from_response,
    resolve_citations,
    verdict_of,
)
from evaluation.datasets import (
    CACHE_ROOT,
    DATASETS,
    DEFAULT_PATHS,
    EvalDataset,
    in_tune_half,
    load_dataset,
    run_info,
    tuning_of,
)
from evaluation.indexes import PreparedIndex, prepare_index
from evaluation.metrics import Report, score_run
from evaluation.models import models_used
from evaluation.records import EvalItem, Outcome, Status
from evaluation.report import (
    REPORT_ROOT,
    ReportFiles,
    clean_summary,
    update_summary,
    write_report,
)
from evaluation.stack import Endpoints
from evaluation.targets import render_targets
from services.common.channels import open_channel
from services.common.config import SettingError, close_names
from services.common.refusal import REFUSAL
from services.common.validation import Verdict
from services.retrieval.embedding import Encoder, encoder_name, load_encoder
from stack.inprocess import check_settings, settable_names, start_in_process
from stack.wiring import SETTING_PREFIXES

logger = logging.getLogger("evaluation")

DOCS = Path("docs/EVALUATION.md")
RETRIEVE_K = 10
DEFAULT_CONCURRENCY = 2
DEFAULT_TIMEOUT_S = 60.0
# RPC failures are outcomes; anything else is a harness bug and stops the run.
_RPC_FAILURES = (aio.AioRpcError, TimeoutError)

_T = TypeVar("_T")


@dataclass(frozen=True, slots=True)
class RunOptions:
    """What one invocation evaluates and where it writes."""

    datasets: tuple[str, ...]
    command: str
    data: Path | None = None
    limit: int | None = None
    endpoints: Endpoints | None = None  # None: start the three services in this process
    index_dir: Path | None = None  # a prebuilt index instead of the cached build
    ablations: bool = False
    concurrency: int = DEFAULT_CONCURRENCY
    timeout_s: float = DEFAULT_TIMEOUT_S
    report_root: Path = REPORT_ROOT
    docs: Path | None = DOCS  # None: leave the docs summary alone
    cache_root: Path = CACHE_ROOT
    plots: bool = True
    # Server settings for the in-process stack (SYNTHESIS_ANSWERABILITY=shadow, ...): --set.
    server_settings: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class DatasetResult:
    """One dataset's scored run and the files written for it."""

    report: Report
    files: ReportFiles
    ablations: tuple[AblationRow, ...]
    wall_s: float


@dataclass(frozen=True, slots=True)
class _Answered:
    """The outcome of one question and, when the call succeeded, the raw response."""

    outcome: Outcome
    response: spb.SynthesizeAnswerResponse | None
    retrieved: Retrieved | None


async def _bounded_map(
    items: Sequence[EvalItem],
    call: Callable[[EvalItem], Awaitable[_T]],
    concurrency: int,
    label: str,
    *,
    progress: bool = True,
) -> list[_T]:
    """``call`` for every item with at most ``concurrency`` in flight; results in item order.

    Logs every tenth of the way with ``progress``, else only the end.
    """
    gate = asyncio.Semaphore(concurrency)
    done = 0
    step = max(1, len(items) // 10) if progress else max(1, len(items))

    async def one(item: EvalItem) -> _T:
        nonlocal done
        async with gate:
            result = await call(item)
        done += 1
        if done % step == 0 or done == len(items):
            logger.info("%s: %d/%d", label, done, len(items))
        return result

    return list(await asyncio.gather(*(one(item) for item in items)))


async def _ask(client: Client, item: EvalItem) -> _Answered:
    try:
        response, client_ms = await client.synthesize(item.question)
        retrieved = (
            await client.retrieve(item.question, top_k=RETRIEVE_K) if client.has_retrieval else None
        )
    except _RPC_FAILURES as error:
        message = error_message(error)
        logger.warning("%s: %s", item.item_id, message)
        return _Answered(Outcome.from_error(item.item_id, message), None, None)
    outcome = outcome_from_response(
        item.item_id, response, client_ms=client_ms, retrieved=retrieved
    )
    return _Answered(outcome, response, retrieved)


# ---------------------------------------------------------------------------------- ablations


async def _retrieval_ablations(
    client: Client, items: Sequence[EvalItem], answered: Sequence[_Answered], concurrency: int
) -> list[AblationRow]:
    rows: list[AblationRow] = []
    base = {a.outcome.item_id: a.outcome for a in answered}
    for variant, switches in RETRIEVAL_VARIANTS.items():

        async def retrieve(
            item: EvalItem, variant: str = variant, switches: dict[str, bool] = switches
        ) -> Outcome:
            try:
                got = await client.retrieve(item.question, top_k=RETRIEVE_K, stages=switches)
            except _RPC_FAILURES as error:
                logger.warning("%s (%s): %s", item.item_id, variant, error_message(error))
                return Outcome.from_error(item.item_id, error_message(error))
            # Only the retrieved lists differ between variants; they are all that is scored.
            return dataclasses.replace(
                base[item.item_id], retrieved_ids=got.ids, retrieved_texts=got.texts
            )

        outcomes = await _bounded_map(
            items, retrieve, concurrency, f"ablation {variant}", progress=False
        )
        report = score_run(items, outcomes)
        rows.append(ablation_row("retrieval stages", variant, switches, report, RETRIEVAL_METRICS))
    return rows


async def _revalidated(
    client: Client, answered: _Answered, options: vpb.ValidationOptions
) -> Outcome:
    """The pipeline's outcome had the validator run with ``options`` on the same draft."""
    original = answered.outcome
    response = answered.response
    draft = draft_of(response) if response is not None else None
    if response is None or draft is None:
        return original  # an error, or refused before a draft reached the validator
    try:
        verdict = await client.validate(draft, response.evidence, options)
    except _RPC_FAILURES as error:
        return Outcome.from_error(original.item_id, error_message(error))
    if verdict_of(verdict) is Verdict.GROUNDED:
        outcome = Outcome.from_answer(
            original.item_id,
            draft,
            citations=resolve_citations(draft, response.evidence),
            validator_verdict=Verdict.GROUNDED,
        )
    else:
        outcome = Outcome.from_answer(
            original.item_id,
            REFUSAL,
            validator_verdict=verdict_of(verdict),
            refusal_reason="VALIDATION_FAILED",
        )
    return dataclasses.replace(
        outcome, retrieved_ids=original.retrieved_ids, retrieved_texts=original.retrieved_texts
    )


async def _threshold_ablations(
    client: Client, items: Sequence[EvalItem], answered: Sequence[_Answered], concurrency: int
) -> list[AblationRow]:
    rows: list[AblationRow] = []
    by_id = {a.outcome.item_id: a for a in answered}
    for single, multi in THRESHOLD_VARIANTS:
        options = vpb.ValidationOptions(
            single_citation_threshold=single, multi_citation_threshold=multi
        )

        async def check(item: EvalItem, options: vpb.ValidationOptions = options) -> Outcome:
            return await _revalidated(client, by_id[item.item_id], options)

        label = threshold_label((single, multi))
        outcomes = await _bounded_map(
            items, check, concurrency, f"ablation {label}", progress=False
        )
        report = score_run(items, outcomes)
        settings = {"single_citation_threshold": single, "multi_citation_threshold": multi}
        rows.append(
            ablation_row("validator coverage thresholds", label, settings, report, ANSWER_METRICS)
        )
    return rows


# ------------------------------------------------------------------------------------ running


def _git_revision() -> str:
    try:
        head = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, timeout=10
        ).stdout.strip()
        dirty = subprocess.run(
            ["git", "status", "--porcelain", "--untracked-files=no"],
            capture_output=True,
            text=True,
            timeout=10,
        ).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return "unknown"
    return f"{head or 'unknown'}{' (uncommitted changes)' if dirty else ''}"


def describe_index(prepared: PreparedIndex) -> str:
    """``<dir> (<n> chunks, <model>, reused)`` for the report."""
    how = "reused" if prepared.reused else "built by this run"
    return f"{prepared.index_dir} ({prepared.chunk_count} chunks, {prepared.model}, {how})"


def _settings(
    options: RunOptions,
    index: str,
    answered: Sequence[_Answered],
    wall_s: float,
    load: float,
    models: Mapping[str, str],
) -> dict[str, str]:
    versions = sorted({a.retrieved.index_version for a in answered if a.retrieved})
    endpoints = options.endpoints
    settings = {
        "stack": "deployed" if endpoints else "in-process (started by this command)",
        "generator": "server default" if endpoints else "extractive (server default)",
        "synthesis top_k": "server default (5)",
        "server settings": ", ".join(f"{k}={v}" for k, v in options.server_settings.items())
        or "defaults",
        "retrieval metrics": f"RetrievePassages top {RETRIEVE_K}, server-default stages, cache off",
        "index_version": ", ".join(versions) or "n/a",
        "concurrency": str(options.concurrency),
        "rpc timeout (s)": f"{options.timeout_s:g}",
        "wall time, questions and ablations (s)": f"{wall_s:.0f}",
        "load average at start (1 min)": f"{load:.2f} on {os.cpu_count()} CPUs",
        "git revision": _git_revision(),
    }
    if endpoints:
        settings["addresses"] = (
            f"synthesis={endpoints.synthesis} retrieval={endpoints.retrieval or '-'} "
            f"validator={endpoints.validator or '-'}"
        )
    else:
        settings["redis cache"] = "off"
    settings |= models or {"models": "not known here (a deployed stack loads its own)"}
    if index:
        settings["index"] = index
    return settings


async def evaluate_dataset(
    dataset: EvalDataset,
    client: Client,
    options: RunOptions,
    *,
    data_path: Path,
    index: str = "",
) -> DatasetResult:
    """Ask every item, score, run the ablations if asked, and write the report files."""
    started, load = time.perf_counter(), os.getloadavg()[0]
    # Read before the first question: the files the in-process services loaded at start.
    models = models_used(options.server_settings) if options.endpoints is None else {}
    logger.info("%s: %d questions (of %d)", dataset.name, len(dataset.items), dataset.n_total)
    answered = await _bounded_map(
        dataset.items, lambda item: _ask(client, item), options.concurrency, dataset.name
    )
    outcomes = [a.outcome for a in answered]
    rows: list[AblationRow] = []
    if options.ablations:
        if client.has_retrieval:
            rows += await _retrieval_ablations(client, dataset.items, answered, options.concurrency)
        if client.has_validator:
            rows += await _threshold_ablations(client, dataset.items, answered, options.concurrency)
    wall_s = time.perf_counter() - started
    info = run_info(
        dataset,
        data_path=data_path,
        command=options.command,
        config=_settings(options, index, answered, wall_s, load, models),
    )
    tuning = tuning_of(data_path)
    report = score_run(
        dataset.items,
        outcomes,
        run=info,
        tune_half=in_tune_half if tuning.split else None,
        clean=clean_subset(tuning, dataset.items),
    )
    extra = render_targets(dataset.name, report)
    if options.ablations:
        extra += "\n" + render_ablations(rows)
    files = write_report(
        report,
        options.report_root,
        plots=options.plots,
        extra_markdown=extra,
        extra_json={"ablations": ablations_to_dict(rows)},
    )
    if options.docs is not None:
        update_summary(options.docs, report)
    errors = sum(1 for o in outcomes if o.status is Status.ERROR)
    logger.info(
        "%s: %d items, %d errors, %.0f s; report in %s",
        dataset.name,
        len(outcomes),
        errors,
        wall_s,
        files.directory,
    )
    return DatasetResult(report, files, tuple(rows), wall_s)


async def _with_client(
    endpoints: Endpoints, timeout_s: float, body: Callable[[Client], Awaitable[_T]]
) -> _T:
    synthesis = open_channel(endpoints.synthesis)
    retrieval = open_channel(endpoints.retrieval) if endpoints.retrieval else None
    validator = open_channel(endpoints.validator) if endpoints.validator else None
    try:
        return await body(Client(synthesis, retrieval, validator, timeout_s=timeout_s))
    finally:
        for channel in (synthesis, retrieval, validator):
            if channel is not None:
                await channel.close()


async def evaluate(options: RunOptions) -> list[DatasetResult]:
    """Evaluate every dataset in ``options``; each gets its own index and (in-process) stack."""
    datasets = [
        (load_dataset(name, options.data, limit=options.limit), options.data or DEFAULT_PATHS[name])
        for name in options.datasets
    ]
    prepared: dict[str, PreparedIndex] = {}
    if options.endpoints is None and options.index_dir is None:
        # Every index is built (or found current) before any server starts; the encoder is
        # loaded at most once, and only when something must be built.
        # The in-process retrieval server loads RETRIEVAL_MODEL_PATH (--set); the index must be
        # built with the same model.
        model_path = options.server_settings.get("RETRIEVAL_MODEL_PATH") or None
        encoder: Callable[[], Encoder] = cache(partial(load_encoder, model_path))
        for dataset, _ in datasets:
            prepared[dataset.name] = prepare_index(
                dataset,
                root=options.cache_root,
                encoder_factory=encoder,
                model_name=encoder_name(model_path),
            )
    results: list[DatasetResult] = []
    for dataset, data_path in datasets:
        prep = prepared.get(dataset.name)
        if prep is not None:
            index_dir, index = prep.index_dir, describe_index(prep)
        elif options.index_dir is not None:
            index_dir, index = options.index_dir, f"{options.index_dir} (given with --index-dir)"
        else:
            index_dir, index = Path(), ""  # a deployed stack: its index_version is recorded

        async def body(
            client: Client,
            dataset: EvalDataset = dataset,
            data_path: Path = data_path,
            index: str = index,
        ) -> DatasetResult:
            return await evaluate_dataset(
                dataset, client, options, data_path=data_path, index=index
            )

        if options.endpoints is not None:
            results.append(await _with_client(options.endpoints, options.timeout_s, body))
            continue
        logger.info("%s: starting the services over %s", dataset.name, index_dir)
        stack = await start_in_process(index_dir, settings=options.server_settings)
        try:
            endpoints = Endpoints(stack.synthesis, stack.retrieval, stack.validator)
            results.append(await _with_client(endpoints, options.timeout_s, body))
        finally:
            await stack.stop()
    return results


# ---------------------------------------------------------------------------------------- CLI


def parse_args(argv: Sequence[str]) -> RunOptions:
    """Options from the command line (``python -m evaluation --help``)."""
    parser = argparse.ArgumentParser(
        prog="python -m evaluation",
        description="Evaluate the QA services over gRPC on a dataset and write reports.",
    )
    parser.add_argument("--dataset", choices=(*DATASETS, "all"), default="all")
    parser.add_argument(
        "--data", type=Path, help="a file (SciFact: a directory) in the dataset's published format"
    )
    parser.add_argument("--limit", type=int, help="only the first N questions")
    parser.add_argument("--ablations", action="store_true", help="also run the ablation variants")
    stack = parser.add_argument_group(
        "deployed stack (default: start the three services in this process)"
    )
    stack.add_argument("--synthesis", metavar="ADDR", help="SynthesisService host:port")
    stack.add_argument("--retrieval", metavar="ADDR", help="RetrievalService (retrieval metrics)")
    stack.add_argument("--validator", metavar="ADDR", help="ValidatorService (threshold ablations)")
    parser.add_argument(
        "--index-dir", type=Path, help="use this prebuilt index instead of var/eval/<dataset>/"
    )
    parser.add_argument("--concurrency", type=int, default=DEFAULT_CONCURRENCY)
    parser.add_argument("--timeout", type=float, default=DEFAULT_TIMEOUT_S, help="per RPC, seconds")
    parser.add_argument("--reports", type=Path, default=REPORT_ROOT, help="report root folder")
    parser.add_argument("--docs", type=Path, default=DOCS, help="docs page with the summary block")
    parser.add_argument("--no-docs", action="store_true", help="do not update the docs summary")
    parser.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="a server setting for the in-process stack, e.g. SYNTHESIS_ANSWERABILITY=shadow",
    )
    args = parser.parse_args(argv)
    server_settings: dict[str, str] = {}
    for item in args.set:
        name, sep, value = item.partition("=")
        if not sep or not name.startswith(SETTING_PREFIXES):
            meant = close_names(name, settable_names()) if name else []
            hint = f" (did you mean {' or '.join(meant)}?)" if meant else ""
            expected = "|".join(SETTING_PREFIXES)
            parser.error(f"--set {item!r}: expected {expected}NAME=VALUE{hint}")
        server_settings[name] = value
    try:  # a misspelt name would otherwise run, and report, the defaults under the wrong name
        check_settings(server_settings)
    except SettingError as error:
        parser.error(f"--set: {error}")
    if server_settings and args.synthesis:
        parser.error(
            "--set configures the in-process stack; it cannot be combined with --synthesis"
        )
    names = DATASETS if args.dataset == "all" else (args.dataset,)
    if args.limit is not None and args.limit < 1:
        parser.error("--limit must be at least 1")
    if args.concurrency < 1:
        parser.error("--concurrency must be at least 1")
    if len(names) > 1 and (args.data or args.index_dir):
        parser.error("--data and --index-dir need a single --dataset")
    if (args.retrieval or args.validator) and not args.synthesis:
        parser.error("--retrieval/--validator need --synthesis (a deployed stack)")
    if args.synthesis and len(names) > 1:
        parser.error("a deployed stack serves one corpus: pass --dataset with --synthesis")
    if args.synthesis and args.index_dir:
        parser.error("--index-dir starts local services; it cannot be combined with --synthesis")
    endpoints = (
        Endpoints(args.synthesis, args.retrieval or "", args.validator or "")
        if args.synthesis
        else None
    )
    return RunOptions(
        datasets=names,
        command=shlex.join(["python", "-m", "evaluation", *argv]),
        data=args.data,
        limit=args.limit,
        endpoints=endpoints,
        index_dir=args.index_dir,
        ablations=args.ablations,
        concurrency=args.concurrency,
        timeout_s=args.timeout,
        report_root=args.reports,
        docs=None if args.no_docs else args.docs,
        server_settings=server_settings,
    )


def main(argv: Sequence[str] | None = None) -> int:
    """Run the evaluation; prints where each report went. Exit status 1 when any item errored."""
    options = parse_args(sys.argv[1:] if argv is None else list(argv))
    # Offline: the embedding model is packaged, nothing may be fetched from a hub.
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    logging.basicConfig(
        level=logging.WARNING, format="%(asctime)s %(levelname)s %(name)s: %(message)s"
    )
    logger.setLevel(logging.INFO)
    results = asyncio.run(evaluate(options))
    failed = 0
    for result in results:
        dataset = result.report.run.dataset if result.report.run else "run"
        errors = result.report.metrics["error_rate"]
        failed += round((errors.value or 0.0) * errors.n)
        print(f"{dataset}: {result.report.n_items} items -> {result.files.markdown}")
        clean = clean_summary(result.report)
        if clean:
            print(clean)
    return 1 if failed else 0

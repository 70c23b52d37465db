"""Command line: check an answer file against a chunks file (exit 0 ok, 1 rejected, 2 bad input)."""

from __future__ import annotations

import argparse
import asyncio
import enum
import json
import sys
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from services.common.cli_errors import print_json, read_text, run_cli, source_name
from services.common.config import SettingError
from services.common.errors import InvalidInputError, ModelUnavailableError, Violations
from services.common.judge_client import OpenAIJudge, build_judge, judge_band
from services.common.language.markup import clip, visible
from services.common.validation import ValidationReport
from services.validator import cascade
from services.validator.config import ValidatorConfig
from services.validator.engine import EntailmentTier, validate
from services.validator.limits import MAX_EVIDENCE, request_violations
from services.validator.nli_onnx import tier_from_config

EXIT_ACCEPTED = 0
EXIT_REJECTED = 1
EXIT_BAD_INPUT = 2
EXIT_MODEL_UNAVAILABLE = 3


@dataclass(frozen=True, slots=True)
class _Evidence:
    semantic_id: str
    text: str


class BadInputError(Exception):
    """An input file is missing, unreadable or not in the expected format."""


def _read(path: Path) -> str:
    """A file's text; ``-`` is standard input. UTF-8, with or without a byte-order mark."""
    try:
        return read_text(path)
    except (OSError, UnicodeDecodeError) as exc:
        raise BadInputError(f"cannot read {source_name(path)}: {exc}") from exc


def load_chunks(path: Path) -> list[_Evidence]:
    """Evidence from a JSON list or JSON Lines file of ``{semantic_id, text}`` objects, or from
    the ``--json`` output of the retrieval CLI (``passages``) or of ``ask`` (``evidence``)."""
    raw = _read(path)
    try:
        records = json.loads(raw)
    except json.JSONDecodeError:
        try:
            records = [json.loads(line) for line in raw.splitlines() if line.strip()]
        except json.JSONDecodeError as exc:
            raise BadInputError(f"{path} is neither JSON nor JSON Lines: {exc}") from exc
    if isinstance(records, dict):  # a response, or JSON Lines of a single chunk
        records = records.get("passages", records.get("evidence", [records]))
    if not isinstance(records, list):
        raise BadInputError(f"{path}: expected a list of objects (or 'passages' / 'evidence')")
    chunks: list[_Evidence] = []
    for n, record in enumerate(records, start=1):
        if not isinstance(record, dict):
            raise BadInputError(f"{path}: item {n} is not an object")
        # protobuf's JSON names it semanticId; the files this CLI documents use semantic_id.
        semantic_id = record.get("semantic_id", record.get("semanticId"))
        text = record.get("text")
        if not isinstance(semantic_id, str) or not semantic_id or not isinstance(text, str):
            raise BadInputError(f"{path}: item {n} needs a non-empty 'semantic_id' and a 'text'")
        chunks.append(_Evidence(semantic_id, text))
    return chunks


def load_ask_response(path: Path) -> tuple[str, list[_Evidence]]:
    """The answer and evidence of ``ask --json`` output (a SynthesizeAnswerResponse as JSON)."""
    try:
        response = json.loads(_read(path))
    except json.JSONDecodeError as exc:
        if exc.msg == "Extra data":  # one JSON document per line: a stream's events
            raise BadInputError(
                f"{path} holds several JSON documents, one per line: the output of "
                "`ask --stream --json`? Validate the output of `ask --json` (one response)"
            ) from exc
        raise BadInputError(f"{path} is not JSON: {exc}") from exc
    if not isinstance(response, dict) or not isinstance(response.get("answer"), str):
        raise BadInputError(f"{path}: expected the JSON of `ask --json` (with 'answer')")
    evidence = response.get("evidence")
    if not isinstance(evidence, list) or not evidence:
        raise BadInputError(f"{path}: the response carries no 'evidence'")
    chunks = [
        _Evidence(str(e.get("semanticId", e.get("semantic_id", ""))), str(e.get("text", "")))
        for e in evidence
        if isinstance(e, dict)
    ]
    if any(not c.semantic_id for c in chunks):
        raise BadInputError(f"{path}: an evidence item has no semanticId")
    return response["answer"], chunks


def report_to_dict(report: ValidationReport) -> dict[str, Any]:
    """The report as plain JSON-ready data (enums become their values)."""
    data = asdict(report)
    # Timings are for the service's metrics; the printed report stays the same run to run.
    del data["stage_seconds"]
    data["accepted"] = report.accepted
    plain: dict[str, Any] = _plain(data)
    return plain


def render(report: ValidationReport) -> str:
    """Human-readable verdict with one line per sentence."""
    lines = [
        f"verdict: {report.verdict.value} ({report.reason.value}), "
        f"support {report.support_score:.2f}, accepted: {'yes' if report.accepted else 'no'}",
        "tiers: "
        + ", ".join(t.value for t in report.tiers)
        + (f" (model {report.entailment_model})" if report.entailment_model else "")
        + (f" (judge {report.judge_model})" if report.judge_model else ""),
    ]
    if report.detail:
        lines.insert(1, f"why: {report.detail}")
    for label, values in (
        ("invalid citations", report.invalid_citations),
        ("missing citations", report.missing_citations),
        ("malformed citations", tuple(m.token for m in report.malformed_citations)),
    ):
        if values:
            lines.append(f"{label}: {', '.join(values)}")
    for s in report.sentences:
        cited = ",".join(s.cited_ids) or "-"
        lines.append(
            f"  [{s.index}] {s.verdict.value:<11} {s.reason.value:<19} cov={s.coverage:.2f} "
            f"cites={cited}  {_shorten(visible(s.text))}"
        )
        if s.entailment is not None:
            e = s.entailment
            lines.append(
                f"        entailment {e.entailment:.2f} neutral {e.neutral:.2f} "
                f"contradiction {e.contradiction:.2f} from {e.semantic_id or '-'}"
                f"[{e.char_start}:{e.char_end}]" + (" (verbatim)" if e.verbatim else "")
            )
        if s.judge is not None:
            j = s.judge
            score = f" P(yes) {j.score:.2f}" if j.score is not None else ""
            lines.append(
                f"        judge {j.model}: {j.outcome}{score}" + (" (cached)" if j.cached else "")
            )
        if s.detail:
            lines.append(f"        {s.detail}")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    """Run the validator once; returns the exit code."""
    parser = argparse.ArgumentParser(
        prog="python -m services.validator.cli",
        description="Validate an answer against evidence chunks.",
    )
    parser.add_argument("--answer-file", type=Path, help="UTF-8 answer text ('-': stdin)")
    parser.add_argument(
        "--chunks-file",
        type=Path,
        help="evidence: JSON list or JSONL of {semantic_id, text}, or the --json output of the "
        "retrieval CLI or of ask ('-': stdin)",
    )
    parser.add_argument(
        "--from-ask",
        type=Path,
        metavar="FILE",
        help="re-check an answer: the --json output of `services.synthesis.cli ask` gives both "
        "the answer and its evidence ('-': stdin)",
    )
    parser.add_argument("--json", action="store_true", help="print the full report as JSON")
    parser.add_argument(
        "--no-entailment",
        action="store_true",
        help="skip the entailment model (as VALIDATOR_ENTAILMENT=off does for the service)",
    )
    args = parser.parse_args(argv)
    if (args.from_ask is None) == (args.answer_file is None or args.chunks_file is None):
        parser.error("give --answer-file and --chunks-file, or --from-ask")
    if str(args.answer_file) == "-" and str(args.chunks_file) == "-":
        parser.error("standard input ('-') can be the answer or the chunks, not both")
    try:
        if args.from_ask is not None:
            answer, chunks = load_ask_response(args.from_ask)
        else:
            answer = _read(args.answer_file)
            chunks = load_chunks(args.chunks_file)
        # The service's own request rules (limits, duplicate or uncitable ids), so a request
        # it would refuse is refused here too, naming the same fields.
        violations = Violations()
        request_violations(answer, len(chunks), chunks[: MAX_EVIDENCE + 1], violations)
        violations.raise_if_any()
    except BadInputError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except InvalidInputError as exc:
        for violation in exc.violations:
            print(f"error: {violation.field}: {violation.description}", file=sys.stderr)
        return EXIT_BAD_INPUT
    # The same configuration as the service (VALIDATOR_* variables), so the same judgement.
    try:
        config = ValidatorConfig.from_env()
    except SettingError as exc:  # a bad VALIDATOR_* variable is bad input, not a rejection
        print(f"error: configuration: {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT
    tier: EntailmentTier | None = None
    if config.entailment and not args.no_entailment:
        try:
            tier = tier_from_config(config)
        except ModelUnavailableError as exc:
            print(f"error: entailment model unavailable: {exc.message}", file=sys.stderr)
            return EXIT_MODEL_UNAVAILABLE
    report = validate(answer, chunks, tier=tier)
    judge = build_judge(config.judge)
    if judge is not None:
        # The judge tier, as the service runs it (VALIDATOR_JUDGE_*), so the same judgement.
        report = asyncio.run(_judged(report, chunks, judge, config))
    if args.json:
        print_json(report_to_dict(report))
    else:
        print(render(report))
    return EXIT_ACCEPTED if report.accepted else EXIT_REJECTED


async def _judged(
    report: ValidationReport,
    chunks: Sequence[_Evidence],
    judge: OpenAIJudge,
    config: ValidatorConfig,
) -> ValidationReport:
    try:
        judged, _ = await cascade.escalate(
            report,
            chunks,
            judge,
            judge_band(config.judge, cascade.DEFAULT_BAND),
            config.judge_review,
            timeout_s=judge.timeout_s,
        )
    finally:
        await judge.aclose()
    return judged


def _plain(value: Any) -> Any:
    if isinstance(value, enum.Enum):
        return value.value
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    return value


def _shorten(text: str, width: int = 80) -> str:
    return clip(" ".join(text.split()), width)


if __name__ == "__main__":
    sys.exit(run_cli(main))

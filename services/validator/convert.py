"""ValidateAnswer: request proto → domain, with request-limit checks that raise field
violations; and the domain report → the response. The report's conversion (both ways) is
shared with synthesis and lives in ``services.common.validation_proto``."""

from __future__ import annotations

from typing import NamedTuple

from grounded.validator.v1 import validator_service_pb2 as pb

from services.common import validation as r
from services.common.errors import Violations
from services.common.float32 import decimal_from_float32
from services.common.judge import Band
from services.common.validation_proto import report_to_proto
from services.validator.cascade import DEFAULT_BAND
from services.validator.limits import MAX_EVIDENCE, request_violations

_THRESHOLDS = ("single_citation_threshold", "multi_citation_threshold")
_SWITCHES = (
    "check_numbers",
    "check_negation",
    "require_complete_citation",
    "check_penalties",
    "check_roles",
    "check_entailment",
    "check_judge",
)
_MODEL_THRESHOLDS = (
    "entail_threshold",
    "contradiction_threshold",
    "coverage_rescue_threshold",
    "contradiction_veto_threshold",
    "judge_band_low",
    "judge_band_high",
)


class EvidenceItem(NamedTuple):
    """What the engine reads of a passage (the rest of its provenance plays no part)."""

    semantic_id: str
    text: str
    # What an uncited heading or lead-in may name (the extractive generator's source headings).
    title: str = ""


def request_from_proto(
    request: pb.ValidateAnswerRequest, *, band: Band = DEFAULT_BAND
) -> tuple[str, list[EvidenceItem], r.ValidationOptions]:
    """Check limits and convert; every violation is reported at once. ``band`` is the server's
    judge band, whose ends fill those the request leaves unset."""
    violations = Violations()
    evidence = [
        EvidenceItem(p.semantic_id, p.text, p.title) for p in request.evidence[: MAX_EVIDENCE + 1]
    ]
    request_violations(request.answer, len(request.evidence), evidence, violations)
    options = r.ValidationOptions()
    o = request.options
    # Each threshold as the decimal the client wrote, not its float32 (an explicit 0.3 must be
    # the default 0.3, not 0.30000001192092896); checked and used as such.
    thresholds = {
        name: decimal_from_float32(getattr(o, name))
        for name in (*_THRESHOLDS, *_MODEL_THRESHOLDS)
        if o.HasField(name)
    }
    for name, value in thresholds.items():
        if not 0.0 <= value <= 1.0:
            violations.add(f"options.{name}", "must be between 0 and 1")
    # An end the request leaves unset is the server's, so one end alone can invert the band.
    low, high = band.with_ends(thresholds.get("judge_band_low"), thresholds.get("judge_band_high"))
    if 0.0 <= low <= 1.0 and 0.0 <= high <= 1.0 and low > high:
        if o.HasField("judge_band_low") and o.HasField("judge_band_high"):
            violations.add("options.judge_band_low", "must not exceed options.judge_band_high")
        elif o.HasField("judge_band_low"):
            violations.add(
                "options.judge_band_low",
                f"must not exceed the server's judge_band_high ({high:g}) when that is not set",
            )
        else:
            violations.add(
                "options.judge_band_high",
                f"must not be below the server's judge_band_low ({low:g}) when that is not set",
            )
    violations.raise_if_any()
    overrides = {**thresholds, **{name: getattr(o, name) for name in _SWITCHES if o.HasField(name)}}
    if overrides:
        options = r.ValidationOptions(**{**_options_dict(options), **overrides})
    return request.answer, evidence, options


def _options_dict(options: r.ValidationOptions) -> dict[str, object]:
    return {name: getattr(options, name) for name in r.ValidationOptions.__dataclass_fields__}


def response_to_proto(report: r.ValidationReport) -> pb.ValidateAnswerResponse:
    """The response: the shared ``ValidationReport``'s bytes read as ``ValidateAnswerResponse``,
    whose fields are the same (numbers, names, types), so nothing is lost or re-derived."""
    return pb.ValidateAnswerResponse.FromString(report_to_proto(report).SerializeToString())

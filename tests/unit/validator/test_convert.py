"""Request limits at the RPC boundary: each broken limit is a named field violation."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from grounded.type.v1 import evidence_pb2
from grounded.type.v1 import validation_pb2 as tpb
from grounded.validator.v1 import validator_service_pb2 as pb

from services.common import validation as r
from services.common import validation_proto
from services.common.errors import InvalidInputError
from services.common.judge import Band
from services.common.language import citations
from services.common.refusal import REFUSAL
from services.common.validation import Verdict
from services.validator import convert
from services.validator.cascade import DEFAULT_BAND
from services.validator.config import DEFAULT_MODEL_DIR
from services.validator.engine import _tiers, validate
from services.validator.limits import (
    MAX_ANSWER_BYTES,
    MAX_EVIDENCE,
    MAX_EVIDENCE_TEXT_CHARS,
    MAX_ID_CHARS,
)
from tests.unit.validator.samples import ipc_text


def passage(semantic_id: str, text: str = "Whoever commits theft.") -> evidence_pb2.Passage:
    return evidence_pb2.Passage(semantic_id=semantic_id, text=text)


def violated(request: pb.ValidateAnswerRequest) -> dict[str, str]:
    with pytest.raises(InvalidInputError) as caught:
        convert.request_from_proto(request)
    return {v.field: v.description for v in caught.value.violations}


class TestRequestFromProto:
    def test_request_from_proto_accepts_the_limits_themselves(self) -> None:
        request = pb.ValidateAnswerRequest(
            answer="a" * MAX_ANSWER_BYTES,
            evidence=[passage(f"D_{i}") for i in range(MAX_EVIDENCE)],
        )

        answer, chunks, options = convert.request_from_proto(request)

        assert len(answer) == MAX_ANSWER_BYTES
        assert len(chunks) == MAX_EVIDENCE
        assert options.single_citation_threshold == 0.30

    def test_request_from_proto_rejects_201_evidence_items(self) -> None:
        request = pb.ValidateAnswerRequest(
            answer="x", evidence=[passage(f"D_{i}") for i in range(MAX_EVIDENCE + 1)]
        )

        assert violated(request) == {"evidence": "must hold at most 200 passages (got 201)"}

    def test_request_from_proto_counts_answer_bytes_not_characters(self) -> None:
        # 'é' is two bytes in UTF-8: half as many characters break the byte limit.
        request = pb.ValidateAnswerRequest(answer="é" * (MAX_ANSWER_BYTES // 2 + 1))

        fields = violated(request)

        assert list(fields) == ["answer"]
        assert f"at most {MAX_ANSWER_BYTES} bytes" in fields["answer"]

    def test_request_from_proto_rejects_an_empty_id(self) -> None:
        request = pb.ValidateAnswerRequest(answer="x", evidence=[passage("A_0"), passage("  ")])

        assert violated(request) == {"evidence[1].semantic_id": "must not be empty"}

    def test_request_from_proto_rejects_a_duplicate_id(self) -> None:
        request = pb.ValidateAnswerRequest(
            answer="x", evidence=[passage("A_0"), passage("B_0"), passage("A_0")]
        )

        assert violated(request) == {"evidence[2].semantic_id": "duplicate id 'A_0'"}

    @pytest.mark.parametrize(
        ("semantic_id", "says"),
        [("A]", "'[' or ']'"), ("[A_0", "'[' or ']'"), ("A\x00_0", "control"), ("A\n0", "control"),
         ("A\u200b_0", "invisible"), (" A_0", "start or end with a space")],
    )  # fmt: skip
    def test_request_from_proto_rejects_an_id_no_citation_could_name(
        self, semantic_id: str, says: str
    ) -> None:
        # Found by a new user: such a passage was accepted, and citing it gave NO_CITATION.
        request = pb.ValidateAnswerRequest(answer="x", evidence=[passage(semantic_id)])

        assert says in violated(request)["evidence[0].semantic_id"]

    def test_ids_of_the_shipped_id_shapes_are_citable(self) -> None:
        for semantic_id in ("IPC_420_0", "Tinted_Windows_(band)_3", "doc 12_0", "A,B_1"):
            assert citations.uncitable(semantic_id) == ""

    def test_request_from_proto_reports_every_violation_at_once(self) -> None:
        request = pb.ValidateAnswerRequest(
            answer="a" * (MAX_ANSWER_BYTES + 1),
            evidence=[passage(""), passage("A_0"), passage("A_0")],
            options=pb.ValidationOptions(single_citation_threshold=1.5),
        )

        assert set(violated(request)) == {
            "answer",
            "evidence[0].semantic_id",
            "evidence[2].semantic_id",
            "options.single_citation_threshold",
        }

    def test_request_from_proto_applies_option_overrides(self) -> None:
        request = pb.ValidateAnswerRequest(
            answer="x",
            options=pb.ValidationOptions(multi_citation_threshold=0.5, check_numbers=False),
        )

        _, _, options = convert.request_from_proto(request)

        assert options.multi_citation_threshold == pytest.approx(0.5)
        assert options.check_numbers is False
        assert options.single_citation_threshold == 0.30
        assert options.check_negation is True

    @pytest.mark.parametrize("name", [*convert._THRESHOLDS, *convert._MODEL_THRESHOLDS])
    def test_request_from_proto_reads_a_threshold_as_the_decimal_sent(self, name: str) -> None:
        request = pb.ValidateAnswerRequest(answer="x", options=pb.ValidationOptions(**{name: 0.3}))

        _, _, options = convert.request_from_proto(request, band=Band(0.05, 0.9))

        # The float32 on the wire reads as 0.30000001192092896.
        assert getattr(options, name) == 0.3

    def test_request_from_proto_the_defaults_sent_are_the_defaults(self) -> None:
        explicit = pb.ValidationOptions(
            single_citation_threshold=0.30, multi_citation_threshold=0.21
        )

        _, _, unset = convert.request_from_proto(pb.ValidateAnswerRequest(answer="x"))
        _, _, sent = convert.request_from_proto(
            pb.ValidateAnswerRequest(answer="x", options=explicit)
        )

        assert sent == unset


class TestJudgeBand:
    @pytest.mark.parametrize(
        ("options", "field", "says"),
        [
            (pb.ValidationOptions(judge_band_low=0.7, judge_band_high=0.3), "low", "must not"),
            (pb.ValidationOptions(judge_band_low=0.95), "low", "server's judge_band_high (0.9)"),
            (pb.ValidationOptions(judge_band_high=0.01), "high", "server's judge_band_low (0.05)"),
        ],
    )
    def test_an_inverted_band_is_a_field_violation(
        self, options: pb.ValidationOptions, field: str, says: str
    ) -> None:
        with pytest.raises(InvalidInputError) as caught:
            convert.request_from_proto(pb.ValidateAnswerRequest(answer="x", options=options))
        violations = {v.field: v.description for v in caught.value.violations}
        assert says in violations[f"options.judge_band_{field}"]

    def test_one_end_inside_the_server_band_is_accepted(self) -> None:
        request = pb.ValidateAnswerRequest(
            answer="x", options=pb.ValidationOptions(judge_band_low=0.5)
        )
        _, _, options = convert.request_from_proto(request, band=Band(0.05, 0.9))
        assert (options.judge_band_low, options.judge_band_high) == (0.5, None)


class TestReportToProto:
    def test_report_round_trips_through_the_proto(self) -> None:
        request = pb.ValidateAnswerRequest(
            answer="Theft is punishable with imprisonment for three years [1]. Murder [IPC_1_0].",
            evidence=[passage("IPC_379_0", ipc_text("379"))],
        )
        answer, chunks, options = convert.request_from_proto(request)
        report = validate(answer, chunks, options)

        back = validation_proto.report_from_proto(validation_proto.report_to_proto(report))

        assert report.verdict is Verdict.NOT_GROUNDED
        assert back.verdict is report.verdict
        assert back.reason is report.reason
        assert back.invalid_citations == ("IPC_1_0",)
        assert [s.reason for s in back.sentences] == [s.reason for s in report.sentences]
        assert back.sentences[0].spans == report.sentences[0].spans


PROTOS = Path(__file__).resolve().parents[3] / "protos/grounded"


def test_proto_comments_state_the_limits_and_the_refusal() -> None:
    """The request's comments give the limits limits.py enforces and the exact refusal."""
    text = (PROTOS / "validator/v1/validator_service.proto").read_text()
    request = text[text.index("message ValidateAnswerRequest") :]
    request = " ".join(line.strip(" /") for line in request[: request.index("}")].splitlines())
    assert f"at most {MAX_ANSWER_BYTES:,} bytes" in request
    assert f"At most {MAX_EVIDENCE} passages" in request
    assert f"text of at most {MAX_EVIDENCE_TEXT_CHARS:,} characters" in request
    assert f"at most {MAX_ID_CHARS} characters" in request
    assert f"exactly `{REFUSAL}`" in request
    verdicts = (PROTOS / "type/v1/validation.proto").read_text()
    assert verdicts.count(f"`{REFUSAL[:30]}") == 2  # VALIDATION_VERDICT_ and _REASON_REFUSAL


def _option_comments() -> dict[str, str]:
    """Each ValidationOptions field's comment, one line, and the message's own comment ("")."""
    text = (PROTOS / "validator/v1/validator_service.proto").read_text()
    start = text.index("message ValidationOptions {")
    body = text[start : text.index("\n}", start)]
    found = {"": " ".join(text[:start].rsplit("\n\n", 1)[-1].replace("//", "").split())}
    for comment, name in re.findall(r"((?:  //.*\n)+)  optional \w+ (\w+) = \d+;", body):
        found[name] = " ".join(line.strip(" /") for line in comment.splitlines())
    return found


def test_proto_comments_state_every_options_default() -> None:
    """Every ValidationOptions field says its default as the server has it: the engine's own,
    the judge band's, or for the model's thresholds the shipped manifest's calibration."""
    comments = _option_comments()
    wire = set(pb.ValidationOptions.DESCRIPTOR.fields_by_name)
    defaults = {n: getattr(r.ValidationOptions(), n) for n in wire}
    assert set(comments) == wire | {""}
    manifest = json.loads((DEFAULT_MODEL_DIR / "manifest.json").read_text())
    assert manifest["name"] in comments[""]
    for name, default in defaults.items():
        if isinstance(default, bool):
            expected = f"default {str(default).lower()}"
        elif default is not None:
            expected = f"default {default:g}"
        elif name.startswith("judge_band_"):
            expected = f"{getattr(DEFAULT_BAND, name.removeprefix('judge_band_')):g} unless"
        elif name in manifest["calibration"]:
            expected = f"{manifest['calibration'][name]:g} for the shipped model"
        else:  # an optional threshold the shipped manifest does not set (the veto)
            expected = "none for the shipped model"
        assert expected in comments[name], name
        if not isinstance(default, bool):
            assert "in [0, 1]" in comments[name], name


def test_proto_comment_states_the_order_tiers_run_in() -> None:
    """Every tier on: the order a report lists them (the judge appended by the cascade) is the
    order ValidationTier's comment gives, which is not the enum numbers' order."""
    text = (PROTOS / "type/v1/validation.proto").read_text()
    comment = " ".join(text[: text.index("enum ValidationTier {")].rsplit("\n\n", 1)[-1].split())
    ran = [t.name for t in (*_tiers(r.ValidationOptions(), True), r.Tier.JUDGE)]
    stated = re.findall(r"\b(" + "|".join(ran) + r")\b", comment.split("which is", 1)[1])
    assert stated == ran
    numbers = [tpb.ValidationTier.Value(f"VALIDATION_TIER_{name}") for name in ran]
    assert numbers != sorted(numbers)  # the reason the comment exists

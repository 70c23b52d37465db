"""The contracts' shared shapes: ValidateAnswerResponse is ValidationReport field for field, and no
service's contract imports another service's."""

from __future__ import annotations

import re
from pathlib import Path

from google.protobuf.descriptor import Descriptor
from grounded.type.v1 import validation_pb2 as tpb
from grounded.validator.v1 import validator_service_pb2 as vpb

from services.common import validation as r
from services.common.validation_proto import report_from_proto, report_to_proto

PROTOS = Path(__file__).resolve().parents[3] / "protos" / "grounded"


def _fields(message: Descriptor) -> list[tuple[object, ...]]:
    """Number, name, type, repeated, and the message or enum type of every field."""
    return [
        (
            f.number,
            f.name,
            f.type,
            f.is_repeated,
            f.message_type.full_name if f.message_type else "",
            f.enum_type.full_name if f.enum_type else "",
        )
        for f in message.fields
    ]


class TestValidationContract:
    def test_response_has_exactly_the_reports_fields(self) -> None:
        assert _fields(vpb.ValidateAnswerResponse.DESCRIPTOR) == _fields(
            tpb.ValidationReport.DESCRIPTOR
        )

    def test_a_report_survives_the_trip_through_the_response(self) -> None:
        report = r.ValidationReport(
            r.Verdict.NOT_GROUNDED,
            r.Reason.JUDGE_REJECTED,
            0.5,
            cited_ids=("IPC_379_0",),
            sentences=(
                r.SentenceReport(
                    0,
                    "Theft is punishable [IPC_379_0].",
                    r.SentenceVerdict.UNSUPPORTED,
                    r.Reason.JUDGE_REJECTED,
                    0.75,
                    cited_ids=("IPC_379_0",),
                    decided_by=r.Tier.JUDGE,
                    judge=r.JudgeDecision("checker", "no", 0.125, local_score=0.375),
                    failed=(r.Reason.JUDGE_REJECTED, r.Reason.NOT_ENTAILED),
                ),
            ),
            tiers=(r.Tier.CITATIONS, r.Tier.JUDGE),
            judge_model="checker",
            detail='sentence 0 ("Theft is punished."): the judge found it unsupported',
        )
        wire = vpb.ValidateAnswerResponse.FromString(report_to_proto(report).SerializeToString())
        back = report_from_proto(tpb.ValidationReport.FromString(wire.SerializeToString()))
        assert back == report


class TestContractImports:
    def test_no_service_contract_imports_another_services(self) -> None:
        offenders = {}
        for proto in PROTOS.glob("*/v1/*.proto"):
            service = proto.parts[-3]
            imported = re.findall(r'^import "grounded/(\w+)/', proto.read_text(), re.M)
            foreign = [i for i in imported if i not in (service, "type")]
            if foreign:
                offenders[proto.name] = foreign
        assert offenders == {}


class TestContractComments:
    def test_no_comment_points_at_server_source_or_an_issue(self) -> None:
        """A client reads the protos without the server's source or its tracker: comments give
        the values themselves (operator settings by their environment variable are fine)."""
        found = {
            proto.name: hits
            for proto in PROTOS.glob("*/v1/*.proto")
            if (hits := re.findall(r"services/[\w/]+\.py|\bissue \d+", proto.read_text()))
        }
        assert found == {}

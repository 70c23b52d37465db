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
from tests.support.protos import build_contracts

ROOT = Path(__file__).resolve().parents[3]
PROTOS = ROOT / "protos" / "grounded"


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


# The Go module the go_package options name (README, "Clients in other languages": replace it,
# or let buf's managed mode do so, in a client's own build), and where buf.gen.yaml writes Go.
GO_MODULE = "github.com/grounded-qa/grounded"
GO_OUT = "clients/go"


class TestLanguageOptions:
    """Code in other languages can be generated from every contract file: protoc-gen-go refuses a
    file without go_package ("unable to determine Go import path"), and buf's STANDARD style
    expects each package's Java and C# names to agree across its files."""

    def test_every_file_names_its_go_java_and_csharp_packages(self, tmp_path: Path) -> None:
        wrong = {}
        for file in build_contracts(tmp_path / "contracts.binpb").file:
            if not file.package.startswith("grounded."):
                continue
            directory = file.name.rsplit("/", 1)[0]  # grounded/type/v1
            _, service, version = file.package.split(".")
            expected = {
                "go_package": f"{GO_MODULE}/{GO_OUT}/{directory};{service}{version}",
                "java_package": f"com.{file.package}",
                "java_multiple_files": True,
                "csharp_namespace": ".".join(p.capitalize() for p in file.package.split(".")),
            }
            got = {name: getattr(file.options, name) for name in expected}
            if got != expected:
                wrong[file.name] = got
        assert wrong == {}

    def test_buf_gen_writes_go_where_go_package_points(self) -> None:
        template = (ROOT / "buf.gen.yaml").read_text()
        go_outs = re.findall(
            r"remote: buf\.build/(?:protocolbuffers|grpc)/go\n\s+out: (\S+)", template
        )
        assert go_outs == [GO_OUT, GO_OUT], template
        assert "paths=source_relative" in template

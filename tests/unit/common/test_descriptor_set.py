"""The descriptor set reflection serves: the contracts with their comments, shipped with the stubs."""

from __future__ import annotations

import logging
import subprocess
import sys
from pathlib import Path

import pytest
from google.protobuf import descriptor_pb2, descriptor_pool
from grounded.retrieval.v1 import retrieval_service_pb2
from grounded.synthesis.v1 import synthesis_service_pb2
from grounded.validator.v1 import validator_service_pb2

from services.common import server

# The services' contracts, loaded into the default pool as a server loads them (with the files
# they import, and error_reason.proto by services.common.server).
SERVICES = (retrieval_service_pb2, synthesis_service_pb2, validator_service_pb2)

PROTOS = Path(__file__).resolve().parents[3] / "protos"


class TestDescriptorSet:
    def test_shipped_descriptor_set_holds_every_contract_with_its_comments(self) -> None:
        comments = server.read_comments(server.DESCRIPTOR_SET)

        expected = {str(p.relative_to(PROTOS)) for p in PROTOS.rglob("*.proto")}
        assert set(comments) == expected
        for name, info in comments.items():
            commented = [loc for loc in info.location if loc.leading_comments]
            assert commented, f"{name} has no comments: generated without --include_source_info"

    def test_unreadable_descriptor_set_is_empty_with_a_warning(
        self, tmp_path: Path, caplog: pytest.LogCaptureFixture
    ) -> None:
        corrupt = tmp_path / "descriptor_set.binpb"
        corrupt.write_bytes(b"\xff\xff\xff")

        with caplog.at_level(logging.WARNING, logger=server.__name__):
            comments = server.read_comments(corrupt)

        assert comments == {}
        assert any(str(corrupt) in r.getMessage() for r in caplog.records)


class TestReflectedTypes:
    def test_the_server_bootstrap_registers_the_error_reason_enum(self) -> None:
        """Reflection answers from the process's descriptor pool; ErrorReason is in no method's
        messages, so only the bootstrap's import puts it there. A fresh interpreter, so that
        no other test's import can stand in for it."""
        probe = (
            "import services.common.server\n"
            "from google.protobuf import descriptor_pool\n"
            "enum = descriptor_pool.Default().FindEnumTypeByName('grounded.type.v1.ErrorReason')\n"
            "print(enum.values_by_name['INVALID_INPUT'].number)"
        )
        result = subprocess.run(
            [sys.executable, "-c", probe], capture_output=True, text=True, timeout=60
        )
        assert result.returncode == 0, result.stderr
        assert result.stdout.strip() == "1"

    def test_reflection_gives_every_field_the_json_name_protoc_gives_it(self) -> None:
        """What reflection sends (the pool's descriptors, completed) names each field in JSON as
        the shipped descriptor set, written by protoc from the .proto files, does."""
        pool = descriptor_pool.Default()
        assert all(pool.FindFileByName(s.DESCRIPTOR.name) for s in SERVICES)
        shipped = descriptor_pb2.FileDescriptorSet.FromString(server.DESCRIPTOR_SET.read_bytes())
        for protoc_file in shipped.file:
            sent = descriptor_pb2.FileDescriptorProto()
            pool.FindFileByName(protoc_file.name).CopyToProto(sent)

            server._fill_json_names(sent, pool)

            assert _json_names(sent) == _json_names(protoc_file), protoc_file.name
        passage = pool.FindMessageTypeByName("grounded.type.v1.Passage")
        assert passage.fields_by_name["semantic_id"].json_name == "semanticId"


def _json_names(file: descriptor_pb2.FileDescriptorProto) -> dict[str, str]:
    names = {}
    pending = [(file.package, m) for m in file.message_type]
    while pending:
        scope, message = pending.pop()
        full_name = f"{scope}.{message.name}"
        names.update({f"{full_name}.{f.name}": f.json_name for f in message.field})
        pending.extend((full_name, m) for m in message.nested_type)
    return names

"""The descriptor set reflection serves: the contracts with their comments, shipped with the stubs."""

from __future__ import annotations

import logging
import subprocess
import sys
from pathlib import Path

import pytest

from services.common import server

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

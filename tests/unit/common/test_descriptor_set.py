"""The descriptor set reflection serves: the contracts with their comments, shipped with the stubs."""

from __future__ import annotations

import logging
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

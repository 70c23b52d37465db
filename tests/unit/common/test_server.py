"""What a service's last log line says when an unhandled error stops it (serve_main)."""

from __future__ import annotations

from services.common.errors import IndexIntegrityError
from services.common.server import stop_cause


def test_a_grounded_error_is_told_by_its_own_message() -> None:
    error = IndexIntegrityError("the index at /x has 3 vectors but 4 ids")
    assert stop_cause(error) == "the index at /x has 3 vectors but 4 ids"


def test_another_exception_is_told_by_its_type_and_first_line() -> None:
    assert stop_cause(ValueError("Redis URL must specify one of ...\nmore")) == (
        "ValueError: Redis URL must specify one of ..."
    )
    assert stop_cause(MemoryError()) == "MemoryError"

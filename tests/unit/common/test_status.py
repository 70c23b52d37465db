"""Every domain error maps to a status code, with rich details that clients can unpack."""

from __future__ import annotations

import grpc
from google.rpc import error_details_pb2
from grpc_status import rpc_status

from services.common import errors, status


def _all_error_classes() -> list[type[errors.GroundedError]]:
    found: list[type[errors.GroundedError]] = []
    pending: list[type[errors.GroundedError]] = [errors.GroundedError]
    while pending:
        cls = pending.pop()
        found.append(cls)
        pending.extend(cls.__subclasses__())
    return found


class TestStatusMapping:
    def test_status_mapping_covers_every_error_class(self) -> None:
        unmapped = [c.__name__ for c in _all_error_classes() if c not in status.STATUS_BY_ERROR]
        assert unmapped == []

    def test_status_mapping_reasons_are_unique_upper_snake(self) -> None:
        reasons = [c.reason for c in _all_error_classes()]
        assert len(reasons) == len(set(reasons))
        assert all(r == r.upper() and " " not in r for r in reasons)

    def test_status_invalid_input_carries_field_violations(self) -> None:
        error = errors.InvalidInputError(
            [errors.FieldViolation("top_k", "must be ≥ 1"), errors.FieldViolation("query", "empty")]
        )
        rich = status.to_status(error)
        assert rich.code == grpc.StatusCode.INVALID_ARGUMENT
        decoded = rpc_status.from_call(_FakeCall(rich))  # type: ignore[arg-type]
        assert decoded is not None
        bad = error_details_pb2.BadRequest()
        info = error_details_pb2.ErrorInfo()
        assert any(d.Unpack(info) for d in decoded.details)
        assert info.reason == "INVALID_INPUT"
        assert any(d.Unpack(bad) for d in decoded.details)
        assert [v.field for v in bad.field_violations] == ["top_k", "query"]

    def test_status_not_found_carries_resource_info(self) -> None:
        error = errors.NotFoundError(
            "no document 'X' in the index",
            resource_type="grounded.type.v1.Document",
            resource_name="X",
        )
        rich = status.to_status(error)
        assert rich.code == grpc.StatusCode.NOT_FOUND
        decoded = rpc_status.from_call(_FakeCall(rich))  # type: ignore[arg-type]
        assert decoded is not None
        resource = error_details_pb2.ResourceInfo()
        assert any(d.Unpack(resource) for d in decoded.details)
        assert (resource.resource_type, resource.resource_name) == (
            "grounded.type.v1.Document",
            "X",
        )
        assert resource.description == "no document 'X' in the index"

    def test_status_dependency_timeout_is_deadline_exceeded(self) -> None:
        error = errors.DependencyTimeoutError("validator", "no answer in 2.0s")
        assert status.code_for(error) == grpc.StatusCode.DEADLINE_EXCEEDED
        assert error.metadata == {"dependency": "validator"}

    def test_status_invalid_input_requires_a_violation(self) -> None:
        try:
            errors.InvalidInputError([])
        except ValueError:
            return
        raise AssertionError("an InvalidInputError without violations must be refused")


class _FakeCall:
    """Just enough of grpc.Call for rpc_status.from_call to read a status back."""

    def __init__(self, rich: grpc.Status) -> None:
        self._rich = rich

    def code(self) -> grpc.StatusCode:
        return self._rich.code

    def details(self) -> str:
        return self._rich.details

    def trailing_metadata(self) -> tuple[tuple[str, bytes], ...]:
        return self._rich.trailing_metadata

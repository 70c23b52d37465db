"""Every domain error maps to a status code, with rich details that clients can unpack."""

from __future__ import annotations

import base64
import re
from pathlib import Path

import grpc
import pytest
from google.rpc import error_details_pb2
from grounded.type.v1 import error_reason_pb2
from grpc_status import rpc_status

from services.common import errors, status

PROTOS = Path(__file__).resolve().parents[3] / "protos/grounded"


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

    @pytest.mark.parametrize(
        ("error", "seconds"),
        [
            (errors.OverloadedError("busy", metadata={"max_concurrent_rpcs": "2"}), 0.5),
            (errors.NotReadyError("warming up"), 2.0),
        ],
    )
    def test_status_a_refusal_to_retry_carries_retry_info(
        self, error: errors.GroundedError, seconds: float
    ) -> None:
        decoded = rpc_status.from_call(_FakeCall(status.to_status(error)))  # type: ignore[arg-type]
        assert decoded is not None
        retry = error_details_pb2.RetryInfo()
        assert [d for d in decoded.details if d.Unpack(retry)]
        assert retry.retry_delay.ToTimedelta().total_seconds() == seconds

    @pytest.mark.parametrize(
        "error",
        [
            errors.InvalidInputError([errors.FieldViolation("top_k", "must be >= 1")]),
            errors.DependencyUnavailableError("validator", "unreachable"),
            errors.DeadlineExceededError("deadline exceeded"),
            errors.MessageTooLargeError("too large"),
        ],
    )
    def test_status_other_errors_carry_no_retry_info(self, error: errors.GroundedError) -> None:
        decoded = rpc_status.from_call(_FakeCall(status.to_status(error)))  # type: ignore[arg-type]
        assert decoded is not None
        assert not any(d.Is(error_details_pb2.RetryInfo.DESCRIPTOR) for d in decoded.details)

    def test_status_reasons_are_the_contracts_error_reasons(self) -> None:
        """grounded.type.v1.ErrorReason names every ErrorInfo reason a server sends, by the
        reason string itself: every error class's but the base's (never raised as such), and
        INTERNAL for an unexpected exception."""
        sent = {c.reason for c in _all_error_classes() if c is not errors.GroundedError}
        internal = rpc_status.from_call(_FakeCall(status.internal_status()))  # type: ignore[arg-type]
        assert internal is not None
        info = error_details_pb2.ErrorInfo()
        assert any(d.Unpack(info) for d in internal.details)
        sent.add(info.reason)
        declared = set(error_reason_pb2.ErrorReason.keys()) - {"ERROR_REASON_UNSPECIFIED"}
        assert declared == sent
        assert info.domain == status.ERROR_DOMAIN == "grounded.qa"

    def test_status_retry_delays_are_the_ones_the_contract_states(self) -> None:
        text = (PROTOS / "type/v1/error_reason.proto").read_text()
        for cls, seconds in status.RETRY_DELAY_S.items():
            comment = re.split(r" = \d+;\n", text[: text.index(f"  {cls.reason} = ")])[-1]
            assert f"RetryInfo retry_delay {seconds:g} s" in comment, cls.reason

    def test_status_invalid_input_requires_a_violation(self) -> None:
        try:
            errors.InvalidInputError([])
        except ValueError:
            return
        raise AssertionError("an InvalidInputError without violations must be refused")


def _trailer_bytes(rich: grpc.Status) -> int:
    """What the trailers weigh as the caller's gRPC counts them: each key and value as sent
    (the message percent-encoded, details base64) plus 32 bytes."""
    message = sum(1 if 0x20 <= b <= 0x7E and b != 0x25 else 3 for b in rich.details.encode())
    sent = [("grpc-message", message), ("grpc-status", 1)]
    sent += [(k, len(base64.b64encode(v))) for k, v in rich.trailing_metadata]
    return sum(len(k) + size + 32 for k, size in sent)


class TestBoundedStatus:
    """A status is sent in trailers, which the caller's gRPC refuses past 8 KiB (at random) and
    16 KiB (always): the audit's three 1 MB filter values came back as RESOURCE_EXHAUSTED
    "received metadata size exceeds hard limit" instead of INVALID_ARGUMENT."""

    def many(self, n: int, description: str) -> errors.InvalidInputError:
        return errors.InvalidInputError(
            [errors.FieldViolation(f"filters.acts[{i}]", description) for i in range(n)]
        )

    @pytest.mark.parametrize(
        ("n", "description"),
        [
            (200, "must be at most 256 characters (got 257)"),
            (100, "unknown value 'ACT'; known acts: BNS, BNSS, BSA, COI, CPC, CrPC, IEA, IPC"),
            (3, "x" * 1_000_000),
            (50, "ज" * 300),
        ],
    )
    def test_a_status_stays_under_the_callers_metadata_limit(
        self, n: int, description: str
    ) -> None:
        error = self.many(n, description)
        rich = status.to_status(error)
        assert rich.code == grpc.StatusCode.INVALID_ARGUMENT
        assert _trailer_bytes(rich) < 8 * 1024
        decoded = rpc_status.from_call(_FakeCall(rich))  # type: ignore[arg-type]
        assert decoded is not None
        bad, info = error_details_pb2.BadRequest(), error_details_pb2.ErrorInfo()
        assert any(d.Unpack(bad) for d in decoded.details)
        assert any(d.Unpack(info) for d in decoded.details)
        shown = [v.field for v in bad.field_violations]
        assert shown == [f"filters.acts[{i}]" for i in range(len(shown))]  # the first, in order
        assert int(info.metadata.get("violations_not_shown", "0")) == n - len(shown)

    def test_a_small_status_is_sent_whole(self) -> None:
        error = self.many(3, "must be at most 256 characters (got 300)")
        rich = status.to_status(error)
        decoded = rpc_status.from_call(_FakeCall(rich))  # type: ignore[arg-type]
        assert decoded is not None and decoded.message == error.message
        bad, info = error_details_pb2.BadRequest(), error_details_pb2.ErrorInfo()
        assert any(d.Unpack(bad) for d in decoded.details)
        assert any(d.Unpack(info) for d in decoded.details)
        assert len(bad.field_violations) == 3 and "violations_not_shown" not in info.metadata

    def test_the_summary_names_the_violations_that_fit_then_how_many_more(self) -> None:
        error = self.many(100, "must be at most 256 characters (got 257)")
        assert len(error.message) <= errors.MAX_SUMMARY_CHARS + 20
        assert error.message.startswith("filters.acts[0]: must be at most 256")
        shown = error.message.count("must be at most")
        assert error.message.endswith(f"; and {100 - shown} more")

    @pytest.mark.parametrize(
        ("value", "expected"),
        [
            ("IPC", "'IPC'"),
            ("I" * 64, repr("I" * 64)),
            ("I" * 1_000_000, repr("I" * 64) + "… (1,000,000 characters)"),
        ],
    )
    def test_shown_quotes_a_callers_value_cut_to_its_start(self, value: str, expected: str) -> None:
        assert errors.shown(value) == expected


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

"""`buf breaking` compares the contracts with protos/baseline.binpb: what the baseline lacks, it
cannot protect (a field added after the last `make proto-baseline` could be deleted or renumbered
and `make lint` would pass). So every element of today's protos must be in the baseline."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from pathlib import Path

import pytest
from google.protobuf import descriptor_pb2

from tests.support.protos import PROTOS, build_contracts

BASELINE = PROTOS / "baseline.binpb"


def _enum_elements(prefix: str, enum: descriptor_pb2.EnumDescriptorProto) -> Iterator[str]:
    name = f"{prefix}.{enum.name}"
    yield f"enum {name}"
    for value in enum.value:
        yield f"enum value {name}.{value.name} = {value.number}"


def _message_elements(prefix: str, message: descriptor_pb2.DescriptorProto) -> Iterator[str]:
    name = f"{prefix}.{message.name}"
    yield f"message {name}"
    for field in message.field:
        yield f"field {name}.{field.name} = {field.number}"
    for nested in message.nested_type:
        if not nested.options.map_entry:  # a map field's entry is the field itself
            yield from _message_elements(name, nested)
    for enum in message.enum_type:
        yield from _enum_elements(name, enum)


def contract_elements(files: Iterable[descriptor_pb2.FileDescriptorProto]) -> set[str]:
    """Every service, method, message, field, enum and enum value of ``files``, by full name
    (fields and values with their numbers)."""
    elements: set[str] = set()
    for file in files:
        if not file.package.startswith("grounded."):
            continue
        prefix = file.package
        for message in file.message_type:
            elements.update(_message_elements(prefix, message))
        for enum in file.enum_type:
            elements.update(_enum_elements(prefix, enum))
        for service in file.service:
            elements.add(f"service {prefix}.{service.name}")
            elements.update(f"method {prefix}.{service.name}/{m.name}" for m in service.method)
    return elements


def missing_from_baseline(current: set[str], baseline: set[str]) -> list[str]:
    return sorted(current - baseline)


class TestContractBaseline:
    def test_every_element_of_the_protos_is_in_the_baseline(self, tmp_path: Path) -> None:
        current = contract_elements(build_contracts(tmp_path / "current.binpb").file)
        baseline = contract_elements(
            descriptor_pb2.FileDescriptorSet.FromString(BASELINE.read_bytes()).file
        )

        missing = missing_from_baseline(current, baseline)

        assert not missing, (
            f"protos/baseline.binpb lacks {len(missing)} element(s) of protos/, so buf breaking "
            "cannot notice if they are deleted or renumbered: run `make proto-baseline` and "
            "commit protos/baseline.binpb in the commit that adds them (docs/CHANGELOG.md).\n"
            + "\n".join(missing)
        )

    def test_the_check_names_what_an_older_baseline_lacks(self, tmp_path: Path) -> None:
        current = contract_elements(build_contracts(tmp_path / "current.binpb").file)
        error_reason = {e for e in current if ".ErrorReason" in e}
        older = current - error_reason

        missing = missing_from_baseline(current, older)

        assert missing == sorted(error_reason)
        assert "enum grounded.type.v1.ErrorReason" in missing
        assert "enum value grounded.type.v1.ErrorReason.INVALID_INPUT = 1" in missing

    @pytest.mark.parametrize(
        ("element", "kind"),
        [
            ("grounded.type.v1.Passage", "message"),
            ("grounded.type.v1.Passage.title = 3", "field"),
            ("grounded.synthesis.v1.AnswerStatus", "enum"),
            ("grounded.synthesis.v1.SynthesisService/StreamAnswer", "method"),
        ],
    )
    def test_elements_are_named_by_kind_and_full_name(
        self, tmp_path: Path, element: str, kind: str
    ) -> None:
        current = contract_elements(build_contracts(tmp_path / "current.binpb").file)

        assert f"{kind} {element}" in current

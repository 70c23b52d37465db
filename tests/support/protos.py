"""Today's protos/ compiled to a descriptor set, by the protoc `make protos` runs (grpc_tools; no
buf, no network): what tests of the contracts' shape read."""

from __future__ import annotations

from importlib import resources
from pathlib import Path

from google.protobuf import descriptor_pb2
from grpc_tools import protoc

PROTOS = Path(__file__).resolve().parents[2] / "protos"


def build_contracts(out: Path) -> descriptor_pb2.FileDescriptorSet:
    """Compile every .proto under protos/ into ``out`` and read it back."""
    sources = sorted(str(p.relative_to(PROTOS)) for p in PROTOS.rglob("*.proto"))
    well_known = resources.files("grpc_tools") / "_proto"
    args = ["protoc", f"-I{PROTOS}", f"-I{well_known}", f"--descriptor_set_out={out}", *sources]
    assert protoc.main(args) == 0, "protoc could not compile protos/ (see its output above)"
    return descriptor_pb2.FileDescriptorSet.FromString(out.read_bytes())

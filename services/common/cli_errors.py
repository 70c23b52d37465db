"""How the command-line clients report a failed RPC: the status, then each google.rpc detail."""

from __future__ import annotations

import sys

import grpc
from google.protobuf import json_format
from google.rpc import error_details_pb2  # noqa: F401 - registers detail types for JSON printing
from grpc_status import rpc_status

EXIT_RPC_ERROR = 2


def report_rpc_error(err: grpc.RpcError) -> int:
    """Print ``err`` (code, message, field violations ...) on stderr; return the exit status."""
    print(f"error: {err.code().name}: {err.details()}", file=sys.stderr)
    status = rpc_status.from_call(err)
    for detail in status.details if status else ():
        print(f"  {detail.TypeName()}: {json_format.MessageToJson(detail)}", file=sys.stderr)
    return EXIT_RPC_ERROR

"""How the command-line clients report a failed RPC: the status, then each google.rpc detail."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable

import grpc
from google.protobuf import json_format
from google.rpc import error_details_pb2  # noqa: F401 - registers detail types for JSON printing
from grpc_status import rpc_status

EXIT_RPC_ERROR = 2
EXIT_BROKEN_PIPE = 141  # 128 + SIGPIPE, what a shell reports for a writer whose reader left


def run_cli(main: Callable[[], int]) -> int:
    """Run a command-line client's ``main``. A reader that stops early (``validate ... | head``)
    ends it quietly, as it ends ``cat``, instead of with a BrokenPipeError traceback."""
    try:
        return main()
    except BrokenPipeError:
        # Python flushes stdout once more at exit: aim it at /dev/null so that is quiet too.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return EXIT_BROKEN_PIPE


def report_rpc_error(err: grpc.RpcError) -> int:
    """Print ``err`` (code, message, field violations ...) on stderr; return the exit status."""
    print(f"error: {err.code().name}: {err.details()}", file=sys.stderr)
    status = rpc_status.from_call(err)
    for detail in status.details if status else ():
        print(f"  {detail.TypeName()}: {json_format.MessageToJson(detail)}", file=sys.stderr)
    return EXIT_RPC_ERROR

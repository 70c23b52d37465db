"""What every command-line client shares: how it starts and ends (``run_cli``), how it reads
text (UTF-8 arguments, files and standard input), prints JSON, and reports a failed RPC (the
status, then each google.rpc detail).

Text rules, the same for every CLI: an argument sent to a service must be UTF-8 (bytes that are
not, which Python keeps as lone surrogates, are a usage error, exit 2, naming the first bad
byte); a file or standard input is read as UTF-8, with or without a byte-order mark; output
never fails on a terminal whose encoding lacks a character (it is written as a backslash
escape, ``\\u201c``; ``--json`` output stays valid JSON, with ``\\u`` escapes), and is unchanged
on a UTF-8 terminal.
"""

from __future__ import annotations

import argparse
import codecs
import io
import json
import os
import sys
from collections.abc import Callable
from pathlib import Path

import grpc
from google.protobuf import json_format
from google.rpc import error_details_pb2  # noqa: F401 - registers detail types for JSON printing
from grpc_status import rpc_status

EXIT_RPC_ERROR = 2
EXIT_USAGE = 2  # argparse's own status for a bad command line
EXIT_BROKEN_PIPE = 141  # 128 + SIGPIPE, what a shell reports for a writer whose reader left
STDIN = "-"


def run_cli(main: Callable[[], int]) -> int:
    """Run a command-line client's ``main``. Output cannot fail on a narrow terminal encoding
    (``printable_output``), and a reader that stops early (``validate ... | head``) ends it
    quietly, as it ends ``cat``, instead of with a BrokenPipeError traceback."""
    printable_output()
    try:
        return main()
    except BrokenPipeError:
        # Python flushes stdout once more at exit: aim it at /dev/null so that is quiet too.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return EXIT_BROKEN_PIPE


def printable_output() -> None:
    """Let standard output and error write any text: a character their encoding lacks (the
    corpus's curly quotes under ``PYTHONIOENCODING=ascii``) becomes a backslash escape instead of
    a UnicodeEncodeError. Text their encoding holds (all of it on a UTF-8 terminal) is unchanged."""
    for stream in (sys.stdout, sys.stderr):
        if isinstance(stream, io.TextIOWrapper):
            stream.reconfigure(errors="backslashreplace")


def utf8_argument(value: str) -> str:
    """An argparse ``type`` for text a CLI sends to a service (a question, an id, a filter).
    A command-line argument whose bytes are not UTF-8 reaches Python as lone surrogates, which
    no request can carry: it is a usage error naming the first bad byte, not a traceback."""
    try:
        value.encode("utf-8")
    except UnicodeEncodeError as exc:
        bad = ord(value[exc.start])
        # surrogateescape keeps an undecodable byte b as U+DC00 + b.
        what = f"byte 0x{bad - 0xDC00:02x}" if 0xDC80 <= bad <= 0xDCFF else f"U+{bad:04X}"
        raise argparse.ArgumentTypeError(
            f"not valid UTF-8 ({what} at character {exc.start + 1}); write it in UTF-8"
        ) from None
    return value


def read_text(path: Path | str) -> str:
    """The text of a file, or of standard input for ``-``: UTF-8, with or without a byte-order
    mark (which is no part of the text). Raises OSError, or UnicodeDecodeError for bytes that are
    not UTF-8, from standard input as from a file."""
    data = sys.stdin.buffer.read() if str(path) == STDIN else Path(path).read_bytes()
    return data.decode("utf-8-sig")


def source_name(path: Path | str) -> str:
    """How an error message names what ``read_text`` read."""
    return "standard input" if str(path) == STDIN else str(path)


def print_json(data: object, *, indent: int | None = 2, flush: bool = False) -> None:
    """``data`` as JSON on standard output: characters as they are on a UTF-8 stdout, ``\\u``
    escapes (the same JSON) where its encoding is narrower."""
    encoding = getattr(sys.stdout, "encoding", None) or "ascii"
    wide = codecs.lookup(encoding).name.startswith("utf")
    print(json.dumps(data, indent=indent, ensure_ascii=not wide), flush=flush)


# What grpc-core says when nothing listens at the address (not a service's own UNAVAILABLE,
# which names the dependency that failed).
_NOTHING_LISTENS = ("failed to connect to all addresses", "connection refused")
# (Matched at the start of the details only: synthesis reports a dependency it cannot reach as
# "retrieval: UNAVAILABLE: failed to connect ...", and then synthesis itself did answer.)


def report_rpc_error(err: grpc.RpcError) -> int:
    """Print ``err`` (code, message, field violations ...) on stderr; return the exit status.
    When nothing answers at the address, say what to do: the stack is most likely not running."""
    details = err.details() or ""
    print(f"error: {err.code().name}: {details}", file=sys.stderr)
    status = rpc_status.from_call(err)
    for detail in status.details if status else ():
        print(f"  {detail.TypeName()}: {json_format.MessageToJson(detail)}", file=sys.stderr)
    if err.code() == grpc.StatusCode.UNAVAILABLE and any(
        details.lower().startswith(cue) for cue in _NOTHING_LISTENS
    ):
        print(
            "hint: nothing answers at that address: is the stack running? Start it with "
            "`make run` (or point --address at a running service)",
            file=sys.stderr,
        )
    return EXIT_RPC_ERROR

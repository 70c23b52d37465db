"""Every command-line client and odd text: bytes that are not UTF-8 on the command line or on
standard input, a byte-order mark, a terminal whose encoding lacks the corpus's curly quotes.
Each gives a one-line error with the usage status, or output, never a traceback."""

from __future__ import annotations

import io
import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import grpc
import pytest
from grounded.synthesis.v1 import synthesis_service_pb2 as pb

from services.common.cli_errors import EXIT_USAGE, report_rpc_error, run_cli
from services.retrieval import cli as retrieval_cli
from services.synthesis import cli as synthesis_cli
from services.validator import cli as validator_cli
from tests.unit.validator.samples import ipc_text

ROOT = Path(__file__).resolve().parents[3]
CURLY = "The words \u201ca will\u201d denote any testamentary document [IPC_31_0]."
GROUNDED = (
    "Whoever commits theft is punishable with imprisonment for up to three years [IPC_379_0]."
)
LATIN1 = "Whoever commits theft in a caf\u00e9 [IPC_379_0].".encode("latin-1")


def _narrow_stdout(monkeypatch: pytest.MonkeyPatch) -> io.BytesIO:
    """Standard output as on a terminal set to ASCII (PYTHONIOENCODING=ascii)."""
    raw = io.BytesIO()
    monkeypatch.setattr(sys, "stdout", io.TextIOWrapper(raw, encoding="ascii"))
    return raw


def _stdin(monkeypatch: pytest.MonkeyPatch, data: bytes) -> None:
    """Standard input as Python opens it under the C locale (UTF-8 mode: surrogateescape)."""
    wrapper = io.TextIOWrapper(io.BytesIO(data), encoding="utf-8", errors="surrogateescape")
    monkeypatch.setattr(sys, "stdin", wrapper)


def _out(raw: io.BytesIO) -> str:
    sys.stdout.flush()
    return raw.getvalue().decode("ascii")


class TestNonUtf8Arguments:
    def test_ask_with_a_latin1_byte_is_a_usage_error_not_a_traceback(self) -> None:
        """`ask $'theft in a caf\\xe9?'`: the shell passes the byte as it is."""
        done = subprocess.run(
            [sys.executable, "-m", "services.synthesis.cli", "ask", b"theft in a caf\xe9?"],
            cwd=ROOT,
            capture_output=True,
            timeout=60,
            check=False,
        )
        err = done.stderr.decode()
        assert done.returncode == EXIT_USAGE == 2, err
        assert "Traceback" not in err
        assert "argument question: not valid UTF-8 (byte 0xe9 at character 15)" in err

    @pytest.mark.parametrize(
        ("main", "argv"),
        [
            (synthesis_cli.main, ["ask", "caf\udce9"]),
            (synthesis_cli.main, ["ask", "theft", "--act", "IP\udcc3"]),
            (synthesis_cli.main, ["document", "IPC_\udcff"]),
            (retrieval_cli.main, ["search", "caf\udce9"]),
            (retrieval_cli.main, ["search", "theft", "--doc-id", "\ud800"]),
        ],
    )
    def test_every_text_argument_is_checked(
        self, main: Any, argv: list[str], capsys: pytest.CaptureFixture[str]
    ) -> None:
        with pytest.raises(SystemExit) as exit_:
            main(argv)
        assert exit_.value.code == EXIT_USAGE
        assert "not valid UTF-8" in capsys.readouterr().err


class _Stub:
    """SynthesisService answering from canned responses (no server)."""

    def __init__(self, _channel: object) -> None:
        pass

    @staticmethod
    def _response() -> pb.SynthesizeAnswerResponse:
        response = pb.SynthesizeAnswerResponse(answer=CURLY, status=pb.ANSWER_STATUS_ANSWERED)
        doc = response.citations.add(doc_id="IPC_31", section="31", title="\u201cA will\u201d")
        doc.citations.add(semantic_id="IPC_31_0", snippet=CURLY)
        return response

    def SynthesizeAnswer(self, *_: object, **__: object) -> pb.SynthesizeAnswerResponse:
        return self._response()

    def StreamAnswer(self, *_: object, **__: object) -> Iterator[pb.StreamAnswerResponse]:
        sentence = pb.StreamAnswerResponse()
        sentence.sentence.text = CURLY
        yield sentence
        finished = pb.StreamAnswerResponse()
        finished.finished.response.CopyFrom(self._response())
        yield finished

    def GetDocument(self, *_: object, **__: object) -> pb.GetDocumentResponse:
        response = pb.GetDocumentResponse()
        response.document.doc_id = "IPC_31"
        response.document.title = "\u201cA will\u201d"
        response.document.passages.add(semantic_id="IPC_31_0", text=CURLY)
        return response


class TestNarrowTerminal:
    @pytest.mark.parametrize(
        "argv",
        [
            ["ask", "What is a will?"],
            ["ask", "What is a will?", "--stream"],
            ["document", "IPC_31"],
        ],
    )
    def test_synthesis_prints_curly_quotes_as_escapes(
        self, argv: list[str], monkeypatch: pytest.MonkeyPatch
    ) -> None:
        monkeypatch.setattr(synthesis_cli.pb_grpc, "SynthesisServiceStub", _Stub)
        raw = _narrow_stdout(monkeypatch)
        code = run_cli(lambda: synthesis_cli.main(argv))
        out = _out(raw)
        assert code in (0, 1)
        assert "\\u201ca will\\u201d" in out

    @pytest.mark.parametrize(
        "argv",
        [
            ["ask", "What is a will?", "--json"],
            ["ask", "What is a will?", "--stream", "--json"],
            ["document", "IPC_31", "--json"],
        ],
    )
    def test_synthesis_json_stays_json(
        self, argv: list[str], monkeypatch: pytest.MonkeyPatch
    ) -> None:
        monkeypatch.setattr(synthesis_cli.pb_grpc, "SynthesisServiceStub", _Stub)
        raw = _narrow_stdout(monkeypatch)
        run_cli(lambda: synthesis_cli.main(argv))
        out = _out(raw)
        lines = out.splitlines() if "--stream" in argv else [out]
        assert CURLY in json.dumps([json.loads(line) for line in lines], ensure_ascii=False)

    def test_utf8_terminal_output_is_unchanged(self, monkeypatch: pytest.MonkeyPatch) -> None:
        monkeypatch.setattr(synthesis_cli.pb_grpc, "SynthesisServiceStub", _Stub)
        raw = io.BytesIO()
        monkeypatch.setattr(sys, "stdout", io.TextIOWrapper(raw, encoding="utf-8"))
        run_cli(lambda: synthesis_cli.main(["document", "IPC_31", "--json"]))
        sys.stdout.flush()
        assert "\u201ca will\u201d" in raw.getvalue().decode("utf-8")


@pytest.fixture
def chunks_file(tmp_path: Path) -> Path:
    path = tmp_path / "chunks.json"
    path.write_text(
        json.dumps([{"semantic_id": "IPC_379_0", "text": ipc_text("379")}]), encoding="utf-8"
    )
    return path


class TestValidatorInput:
    def test_latin1_answer_on_stdin_is_bad_input(
        self, chunks_file: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
    ) -> None:
        _stdin(monkeypatch, LATIN1)
        code = validator_cli.main(
            ["--answer-file", "-", "--chunks-file", str(chunks_file), "--no-entailment"]
        )
        err = capsys.readouterr().err
        assert code == validator_cli.EXIT_BAD_INPUT
        assert err.startswith("error: cannot read standard input: ") and err.count("\n") == 1
        assert "0xe9" in err

    def test_latin1_chunks_on_stdin_are_bad_input(
        self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
    ) -> None:
        answer = tmp_path / "answer.txt"
        answer.write_text(GROUNDED, encoding="utf-8")
        chunks = json.dumps(
            [{"semantic_id": "IPC_379_0", "text": "caf\u00e9 " + ipc_text("379")}],
            ensure_ascii=False,
        )
        _stdin(monkeypatch, chunks.encode("latin-1"))
        code = validator_cli.main(
            ["--answer-file", str(answer), "--chunks-file", "-", "--no-entailment"]
        )
        assert code == validator_cli.EXIT_BAD_INPUT
        assert "error: cannot read standard input: " in capsys.readouterr().err

    @pytest.mark.parametrize("on_stdin", [False, True])
    def test_a_byte_order_mark_is_read_as_utf8(
        self,
        on_stdin: bool,
        tmp_path: Path,
        chunks_file: Path,
        monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str],
    ) -> None:
        """An answer saved by Windows Notepad: UTF-8 with a BOM, which is no part of the text."""
        data = "\ufeff".encode() + GROUNDED.encode()
        answer = tmp_path / "answer.txt"
        answer.write_bytes(data)
        if on_stdin:
            _stdin(monkeypatch, data)
        code = validator_cli.main(
            [
                "--answer-file",
                "-" if on_stdin else str(answer),
                "--chunks-file",
                str(chunks_file),
                "--no-entailment",
            ]
        )
        assert code == validator_cli.EXIT_ACCEPTED, capsys.readouterr().out

    def test_a_chunks_file_with_a_byte_order_mark_is_read(
        self, tmp_path: Path, chunks_file: Path, capsys: pytest.CaptureFixture[str]
    ) -> None:
        bom = tmp_path / "bom.json"
        bom.write_bytes("\ufeff".encode() + chunks_file.read_bytes())
        answer = tmp_path / "answer.txt"
        answer.write_text(GROUNDED, encoding="utf-8")
        code = validator_cli.main(
            ["--answer-file", str(answer), "--chunks-file", str(bom), "--no-entailment"]
        )
        assert code == validator_cli.EXIT_ACCEPTED, capsys.readouterr()

    def test_report_on_a_narrow_terminal(
        self, tmp_path: Path, chunks_file: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        answer = tmp_path / "answer.txt"
        answer.write_text(GROUNDED.replace("theft", "\u201ctheft\u201d"), encoding="utf-8")
        argv = ["--answer-file", str(answer), "--chunks-file", str(chunks_file)]
        raw = _narrow_stdout(monkeypatch)
        run_cli(lambda: validator_cli.main([*argv, "--no-entailment"]))
        assert "\\u201ctheft\\u201d" in _out(raw)
        raw = _narrow_stdout(monkeypatch)
        run_cli(lambda: validator_cli.main([*argv, "--no-entailment", "--json"]))
        assert "\u201ctheft\u201d" in json.loads(_out(raw))["sentences"][0]["text"]


class TestNothingListens:
    """`make stop; make ask ...` printed only "UNAVAILABLE: failed to connect ..."."""

    class _Err(grpc.RpcError):
        def __init__(self, code: grpc.StatusCode, details: str) -> None:
            self._code, self._details = code, details

        def code(self) -> grpc.StatusCode:
            return self._code

        def details(self) -> str:
            return self._details

        def trailing_metadata(self) -> tuple[()]:
            return ()

    def test_nothing_listening_says_to_start_the_stack(
        self, capsys: pytest.CaptureFixture[str]
    ) -> None:
        err = self._Err(
            grpc.StatusCode.UNAVAILABLE,
            "failed to connect to all addresses; last error: UNKNOWN: ipv4:127.0.0.1:50052: "
            "Failed to connect to remote host: Connection refused",
        )
        assert report_rpc_error(err) == 2
        assert "is the stack running? Start it with `make run`" in capsys.readouterr().err

    def test_a_services_own_unavailable_gets_no_such_hint(
        self, capsys: pytest.CaptureFixture[str]
    ) -> None:
        # What synthesis says of a retrieval it cannot reach (clients._dependency_error).
        err = self._Err(
            grpc.StatusCode.UNAVAILABLE,
            "retrieval: UNAVAILABLE: failed to connect to all addresses; last error: UNKNOWN: "
            "<address>: Failed to connect to remote host: Connection refused",
        )
        report_rpc_error(err)
        assert "hint" not in capsys.readouterr().err

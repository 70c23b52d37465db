"""The validate command line, run in-process through its main(): exit codes and JSON output."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from services.common.cli_errors import EXIT_BROKEN_PIPE
from services.validator.cli import EXIT_ACCEPTED, EXIT_BAD_INPUT, EXIT_REJECTED, main
from tests.support.fake_openai import FakeOpenAIServer, Reply
from tests.unit.validator.samples import ipc_text

GROUNDED = (
    "Whoever commits theft is punishable with imprisonment for up to three years [IPC_379_0]."
)
ROOT = Path(__file__).resolve().parents[3]
UNGROUNDED = (
    "Whoever commits theft is punishable with imprisonment for up to ten years [IPC_379_0]."
)


@pytest.fixture
def chunks_file(tmp_path: Path) -> Path:
    path = tmp_path / "chunks.json"
    path.write_text(
        json.dumps(
            [
                {"semantic_id": "IPC_378_0", "text": ipc_text("378")},
                {"semantic_id": "IPC_379_0", "text": ipc_text("379")},
            ]
        ),
        encoding="utf-8",
    )
    return path


def run(tmp_path: Path, answer: str, chunks: Path, *extra: str) -> int:
    answer_file = tmp_path / "answer.txt"
    answer_file.write_text(answer, encoding="utf-8")
    return main(["--answer-file", str(answer_file), "--chunks-file", str(chunks), *extra])


class TestCli:
    def test_main_exits_0_for_a_grounded_answer(
        self, tmp_path: Path, chunks_file: Path, capsys: pytest.CaptureFixture[str]
    ) -> None:
        assert run(tmp_path, GROUNDED, chunks_file) == EXIT_ACCEPTED == 0
        assert "verdict: grounded (SUPPORTED)" in capsys.readouterr().out

    def test_main_exits_1_for_an_ungrounded_answer(
        self, tmp_path: Path, chunks_file: Path, capsys: pytest.CaptureFixture[str]
    ) -> None:
        assert run(tmp_path, UNGROUNDED, chunks_file) == EXIT_REJECTED == 1
        out = capsys.readouterr().out
        assert "NUMBER_MISMATCH" in out
        assert "accepted: no" in out

    def test_main_prints_a_parsable_json_report(
        self, tmp_path: Path, chunks_file: Path, capsys: pytest.CaptureFixture[str]
    ) -> None:
        code = run(tmp_path, UNGROUNDED, chunks_file, "--json")

        data = json.loads(capsys.readouterr().out)
        assert code == EXIT_REJECTED
        assert data["verdict"] == "not_grounded"
        assert data["reason"] == "NUMBER_MISMATCH"
        assert data["accepted"] is False
        assert data["sentences"][0]["cited_ids"] == ["IPC_379_0"]

    def test_main_reads_json_lines_chunks(self, tmp_path: Path) -> None:
        chunks = tmp_path / "chunks.jsonl"
        chunks.write_text(
            json.dumps({"semantic_id": "IPC_379_0", "text": ipc_text("379")}) + "\n",
            encoding="utf-8",
        )

        assert run(tmp_path, GROUNDED, chunks) == EXIT_ACCEPTED

    @pytest.mark.parametrize(
        "content",
        ["not json at all", '{"semantic_id": "A"}', '[{"semantic_id": "", "text": "x"}]', "[1]"],
    )
    def test_main_exits_2_for_a_bad_chunks_file(
        self, tmp_path: Path, content: str, capsys: pytest.CaptureFixture[str]
    ) -> None:
        chunks = tmp_path / "bad.json"
        chunks.write_text(content, encoding="utf-8")

        assert run(tmp_path, GROUNDED, chunks) == EXIT_BAD_INPUT == 2
        assert capsys.readouterr().err.startswith("error:")

    def test_main_says_a_stream_is_not_an_ask_response(
        self, tmp_path: Path, capsys: pytest.CaptureFixture[str]
    ) -> None:
        # `ask --stream --json | validate --from-ask -` failed with "Extra data: line 2 ...".
        stream = tmp_path / "stream.jsonl"
        stream.write_text('{"sentence": {}}\n{"final": {}}\n', encoding="utf-8")

        assert main(["--from-ask", str(stream)]) == EXIT_BAD_INPUT
        err = capsys.readouterr().err
        assert "ask --stream --json" in err and "ask --json" in err

    @pytest.mark.parametrize(
        ("name", "value"),
        [("VALIDATOR_MODEL_THREADS", "abc"), ("VALIDATOR_JUDGE_BAND_LOW", "0.95")],
    )
    def test_main_exits_2_for_a_bad_setting_naming_it(
        self,
        tmp_path: Path,
        chunks_file: Path,
        capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch,
        name: str,
        value: str,
    ) -> None:
        # A configuration error is not a rejected answer (1): scripts must tell them apart.
        monkeypatch.setenv(name, value)

        assert run(tmp_path, GROUNDED, chunks_file) == EXIT_BAD_INPUT
        err = capsys.readouterr().err
        assert err.startswith(f"error: configuration: {name}") and "Traceback" not in err

    @pytest.mark.parametrize(
        ("content", "said"),
        [
            (
                '[{"semantic_id": "A", "text": "x"}, {"semantic_id": "A", "text": "y"}]',
                "error: evidence[1].semantic_id: duplicate id 'A'",
            ),
            ('[{"semantic_id": "A[1]", "text": "x"}]', "error: evidence[0].semantic_id:"),
            ('[{"semantic_id": "A", "text": "' + "x" * 20_001 + '"}]', "error: evidence[0].text:"),
        ],
        ids=["duplicate-id", "uncitable-id", "text-too-long"],
    )
    def test_main_refuses_what_the_service_refuses(
        self, tmp_path: Path, content: str, said: str, capsys: pytest.CaptureFixture[str]
    ) -> None:
        """Found by a new user: duplicate ids were judged against whichever came first, and
        the service's limits did not apply, though the CLI gives the service's judgement."""
        chunks = tmp_path / "chunks.json"
        chunks.write_text(content, encoding="utf-8")

        assert run(tmp_path, GROUNDED, chunks) == EXIT_BAD_INPUT
        assert said in capsys.readouterr().err

    def test_main_refuses_standard_input_for_both_files(self) -> None:
        with pytest.raises(SystemExit) as caught:
            main(["--answer-file", "-", "--chunks-file", "-"])
        assert caught.value.code == EXIT_BAD_INPUT

    def test_main_exits_2_for_a_missing_answer_file(
        self, tmp_path: Path, chunks_file: Path, capsys: pytest.CaptureFixture[str]
    ) -> None:
        missing = tmp_path / "nope.txt"

        code = main(["--answer-file", str(missing), "--chunks-file", str(chunks_file)])

        assert code == EXIT_BAD_INPUT
        assert "cannot read" in capsys.readouterr().err


class TestCliWithAJudge:
    def test_main_asks_the_configured_judge_as_the_service_does(
        self,
        tmp_path: Path,
        chunks_file: Path,
        capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch,
    ) -> None:
        # The grounded sentence is no quote, so the model judges it; a band of [0, 1) makes
        # it uncertain, and the judge (the loopback server) says no.
        with FakeOpenAIServer(Reply("1: no")) as server:
            monkeypatch.setenv("VALIDATOR_JUDGE_BASE_URL", server.base_url)
            monkeypatch.setenv("VALIDATOR_JUDGE_MODEL", "checker-7b")
            monkeypatch.setenv("VALIDATOR_JUDGE_BAND_LOW", "0")
            monkeypatch.setenv("VALIDATOR_JUDGE_BAND_HIGH", "1")
            code = run(tmp_path, GROUNDED, chunks_file)
            asked = len(server.requests)
        out = capsys.readouterr().out
        assert code == EXIT_REJECTED and asked == 1
        assert "JUDGE_REJECTED" in out
        assert "judge checker-7b: no" in out


class TestAReaderThatStopsEarly:
    def test_validate_piped_into_head_ends_quietly(self, tmp_path: Path, chunks_file: Path) -> None:
        """`validate --json ... | head`: the reader leaves after a few bytes; the command ends
        with the shell's SIGPIPE status and no BrokenPipeError traceback."""
        answer = tmp_path / "answer.txt"
        answer.write_text(" ".join([GROUNDED] * 300), encoding="utf-8")  # a report > 64 KiB
        args = ["--answer-file", str(answer), "--chunks-file", str(chunks_file)]
        proc = subprocess.Popen(
            [sys.executable, "-m", "services.validator.cli", *args, "--json", "--no-entailment"],
            cwd=ROOT,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        assert proc.stdout is not None and proc.stderr is not None
        assert proc.stdout.read(100)
        proc.stdout.close()  # what head does once it has its lines
        with proc.stderr:
            err = proc.stderr.read().decode()
        assert proc.wait(timeout=60) == EXIT_BROKEN_PIPE, err
        assert "Traceback" not in err

"""ask --stream: sentences shown before a stream fails are marked withdrawn (they were never
delivered: only a final ANSWERED event delivers)."""

from __future__ import annotations

import argparse
from collections.abc import Iterator
from typing import Any

import grpc
import pytest
from grounded.synthesis.v1 import synthesis_service_pb2 as pb

from services.synthesis import cli


class _Failed(grpc.RpcError):
    def code(self) -> grpc.StatusCode:
        return grpc.StatusCode.UNAVAILABLE

    def details(self) -> str:
        return "the validator is unavailable"


def _events(sentences: int) -> list[pb.StreamAnswerResponse]:
    evidence = pb.StreamAnswerResponse()
    evidence.evidence.doc_ids.append("IPC_379")
    out = [evidence]
    for i in range(sentences):
        event = pb.StreamAnswerResponse()
        event.sentence.index = i
        event.sentence.text = f"Sentence {i} [IPC_379_0]."
        out.append(event)
    return out


class _Stub:
    def __init__(self, events: list[pb.StreamAnswerResponse]) -> None:
        self.events = events

    def StreamAnswer(self, *_: Any, **__: Any) -> Iterator[pb.StreamAnswerResponse]:
        yield from self.events
        raise _Failed()


def _args(json: bool = False) -> argparse.Namespace:
    return argparse.Namespace(question="q", timeout=5.0, json=json, verbose=False)


@pytest.mark.parametrize("sentences", [1, 2])
def test_sentences_shown_before_a_failure_are_withdrawn(
    capsys: pytest.CaptureFixture[str], sentences: int
) -> None:
    with pytest.raises(_Failed):
        cli._stream(_Stub(_events(sentences)), pb.SynthesizeAnswerRequest(), _args(), ())  # type: ignore[arg-type]
    out = capsys.readouterr().out
    noun = "sentence" if sentences == 1 else "sentences"
    assert f"[withdrawn: the {sentences} {noun} above were not delivered" in out
    assert "ended with UNAVAILABLE before its final answer]" in out
    assert out.index("Sentence 0") < out.index("[withdrawn")


def test_a_failure_before_any_sentence_withdraws_nothing(
    capsys: pytest.CaptureFixture[str],
) -> None:
    with pytest.raises(_Failed):
        cli._stream(_Stub(_events(0)), pb.SynthesizeAnswerRequest(), _args(), ())  # type: ignore[arg-type]
    assert "withdrawn" not in capsys.readouterr().out


def test_json_mode_prints_events_only(capsys: pytest.CaptureFixture[str]) -> None:
    # A JSON reader sees the events and, on stderr, the error: no prose on stdout.
    with pytest.raises(_Failed):
        cli._stream(_Stub(_events(1)), pb.SynthesizeAnswerRequest(), _args(json=True), ())  # type: ignore[arg-type]
    assert "withdrawn" not in capsys.readouterr().out

"""Coverage-guided byte-level fuzzing (atheris/libFuzzer) of the three services' request parsing.

Run as ``python -m tests.fuzz.atheris_targets -runs=N [CORPUS_DIR]``. Each input's first byte picks
the target; the rest is parsed as that service's request from wire bytes (what the gRPC server's
deserializer does), then converted as the handler does. Anything but a wire DecodeError or an
InvalidInputError with field violations is a crash, and libFuzzer stops with the input saved.
"""

from __future__ import annotations

import sys
from collections.abc import Callable

import atheris

with atheris.instrument_imports(include=["services"]):
    from google.protobuf.message import DecodeError
    from grounded.retrieval.v1 import retrieval_service_pb2 as rpb
    from grounded.synthesis.v1 import synthesis_service_pb2 as spb
    from grounded.validator.v1 import validator_service_pb2 as vpb

    from services.common import validation_proto
    from services.common.errors import InvalidInputError
    from services.retrieval import convert as retrieval_convert
    from services.retrieval.search import StageSwitches
    from services.synthesis import convert as synthesis_convert
    from services.validator import convert as validator_convert
    from services.validator.engine import validate

_ACTS = frozenset({"IPC"})
_DOC_IDS = frozenset({"IPC_420"})


def _retrieval(data: bytes) -> None:
    retrieval_convert.request_from_proto(
        rpb.RetrievePassagesRequest.FromString(data),
        known_acts=_ACTS,
        known_doc_ids=_DOC_IDS,
        default_stages=StageSwitches(),
    )


def _synthesis(data: bytes) -> None:
    synthesis_convert.request_from_proto(
        spb.SynthesizeAnswerRequest.FromString(data), default_top_k=5
    )


def _validator(data: bytes) -> None:
    answer, evidence, options = validator_convert.request_from_proto(
        vpb.ValidateAnswerRequest.FromString(data)
    )
    validation_proto.report_to_proto(validate(answer, evidence, options))


TARGETS: tuple[Callable[[bytes], None], ...] = (_retrieval, _synthesis, _validator)

# Seeds: one valid request per target, so mutation starts from the interesting shapes.
SEEDS = (
    bytes([0])
    + rpb.RetrievePassagesRequest(query="What is cheating?", top_k=5).SerializeToString(),
    bytes([1])
    + spb.SynthesizeAnswerRequest(question="Punishment for theft?", top_k=3).SerializeToString(),
    bytes([2])
    + vpb.ValidateAnswerRequest(
        answer="Theft is punished with imprisonment [IPC_378_0].",
        evidence=[{"semantic_id": "IPC_378_0", "text": "Theft is punished with imprisonment."}],
    ).SerializeToString(),
)


def one_input(data: bytes) -> None:
    if not data:
        return
    target = TARGETS[data[0] % len(TARGETS)]
    try:
        target(data[1:])
    except DecodeError:
        return  # not a message: the gRPC deserializer rejects it before any handler runs
    except InvalidInputError as error:
        if not error.violations or not all(v.field and v.description for v in error.violations):
            raise


def main() -> None:
    atheris.Setup(sys.argv, one_input)
    atheris.Fuzz()


if __name__ == "__main__":
    main()

"""Extractive generator: focused, quoted, cited and deterministic answers from real IPC text."""

from __future__ import annotations

import functools
import re
from collections.abc import Mapping
from pathlib import Path

import pytest

from services.common.evidence import Chunk, ScoredChunk
from services.common.intent import Intent, classify_intent
from services.common.refusal import REFUSAL
from services.common.validation import Verdict
from services.retrieval.chunking import chunk_documents
from services.retrieval.corpus import load_statutes
from services.synthesis.extractive import ExtractiveGenerator, question_aspects
from services.synthesis.generation import GenerationRequest
from tests.unit.synthesis.fakes import EngineValidator, RuleValidator, chunk, scored

ROOT = Path(__file__).resolve().parents[3]
KIDNAPPING = (
    "Kidnapping is of two kinds: kidnapping from India, and kidnapping from lawful guardianship."
)
_CITED_SENTENCE = re.compile(r"(.+?) \[([A-Za-z0-9_]+)\]\.(?: |$)")

CASES = [
    (
        "What is the punishment for cheating under section 420?",
        ("IPC_420_0", "IPC_415_0", "IPC_417_0", "IPC_418_0"),
    ),
    ("What is theft?", ("IPC_379_0", "IPC_378_0", "IPC_380_0")),
    ("What is the punishment for murder?", ("IPC_300_0", "IPC_302_0", "IPC_304_0")),
    ("What does dishonestly mean?", ("IPC_24_0", "IPC_25_0", "IPC_23_0")),
    ("What is the extent of the Indian Penal Code?", ("IPC_2_0", "IPC_1_0", "IPC_3_0")),
]


def request(
    question: str, evidence: tuple[ScoredChunk, ...], *, synthesis_mode: bool = False
) -> GenerationRequest:
    return GenerationRequest(
        question=question,
        evidence=evidence,
        intent=classify_intent(question),
        synthesis_mode=synthesis_mode,
    )


async def compose(question: str, evidence: tuple[ScoredChunk, ...]) -> str:
    result = await ExtractiveGenerator().generate(request(question, evidence), timeout_s=1.0)
    return result.text


class TestExtractiveGenerator:
    async def test_generate_states_the_section_420_penalty(self, ipc: Mapping[str, Chunk]) -> None:
        question, ids = CASES[0]

        answer = await compose(question, scored(ipc, *ids))

        assert answer.startswith("Whoever cheats and thereby dishonestly induces")
        assert "seven years" in answer
        assert answer.endswith("[IPC_420_0].")

    async def test_generate_prefers_the_penalty_provision_over_the_definition(
        self, ipc: Mapping[str, Chunk]
    ) -> None:
        answer = await compose(
            "What is the punishment for murder?", scored(ipc, "IPC_300_0", "IPC_302_0")
        )

        assert answer.startswith("Whoever commits murder shall be punished with death")

    async def test_generate_prefers_the_definition_for_a_definition_question(
        self, ipc: Mapping[str, Chunk]
    ) -> None:
        answer = await compose("What is theft?", scored(ipc, "IPC_379_0", "IPC_378_0"))

        assert answer.startswith("Whoever, intending to take dishonestly")
        assert "[IPC_378_0]" in answer

    @pytest.mark.parametrize(("question", "ids"), CASES)
    async def test_generate_quotes_evidence_and_cites_every_sentence(
        self, ipc: Mapping[str, Chunk], question: str, ids: tuple[str, ...]
    ) -> None:
        answer = await compose(question, scored(ipc, *ids))

        sentences = _CITED_SENTENCE.findall(answer)
        assert sentences, answer
        assert "".join(f"{text} [{sid}]. " for text, sid in sentences).strip() == answer
        for text, semantic_id in sentences:
            assert semantic_id in ids
            assert text in " ".join(ipc[semantic_id].text.split())

    @pytest.mark.parametrize(("question", "ids"), CASES)
    async def test_generate_passes_an_honest_validator(
        self, ipc: Mapping[str, Chunk], question: str, ids: tuple[str, ...]
    ) -> None:
        evidence = scored(ipc, *ids)

        report = await RuleValidator().validate(
            await compose(question, evidence), [s.chunk for s in evidence], timeout_s=1.0
        )

        assert report.verdict is Verdict.GROUNDED

    async def test_generate_is_deterministic(self, ipc: Mapping[str, Chunk]) -> None:
        evidence = scored(ipc, "IPC_378_0", "IPC_379_0", "IPC_380_0", "IPC_381_0")
        question = "What is the punishment for theft?"

        answers = {await compose(question, evidence) for _ in range(3)}

        assert len(answers) == 1

    async def test_generate_limits_the_answer_to_a_few_sentences(
        self, ipc: Mapping[str, Chunk]
    ) -> None:
        ids = ("IPC_379_0", "IPC_380_0", "IPC_381_0", "IPC_382_0", "IPC_356_0", "IPC_378_0")

        answer = await compose("What is the punishment for theft?", scored(ipc, *ids))

        assert 1 <= answer.count("[IPC_") <= 3
        assert answer.startswith("Whoever commits theft shall be punished")

    async def test_generate_refuses_when_nothing_is_relevant(
        self, ipc: Mapping[str, Chunk]
    ) -> None:
        answer = await compose("What is the capital of France?", scored(ipc, "IPC_1_0"))

        assert answer == REFUSAL

    async def test_generate_skips_fragments_without_content(self) -> None:
        evidence = (
            ScoredChunk(chunk("IPC_363A_3", "In this section,-", title="Kidnapping"), 0.9),
            ScoredChunk(chunk("IPC_359_0", KIDNAPPING, title="Kinds of kidnapping"), 0.8),
        )

        answer = await compose("What is kidnapping?", evidence)

        assert answer == f"{KIDNAPPING.rstrip('.')} [IPC_359_0]."

    async def test_generate_in_synthesis_mode_draws_on_several_documents(
        self, ipc: Mapping[str, Chunk]
    ) -> None:
        evidence = scored(ipc, "IPC_23_0", "IPC_23_1", "IPC_24_0", "IPC_25_0", "IPC_23_2")
        question = "What are wrongful gain and wrongful loss?"
        generator = ExtractiveGenerator()

        result = await generator.generate(
            request(question, evidence, synthesis_mode=True), timeout_s=1.0
        )

        cited_docs = {sid.rsplit("_", 1)[0] for _, sid in _CITED_SENTENCE.findall(result.text)}
        assert cited_docs == {"IPC_23", "IPC_24"}

    async def test_generate_adds_a_second_document_for_a_term_the_first_lacks(self) -> None:
        # A bridge question: the film's article names the actress, her own article the office.
        film = chunk(
            "WIKI_1_0",
            "Kiss and Tell is a 1945 comedy film starring Shirley Temple as Corliss Archer.",
            act="WIKI",
        )
        actress = chunk(
            "WIKI_2_0",
            "Shirley Temple later held the post of United States ambassador to Ghana.",
            act="WIKI",
        )
        weather = chunk("WIKI_3_0", "Rain fell on the coast for most of the week.", act="WIKI")
        evidence = (
            ScoredChunk(film, 0.9),
            ScoredChunk(actress, 0.6),
            ScoredChunk(weather, 0.5),
        )

        text = await compose("Which ambassador post did the star of Kiss and Tell hold?", evidence)

        cited = [sid for _, sid in _CITED_SENTENCE.findall(text)]
        assert cited[0] == "WIKI_1_0"
        assert "WIKI_2_0" in cited
        assert "WIKI_3_0" not in cited


@functools.cache
def statute_chunks() -> dict[str, Chunk]:
    """Three IPC sections as the retrieval chunker cuts them."""
    docs = load_statutes(ROOT / "data" / "corpora" / "indian_law" / "ipc.json")
    wanted = [d for d in docs if d.doc_id in {"IPC_120A", "IPC_120B", "IPC_294"}]
    return {c.semantic_id: c for c in chunk_documents(wanted)}


class TestRealChunks:
    """Chunks cut by the retrieval chunker itself, not this package's one-line-per-chunk fixture."""

    @pytest.mark.parametrize(
        ("question", "ids", "cited", "must_contain"),
        [
            (
                "What is criminal conspiracy?",
                ("IPC_120A_0", "IPC_120A_1", "IPC_120B_0"),
                "IPC_120A_0",
                ("When two or more persons agree", "an illegal act, or", "criminal conspiracy"),
            ),
            (
                "What is the punishment for obscene acts in a public place?",
                ("IPC_294_0",),
                "IPC_294_0",
                ("does any obscene act in any public place", "three months"),
            ),
        ],
    )
    async def test_a_sentence_on_several_lines_is_quoted_whole_and_validates(
        self,
        question: str,
        ids: tuple[str, ...],
        cited: str,
        must_contain: tuple[str, ...],
    ) -> None:
        chunks = statute_chunks()
        evidence = tuple(ScoredChunk(chunks[i], 1.0 - n / 10) for n, i in enumerate(ids))

        answer = await compose(question, evidence)

        assert f"[{cited}]" in answer
        for phrase in must_contain:
            assert phrase in answer
        report = await EngineValidator().validate(answer, [e.chunk for e in evidence], timeout_s=1)
        assert report.verdict is Verdict.GROUNDED, report


class TestCompoundQuestions:
    @pytest.mark.parametrize(
        ("question", "ids", "definition", "penalty"),
        [
            (
                "What is criminal conspiracy and how is it punished?",
                ("IPC_120B_0", "IPC_120A_2", "IPC_120B_1", "IPC_120A_0"),
                "IPC_120A_2",
                "IPC_120B_",
            ),
            (
                "What is theft and what is its punishment?",
                ("IPC_379_0", "IPC_378_0", "IPC_380_0"),
                "IPC_378_0",
                "IPC_379_0",
            ),
            (
                "Define cheating and state the penalty for it.",
                ("IPC_417_0", "IPC_415_0", "IPC_420_0"),
                "IPC_415_0",
                "IPC_417_0",
            ),
        ],
    )
    async def test_generate_answers_both_parts_of_a_compound_question(
        self,
        ipc: Mapping[str, Chunk],
        question: str,
        ids: tuple[str, ...],
        definition: str,
        penalty: str,
    ) -> None:
        evidence = scored(ipc, *ids)  # the penalty provisions rank first, as retrieval does

        answer = await compose(question, evidence)

        cited = _CITED_SENTENCE.findall(answer)
        assert any(sid == definition for _, sid in cited), answer
        assert any(sid.startswith(penalty) for _, sid in cited), answer
        # The definition is read first, as the question asks it first.
        assert cited[0][1] == definition
        report = await RuleValidator().validate(answer, [s.chunk for s in evidence], timeout_s=1)
        assert report.verdict is Verdict.GROUNDED

    async def test_generate_single_part_question_keeps_the_focused_answer(
        self, ipc: Mapping[str, Chunk]
    ) -> None:
        # "and" inside the offence name is not a second question.
        answer = await compose(
            "What is the punishment for cheating and dishonestly inducing delivery of property?",
            scored(ipc, "IPC_420_0", "IPC_415_0", "IPC_417_0"),
        )

        assert "[IPC_415_0]" not in answer

    @pytest.mark.parametrize(
        ("question", "aspects"),
        [
            ("What is criminal conspiracy and how is it punished?", ("DEFINITION", "PUNISHMENT")),
            ("What is the punishment for theft?", ("PUNISHMENT",)),
            ("What is the extent and applicability of the Code?", ("SCOPE",)),
            ("What is theft, and how do I file a complaint?", ("DEFINITION", "PROCEDURE")),
            ("What is section 420 about?", ("GENERAL",)),
        ],
    )
    def test_question_aspects_splits_compound_questions(
        self, question: str, aspects: tuple[str, ...]
    ) -> None:
        found = question_aspects(question, classify_intent(question))

        assert tuple(a.name for a in found) == aspects
        assert all(isinstance(a, Intent) for a in found)

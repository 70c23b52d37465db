"""The front-door probes (data/probes/front_door_probes.jsonl) through the real stack: inputs that
are not questions are refused with the exact refusal, and a section asked for however it is
written (a bare number, §, full-width digits, look-alike letters) is answered from that section.

Found by a tester calling the live stack: "ok" came back ANSWERED from s.109, "420" from s.293,
"What is § 302?" was refused as a definition (docs/EVALUATION.md, "The front door")."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import grpc
import pytest
from grounded.retrieval.v1 import retrieval_service_pb2 as rpb
from grounded.retrieval.v1 import retrieval_service_pb2_grpc as rpb_grpc
from grounded.synthesis.v1 import synthesis_service_pb2 as spb

from evaluation.golden import GoldenItem, load_golden
from services.common.refusal import REFUSAL
from stack.inprocess import start_in_process
from tests.integration.conftest import ROOT, Stack
from tests.support.grpc_helpers import synthesize

pytestmark = pytest.mark.integration

PROBES = load_golden(ROOT / "data/probes/front_door_probes.jsonl")
# Probes no change covers yet. Strict: a fix that makes one pass must move it out of this list.
# Greetings and requests that name nothing are refused since F (docs/EVALUATION.md, "The front
# door"); these two are content, not conversation, and each shares a word with some passage
# ("sit", "made"), so the model may still rescue it.
OPEN = {
    "lorem ipsum dolor sit amet",
    "The moon is made of green cheese and rock.",
    "what if I steal a bike",  # the model scores s.379 at 0.12 for it: a false refusal
    # Abetment and harbouring in everyday words, refused before F too: the first vetoed
    # (ANSWERING_SENTENCE), the second for its key terms (KEY_TERM_MATCH).
    "Can a person help another commit theft?",
    "What does the law say about help given to a murderer?",
}


def _cases(answerable: bool) -> list[object]:
    return [
        pytest.param(
            p,
            id=p.id,
            marks=[
                pytest.mark.xfail(strict=True, reason="open: docs/EVALUATION.md, The front door")
            ]
            if p.question in OPEN
            else [],
        )
        for p in PROBES
        if p.answerable is answerable
    ]


async def _answered(stack: Stack, question: str) -> tuple[spb.SynthesizeAnswerResponse, set[str]]:
    """SynthesizeAnswer for ``question``, which must come back answered, and the documents it
    cites."""
    response = await synthesize(stack.synthesis, question)
    assert response.status == spb.ANSWER_STATUS_ANSWERED, response.refusal_reason
    return response, {c.doc_id for c in response.citations}


@pytest.fixture(scope="module")
async def front_door(ipc_index: Path) -> AsyncIterator[Stack]:
    running = await start_in_process(ipc_index)  # the defaults: answerability "both"
    yield running
    await running.stop()


class TestFrontDoor:
    @pytest.mark.parametrize("probe", _cases(answerable=False))
    async def test_rpc_a_probe_that_asks_nothing_the_corpus_holds_is_refused(
        self, front_door: Stack, probe: GoldenItem
    ) -> None:
        response = await synthesize(front_door.synthesis, probe.question)

        assert response.answer == REFUSAL, probe.rationale
        assert response.status == spb.ANSWER_STATUS_REFUSED_INSUFFICIENT_EVIDENCE

    @pytest.mark.parametrize("probe", _cases(answerable=True))
    async def test_rpc_a_probe_is_answered_from_its_section(
        self, front_door: Stack, probe: GoldenItem
    ) -> None:
        response = await synthesize(front_door.synthesis, probe.question)

        assert response.status == spb.ANSWER_STATUS_ANSWERED, probe.rationale
        cited = {c.doc_id for c in response.citations}
        assert set(probe.gold_doc_ids) & cited, (probe.rationale, cited)
        # A request is never a claim the evidence "states".
        assert response.sufficiency.statement_verdict != spb.STATEMENT_VERDICT_STATED

    @pytest.mark.parametrize(
        "request_", [p.question for p in PROBES if p.rationale.startswith("request")]
    )
    async def test_rpc_a_request_is_not_a_statement_the_evidence_states(
        self, front_door: Stack, request_: str
    ) -> None:
        response = await synthesize(front_door.synthesis, request_)

        assert response.sufficiency.statement_verdict == spb.STATEMENT_VERDICT_UNSPECIFIED

    async def test_rpc_retrieval_names_the_words_no_passage_holds(self, front_door: Stack) -> None:
        # Hindi in Latin letters: every word unknown to the corpus, so the model may not
        # rescue it (it did, from s.14, at 0.97); "steal" is held as "theft", "bike" is not.
        async with grpc.aio.insecure_channel(front_door.retrieval) as channel:
            stub = rpb_grpc.RetrievalServiceStub(channel)
            hindi = await stub.RetrievePassages(
                rpb.RetrievePassagesRequest(query="Chori ki saza kya hai?", top_k=3)
            )
            bike = await stub.RetrievePassages(
                rpb.RetrievePassagesRequest(query="what if I steal a bike", top_k=3)
            )
        assert list(hindi.unknown_terms) == ["chori", "ki", "saza", "kya", "hai"]
        assert list(bike.unknown_terms) == ["bike"]
        response = await synthesize(front_door.synthesis, "Chori ki saza kya hai?")
        assert response.answer == REFUSAL
        assert response.sufficiency.answerability_effect == spb.ANSWERABILITY_EFFECT_UNSPECIFIED


class TestTheUnansweredPart:
    """Rule X (docs/EVALUATION.md, "Then X"): a multi-part question refused for one part says
    which, and the report gives each part its best score."""

    async def test_rpc_a_refusal_names_the_part_no_sentence_answers(
        self, front_door: Stack
    ) -> None:
        # The corpus holds s.304B's title, Dowry death, and no text of it.
        response = await synthesize(
            front_door.synthesis, "How is theft punished, and how is dowry death punished?"
        )

        assert response.answer == REFUSAL
        parts = response.sufficiency.parts
        assert [(p.question, p.answered) for p in parts] == [
            ("How is theft punished?", True),
            ("How is dowry death punished?", False),
        ]
        assert parts[1].score < parts[0].score
        assert response.sufficiency.answerability_score == pytest.approx(parts[1].score)
        assert response.refusal_reason == (
            "no evidence sentence answers the question: none answers 'How is dowry death "
            "punished?' (ANSWERING_SENTENCE)"
        )

    async def test_rpc_a_question_of_one_part_reports_no_parts(self, front_door: Stack) -> None:
        response = await synthesize(front_door.synthesis, "How is theft punished?")

        assert response.status == spb.ANSWER_STATUS_ANSWERED
        assert not response.sufficiency.parts


class TestAList:
    """Rule AI (docs/EVALUATION.md, "Then AI"): a list of things in one question frame is asked
    once per thing; before it, the three-offence question was refused (ANSWERING_SENTENCE)."""

    async def test_rpc_each_thing_listed_is_answered_from_its_own_section(
        self, front_door: Stack
    ) -> None:
        response, cited = await _answered(
            front_door, "What are the punishments for theft, robbery and dacoity?"
        )

        assert [(p.question, p.answered) for p in response.sufficiency.parts] == [
            ("What are the punishments for theft?", True),
            ("What are the punishments for robbery?", True),
            ("What are the punishments for dacoity?", True),
        ]
        assert {"IPC_379", "IPC_395"} <= cited, cited
        assert cited & {"IPC_392", "IPC_393"}, cited  # robbery, or its attempt

    async def test_rpc_a_thing_listed_is_quoted_from_a_sentence_naming_it(
        self, front_door: Stack
    ) -> None:
        # Rule AP: the model scores s.384's punishment of extortion 0.997 for "... for
        # bribery?"; only s.171B, which names bribery, may answer that part.
        _, cited = await _answered(
            front_door, "What are the punishments for cheating, extortion and bribery?"
        )

        assert {"IPC_384", "IPC_171B"} <= cited, cited

    async def test_rpc_a_thing_listed_that_the_corpus_lacks_refuses_the_whole(
        self, front_door: Stack
    ) -> None:
        response = await synthesize(
            front_door.synthesis, "What are the punishments for house trespass and dowry death?"
        )

        assert response.answer == REFUSAL
        assert "dowry" in response.refusal_reason


class TestItIsTheTopic:
    """Rule AQ (docs/EVALUATION.md, "Then AQ"): "How is it punished?" after "What is X?" asks
    about X; before, the question was one and quoted the punishment without the definition."""

    @pytest.mark.parametrize(
        ("question", "parts", "quoted"),
        [
            # Rule AX: "when is B an offence" after ", and" asks a question of its own; read as
            # one question with two topics, it was refused (no passage holds both).
            (
                "How is extortion punished, and when is rioting an offence?",
                ["How is extortion punished?", "When is rioting an offence?"],
                {"IPC_384"},
            ),
            # Rule BB: so does a request after ", and" or ";"; read as one question, this one
            # quoted s.390 and s.386, and no robbery punishment, s.392.
            (
                "What is extortion; also explain how robbery is punished.",
                ["What is extortion?", "Explain how robbery is punished?"],
                {"IPC_383", "IPC_392"},
            ),
        ],
    )
    async def test_rpc_a_question_or_request_after_another_is_a_part_of_its_own(
        self, front_door: Stack, question: str, parts: list[str], quoted: set[str]
    ) -> None:
        response, cited = await _answered(front_door, question)

        assert [p.question for p in response.sufficiency.parts] == parts
        assert quoted <= cited, cited

    async def test_rpc_a_definition_part_quotes_the_defining_section(
        self, front_door: Stack
    ) -> None:
        """Rule BC: s.463 defines forgery in the Code's "... commits forgery." form, now read as
        definitional language; the part "Define forgery?" quoted s.469 (forgery to harm a
        reputation), whose punishment cue broke the model's near-tie."""
        response, cited = await _answered(
            front_door, "Define forgery, and tell me how cheating is punished."
        )

        assert len(response.sufficiency.parts) == 2
        assert {"IPC_463", "IPC_417"} <= cited, cited
        assert "IPC_469" not in cited, cited

    async def test_rpc_a_choice_between_two_offences_quotes_each(self, front_door: Stack) -> None:
        """Rule AY: "Which is punished more severely, X or Y?" in lower case is a comparison,
        each side answered; it quoted criminal breach of trust only (s.406, s.409)."""
        response, cited = await _answered(
            front_door, "Which is punished more severely, theft or criminal breach of trust?"
        )

        assert list(response.sufficiency.compared_terms) == ["theft", "criminal breach of trust"]
        assert {"IPC_379", "IPC_406"} <= cited, cited

    async def test_rpc_a_definition_and_its_punishment_are_each_quoted(
        self, front_door: Stack
    ) -> None:
        response, cited = await _answered(
            front_door, "What is criminal intimidation and what is its punishment?"
        )

        assert [p.question for p in response.sufficiency.parts] == [
            "What is criminal intimidation?",
            "What is the punishment of criminal intimidation?",
        ]
        assert {"IPC_503", "IPC_506"} <= cited, cited


class TestRequests:
    """Rule AU: the answerability model reads a request as the question it asks. It scored
    s.405's definition 0.026 for "Define criminal breach of trust." (0.885 for "What is
    criminal breach of trust?"), so the request was answered from s.406 and s.409 alone."""

    async def test_rpc_a_definition_request_quotes_the_definition(self, front_door: Stack) -> None:
        _, cited = await _answered(front_door, "Define criminal breach of trust.")

        assert "IPC_405" in cited, cited

    async def test_rpc_a_definition_asked_for_politely_leads_with_the_definition(
        self, front_door: Stack
    ) -> None:
        """Rule AV: "Can you define theft?" is a definition question, as "What is theft?" is;
        as a general question it quoted s.382 (theft after preparation for causing death)
        before s.378."""
        response, _ = await _answered(front_door, "Can you define theft?")

        assert response.citations[0].doc_id == "IPC_378", [c.doc_id for c in response.citations]

    async def test_rpc_abetment_is_defined_from_its_defining_section(
        self, front_door: Stack
    ) -> None:
        """Rule BE (the legal audit's H3): s.107 defines abetment ("A person abets the doing of
        a thing, who: ..."); "What is abetment?" quoted s.108A (abetment in India of offences
        outside India) alone."""
        response, _ = await _answered(front_door, "What is abetment?")

        assert response.citations[0].doc_id == "IPC_107", [c.doc_id for c in response.citations]

    @pytest.mark.parametrize(
        ("question", "defining"),
        [("Explain theft.", "IPC_378"), ("Tell me about extortion", "IPC_383")],
    )
    async def test_rpc_any_request_leads_with_what_it_asks(
        self, front_door: Stack, question: str, defining: str
    ) -> None:
        """Rule BD: "Explain theft." asks "What is theft?", a definition question; as a general
        question it quoted s.382 (theft after preparation for causing death) first."""
        response, _ = await _answered(front_door, question)

        assert response.citations[0].doc_id == defining, [c.doc_id for c in response.citations]

    async def test_rpc_each_term_a_definition_request_lists_is_defined(
        self, front_door: Stack
    ) -> None:
        """Rule AW: "Can you define theft and extortion?" asks two questions; as one it quoted
        s.410 and s.390, neither definition."""
        response, cited = await _answered(front_door, "Can you define theft and extortion?")

        assert [p.question for p in response.sufficiency.parts] == [
            "Can you define theft?",
            "Can you define extortion?",
        ]
        assert {"IPC_378", "IPC_383"} <= cited, cited


class TestWhatTheIndexHolds:
    """Questions about an act the index does not hold, or a section it holds no text of, are
    refused saying so (docs/EVALUATION.md, "Then K"). Found by a legal professional's audit:
    the BNS question was answered from s.420; the other two were told only that "no evidence
    comes from the section(s) the question names"."""

    @pytest.mark.parametrize(
        ("question", "reason"),
        [
            (
                "Under the BNS, what is the punishment for cheating and dishonestly inducing "
                "delivery of property?",
                "the Bharatiya Nyaya Sanhita, 2023 is not among the documents: this index holds "
                "the Indian Penal Code, 1860 (SECTION_MATCH)",
            ),
            (
                "s. 420 CrPC",
                "the Code of Criminal Procedure, 1973 is not among the documents: this index "
                "holds the Indian Penal Code, 1860 (SECTION_MATCH)",
            ),
            (
                "Sec 304B IPC punishment",
                "section 304B of the Indian Penal Code, 1860 is not in this index: its text is "
                "absent from the corpus (SECTION_MATCH)",
            ),
        ],
    )
    async def test_rpc_a_question_about_what_the_index_lacks_is_refused_naming_it(
        self, front_door: Stack, question: str, reason: str
    ) -> None:
        response = await synthesize(front_door.synthesis, question)

        assert response.answer == REFUSAL
        assert response.status == spb.ANSWER_STATUS_REFUSED_INSUFFICIENT_EVIDENCE
        assert response.sufficiency.failed_requirement == spb.SUFFICIENCY_REQUIREMENT_SECTION_MATCH
        assert response.refusal_reason == reason
        assert response.sufficiency.failure == reason.removesuffix(" (SECTION_MATCH)")

"""Extractive generator: focused, quoted, cited and deterministic answers from real IPC text."""

from __future__ import annotations

import dataclasses
import functools
import re
from collections.abc import Mapping
from pathlib import Path
from typing import ClassVar

import pytest

from services.common.evidence import Chunk, ScoredChunk
from services.common.intent import Intent, classify_intent
from services.common.language.provisions import opens_list
from services.common.language.sentences import sentences
from services.common.refusal import REFUSAL
from services.common.validation import Reason, Verdict
from services.retrieval.chunking import chunk_documents
from services.retrieval.corpus import load_statutes
from services.synthesis.extractive import (
    ExtractiveGenerator,
    ExtractiveOptions,
    cite_sentence,
    join_quotes,
    question_aspects,
    source_label,
)
from services.synthesis.generation import GenerationRequest
from tests.unit.synthesis.fakes import EngineValidator, chunk, scored

ROOT = Path(__file__).resolve().parents[3]
KIDNAPPING = (
    "Kidnapping is of two kinds: kidnapping from India, and kidnapping from lawful guardianship."
)
# A quote as cite_sentence writes it: "text [ID]." or, keeping its mark, "text: [ID]" / "text;
# [ID]", then a space, a line break or the end.
_QUOTE = re.compile(r"(.+?)(?:([:;]) \[([A-Za-z0-9_]+)\]|\s\[([A-Za-z0-9_]+)\]\.)(?:[ \n]|$)")


def cited_quotes(answer: str) -> list[tuple[str, str]]:
    """(sentence, id) of every quote in ``answer``, the sentence without its final mark."""
    return [(text, kept or full) for text, _, kept, full in _QUOTE.findall(answer)]


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

        quotes = _QUOTE.findall(answer)
        assert quotes, answer
        assert (
            join_quotes([f"{t}{m} [{k}]" if m else f"{t} [{f}]." for t, m, k, f in quotes])
            == answer
        )
        sentences = cited_quotes(answer)
        for text, semantic_id in sentences:
            assert semantic_id in ids
            assert text in " ".join(ipc[semantic_id].text.split())

    @pytest.mark.parametrize(("question", "ids"), CASES)
    async def test_generate_passes_an_honest_validator(
        self, ipc: Mapping[str, Chunk], question: str, ids: tuple[str, ...]
    ) -> None:
        evidence = scored(ipc, *ids)

        # The real validator engine, as the validator service runs it.
        report = await EngineValidator().validate(
            await compose(question, evidence), [s.chunk for s in evidence], timeout_s=1.0
        )

        assert report.verdict is Verdict.GROUNDED

    async def test_generate_is_deterministic(self, ipc: Mapping[str, Chunk]) -> None:
        evidence = scored(ipc, "IPC_378_0", "IPC_379_0", "IPC_380_0", "IPC_381_0")
        question = "What is the punishment for theft?"

        answers = {await compose(question, evidence) for _ in range(3)}

        assert len(answers) == 1
        # Pinned for this input: the same answer in any process and run, not only within one.
        assert answers == {
            "Whoever commits theft shall be punished with imprisonment of either description "
            "for a term which may extend to three years, or with fine, or with both [IPC_379_0]. "
            "Whoever commits theft in any building, tent or vessel, which building, tent or "
            "vessel is used as a human dwelling, or used for the custody of property, shall be "
            "punished with imprisonment of either description for a term which may extend to "
            "seven years, and shall also be liable to fine [IPC_380_0]."
        }

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

        cited_docs = {sid.rsplit("_", 1)[0] for _, sid in cited_quotes(result.text)}
        assert cited_docs == {"IPC_23", "IPC_24"}

    async def test_generate_adds_a_second_document_for_a_term_the_first_lacks(self) -> None:
        # A bridge question: the film's article names the actress, her own article the office.
        # Articles, as HotpotQA's are: no act, no section (a statute's complement is narrower:
        # test_generate_appends_no_section_that_only_uses_a_question_word).
        film = article(
            "WIKI_1",
            0,
            "Kiss and Tell is a 1945 comedy film starring Shirley Temple as Corliss Archer.",
            "Kiss and Tell (1945 film)",
        )
        actress = article(
            "WIKI_2",
            0,
            "Shirley Temple later held the post of United States ambassador to Ghana.",
            "Shirley Temple",
        )
        weather = article("WIKI_3", 0, "Rain fell on the coast for most of the week.", "Weather")
        evidence = (
            ScoredChunk(film, 0.9),
            ScoredChunk(actress, 0.6),
            ScoredChunk(weather, 0.5),
        )

        text = await compose("Which ambassador post did the star of Kiss and Tell hold?", evidence)

        cited = [sid for _, sid in cited_quotes(text)]
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


@functools.cache
def ipc_passages() -> dict[str, Chunk]:
    """Every passage of the IPC as the retrieval chunker cuts it: what the index holds."""
    docs = load_statutes(ROOT / "data" / "corpora" / "indian_law" / "ipc.json")
    return {c.semantic_id: c for c in chunk_documents(docs)}


def _nothing_to_quote(passages: list[Chunk]) -> bool:
    """Every passage of a section is a list's lead-in or the rest of a sentence the chunker cut:
    the generator quotes neither alone (whole lists; ``_continues``)."""
    return all(opens_list(sentences(c.text)[-1]) or c.text[:1].islower() for c in passages)


def _fragments() -> list[str]:
    """The IPC passages that start in lower case: the rest of a sentence the chunker cut."""
    return [sid for sid, c in ipc_passages().items() if c.text[:1].islower()]


class TestLowerCaseStarts:
    """A passage that starts in lower case continues the sentence before it, in the answer too:
    the splitter runs it into whatever sentence precedes it there."""

    def test_the_ipc_has_such_passages(self) -> None:
        # The tests below would pass vacuously without them.
        assert {"IPC_19_1", "IPC_73_1", "IPC_73_3", "IPC_74_1", "IPC_116_1"} <= set(_fragments())

    async def test_generate_never_runs_s116s_fine_clause_into_s115(self) -> None:
        # The tester's draft: "... liable to fine [IPC_115_0]. or with such fine as is
        # provided for that offence, or with both [IPC_116_1]." is one sentence to the
        # validator, which finds that s.115 does not allow "or both" (PENALTY_MISMATCH).
        passages = ipc_passages()
        evidence = scored(passages, "IPC_115_0", "IPC_116_1", "IPC_116_0", "IPC_109_0")

        answer = await compose("What is the punishment for abetment of murder?", evidence)

        assert answer.startswith("Whoever abets the commission of an offence punishable with")
        assert "[IPC_116_1]" not in answer
        report = await EngineValidator().validate(answer, [e.chunk for e in evidence], timeout_s=1)
        assert report.verdict is Verdict.GROUNDED, report

    @pytest.mark.parametrize("fragment", _fragments())
    async def test_generate_quotes_no_fragment_and_validates(self, fragment: str) -> None:
        # The fragment ranks first, its section's other passages after it. Even right after the
        # sentence it continues it would fail: the validator reads each cited passage's penalty
        # on its own (s.116 whole fails as "the cited penalty has no fine").
        passages = ipc_passages()
        section = passages[fragment].doc_id
        ids = [fragment, *(s for s, c in passages.items() if c.doc_id == section and s != fragment)]
        evidence = scored(passages, *ids)

        answer = await compose(f"What does section {passages[fragment].section} say?", evidence)

        if _nothing_to_quote([c for c in passages.values() if c.doc_id == section]):
            # s.73: its lead-in ("... according to the following scale, that is to say:")
            # introduces items that are all cut sentences, so no whole list can be quoted.
            assert answer == REFUSAL
            return
        assert answer != REFUSAL
        cited = cited_quotes(answer)
        assert cited and all(not text[:1].islower() for text, _ in cited), answer
        report = await EngineValidator().validate(answer, [e.chunk for e in evidence], timeout_s=1)
        assert report.verdict is Verdict.GROUNDED, report

    async def test_generate_writes_a_lower_case_opening_only_first(self) -> None:
        # A document may open in lower case ("iPhone ..."): first in the answer it is a sentence
        # of its own; after another quote it would run into that one, so it is left out.
        phone = article("PHONE", 0, "iPhone sales in Paris rose this year, the company said.", "")
        books = article("BOOKS", 0, "Sales of books in Paris rose this year as shops opened.", "")
        question = "Did sales in Paris rise this year?"

        first = await compose(question, (ScoredChunk(phone, 0.5), ScoredChunk(books, 0.5)))
        later = await compose(question, (ScoredChunk(books, 0.5), ScoredChunk(phone, 0.5)))

        assert first == (
            "iPhone sales in Paris rose this year, the company said [PHONE_0]. "
            "Sales of books in Paris rose this year as shops opened [BOOKS_0]."
        )
        assert later == "Sales of books in Paris rose this year as shops opened [BOOKS_0]."


class TestCompoundQuestions:
    @pytest.mark.parametrize(
        ("question", "ids", "definition", "penalty"),
        [
            (
                "What is criminal conspiracy and how is it punished?",
                ("IPC_120B_0", "IPC_120A_0", "IPC_120B_1", "IPC_120A_1"),
                "IPC_120A_0",
                "IPC_120B_",
            ),
            # Rule BH: s.120A's proviso ("... shall amount to a criminal conspiracy unless
            # ...") outscores its definition, and a proviso is no definition.
            (
                "What is criminal conspiracy and how is it punished when it is not to commit a "
                "serious offence?",
                ("IPC_120B_1", "IPC_120B_0", "IPC_120A_1", "IPC_121A_0", "IPC_120A_0"),
                "IPC_120A_0",
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
        # The penalty provisions rank first, as retrieval does. s.120A's definition runs over
        # three lines ("done:" / "an illegal act, or" / "an act which ..."), which the
        # retrieval chunker keeps in one passage.
        evidence = scored({**ipc, **statute_chunks()}, *ids)

        answer = await compose(question, evidence)

        cited = cited_quotes(answer)
        assert any(sid == definition for _, sid in cited), answer
        assert any(sid.startswith(penalty) for _, sid in cited), answer
        # The definition is read first, as the question asks it first.
        assert cited[0][1] == definition
        report = await EngineValidator().validate(answer, [s.chunk for s in evidence], timeout_s=1)
        assert report.verdict is Verdict.GROUNDED

    async def test_a_definition_and_a_punishment_asked_in_two_sentences_are_both_quoted(
        self, ipc: Mapping[str, Chunk]
    ) -> None:
        # Rule W: as "What is theft and how is it punished?" is answered.
        evidence = scored(ipc, "IPC_379_0", "IPC_382_0", "IPC_378_0", "IPC_390_0")
        two = await compose("What is theft? How is it punished?", evidence)
        one = await compose("What is theft and how is it punished?", evidence)

        assert "[IPC_378_0]" in two and "[IPC_379_0]" in two
        assert two == one

    @pytest.mark.parametrize(
        "question",
        [
            "What does the IPC say about cheating?",
            "Tell me about cheating.",
            "I would like to know more about cheating.",
        ],
    )
    async def test_generate_answers_an_overview_with_definition_and_punishment(
        self, ipc: Mapping[str, Chunk], question: str
    ) -> None:
        # Rule BF. The evidence as retrieval ranked it for the first question: s.415, which
        # defines cheating, long and last; a general question quoted s.416 to s.418 without it.
        answer = await compose(
            question,
            scored(ipc, "IPC_416_0", "IPC_417_0", "IPC_419_0", "IPC_418_0", "IPC_415_0"),
        )

        cited = [semantic_id for _, semantic_id in cited_quotes(answer)]
        assert "IPC_415_0" in cited, answer
        assert "IPC_417_0" in cited, answer

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
            # Rule W: a sentence's end splits as a clause does.
            ("What is theft? How is it punished?", ("DEFINITION", "PUNISHMENT")),
            ("What is criminal conspiracy? How is it punished?", ("DEFINITION", "PUNISHMENT")),
            ("Our maid stole gold. Is it treated more seriously?", ("GENERAL",)),
            # Rule BF: an overview asks what the thing is and how it is punished.
            ("Tell me about cheating.", ("DEFINITION", "PUNISHMENT")),
            ("I would like to know more about cheating.", ("DEFINITION", "PUNISHMENT")),
            ("What does the IPC say about cheating?", ("DEFINITION", "PUNISHMENT")),
            ("What is the law on theft?", ("DEFINITION", "PUNISHMENT")),
            ("Can you give me information on dowry death?", ("DEFINITION", "PUNISHMENT")),
            # ... unless it asks for something else, or names nothing of its own.
            ("Tell me about the procedure for filing a complaint.", ("PROCEDURE",)),
            ("What is the punishment under the law on dowry?", ("PUNISHMENT",)),
            ("Tell me about it.", ("GENERAL",)),
            ("What did the report say about the war?", ("GENERAL",)),
        ],
    )
    def test_question_aspects_splits_compound_questions(
        self, question: str, aspects: tuple[str, ...]
    ) -> None:
        found = question_aspects(question, classify_intent(question))

        assert tuple(a.name for a in found) == aspects
        assert all(isinstance(a, Intent) for a in found)


def article(doc: str, n: int, text: str, title: str) -> Chunk:
    """A sentence of a non-statute document (HotpotQA-like: no act, no section)."""
    return Chunk(semantic_id=f"{doc}_{n}", doc_id=doc, text=text, title=title, sentence_index=n)


def ranked(*chunks: Chunk) -> tuple[ScoredChunk, ...]:
    return tuple(ScoredChunk(c, round(0.9 - 0.05 * n, 4)) for n, c in enumerate(chunks))


# Two documents with two passages each (synthesis mode) that disagree on the tower's height.
HEIGHTS = ranked(
    article(
        "TOWER", 0, "The Eiffel Tower is a wrought-iron lattice tower in Paris.", "Eiffel Tower"
    ),
    article("TOWER", 1, "The Eiffel Tower is 330 metres tall.", "Eiffel Tower"),
    article("GUIDE", 0, "The Eiffel Tower is 300 metres tall.", "Paris guide"),
    article("GUIDE", 1, "Paris is the capital of France.", "Paris guide"),
)
# ... and two that disagree on a negation.
BRIDGE = ranked(
    article("BRIDGE", 0, "The old bridge is open to motor traffic every day.", "Old bridge"),
    article("BRIDGE", 1, "The old bridge was built of stone in 1870.", "Old bridge"),
    article("COUNCIL", 0, "The old bridge is not open to motor traffic.", "Council notice"),
    article(
        "COUNCIL", 1, "The council maintains the old bridge and its approaches.", "Council notice"
    ),
)


async def synthesise(question: str, evidence: tuple[ScoredChunk, ...]) -> tuple[str, list[str]]:
    """The synthesis-mode answer, and the real validator's reason for each of its sentences."""
    result = await ExtractiveGenerator().generate(
        request(question, evidence, synthesis_mode=True), timeout_s=1.0
    )
    report = await EngineValidator().validate(
        result.text, [s.chunk for s in evidence], timeout_s=1.0
    )
    assert report.verdict is Verdict.GROUNDED, report
    return result.text, [s.reason.name for s in report.sentences]


class TestSynthesisMode:
    """Issue 16, part 2: one group per document under a heading that says how it relates."""

    async def test_generate_groups_real_statute_chunks_under_one_heading_per_section(
        self,
    ) -> None:
        chunks = statute_chunks()
        evidence = scored(chunks, "IPC_120B_0", "IPC_120B_1", "IPC_120A_0", "IPC_120A_1")

        text, reasons = await synthesise(
            "What is criminal conspiracy and how is it punished?", evidence
        )

        lines = text.split("\n")
        assert lines[0] == "IPC section 120B:"
        assert lines[2] == "IPC section 120A:"
        # s.120A's definition ends with its ';' (the proviso follows), so the proviso's quote
        # starts a line of its own: one sentence each to the validator.
        assert len(lines) == 5
        assert lines[3].endswith("criminal conspiracy; [IPC_120A_0]")
        assert set(re.findall(r"\[(IPC_\w+?)_\d+\]", lines[1])) == {"IPC_120B"}
        assert set(re.findall(r"\[(IPC_\w+?)_\d+\]", " ".join(lines[3:]))) == {"IPC_120A"}
        # The headings are list introductions the validator exempts; every quote is checked.
        assert reasons[0] == "META_STATEMENT" and reasons.count("META_STATEMENT") == 2
        assert reasons.count("SUPPORTED") == len(reasons) - 2

    async def test_generate_flags_a_numeric_difference_in_the_later_heading(self) -> None:
        text, reasons = await synthesise("How tall is the Eiffel Tower?", HEIGHTS)

        assert text.split("\n") == [
            "Eiffel Tower:",
            "The Eiffel Tower is a wrought-iron lattice tower in Paris [TOWER_0]. "
            "The Eiffel Tower is 330 metres tall [TOWER_1].",
            "Paris guide (differs from Eiffel Tower on a number):",
            "The Eiffel Tower is 300 metres tall [GUIDE_0].",
        ]
        assert reasons == [
            "META_STATEMENT",
            "SUPPORTED",
            "SUPPORTED",
            "META_STATEMENT",
            "SUPPORTED",
        ]

    async def test_generate_flags_a_negation_difference_in_the_later_heading(self) -> None:
        text, _ = await synthesise("Is the old bridge open to motor traffic?", BRIDGE)

        lines = text.split("\n")
        assert lines[0] == "Old bridge:"
        assert lines[2] == "Council notice (differs from Old bridge on a negation):"
        assert lines[3] == "The old bridge is not open to motor traffic [COUNCIL_0]."

    async def test_generate_states_agreement_in_the_later_heading(
        self, ipc: Mapping[str, Chunk]
    ) -> None:
        # Theft (s.379) and extortion (s.384) carry the same penalty; each section gets a
        # second passage so that the evidence is in synthesis mode.
        evidence = (
            *scored(ipc, "IPC_379_0"),
            ScoredChunk(dataclasses.replace(ipc["IPC_378_0"], doc_id="IPC_379"), 0.85),
            *scored(ipc, "IPC_384_0", top=0.8),
            ScoredChunk(dataclasses.replace(ipc["IPC_383_0"], doc_id="IPC_384"), 0.75),
        )

        text, _ = await synthesise("What is the punishment for theft and for extortion?", evidence)

        assert "IPC section 384 (agrees with IPC section 379):" in text.split("\n")

    async def test_generate_without_a_relation_writes_plain_headings(
        self, ipc: Mapping[str, Chunk]
    ) -> None:
        evidence = scored(ipc, "IPC_23_0", "IPC_23_1", "IPC_24_0", "IPC_25_0", "IPC_23_2")

        text, _ = await synthesise("What are wrongful gain and wrongful loss?", evidence)

        headings = [line for line in text.split("\n") if line.endswith(":")]
        assert headings == ["IPC section 23:", "IPC section 24:"]

    async def test_every_ipc_sections_heading_is_exempt_and_its_answer_validates(self) -> None:
        # Each IPC section beside s.379, both named in the question, so that both are quoted,
        # each under its heading. Headings once held the title, and 32 such answers were
        # refused: the validator read "IPC section 382, Theft after preparation made for
        # causing death, hurt or restraint ...:" as a claim that death is the penalty.
        passages = ipc_passages()
        docs: dict[str, list[Chunk]] = {}
        for passage in passages.values():
            docs.setdefault(passage.doc_id, []).append(passage)
        theft = docs.pop("IPC_379")
        validator = EngineValidator()
        grouped, refused = 0, []
        for doc_id, own in docs.items():
            evidence = tuple(ScoredChunk(c, 0.9) for c in (*theft, *own))
            question = f"What do sections 379 and {own[0].section} say?"
            result = await ExtractiveGenerator().generate(
                request(question, evidence, synthesis_mode=True), timeout_s=1.0
            )
            report = await validator.validate(
                result.text, [e.chunk for e in evidence], timeout_s=1.0
            )
            headings = [s for s in report.sentences if s.text.endswith(":")]
            grouped += len(headings) == 2
            if report.verdict is not Verdict.GROUNDED or any(
                s.reason is not Reason.META_STATEMENT for s in headings
            ):
                refused.append((doc_id, report.reason.name, report.detail))

        assert refused == []
        # All but 7 sections are quoted in a group of their own (s.384 repeats s.379's
        # penalty word for word, and the MMR step skips a near-duplicate), less those with
        # nothing to quote alone: 17 whose one passage is a lead-in the corpus holds no items
        # for ("... hereinafter following, namely:", s.21) and s.73, whose scale is cut
        # sentences.
        bare = [doc_id for doc_id, own in docs.items() if _nothing_to_quote(own)]
        assert len(bare) == 18
        assert grouped >= len(docs) - 7 - len(bare)

    async def test_generate_from_one_document_is_the_plain_answer(self) -> None:
        evidence = ranked(*(s.chunk for s in HEIGHTS[:2]), *(s.chunk for s in BRIDGE))

        text, _ = await synthesise("What is the Eiffel Tower made of?", evidence)

        assert "\n" not in text and text.startswith("The Eiffel Tower is a wrought-iron")

    async def test_generate_keeps_the_plain_answer_when_a_group_opens_in_lower_case(
        self,
    ) -> None:
        evidence = ranked(
            article("TOWER", 0, "the Eiffel Tower is 330 metres tall.", "Eiffel Tower"),
            article("TOWER", 1, "It stands in Paris.", "Eiffel Tower"),
            *(s.chunk for s in HEIGHTS[2:]),
        )

        text, _ = await synthesise("How tall is the Eiffel Tower?", evidence)

        assert "\n" not in text  # a heading would run into the lower-case quote after it

    @pytest.mark.parametrize(
        ("title", "label"),
        [
            ("Who's Afraid of Virginia Woolf? [play].", "Who's Afraid of Virginia Woolf play"),
            ("St. Louis: the city", "St Louis the city"),
            ("iPhone", "IPhone"),
        ],
    )
    def test_source_label_keeps_a_heading_one_sentence_without_citations(
        self, title: str, label: str
    ) -> None:
        assert source_label(article("DOC", 0, "Text.", title)) == label


class TestAnswerabilityWeight:
    """SYNTHESIS_EXTRACTIVE_ANSWERABILITY_WEIGHT: the model's P(answers) per chunk, when the
    answerability model scored the request, adds to each sentence's score."""

    QUESTION = "What is the punishment for theft?"

    async def answer(
        self, ipc: Mapping[str, Chunk], weight: float, scores: Mapping[str, float]
    ) -> str:
        from services.synthesis.extractive import ExtractiveOptions

        generator = ExtractiveGenerator(ExtractiveOptions(weight_answerability=weight))
        base = request(self.QUESTION, scored(ipc, "IPC_378_0", "IPC_379_0"))
        result = await generator.generate(
            dataclasses.replace(base, answer_scores=scores), timeout_s=1.0
        )
        return result.text

    async def test_the_weight_lets_the_model_choose_the_leading_sentence(
        self, ipc: Mapping[str, Chunk]
    ) -> None:
        plain = await self.answer(ipc, 0.0, {})
        assert plain.startswith("Whoever commits theft shall be punished")  # s.379
        # A model sure the definition answers, and sure the penalty does not, outweighs the
        # keyword score at weight 1; at weight 0 its scores change nothing.
        scores = {"IPC_378_0": 1.0, "IPC_379_0": 0.0}
        assert (await self.answer(ipc, 0.0, scores)) == plain
        assert (await self.answer(ipc, 1.0, scores)).startswith("Whoever, intending to take")


class TestAnsweringComplement:
    """SYNTHESIS_EXTRACTIVE_COMPLEMENT_ANSWERING_AT: when every quoted sentence comes from one
    document, another document's sentence the model finds answering is added."""

    QUESTION = "The benefactor who paid for Archbold Gymnasium sold his oil firm to whom?"
    EVIDENCE = ranked(
        article("Gym", 0, "Archbold Gymnasium was paid for by a benefactor in 1908.", "Gym"),
        article("Gym", 1, "The gymnasium was rebuilt after a fire in 1947.", "Gym"),
        article("Man", 0, "His small business was bought out by Standard Oil.", "Man"),
    )

    async def answer(self, bar: float | None, scores: Mapping[str, float]) -> str:
        from services.synthesis.extractive import ExtractiveOptions

        generator = ExtractiveGenerator(ExtractiveOptions(complement_answering_at=bar))
        base = request(self.QUESTION, self.EVIDENCE)
        result = await generator.generate(
            dataclasses.replace(base, answer_scores=scores), timeout_s=1.0
        )
        return result.text

    async def test_a_second_document_the_model_finds_answering_is_quoted(self) -> None:
        scores = {"Gym_0": 0.3, "Gym_1": 0.05, "Man_0": 0.8}
        off = await self.answer(None, scores)
        assert "[Man_0]" not in off  # it shares only "oil" with the question: below the floor
        on = await self.answer(0.62, scores)
        assert "[Gym_0]" in on and "[Man_0]" in on
        report = await EngineValidator().validate(
            on, [s.chunk for s in self.EVIDENCE], timeout_s=1.0
        )
        assert report.verdict is Verdict.GROUNDED, report

    async def test_below_the_bar_or_without_scores_nothing_is_added(self) -> None:
        low = {"Gym_0": 0.3, "Gym_1": 0.05, "Man_0": 0.5}
        assert "[Man_0]" not in await self.answer(0.62, low)
        assert "[Man_0]" not in await self.answer(0.62, {})


class TestBridgeTitles:
    """SYNTHESIS_EXTRACTIVE_BRIDGE_TITLES (on by default): a quoted sentence that names another
    evidence document by its title brings that document's best sentence into the answer."""

    QUESTION = "The benefactor who paid for Archbold Gymnasium sold his firm to whom?"

    def evidence(self, *extra: Chunk) -> tuple[ScoredChunk, ...]:
        return ranked(
            article(
                "Gym",
                0,
                "Archbold Gymnasium was paid for by John Dustin Archbold in 1908.",
                "Archbold Gymnasium",
            ),
            *extra,
            article(
                "JDA",
                0,
                "His small oil company was bought out by Standard Oil.",
                "John Dustin Archbold",
            ),
        )

    async def answer(
        self, evidence: tuple[ScoredChunk, ...], *, question: str = QUESTION, **options: object
    ) -> str:
        from services.synthesis.extractive import ExtractiveOptions

        generator = ExtractiveGenerator(ExtractiveOptions(**options))  # type: ignore[arg-type]
        result = await generator.generate(request(question, evidence), timeout_s=1.0)
        return result.text

    async def test_the_named_document_is_quoted_and_the_answer_validates(self) -> None:
        evidence = self.evidence()
        on = await self.answer(evidence)
        # The bridge sentence shares no word with the question: only the name brings it in.
        assert "[Gym_0]" in on and "[JDA_0]" in on
        assert "[JDA_0]" not in await self.answer(evidence, bridge_titles=False)
        report = await EngineValidator().validate(on, [s.chunk for s in evidence], timeout_s=1.0)
        assert report.verdict is Verdict.GROUNDED, report

    async def test_a_document_the_question_names_is_no_bridge(self) -> None:
        question = "Did John Dustin Archbold, who paid for Archbold Gymnasium, sell a firm?"
        evidence = ranked(
            article(
                "Gym",
                0,
                "Archbold Gymnasium was paid for by John Dustin Archbold in 1908.",
                "Archbold Gymnasium",
            ),
            article("JDA", 0, "The weather in 1908 was mild.", "John Dustin Archbold"),
        )
        # JDA_0 has three content words, none the question's: it is quoted only as a bridge.
        assert "[JDA_0]" not in await self.answer(evidence, question=question)

    async def test_another_paragraph_of_the_same_article_is_no_bridge(self) -> None:
        # SQuAD-like: paragraphs of one article share its title, which a sentence may name.
        evidence = ranked(
            article(
                "Gym_p0",
                0,
                "Archbold Gymnasium was paid for by a benefactor of Syracuse in 1908.",
                "Syracuse",
            ),
            article("Gym_p1", 0, "The climate of the region is humid and cold.", "Syracuse"),
        )
        assert "[Gym_p1_0]" not in await self.answer(evidence)

    async def test_the_cap_and_a_disambiguated_title(self) -> None:
        evidence = ranked(
            article(
                "Gym",
                0,
                "Archbold Gymnasium was paid for by John Dustin Archbold of Standard Oil in 1908.",
                "Archbold Gymnasium",
            ),
            article("SO", 0, "The trust was dissolved by the courts.", "Standard Oil (company)"),
            article(
                "JDA", 0, "His small oil company was bought out by a rival.", "John Dustin Archbold"
            ),
        )
        text = await self.answer(evidence)
        # "Standard Oil (company)" is named as "Standard Oil"; both named documents are quoted.
        assert "[SO_0]" in text and "[JDA_0]" in text
        capped = await self.answer(evidence, bridge_max=1)
        assert "[SO_0]" in capped and "[JDA_0]" not in capped  # the first in evidence order


def test_the_bridge_setting_defaults_on_and_switches_off() -> None:
    from services.synthesis.config import SynthesisConfig

    assert SynthesisConfig.from_env({}).extractive_bridge_titles is True
    off = {"SYNTHESIS_EXTRACTIVE_BRIDGE_TITLES": "false"}
    assert SynthesisConfig.from_env(off).extractive_bridge_titles is False


class TestRuleL:
    """A legal professional's audit (docs/EVALUATION.md, "Then L"): a named section's operative
    text, lists quoted whole, quotes that keep their ':' or ';', no stray second section."""

    @staticmethod
    async def answer(question: str, *ids: str, **options: bool) -> tuple[str, list[str]]:
        passages = ipc_passages()
        evidence = scored(passages, *ids)
        result = await ExtractiveGenerator(ExtractiveOptions(**options)).generate(
            request(question, evidence), timeout_s=1.0
        )
        report = await EngineValidator().validate(
            result.text, [e.chunk for e in evidence], timeout_s=1.0
        )
        assert result.text == REFUSAL or report.verdict is Verdict.GROUNDED, report
        return result.text, [sid for _, sid in cited_quotes(result.text)]

    async def test_generate_opens_a_named_section_with_its_operative_text(self) -> None:
        # Retrieval ranked s.376's provisos first; the operative text came after them.
        ids = ("IPC_376_4", "IPC_376_5", "IPC_376_6", "IPC_376_0", "IPC_376_1", "IPC_376_2")

        text, cited = await self.answer("What is the punishment under section 376?", *ids)

        assert cited == ["IPC_376_0", "IPC_376_1", "IPC_376_2"], text
        assert "not be less than ten years" in text and "twenty years" in text
        _, before = await self.answer(
            "What is the punishment under section 376?", *ids, operative_first=False
        )
        assert "IPC_376_4" in before  # the proviso the audit found quoted alone

    async def test_generate_quotes_a_list_whole(self) -> None:
        ids = [f"IPC_320_{n}" for n in (0, 3, 6, 1, 2, 4, 5, 7)]

        text, cited = await self.answer("What is grievous hurt?", *ids)

        assert cited == [f"IPC_320_{n}" for n in range(8)], text
        assert text.startswith("The following kinds of hurt only are designated as")

    async def test_generate_never_quotes_a_lead_in_without_its_items(self) -> None:
        # The corpus holds s.21's lead-in ("..., namely:") but none of its twelve descriptions.
        text, _ = await self.answer(
            "Who is a public servant under section 21?", "IPC_21_0", "IPC_170_0", "IPC_14_0"
        )

        assert text == REFUSAL
        text, _ = await self.answer(
            "Who is a public servant under section 21?", "IPC_21_0", whole_lists=False
        )
        assert text.startswith("The words “public servant” denote a person")

    # What retrieval gave for "What is the right of private defence?": s.97's second item ranked
    # above its lead-in, and s.100's lead-in ("..., namely:") whose items the corpus lacks.
    DEFENCE = ("IPC_106_0", "IPC_96_0", "IPC_105_0", "IPC_100_0", "IPC_97_1", "IPC_97_0")

    async def test_generate_quotes_a_list_item_only_after_its_lead_in(self) -> None:
        question = "What is the right of private defence?"

        _, cited = await self.answer(question, *self.DEFENCE)
        _, before = await self.answer(question, *self.DEFENCE, whole_lists=False)

        assert "IPC_97_1" not in cited or cited[cited.index("IPC_97_1") - 1] == "IPC_97_0"
        assert before[0] == "IPC_97_1"  # the audit's answer: the property item, no lead-in

    async def test_generate_quotes_a_list_chosen_on_its_lead_in_whole(self) -> None:
        question = "Whom may a person defend under the right of private defence?"

        text, cited = await self.answer(question, *self.DEFENCE)
        _, before = await self.answer(question, *self.DEFENCE, whole_lists=False)

        assert cited.index("IPC_97_0") + 1 == cited.index("IPC_97_1"), text
        assert "against any offence affecting the human body; [IPC_97_0]\nThe property" in text
        assert "IPC_97_1" not in before  # the lead-in and the body's item, as if that were all

    async def test_generate_quotes_a_lone_lead_in_only_beside_another_quote(self) -> None:
        # s.141's one passage is a lead-in whose five objects the corpus lacks; beside s.142 it
        # is quoted, its colon kept; alone (s.21) it is no answer.
        text, cited = await self.answer("What is an unlawful assembly?", "IPC_141_0", "IPC_142_0")

        assert set(cited) == {"IPC_141_0", "IPC_142_0"}, text
        assert "composing that assembly is: [IPC_141_0]" in text

    @pytest.mark.parametrize("other", ["IPC_304_0", "IPC_304A_0"])
    async def test_generate_appends_no_section_that_only_uses_a_question_word(
        self, other: str
    ) -> None:
        # s.124A's penalty is the answer; s.304 ("... intention of causing death") and s.304A
        # ("Causing death by negligence") merely hold "death", the word s.124A lacks.
        passages = ipc_passages()
        evidence = (ScoredChunk(passages["IPC_124A_0"], 0.9), ScoredChunk(passages[other], 0.5))
        question = "Is sedition punishable with death?"

        cited = {}
        for by_title in (True, False):
            generator = ExtractiveGenerator(ExtractiveOptions(complement_by_title=by_title))
            result = await generator.generate(request(question, evidence), timeout_s=1.0)
            cited[by_title] = [sid for _, sid in cited_quotes(result.text)]

        assert cited[True] == ["IPC_124A_0"]
        assert cited[False] == ["IPC_124A_0", other]  # the complement the audit found


class TestQuoteMarks:
    @pytest.mark.parametrize(
        ("sentence", "kept", "replaced"),
        [
            ("… hereinafter following, namely:", "… hereinafter following, namely: [X]", None),
            ("… likely to cause death;", "… likely to cause death; [X]", None),
            ("… the following scale, that is to say:—", "… that is to say: [X]", None),
            ("Whoever commits theft.", "Whoever commits theft [X].", "Whoever commits theft [X]."),
        ],
    )
    def test_cite_sentence_keeps_a_final_colon_or_semicolon(
        self, sentence: str, kept: str, replaced: str | None
    ) -> None:
        assert cite_sentence(sentence, "X", keep_clause_marks=True).endswith(kept.lstrip("…"))
        written = cite_sentence(sentence, "X")
        assert written.endswith(" [X].") and (replaced is None or written == replaced)

    def test_join_quotes_starts_a_line_after_a_kept_mark(self) -> None:
        quotes = ["To defend: His own body; [A_0]", "The property [A_1].", "Nothing [B_0]."]

        assert (
            join_quotes(quotes)
            == "To defend: His own body; [A_0]\nThe property [A_1]. Nothing [B_0]."
        )


class TestThenO:
    """Comparing sections by number (docs/EVALUATION.md, "Then O"; audit finding M1): each named
    section's operative text is quoted, in the question's order, each cited to its passage."""

    @staticmethod
    async def answer(question: str, *ids: str) -> tuple[str, list[str]]:
        from services.synthesis.question import analyse_question

        analysis = analyse_question(question)
        assert analysis.comparison is not None
        evidence = scored(ipc_passages(), *ids)
        generation = dataclasses.replace(
            request(question, evidence),
            compared=analysis.comparison.terms,
            key_terms=analysis.answer_terms,  # as the pipeline passes them
        )
        result = await ExtractiveGenerator().generate(generation, timeout_s=1.0)
        report = await EngineValidator().validate(
            result.text, [e.chunk for e in evidence], timeout_s=1.0
        )
        assert result.text == REFUSAL or report.verdict is Verdict.GROUNDED, report
        return result.text, [sid for _, sid in cited_quotes(result.text)]

    @pytest.mark.parametrize(
        ("question", "ids", "cited"),
        [
            (
                "What is the difference between section 379 and section 380?",
                ("IPC_50_0", "IPC_380_0", "IPC_379_0", "IPC_376C_1"),
                ["IPC_379_0", "IPC_380_0"],
            ),
            (
                "compare sections 323 and 325 IPC",
                ("IPC_325_0", "IPC_50_0", "IPC_323_0", "IPC_254_0"),
                ["IPC_323_0", "IPC_325_0"],
            ),
            (
                "How does section 302 differ from section 304?",
                ("IPC_50_0", "IPC_304_0", "IPC_302_0", "IPC_300_0"),
                ["IPC_302_0", "IPC_304_0"],
            ),
            (
                "What is the difference between section 299 and section 300?",
                ("IPC_300_0", "IPC_299_0", "IPC_50_0"),
                ["IPC_299_0", "IPC_300_0"],
            ),
        ],
    )
    async def test_generate_quotes_each_named_sections_operative_text(
        self, question: str, ids: tuple[str, ...], cited: list[str]
    ) -> None:
        # Before: the comparison word ("differ", "compar") was the only key term, no sentence
        # of either section held it, and the generator declined.
        text, quoted = await self.answer(question, *ids)

        assert quoted == cited, text

    async def test_generate_quotes_a_named_sections_operative_text_before_its_provisos(
        self,
    ) -> None:
        # s.376's proviso ranked first; its operative text opens s.376's quotes (the proviso
        # may follow it, chosen as any further sentence is).
        ids = ("IPC_376_4", "IPC_376_0", "IPC_379_0")

        text, quoted = await self.answer("Compare section 376 and section 379", *ids)

        assert quoted[0] == "IPC_376_0" and "IPC_379_0" in quoted, text


@functools.cache
def served_chunks() -> dict[str, Chunk]:
    """The IPC sections these tests quote, as the retrieval chunker cuts them (the ids the
    answerability model's scores below were measured for)."""
    docs = load_statutes(ROOT / "data" / "corpora" / "indian_law" / "ipc.json")
    wanted = {"IPC_370", "IPC_370A", "IPC_378", "IPC_379", "IPC_383", "IPC_390", "IPC_392"}
    wanted |= {"IPC_393", "IPC_394"}
    return {c.semantic_id: c for c in chunk_documents([d for d in docs if d.doc_id in wanted])}


class TestPartAnswers:
    """Rule T (docs/EVALUATION.md): each part of a multi-part question first gets the sentence
    the answerability model finds answering that part, not the one sharing most words."""

    QUESTION = "What is theft? What is robbery? What is extortion?"
    # The evidence the front door retrieved for it (2026-11-27), in its order.
    IDS = ("IPC_378_0", "IPC_390_0", "IPC_383_0", "IPC_390_1", "IPC_390_2")
    # v6's P(answers) per part at or above its threshold (0.48), measured for these chunks.
    PARTS = (
        {"IPC_378_0": 1.0, "IPC_390_0": 0.96},
        {"IPC_390_0": 0.96, "IPC_390_1": 0.77, "IPC_390_2": 0.98},
        {"IPC_383_0": 1.0, "IPC_390_2": 0.98},
    )

    async def answer(
        self,
        parts: tuple[Mapping[str, float], ...],
        *,
        on: bool = True,
        ids: tuple[str, ...] = IDS,
        question: str = QUESTION,
    ) -> list[str]:
        generator = ExtractiveGenerator(ExtractiveOptions(part_answers_first=on))
        base = request(question, scored(served_chunks(), *ids))
        result = await generator.generate(
            dataclasses.replace(base, part_answers=parts), timeout_s=1.0
        )
        return [semantic_id for _, semantic_id in cited_quotes(result.text)]

    async def test_each_part_is_quoted_by_the_sentence_that_answers_it(
        self,
    ) -> None:
        # By shared words s.390 ("In all robbery there is either theft or extortion") fills the
        # answer; by the model, each part gets its own: theft's definition (s.378), robbery's
        # (s.390, the sentence scoring robbery highest) and extortion's (s.383).
        off = await self.answer(self.PARTS, on=False)
        assert not {"IPC_378_0", "IPC_383_0"} <= set(off)
        assert await self.answer(self.PARTS) == ["IPC_378_0", "IPC_390_2", "IPC_383_0"]

    async def test_a_part_no_sentence_calls_its_own_takes_the_best_not_yet_chosen(
        self,
    ) -> None:
        # Every sentence scores the first part higher: the second takes its best answering
        # sentence that the first did not take.
        ids = ("IPC_370_3", "IPC_370_7", "IPC_370_8", "IPC_370A_1")
        parts = (
            {"IPC_370_3": 1.0, "IPC_370_7": 1.0, "IPC_370_8": 1.0, "IPC_370A_1": 0.99},
            {"IPC_370_3": 0.6, "IPC_370A_1": 0.9},
        )
        question = (
            "How is trafficking of persons punished, and how is a person who employs a "
            "trafficked person punished?"
        )
        off = await self.answer(parts, ids=ids, question=question, on=False)
        assert "IPC_370A_1" not in off  # by shared words, s.370's sentences only
        cited = await self.answer(parts, ids=ids, question=question)
        assert {"IPC_370_3", "IPC_370A_1"} <= set(cited)

    async def test_a_part_s_near_tied_answers_go_to_the_sentence_s_own_score(
        self,
    ) -> None:
        # Rule AJ: v6 scores robbery's punishment (s.392) 0.9941, its attempt (s.393) 0.9967 and
        # hurt in robbery (s.394) 0.9966 for "How is robbery punished?" (measured 2026-11-27).
        # Within PART_ANSWER_TIE of each other they are tied, and "Punishment for robbery", the
        # title that answers, leads; a clear lead in P(answers) still decides.
        ids = ("IPC_379_0", "IPC_392_0", "IPC_393_0", "IPC_394_0")
        question = "How is theft punished, and how is robbery punished?"
        robbery = {"IPC_392_0": 0.9941, "IPC_393_0": 0.9967, "IPC_394_0": 0.9966}
        parts = ({"IPC_379_0": 0.9952}, robbery)
        cited = await self.answer(parts, ids=ids, question=question)
        assert cited[:2] == ["IPC_379_0", "IPC_392_0"], cited
        clear = ({"IPC_379_0": 0.9952}, {**robbery, "IPC_392_0": 0.95})
        cited = await self.answer(clear, ids=ids, question=question)
        assert cited[:2] == ["IPC_379_0", "IPC_393_0"], cited

    async def test_without_part_scores_or_switched_off_nothing_changes(
        self,
    ) -> None:
        plain = await self.answer((), on=False)
        assert await self.answer(()) == plain
        assert await self.answer(self.PARTS, on=False) == plain
        # A part nothing answers (no score at the threshold) adds nothing.
        assert await self.answer(({}, {})) == plain


def test_the_part_answers_setting_defaults_on_and_switches_off() -> None:
    from services.synthesis.config import SynthesisConfig

    assert SynthesisConfig.from_env({}).extractive_part_answers
    assert not SynthesisConfig.from_env(
        {"SYNTHESIS_EXTRACTIVE_PART_ANSWERS": "false"}
    ).extractive_part_answers


class TestAnsweringFloor:
    """SYNTHESIS_EXTRACTIVE_ANSWERING_FLOOR (rule V): once a sentence's chunk reaches the floor,
    sentences whose chunk the model scores below it are not quoted."""

    QUESTION = "What is the punishment for theft?"
    IDS = ("IPC_378_0", "IPC_379_0", "IPC_380_0", "IPC_381_0")
    # s.379 punishes theft; s.380 (theft in a dwelling house) shares its words, not its answer.
    SCORES: ClassVar[Mapping[str, float]] = {
        "IPC_378_0": 0.2,
        "IPC_379_0": 0.99,
        "IPC_380_0": 0.1,
        "IPC_381_0": 0.1,
    }

    async def answer(
        self,
        ipc: Mapping[str, Chunk],
        floor: float | None,
        scores: Mapping[str, float],
        question: str = QUESTION,
    ) -> list[str]:
        generator = ExtractiveGenerator(ExtractiveOptions(answering_floor=floor))
        base = request(question, scored(ipc, *self.IDS))
        result = await generator.generate(
            dataclasses.replace(base, answer_scores=scores), timeout_s=1.0
        )
        return [semantic_id for _, semantic_id in cited_quotes(result.text)]

    async def test_sentences_the_model_finds_answering_nothing_are_left_out(
        self, ipc: Mapping[str, Chunk]
    ) -> None:
        assert await self.answer(ipc, None, self.SCORES) == ["IPC_379_0", "IPC_380_0"]
        assert await self.answer(ipc, 0.48, self.SCORES) == ["IPC_379_0"]

    async def test_no_floor_without_scores_a_named_section_or_a_chunk_reaching_it(
        self, ipc: Mapping[str, Chunk]
    ) -> None:
        off = await self.answer(ipc, None, self.SCORES)
        assert await self.answer(ipc, 0.48, {}) == await self.answer(ipc, None, {})
        low = {i: 0.1 for i in self.IDS}  # none reaches it: nothing is left out
        assert await self.answer(ipc, 0.48, low) == await self.answer(ipc, None, low)
        # The model cannot read section numbers: a question naming sections keeps them all.
        named = "What is the punishment for theft under sections 379 and 380?"
        kept = await self.answer(ipc, 0.48, self.SCORES, named)
        assert "IPC_380_0" in kept and kept == await self.answer(ipc, None, self.SCORES, named)
        assert off == ["IPC_379_0", "IPC_380_0"]


def test_the_answering_floor_setting_defaults_off_and_reads_a_probability() -> None:
    from services.common.config import InvalidSettingError
    from services.synthesis.config import SynthesisConfig

    assert SynthesisConfig.from_env({}).extractive_answering_floor is None
    on = {"SYNTHESIS_EXTRACTIVE_ANSWERING_FLOOR": "0.48"}
    assert SynthesisConfig.from_env(on).extractive_answering_floor == 0.48
    with pytest.raises(InvalidSettingError):
        SynthesisConfig.from_env({"SYNTHESIS_EXTRACTIVE_ANSWERING_FLOOR": "2"})


class TestWhatAChoiceWeighs:
    """Rule AO (docs/EVALUATION.md, "Then AO"): a comparison that weighs time ("older") or a
    number ("more") quotes each side by a sentence that states such a fact, where it has one."""

    @staticmethod
    def passage(doc_id: str, n: int, text: str, title: str) -> Chunk:
        return Chunk(f"{doc_id}_{n}", doc_id, text, title=title, sentence_index=n)

    # The HotpotQA passages of "Which musician is older, Chantal Claret or Max Green?", in the
    # order retrieval gave them (2026-11-27).
    EVIDENCE = (
        (
            "Chantal_Claret",
            0,
            "Chantal Claret Euringer (born February 21, 1982), known as "
            "Chantal Claret, is an American singer/songwriter.",
            "Chantal Claret",
        ),
        (
            "Chantal_Claret",
            1,
            "She is best known as the lead singer for the rock and power pop band Morningwood.",
            "Chantal Claret",
        ),
        (
            "Max_Green_musician",
            0,
            "Maxwell Scott Green (born December 15, 1984), better known "
            "as Max Green, is an American musician.",
            "Max Green (musician)",
        ),
        (
            "Max_Green_musician",
            1,
            "He is currently the vocalist and rhythm guitarist for his "
            "own band, Violent New Breed.",
            "Max Green (musician)",
        ),
    )

    async def quoted(self, question: str, order: tuple[int, ...]) -> list[str]:
        passages = [self.passage(*self.EVIDENCE[i]) for i in order]
        evidence = tuple(ScoredChunk(p, round(0.9 - 0.05 * n, 4)) for n, p in enumerate(passages))
        generation = dataclasses.replace(
            request(question, evidence), compared=("Chantal Claret", "Max Green")
        )
        result = await ExtractiveGenerator().generate(generation, timeout_s=1.0)
        return [sid for _, sid in cited_quotes(result.text)]

    async def test_each_side_is_quoted_by_its_date_when_the_choice_weighs_time(self) -> None:
        # Max Green's band sentence ranks above his birth date.
        quoted = await self.quoted(
            "Which musician is older, Chantal Claret or Max Green?", (0, 1, 3, 2)
        )
        assert quoted[:2] == ["Chantal_Claret_0", "Max_Green_musician_0"], quoted

    async def test_a_choice_that_weighs_nothing_keeps_the_retrieval_order(self) -> None:
        quoted = await self.quoted(
            "Which musician is a vocalist, Chantal Claret or Max Green?", (0, 1, 3, 2)
        )
        assert "Max_Green_musician_0" not in quoted[:2], quoted


@pytest.mark.parametrize(
    ("question", "kind"),
    [
        ("Which musician is older, Chantal Claret or Max Green?", "time"),
        ("Who was born first, Morgan Llywelyn or Robert Jordan?", "time"),
        ("Which genus has more species: Sarracenia or Butea?", "number"),
        ("Which is punished more severely, theft or robbery?", "number"),
        ("Are both Trace Cyrus and Jizzy Pearl vocalists?", None),
    ],
)
def test_choice_answer_type_reads_what_a_comparison_weighs(question: str, kind: str | None) -> None:
    from services.synthesis.comparison import choice_answer_type

    assert choice_answer_type(question) == kind

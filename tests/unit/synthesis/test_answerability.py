"""Answerability: how the model's scores combine with the keyword rules, and the pipeline's use."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import pytest
from grounded.synthesis.v1 import synthesis_service_pb2 as pb

from services.common.budget import Stop
from services.common.errors import (
    DeadlineExceededError,
    DependencyUnavailableError,
    ModelUnavailableError,
    TooLongForModelError,
)
from services.common.evidence import Chunk
from services.common.intent import Intent
from services.common.judge import Band, Item, Outcome, Task, Verdict
from services.common.language.key_terms import extract_key_terms
from services.common.refusal import REFUSAL
from services.common.validation import ValidationReport
from services.synthesis import convert
from services.synthesis.answerability import (
    QUESTION_TOO_LONG,
    SCORE_SLICE,
    AnswerabilityCheck,
    AnswerabilityMode,
    AnswerabilityOptions,
    AnswerabilityScores,
    StatementCheck,
    combine,
    judge_item,
    judged,
    needs_judge,
    needs_scores,
    part_holders,
    score_evidence,
    score_statement,
)
from services.synthesis.extractive import ExtractiveGenerator
from services.synthesis.generation import GenerationRequest
from services.synthesis.pipeline import (
    PipelineSettings,
    SynthesisPipeline,
    SynthesisRequest,
    SynthesisStatus,
)
from services.synthesis.sufficiency import Requirement, SufficiencyDecision
from tests.unit.synthesis.fakes import EngineValidator, FakeRetriever, ValidateCall, scored

THEFT_IDS = ("IPC_378_0", "IPC_379_0", "IPC_380_0")


@dataclass
class TableScorer:
    """Scores by passage id prefix: ``table`` maps a text fragment to P(answers)."""

    table: Mapping[str, float]
    default: float = 0.05
    error: Exception | None = None
    calls: list[tuple[str, tuple[str, ...]]] = field(default_factory=list)
    passage_format: str = "text"

    @property
    def name(self) -> str:
        return "table-scorer"

    # For the entailment model's role: P(contradiction) by text fragment (0 elsewhere).
    contradictions: Mapping[str, float] = field(default_factory=dict)

    def score(self, question: str, passages: Sequence[str]) -> list[float]:
        self.calls.append((question, tuple(passages)))
        if self.error is not None:
            raise self.error
        return [next((v for k, v in self.table.items() if k in p), self.default) for p in passages]

    def label_scores(
        self, question: str, passages: Sequence[str]
    ) -> list[tuple[float, float, float]]:
        """As the entailment model's scorer: (score, P(entailment), P(contradiction)), the
        score being P(entailment) or a P(contradiction) of at least 0.9 (its counter)."""
        entails = self.score(question, passages)
        against = [
            next((v for k, v in self.contradictions.items() if k in p), 0.0) for p in passages
        ]
        return [
            (max(e, c if c >= 0.9 else 0.0), e, c) for e, c in zip(entails, against, strict=True)
        ]


class StatementCheckFails(EngineValidator):
    """The real engine, except that the statement check's call (the first) fails."""

    async def validate(
        self, answer: str, evidence: Sequence[Chunk], *, timeout_s: float
    ) -> ValidationReport:
        if not self.calls:
            self.calls.append(
                ValidateCall(answer, tuple(c.semantic_id for c in evidence), timeout_s)
            )
            raise DependencyUnavailableError("validator", "connection refused")
        return await super().validate(answer, evidence, timeout_s=timeout_s)


def decision(
    failed: Requirement | None, shared: tuple[str, ...] = ("theft",)
) -> SufficiencyDecision:
    """A keyword decision on "what is theft"; a KEY_TERM_MATCH refusal's evidence holds the
    key terms ``shared`` (some, by default: the words are there, only too few in one chunk)."""
    return SufficiencyDecision(
        sufficient=failed is None,
        intent=Intent.GENERAL,
        key_terms=extract_key_terms("what is theft"),
        requirements=(Requirement.EVIDENCE_PRESENT, Requirement.KEY_TERM_MATCH),
        failed=failed,
        relevant_ids=() if failed else ("A",),
        supporting_ids=() if failed else ("A",),
        shared=shared if failed is Requirement.KEY_TERM_MATCH else (),
    )


SCORES = AnswerabilityScores("m", {"A": 0.2, "B": 0.95})
LOW = AnswerabilityScores("m", {"A": 0.2, "B": 0.3})
# A two-part question whose second part no chunk answers (B answers the first).
ONE_PART_UNANSWERED = AnswerabilityScores(
    "m", {"A": 0.2, "B": 0.95}, by_part=({"A": 0.2, "B": 0.95}, {"A": 0.2, "B": 0.2})
)


class TestCombine:
    @pytest.mark.parametrize(
        ("mode", "keyword_failed", "scores", "sufficient", "effect"),
        [
            # off and shadow never change the keyword decision
            ("off", None, LOW, True, ""),
            ("shadow", None, LOW, True, ""),
            ("shadow", Requirement.KEY_TERM_MATCH, SCORES, False, ""),
            # veto refuses a keyword pass no sentence answers, never rescues
            ("veto", None, LOW, False, "vetoed"),
            ("veto", None, SCORES, True, ""),
            ("veto", Requirement.KEY_TERM_MATCH, SCORES, False, ""),
            # rescue overrules a refusal for words alone, never vetoes
            ("rescue", Requirement.KEY_TERM_MATCH, SCORES, True, "rescued"),
            ("rescue", Requirement.PENALTY_LANGUAGE, SCORES, True, "rescued"),
            ("rescue", Requirement.KEY_TERM_MATCH, LOW, False, ""),
            ("rescue", None, LOW, True, ""),
            # structural refusals are never overruled
            ("rescue", Requirement.SECTION_MATCH, SCORES, False, ""),
            ("rescue", Requirement.NAMED_TERMS_MATCH, SCORES, False, ""),
            ("model", Requirement.NAMED_TERMS_MATCH, SCORES, False, ""),
            # a question that names nothing ("Hi, can you help me?") is never answered either
            ("rescue", Requirement.QUESTION_HAS_KEY_TERMS, SCORES, False, ""),
            ("both", Requirement.QUESTION_HAS_KEY_TERMS, SCORES, False, ""),
            ("model", Requirement.QUESTION_HAS_KEY_TERMS, SCORES, False, ""),
            # nor one in a script the models do not read ("چوری کی سزا کیا ہے؟")
            ("rescue", Requirement.QUESTION_READABLE, SCORES, False, ""),
            ("both", Requirement.QUESTION_READABLE, SCORES, False, ""),
            ("model", Requirement.QUESTION_READABLE, SCORES, False, ""),
            # both does both
            ("both", None, LOW, False, "vetoed"),
            ("both", Requirement.KEY_TERM_MATCH, SCORES, True, "rescued"),
            # model decides alone (at the veto threshold) after the structural checks
            (
                "model",
                Requirement.KEY_TERM_MATCH,
                AnswerabilityScores("m", {"B": 0.6}),
                True,
                "rescued",
            ),
            ("model", None, LOW, False, "vetoed"),
            # a multi-part question needs an answering sentence for every part
            ("both", None, ONE_PART_UNANSWERED, False, "vetoed"),
            ("rescue", Requirement.KEY_TERM_MATCH, ONE_PART_UNANSWERED, False, ""),
            ("model", Requirement.KEY_TERM_MATCH, ONE_PART_UNANSWERED, False, ""),
        ],
    )
    def test_combine_applies_the_mode(
        self,
        mode: str,
        keyword_failed: Requirement | None,
        scores: AnswerabilityScores,
        sufficient: bool,
        effect: str,
    ) -> None:
        options = AnswerabilityOptions(AnswerabilityMode(mode), veto_below=0.5, rescue_at=0.9)

        combined = combine(decision(keyword_failed), scores, options)

        assert combined.sufficient is sufficient
        assert combined.answerability_effect == effect
        assert combined.answerability == scores.best
        assert combined.answerability_model == "m"
        if effect == "vetoed":
            assert combined.failed is Requirement.ANSWERING_SENTENCE
            assert combined.requirements[-1] is Requirement.ANSWERING_SENTENCE
            assert combined.supporting_ids == ()
        if effect == "rescued":
            assert combined.failed is None
            assert "B" in combined.supporting_ids and "A" not in combined.supporting_ids

    @pytest.mark.parametrize("mode", ["rescue", "both", "model"])
    def test_combine_never_rescues_a_short_question_sharing_no_key_term_with_the_evidence(
        self, mode: str
    ) -> None:
        # "ok" against s.109: the model scored 0.996, and no passage holds the word.
        unrelated = decision(Requirement.KEY_TERM_MATCH, shared=())
        certain = AnswerabilityScores("m", {"A": 0.996})
        options = AnswerabilityOptions(AnswerabilityMode(mode), veto_below=0.5, rescue_at=0.9)

        combined = combine(unrelated, certain, options)

        assert not combined.sufficient
        assert combined.failed is Requirement.KEY_TERM_MATCH
        assert combined.answerability_effect == ""
        assert combined.answerability == 0.996  # still reported

    def test_combine_may_rescue_a_longer_question_sharing_no_key_term(self) -> None:
        # "Is it a crime to make someone work against their will?": s.374's "compels any
        # person to labour" shares none of its three key terms and answers it.
        longer = replace(
            decision(Requirement.KEY_TERM_MATCH, shared=()),
            key_terms=extract_key_terms("is it a crime to make someone work against their will"),
        )
        assert len(longer.key_terms.effective) == 3
        options = AnswerabilityOptions(AnswerabilityMode.BOTH, veto_below=0.5, rescue_at=0.9)

        combined = combine(longer, SCORES, options)

        assert combined.sufficient and combined.answerability_effect == "rescued"

    @pytest.mark.parametrize("mode", ["rescue", "both", "model"])
    def test_combine_never_rescues_a_question_the_corpus_holds_no_word_of(self, mode: str) -> None:
        # "chori ki saza kya hai" (Hindi in Latin letters): five key terms, none anywhere in the
        # corpus (retrieval's unknown_terms); the model rescued it from s.14 at 0.97.
        hindi = extract_key_terms("chori ki saza kya hai")
        unknown = replace(
            decision(Requirement.KEY_TERM_MATCH, shared=()),
            key_terms=hindi,
            unknown_words=hindi.effective,
        )
        options = AnswerabilityOptions(AnswerabilityMode(mode), veto_below=0.5, rescue_at=0.9)

        combined = combine(unknown, AnswerabilityScores("m", {"A": 0.97}), options)

        assert not combined.sufficient and combined.answerability_effect == ""
        # One word of the corpus among them, and the model may rescue it as before.
        known = replace(unknown, unknown_words=hindi.effective[1:])
        assert combine(known, SCORES, options).sufficient

    def test_the_refusal_names_the_unknown_words_as_written(self) -> None:
        terms = extract_key_terms("sending rude messages on whatsapp")
        refused = replace(
            decision(Requirement.KEY_TERM_MATCH, shared=()),
            key_terms=terms,
            unknown_words=("sending", "rude", "messages", "whatsapp"),
        )

        assert refused.reason.endswith(
            "no passage of the corpus holds any of them (sending, rude, messages, whatsapp)"
        )

    def test_the_refusal_names_the_words_the_corpus_lacks_when_only_some_are_missing(
        self,
    ) -> None:
        # Rule Y: "theft" is in the corpus, "bigamy" is not; that is the word to change.
        terms = extract_key_terms("How is theft punished, and how is bigamy punished?")
        base = replace(decision(Requirement.KEY_TERM_MATCH, shared=()), key_terms=terms)
        refused = replace(base, unknown_words=("bigamy",))

        assert refused.reason == (
            "no evidence contains the question's key terms; no passage of the corpus holds 'bigamy'"
        )
        assert base.reason == "no evidence contains the question's key terms"
        # Only for a keyword refusal: another requirement's sentence is left as it is.
        other = replace(refused, failed=Requirement.PENALTY_LANGUAGE)
        assert "corpus" not in other.reason

    def test_needs_scores_skips_a_rescue_that_cannot_happen(self) -> None:
        options = AnswerabilityOptions(AnswerabilityMode.RESCUE, veto_below=0.5, rescue_at=0.9)

        assert needs_scores(decision(Requirement.KEY_TERM_MATCH), options)
        assert not needs_scores(decision(Requirement.KEY_TERM_MATCH, shared=()), options)

    def test_a_rescue_threshold_of_one_rescues_nothing(self) -> None:
        certain = AnswerabilityScores("m", {"A": 1.0})
        options = AnswerabilityOptions(AnswerabilityMode.BOTH, veto_below=0.5, rescue_at=1.0)

        combined = combine(decision(Requirement.KEY_TERM_MATCH), certain, options)

        assert not combined.sufficient and combined.answerability_effect == ""

    def test_statement_thresholds_take_the_place_of_the_question_ones(self) -> None:
        options = AnswerabilityOptions(
            AnswerabilityMode.BOTH,
            veto_below=0.5,
            rescue_at=0.9,
            statement_veto_below=0.03,
            statement_rescue_at=1.0,
        )
        statement = options.for_statements()
        assert (statement.veto_below, statement.rescue_at) == (0.03, 1.0)
        assert statement.mode is AnswerabilityMode.BOTH
        assert combine(decision(None), LOW, statement).sufficient  # 0.3 >= 0.03
        assert not combine(decision(None), LOW, options).sufficient  # 0.3 < 0.5

    def test_a_question_naming_a_section_is_left_to_the_keyword_rules(self) -> None:
        named = replace(decision(None), key_terms=extract_key_terms("what does section 302 say"))
        options = AnswerabilityOptions(AnswerabilityMode.BOTH, veto_below=0.5, rescue_at=0.9)

        combined = combine(named, LOW, options)

        assert combined.sufficient and combined.answerability_effect == ""
        assert combined.answerability == LOW.best

    def test_a_refusal_names_the_part_no_sentence_answers(self) -> None:
        # Rule X: each part with its best score; the failure names the part below the veto.
        scores = AnswerabilityScores(
            "m",
            {"A": 0.95, "B": 0.2},
            by_part=({"A": 0.95, "B": 0.2}, {"A": 0.2, "B": 0.2}),
            parts=("How is theft punished?", "How is dowry death punished?"),
        )
        options = AnswerabilityOptions(AnswerabilityMode.BOTH, veto_below=0.5, rescue_at=0.9)

        refused = combine(decision(None), scores, options)

        assert not refused.sufficient
        assert refused.answerability_parts == (
            ("How is theft punished?", 0.95, True),
            ("How is dowry death punished?", 0.2, False),
        )
        assert refused.reason == (
            "no evidence sentence answers the question: none answers 'How is dowry death punished?'"
        )
        # A statement's parts are "stated", and a question of one part names none.
        stated = combine(
            decision(None), scores, replace(options, requirement=Requirement.STATING_SENTENCE)
        )
        assert stated.reason.endswith(": none states 'How is dowry death punished?'")
        assert combine(decision(None), LOW, options).reason == (
            "no evidence sentence answers the question"
        )

    def test_a_part_is_answered_by_a_sentence_holding_its_own_words(
        self, ipc: Mapping[str, Chunk]
    ) -> None:
        # Rule AP: the model scores any punishment sentence high for "... for bribery?" (0.997
        # for s.384's punishment of extortion, measured 2026-11-27); s.171B holds "bribery".
        class Punishments(TableScorer):
            def score(self, question: str, passages: Sequence[str]) -> list[float]:
                return [0.99 if "punished" in p else 0.9 for p in passages]

        evidence = scored(ipc, "IPC_417_0", "IPC_384_0", "IPC_171B_0")
        parts = (
            "What are the punishments for cheating?",
            "What are the punishments for extortion?",
            "What are the punishments for bribery?",
        )
        scores = score_evidence(Punishments({}), "…", evidence, parts)

        assert scores.by_part == (
            {"IPC_417_0": 0.99, "IPC_384_0": 0.0, "IPC_171B_0": 0.0},
            {"IPC_417_0": 0.0, "IPC_384_0": 0.99, "IPC_171B_0": 0.0},
            {"IPC_417_0": 0.0, "IPC_384_0": 0.0, "IPC_171B_0": 0.9},
        )
        assert scores.part_best == (0.99, 0.99, 0.9)

    def test_a_part_whose_own_words_no_sentence_holds_is_left_to_the_model(
        self, ipc: Mapping[str, Chunk]
    ) -> None:
        # "mugger" is no word of the Code: the model alone finds the part's answer (the rescue
        # of plain questions), as before rule AP.
        evidence = scored(ipc, "IPC_379_0", "IPC_394_0")
        parts = ("How is theft punished?", "What can a mugger get?")
        holders = part_holders(parts, evidence)

        assert holders == [frozenset({"IPC_379_0"}), None]

    def test_each_part_of_a_question_is_scored_on_its_own(self, ipc: Mapping[str, Chunk]) -> None:
        class PartScorer(TableScorer):
            def score(self, question: str, passages: Sequence[str]) -> list[float]:
                self.calls.append((question, tuple(passages)))
                topic = "theft" if "theft" in question else "robbery"
                return [0.9 if topic in p.lower() else 0.1 for p in passages]

        evidence = scored(ipc, "IPC_378_0", "IPC_390_0")
        scorer = PartScorer({})
        parts = ("What is theft?", "What is robbery?")

        scores = score_evidence(scorer, "What is theft, and what is robbery?", evidence, parts)

        assert [q for q, _ in scorer.calls] == list(parts)
        assert scores.part_best == (0.9, 0.9) and scores.best == 0.9
        assert set(scores.at_least(0.5)) == {"IPC_378_0", "IPC_390_0"}
        # Each part's own scores, and those answering it, for the generator (rule T).
        # (s.390_0, "In all robbery there is either theft or extortion", names both; s.378_0
        # does not name robbery, so it may not answer that part: rule AP.)
        assert scores.by_part == (
            {"IPC_378_0": 0.9, "IPC_390_0": 0.9},
            {"IPC_378_0": 0.0, "IPC_390_0": 0.9},
        )
        assert scores.part_answering(0.5) == (
            (("IPC_378_0", 0.9), ("IPC_390_0", 0.9)),
            (("IPC_390_0", 0.9),),
        )
        assert scores.parts == parts
        assert scores.part_report(0.5) == (
            ("What is theft?", 0.9, True),
            ("What is robbery?", 0.9, True),
        )
        noted = combine(decision(None), scores, AnswerabilityOptions(mode=AnswerabilityMode.BOTH))
        assert noted.answerability_by_part == scores.part_answering(0.5)  # at veto_below
        # one part: the question itself, as before
        single = score_evidence(scorer, "What is theft?", evidence, ("What is theft?",))
        assert single.part_best == () and single.best == 0.9
        assert single.by_part == () and single.part_answering(0.5) == ()

    def test_the_model_reads_a_request_as_the_question_it_asks(
        self, ipc: Mapping[str, Chunk]
    ) -> None:
        """Rule AU: "Define X." is scored as "What is X?" (the model reads imperatives badly);
        the report keeps the parts as written."""
        scorer = TableScorer({})
        evidence = scored(ipc, "IPC_378_0", "IPC_390_0")

        score_evidence(scorer, "Define theft.", evidence)
        parts = ("Define theft.", "Explain robbery.")
        scores = score_evidence(scorer, "Define theft. Explain robbery.", evidence, parts)

        assert [q for q, _ in scorer.calls] == [
            "What is theft?",
            "What is theft?",
            "What is robbery?",
        ]
        assert scores.parts == parts

    @pytest.mark.parametrize(
        ("passage_format", "expected"),
        [
            ("text", "Whoever commits theft"),
            ("statute-heading", "Section 379. Punishment for theft: Whoever commits theft"),
        ],
    )
    def test_the_model_reads_chunks_in_its_manifests_passage_format(
        self, ipc: Mapping[str, Chunk], passage_format: str, expected: str
    ) -> None:
        scorer = TableScorer({}, passage_format=passage_format)

        score_evidence(scorer, "What is the punishment for theft?", scored(ipc, "IPC_379_0"))

        ((_, (passage,)),) = scorer.calls
        assert passage.startswith(expected)

    def test_answerability_scores_rank_answering_ids_best_first(self) -> None:
        scores = AnswerabilityScores("m", {"a": 0.91, "b": 0.99, "c": 0.1})

        assert scores.at_least(0.9) == ("b", "a")
        assert scores.best == 0.99


def _pipeline(
    retriever: FakeRetriever,
    scorer: TableScorer | None,
    mode: str,
    *,
    judge: ScriptedJudge | None = None,
    generator: ExtractiveGenerator | None = None,
    statement_scorer: TableScorer | None = None,
    validator: EngineValidator | None = None,
    **opts: Any,
) -> SynthesisPipeline:
    check = AnswerabilityCheck(
        AnswerabilityOptions(AnswerabilityMode(mode), **opts), judge=judge, band=Band(0.2, 0.9)
    )
    if scorer is not None:
        check.load(scorer, check.options, statement_scorer)
    return SynthesisPipeline(
        retriever,
        validator or EngineValidator(),
        generator or ExtractiveGenerator(),
        PipelineSettings(candidate_pool=0),
        answerability=check,
    )


class RecordingGenerator(ExtractiveGenerator):
    """The extractive generator, keeping each request it was given."""

    def __init__(self) -> None:
        super().__init__()
        self.requests: list[GenerationRequest] = []

    def compose(self, request: GenerationRequest) -> str:
        self.requests.append(request)
        return super().compose(request)


class TestPipeline:
    async def test_each_part_s_answering_chunks_reach_the_generator(
        self, ipc: Mapping[str, Chunk]
    ) -> None:
        # Rule T: the generator is told which chunks answer which part, at the veto threshold.
        class PartScorer(TableScorer):
            def score(self, question: str, passages: Sequence[str]) -> list[float]:
                self.calls.append((question, tuple(passages)))
                topic = "movable" if "theft" in question else "extortion"
                return [0.9 if topic in p else 0.1 for p in passages]

        retriever = FakeRetriever(scored(ipc, "IPC_378_0", "IPC_383_0"))
        generator = RecordingGenerator()
        synth = _pipeline(retriever, PartScorer({}), "both", generator=generator, veto_below=0.5)

        result = await synth.answer(
            SynthesisRequest("What is theft, and what is extortion?", top_k=2)
        )

        assert result.status is SynthesisStatus.ANSWERED, result.refusal_reason
        (seen,) = generator.requests
        assert [dict(part) for part in seen.part_answers] == [
            {"IPC_378_0": 0.9},
            {"IPC_383_0": 0.9},
        ]
        assert {"IPC_378_0", "IPC_383_0"} <= set(result.validation.cited_ids)

    async def test_veto_refuses_a_keyword_pass_no_sentence_answers(
        self, ipc: Mapping[str, Chunk]
    ) -> None:
        retriever = FakeRetriever(scored(ipc, *THEFT_IDS))
        scorer = TableScorer({}, default=0.1)
        synth = _pipeline(retriever, scorer, "veto", veto_below=0.5)

        result = await synth.answer(SynthesisRequest("What is theft?", top_k=3))

        assert result.answer == REFUSAL
        assert result.status is SynthesisStatus.REFUSED_INSUFFICIENT_EVIDENCE
        assert result.sufficiency.failed is Requirement.ANSWERING_SENTENCE
        assert "ANSWERING_SENTENCE" in result.refusal_reason
        assert result.sufficiency.answerability == pytest.approx(0.1)
        assert "answerability" in result.timings_ms
        assert scorer.calls == [("What is theft?", tuple(ipc[i].text for i in THEFT_IDS))]

    async def test_rescue_answers_a_question_worded_unlike_the_statute(
        self, ipc: Mapping[str, Chunk]
    ) -> None:
        # "pinching", "bicycle" and "crime" are not words of s.378; the keyword rules refuse
        # (KEY_TERM_MATCH). Three key terms: a question that long may name a provision in none
        # of its words, so the model may rescue it.
        question = "Is pinching someone's bicycle a crime?"
        retriever = FakeRetriever(scored(ipc, *THEFT_IDS))
        keyword_only = _pipeline(retriever, None, "off")
        refused = await keyword_only.answer(SynthesisRequest(question, top_k=3))
        assert refused.sufficiency.failed is Requirement.KEY_TERM_MATCH

        scorer = TableScorer({"intending to take dishonestly": 0.97})
        rescued = await _pipeline(retriever, scorer, "rescue", rescue_at=0.9).answer(
            SynthesisRequest(question, top_k=3)
        )

        assert rescued.status is SynthesisStatus.ANSWERED
        assert rescued.sufficiency.answerability_effect == "rescued"
        assert rescued.sufficiency.supporting_ids == ("IPC_378_0",)
        # The extractive generator quotes the answering sentence, and the validator accepts it.
        assert "[IPC_378_0]" in rescued.answer
        assert rescued.validation is not None

    @pytest.mark.parametrize("question", ["pizza", "Is pinching a crime?"])
    async def test_rescue_never_answers_a_short_question_sharing_no_word_with_the_evidence(
        self, ipc: Mapping[str, Chunk], question: str
    ) -> None:
        # Nothing in s.378-380 says "pizza", "pinching" or "crime": however sure the model is, no
        # passage is about anything a question of one or two key terms says. (The tester's "ok"
        # names nothing at all now: the next test.)
        retriever = FakeRetriever(scored(ipc, *THEFT_IDS))
        scorer = TableScorer({"intending to take dishonestly": 0.97})
        synth = _pipeline(retriever, scorer, "both", veto_below=0.5, rescue_at=0.9)

        refused = await synth.answer(SynthesisRequest(question))

        assert refused.answer == REFUSAL
        assert refused.sufficiency.failed is Requirement.KEY_TERM_MATCH
        assert refused.sufficiency.shared == ()
        assert refused.sufficiency.answerability == 0.97
        assert refused.sufficiency.answerability_effect == ""

    @pytest.mark.parametrize("mode", ["both", "model"])
    @pytest.mark.parametrize(
        "question", ["ok", "Hi, can you help me?", "Please summarise the document for me."]
    )
    async def test_no_mode_answers_a_greeting_or_a_request_naming_nothing(
        self, ipc: Mapping[str, Chunk], question: str, mode: str
    ) -> None:
        # "Please summarise the document for me." was rescued from s.29 ("document"): a
        # question that names nothing asks about nothing a passage could answer.
        retriever = FakeRetriever(scored(ipc, *THEFT_IDS))
        scorer = TableScorer({"intending to take dishonestly": 0.97})
        synth = _pipeline(retriever, scorer, mode, veto_below=0.5, rescue_at=0.9)

        refused = await synth.answer(SynthesisRequest(question))

        assert refused.answer == REFUSAL
        assert refused.status is SynthesisStatus.REFUSED_INSUFFICIENT_EVIDENCE
        assert refused.sufficiency.failed is Requirement.QUESTION_HAS_KEY_TERMS
        assert refused.sufficiency.answerability_effect == ""

    @pytest.mark.parametrize("mode", ["both", "model"])
    @pytest.mark.parametrize(
        "question",
        [
            "چوری کی سزا کیا ہے؟",
            "ما هي عقوبة السرقة؟",
            "चोरी की सज़ा क्या है?",
            "Какое наказание за кражу?",
        ],
    )
    async def test_no_mode_answers_a_question_in_a_script_nothing_reads(
        self, ipc: Mapping[str, Chunk], question: str, mode: str
    ) -> None:
        # An Urdu "what is the punishment for theft?" was rescued at 0.97 from s.160 (affray):
        # the English models read it as unknown characters and score it anyway.
        retriever = FakeRetriever(scored(ipc, *THEFT_IDS))
        scorer = TableScorer({"intending to take dishonestly": 0.97})
        synth = _pipeline(retriever, scorer, mode, veto_below=0.5, rescue_at=0.9)

        refused = await synth.answer(SynthesisRequest(question))

        assert refused.answer == REFUSAL
        assert refused.status is SynthesisStatus.REFUSED_INSUFFICIENT_EVIDENCE
        assert refused.sufficiency.failed is Requirement.QUESTION_READABLE
        assert refused.sufficiency.requirements == (Requirement.QUESTION_READABLE,)
        assert refused.sufficiency.answerability_effect == ""

    async def test_retrievals_unknown_terms_keep_the_model_from_rescuing(
        self, ipc: Mapping[str, Chunk]
    ) -> None:
        question = "chori ki saza kya hai"
        words = ["chori", "ki", "saza", "kya", "hai"]
        scorer = TableScorer({"intending to take dishonestly": 0.97})
        for unknown, answered in ((words, False), (words[1:], True)):
            retriever = FakeRetriever(scored(ipc, *THEFT_IDS), unknown_terms={question: unknown})
            synth = _pipeline(retriever, scorer, "both", veto_below=0.5, rescue_at=0.9)

            result = await synth.answer(SynthesisRequest(question))

            assert (result.answer != REFUSAL) is answered
            assert result.sufficiency.unknown == frozenset(unknown)
            # The refusal names the words no passage holds, when that is why it refuses.
            assert ("no passage of the corpus holds any of them (chori, ki, saza, kya, hai)" in
                    result.refusal_reason) is not answered  # fmt: skip

    @pytest.mark.parametrize(("weight", "leading"), [(0.0, "IPC_379_0"), (1.0, "IPC_380_0")])
    async def test_the_models_scores_reach_the_extractive_generator(
        self, ipc: Mapping[str, Chunk], weight: float, leading: str
    ) -> None:
        from services.synthesis.extractive import ExtractiveOptions

        retriever = FakeRetriever(scored(ipc, *THEFT_IDS))
        scorer = TableScorer({"human dwelling": 0.95}, default=0.6)  # s.380 answers best
        generator = ExtractiveGenerator(ExtractiveOptions(weight_answerability=weight))
        synth = _pipeline(retriever, scorer, "both", generator=generator, veto_below=0.5)

        result = await synth.answer(SynthesisRequest("What is the punishment for theft?", top_k=3))

        assert result.status is SynthesisStatus.ANSWERED
        assert result.answer.split("]")[0].endswith(leading)

    @pytest.mark.parametrize("statements", [StatementCheck.MODEL, StatementCheck.KEYWORDS])
    async def test_statements_may_be_left_to_the_keyword_rules(
        self, ipc: Mapping[str, Chunk], statements: StatementCheck
    ) -> None:
        retriever = FakeRetriever(scored(ipc, *THEFT_IDS))
        scorer = TableScorer({}, default=0.05)  # the model would veto anything
        synth = _pipeline(retriever, scorer, "both", statements=statements, veto_below=0.5)
        claim = "Theft is punished with imprisonment which may extend to three years."

        result = await synth.answer(SynthesisRequest(claim, top_k=3))

        if statements is StatementCheck.MODEL:  # the answerability model judges claims too
            assert result.sufficiency.answerability_effect == "vetoed"
            assert len(scorer.calls) == 1
        else:
            assert result.status is SynthesisStatus.ANSWERED  # the keyword rules' decision
            assert scorer.calls == [] and result.sufficiency.answerability is None
        # A question is scored either way.
        await synth.answer(SynthesisRequest("What is the punishment for theft?", top_k=3))
        assert len(scorer.calls) == (2 if statements is StatementCheck.MODEL else 1)

    @pytest.mark.parametrize(("entailed", "answered"), [(0.9, True), (0.02, False)])
    async def test_a_statement_is_judged_by_the_entailment_model(
        self, ipc: Mapping[str, Chunk], entailed: float, answered: bool
    ) -> None:
        retriever = FakeRetriever(scored(ipc, *THEFT_IDS))
        answers = TableScorer({}, default=0.05)  # the answerability model would veto anything
        entails = TableScorer({"commits theft": entailed}, default=0.01)
        synth = _pipeline(
            retriever,
            answers,
            "both",
            statement_scorer=entails,
            statements=StatementCheck.ENTAILMENT,
            veto_below=0.5,
            statement_veto_below=0.03,
            statement_rescue_at=1.0,
        )
        claim = "Theft is punished with imprisonment which may extend to three years."

        result = await synth.answer(SynthesisRequest(claim, top_k=3))

        # Only the entailment model scored the claim, against the statement threshold (0.03,
        # not the question's 0.5), and the response names it.
        assert answers.calls == [] and len(entails.calls) == 1
        assert result.sufficiency.answerability == entailed
        assert result.sufficiency.answerability_model == "table-scorer"
        assert (result.status is SynthesisStatus.ANSWERED) is answered
        if not answered:
            assert result.sufficiency.answerability_effect == "vetoed"
            # The refusal names what a statement lacks: no evidence sentence states it.
            assert result.sufficiency.failed is Requirement.STATING_SENTENCE
            assert result.sufficiency.requirements[-1] is Requirement.STATING_SENTENCE
        # A question still goes to the answerability model.
        await synth.answer(SynthesisRequest("What is the punishment for theft?", top_k=3))
        assert len(answers.calls) == 1 and len(entails.calls) == 1

    @pytest.mark.parametrize(
        ("entailed", "contradicted", "verdict"),
        [
            (0.95, 0.0, "stated"),  # a passage surely states it
            (0.6, 0.0, "undecided"),  # answered (above the veto), but not that surely
            (0.95, 0.97, "undecided"),  # another passage contradicts it more surely
            (0.02, 0.95, "undecided"),  # answered with the contradicting evidence: not stated
        ],
    )
    async def test_a_statement_carries_the_evidence_verdict(
        self,
        ipc: Mapping[str, Chunk],
        entailed: float,
        contradicted: float,
        verdict: str,
    ) -> None:
        """Found trying the README: a false claim was ANSWERED with the evidence refuting it
        and nothing said it was false. Only STATED says the evidence confirms it."""
        retriever = FakeRetriever(scored(ipc, *THEFT_IDS))
        entails = TableScorer(
            {"commits theft": entailed},
            default=0.01,
            contradictions={"intending to take": contradicted},
        )
        synth = _pipeline(
            retriever,
            TableScorer({}, default=0.05),
            "both",
            statement_scorer=entails,
            statements=StatementCheck.ENTAILMENT,
            statement_veto_below=0.03,
            statement_rescue_at=0.9,
        )
        claim = "Theft is punished with imprisonment which may extend to three years."

        result = await synth.answer(SynthesisRequest(claim, top_k=3))

        assert result.status is SynthesisStatus.ANSWERED
        assert result.sufficiency.statement_verdict == verdict
        assert len(entails.calls) == 1  # one model call gives the score and the verdict
        response = convert.result_to_proto(result)
        assert response.sufficiency.statement_verdict == (
            pb.STATEMENT_VERDICT_STATED if verdict == "stated" else pb.STATEMENT_VERDICT_UNDECIDED
        )
        question = await synth.answer(SynthesisRequest("What is the punishment for theft?"))
        assert question.sufficiency.statement_verdict == ""  # questions carry none

    @pytest.mark.parametrize(
        ("claim", "fails", "verdict"),
        [
            # The model reads the section as stating it; so does the validator.
            (
                "Theft is punished with imprisonment which may extend to three years.",
                False,
                "stated",
            ),
            # The model would say STATED, but the number is not the section's: the validator's
            # number check says no, so the verdict is not given.
            (
                "Theft is punished with imprisonment which may extend to ten years.",
                False,
                "undecided",
            ),
            # The validator cannot be asked: no STATED nobody checked. (Its failure on the
            # statement check alone leaves the answer path as it was.)
            (
                "Theft is punished with imprisonment which may extend to three years.",
                True,
                "undecided",
            ),
        ],
    )
    async def test_stated_needs_the_validator_to_find_the_claim_grounded(
        self, ipc: Mapping[str, Chunk], claim: str, fails: bool, verdict: str
    ) -> None:
        validator = StatementCheckFails() if fails else EngineValidator()
        synth = _pipeline(
            FakeRetriever(scored(ipc, *THEFT_IDS)),
            TableScorer({}, default=0.05),
            "both",
            statement_scorer=TableScorer({"commits theft": 0.97}, default=0.01),
            validator=validator,
            statements=StatementCheck.ENTAILMENT,
            statement_veto_below=0.03,
            statement_rescue_at=0.9,
        )

        result = await synth.answer(SynthesisRequest(claim, top_k=3))

        assert result.sufficiency.statement_verdict == verdict
        first = validator.calls[0]  # the claim, citing the passage that states it best
        assert first.answer == claim.rstrip(".") + " [IPC_379_0]."
        assert first.evidence_ids == ("IPC_379_0",)
        assert "statement_check" in result.timings_ms

    async def test_a_statement_without_the_entailment_model_fails_closed(
        self, ipc: Mapping[str, Chunk]
    ) -> None:
        retriever = FakeRetriever(scored(ipc, *THEFT_IDS))
        synth = _pipeline(retriever, TableScorer({}), "both", statements=StatementCheck.ENTAILMENT)
        claim = "Theft is punished with imprisonment which may extend to three years."
        with pytest.raises(ModelUnavailableError, match="entailment model"):
            await synth.answer(SynthesisRequest(claim, top_k=3))

    async def test_rescue_scores_only_a_refusal_it_may_overrule(
        self, ipc: Mapping[str, Chunk]
    ) -> None:
        retriever = FakeRetriever(scored(ipc, *THEFT_IDS))
        scorer = TableScorer({}, default=0.99)
        synth = _pipeline(retriever, scorer, "rescue", rescue_at=0.9)

        answered = await synth.answer(SynthesisRequest("What is theft?", top_k=3))
        assert answered.status is SynthesisStatus.ANSWERED
        assert scorer.calls == []  # the keyword rules answered: nothing to rescue, no model call
        assert answered.sufficiency.answerability is None
        assert "answerability" not in answered.timings_ms

        await synth.answer(SynthesisRequest("Is pinching someone's bicycle a crime?", top_k=3))
        assert len(scorer.calls) == 1  # refused for words alone: scored
        await synth.answer(SynthesisRequest("Is pinching a crime?", top_k=3))
        assert len(scorer.calls) == 1  # short, and no word of it in the evidence: not scored

    def test_needs_scores_by_mode(self) -> None:
        passed, worded, structural = (
            decision(None),
            decision(Requirement.KEY_TERM_MATCH),
            decision(Requirement.EVIDENCE_PRESENT),
        )
        rescue = AnswerabilityOptions(AnswerabilityMode.RESCUE)
        assert [needs_scores(d, rescue) for d in (passed, worded, structural)] == [
            False,
            True,
            False,
        ]
        named = replace(worded, key_terms=extract_key_terms("what does section 378 say"))
        assert not needs_scores(named, rescue)
        for mode in ("shadow", "veto", "both", "model"):
            options = AnswerabilityOptions(AnswerabilityMode(mode))
            assert all(needs_scores(d, options) for d in (passed, worded, structural)), mode
        assert not needs_scores(worded, AnswerabilityOptions())

    async def test_shadow_reports_the_score_and_changes_nothing(
        self, ipc: Mapping[str, Chunk]
    ) -> None:
        retriever = FakeRetriever(scored(ipc, *THEFT_IDS))
        off = await _pipeline(retriever, None, "off").answer(SynthesisRequest("What is theft?"))
        shadow = await _pipeline(retriever, TableScorer({}, default=0.01), "shadow").answer(
            SynthesisRequest("What is theft?")
        )

        assert shadow.answer == off.answer and shadow.status is off.status
        assert off.sufficiency.answerability is None
        assert shadow.sufficiency.answerability == pytest.approx(0.01)
        assert shadow.sufficiency.answerability_effect == ""

    async def test_an_enabled_mode_without_a_loaded_model_fails_closed(
        self, ipc: Mapping[str, Chunk]
    ) -> None:
        synth = _pipeline(FakeRetriever(scored(ipc, *THEFT_IDS)), None, "veto")

        with pytest.raises(ModelUnavailableError):
            await synth.answer(SynthesisRequest("What is theft?"))

    async def test_a_model_failure_propagates_instead_of_a_keyword_answer(
        self, ipc: Mapping[str, Chunk]
    ) -> None:
        scorer = TableScorer({}, error=ModelUnavailableError("onnx failed"))
        synth = _pipeline(FakeRetriever(scored(ipc, *THEFT_IDS)), scorer, "both")

        with pytest.raises(ModelUnavailableError):
            await synth.answer(SynthesisRequest("What is theft?"))

    async def test_a_question_too_long_for_the_model_is_decided_by_the_keyword_rules(
        self, ipc: Mapping[str, Chunk]
    ) -> None:
        # Not a broken model: the keyword decision stands, and the response says the model
        # could not read the question (no score, effect question_too_long).
        scorer = TableScorer({}, error=TooLongForModelError("no room for evidence"))
        synth = _pipeline(FakeRetriever(scored(ipc, *THEFT_IDS)), scorer, "both")
        keyword_only = _pipeline(FakeRetriever(scored(ipc, *THEFT_IDS)), None, "off")

        result = await synth.answer(SynthesisRequest("What is theft?"))
        expected = await keyword_only.answer(SynthesisRequest("What is theft?"))

        assert result.sufficiency.answerability_effect == QUESTION_TOO_LONG
        assert result.sufficiency.answerability is None
        assert result.status == expected.status and result.answer == expected.answer


@dataclass
class ScriptedJudge:
    """A judge that answers every item with ``outcome`` and logs what it was asked."""

    outcome: Outcome
    asked: list[tuple[Task, tuple[Item, ...], float]] = field(default_factory=list)
    model: str = "checker-7b"
    timeout_s: float = 5.0

    async def judge(self, task: Task, items: Sequence[Item], *, timeout_s: float) -> list[Verdict]:
        self.asked.append((task, tuple(items), timeout_s))
        return [Verdict(self.outcome, self.model, 0.8, detail="scripted") for _ in items]


def _judged_pipeline(
    retriever: FakeRetriever, scorer: TableScorer, judge: ScriptedJudge
) -> SynthesisPipeline:
    return _pipeline(retriever, scorer, "both", judge=judge, veto_below=0.5, rescue_at=0.9)


class TestJudgeDecisions:
    BAND = Band(0.2, 0.9)
    BOTH = AnswerabilityOptions(AnswerabilityMode.BOTH)

    def test_needs_judge_only_inside_the_band(self) -> None:
        assert needs_judge(decision(None), LOW, self.BOTH, self.BAND)  # best 0.3
        assert not needs_judge(decision(None), SCORES, self.BOTH, self.BAND)  # best 0.95
        assert not needs_judge(
            decision(None), AnswerabilityScores("m", {"A": 0.1}), self.BOTH, self.BAND
        )

    @pytest.mark.parametrize("mode", [AnswerabilityMode.OFF, AnswerabilityMode.SHADOW])
    def test_needs_judge_never_where_the_model_does_not_decide(
        self, mode: AnswerabilityMode
    ) -> None:
        assert not needs_judge(decision(None), LOW, AnswerabilityOptions(mode), self.BAND)

    @pytest.mark.parametrize(
        "failed", [Requirement.NAMED_TERMS_MATCH, Requirement.QUESTION_HAS_KEY_TERMS]
    )
    def test_needs_judge_never_for_a_structural_refusal(self, failed: Requirement) -> None:
        structural = decision(failed)
        assert not needs_judge(structural, LOW, self.BOTH, self.BAND)

    def test_needs_judge_never_for_a_short_question_sharing_no_key_term(self) -> None:
        assert needs_judge(decision(Requirement.KEY_TERM_MATCH), LOW, self.BOTH, self.BAND)
        unrelated = decision(Requirement.KEY_TERM_MATCH, shared=())
        assert not needs_judge(unrelated, LOW, self.BOTH, self.BAND)

    def test_judge_item_sends_the_best_passages_first(self) -> None:
        evidence = [scored({"A": Chunk("A", "A", "a text")}, "A")[0]]
        evidence += scored({"B": Chunk("B", "B", "b text")}, "B")
        item = judge_item("q?", evidence, SCORES)
        assert item == Item("q?", (("B", "b text"), ("A", "a text")))

    def test_judged_yes_rescues_a_refusal_with_the_passages_it_saw(self) -> None:
        item = Item("q?", (("B", "b"),))
        result = judged(decision(Requirement.KEY_TERM_MATCH), item, Verdict(Outcome.YES, "j", 0.9))
        assert result.sufficient and result.supporting_ids == ("B",)
        assert (result.answerability_effect, result.judge_model, result.judge_score) == (
            "judge_rescued",
            "j",
            0.9,
        )

    @pytest.mark.parametrize(
        ("outcome", "effect"),
        [
            (Outcome.NO, "judge_refused"),
            (Outcome.UNAVAILABLE, "judge_unavailable"),
            (Outcome.BUDGET_EXHAUSTED, "judge_budget_exhausted"),
        ],
    )
    def test_judged_anything_but_yes_refuses(self, outcome: Outcome, effect: str) -> None:
        result = judged(decision(None), Item("q?", ()), Verdict(outcome, "j"))
        assert not result.sufficient
        assert result.failed is Requirement.ANSWERING_SENTENCE
        assert result.answerability_effect == effect

    async def test_pipeline_asks_the_judge_about_an_uncertain_question(
        self, ipc: Mapping[str, Chunk]
    ) -> None:
        retriever = FakeRetriever(scored(ipc, *THEFT_IDS))
        judge = ScriptedJudge(Outcome.NO)
        scorer = TableScorer({"commits theft": 0.6})  # above the veto, inside the band
        result = await _judged_pipeline(retriever, scorer, judge).answer(
            SynthesisRequest("What is the punishment for theft?", top_k=3)
        )
        assert result.answer == REFUSAL
        assert result.sufficiency.answerability_effect == "judge_refused"
        assert "judge" in result.timings_ms
        ((task, (item,), _),) = judge.asked
        assert task is Task.ANSWERS and item.text == "What is the punishment for theft?"
        assert item.evidence[0][0] == "IPC_379_0"

    async def test_pipeline_answers_when_the_judge_confirms(self, ipc: Mapping[str, Chunk]) -> None:
        retriever = FakeRetriever(scored(ipc, *THEFT_IDS))
        judge = ScriptedJudge(Outcome.YES)
        scorer = TableScorer({"commits theft": 0.6})
        result = await _judged_pipeline(retriever, scorer, judge).answer(
            SynthesisRequest("What is the punishment for theft?", top_k=3)
        )
        assert result.status is SynthesisStatus.ANSWERED
        assert result.sufficiency.answerability_effect == "judge_confirmed"
        assert result.sufficiency.judge_model == "checker-7b"

    async def test_pipeline_leaves_a_confident_model_alone(self, ipc: Mapping[str, Chunk]) -> None:
        retriever = FakeRetriever(scored(ipc, *THEFT_IDS))
        judge = ScriptedJudge(Outcome.NO)
        scorer = TableScorer({"commits theft": 0.97})
        result = await _judged_pipeline(retriever, scorer, judge).answer(
            SynthesisRequest("What is the punishment for theft?", top_k=3)
        )
        assert result.status is SynthesisStatus.ANSWERED
        assert judge.asked == []


class TestExtractiveWeightSetting:
    def test_default_and_override(self) -> None:
        from services.synthesis.config import SynthesisConfig

        assert SynthesisConfig.from_env({}).answerability.extractive_weight == 0.3
        default = SynthesisConfig.from_env({}).answerability
        assert default.statements == "entailment"
        assert (default.statement_veto_below, default.statement_rescue_at) == (0.03, 0.9)
        assert default.statement_contradiction_at == 0.9
        off = {"SYNTHESIS_STATEMENT_CONTRADICTION_AT": "1"}
        assert SynthesisConfig.from_env(off).answerability.statement_contradiction_at == 1.0
        assert default.statement_model_dir.name == "entailment-minilm-l6"
        keywords = {"SYNTHESIS_ANSWERABILITY_STATEMENTS": "keywords"}
        assert SynthesisConfig.from_env(keywords).answerability.statements == "keywords"
        tuned = {"SYNTHESIS_STATEMENT_VETO_BELOW": "0.1", "SYNTHESIS_STATEMENT_RESCUE_AT": "0.8"}
        statement = SynthesisConfig.from_env(tuned).answerability
        assert (statement.statement_veto_below, statement.statement_rescue_at) == (0.1, 0.8)
        config = SynthesisConfig.from_env({"SYNTHESIS_EXTRACTIVE_ANSWERABILITY_WEIGHT": "0"})
        assert config.answerability.extractive_weight == 0.0

    @pytest.mark.parametrize("raw", ["1.5", "-0.1", "heavy"])
    def test_a_bad_value_stops_start_up_naming_it(self, raw: str) -> None:
        from services.common.config import InvalidSettingError
        from services.synthesis.config import SynthesisConfig

        with pytest.raises(InvalidSettingError) as info:
            SynthesisConfig.from_env({"SYNTHESIS_EXTRACTIVE_ANSWERABILITY_WEIGHT": raw})
        assert str(info.value) == (
            f"SYNTHESIS_EXTRACTIVE_ANSWERABILITY_WEIGHT={raw!r}: expected a number from 0 to 1"
        )


@dataclass
class SlowScorer(TableScorer):
    """A scorer whose every call takes ``seconds`` of (thread) time, as the model's do; ``on_call``
    runs at each call's start."""

    seconds: float = 0.0
    on_call: Callable[[], None] | None = None

    def score(self, question: str, passages: Sequence[str]) -> list[float]:
        if self.on_call is not None:
            self.on_call()
        time.sleep(self.seconds)
        return super().score(question, passages)


class TestScoringStopsForACallerGone:
    """The model runs in a worker thread, which asyncio cannot cancel: it stops between model
    calls once the request's deadline has passed or the request was cancelled, so no model time
    is spent for a caller that has gone (the audit: a 3 s deadline, then 35.7 s more CPU)."""

    PASSAGES = 20  # three model calls a part

    def evidence(self, ipc: Mapping[str, Chunk]) -> tuple[Any, ...]:
        return scored(ipc, *list(ipc)[: self.PASSAGES])

    def test_each_model_call_scores_a_slice_and_the_scores_are_the_same(
        self, ipc: Mapping[str, Chunk]
    ) -> None:
        scorer = TableScorer({"theft": 0.9})

        scores = score_evidence(scorer, "What is theft?", self.evidence(ipc), stop=Stop())

        assert [len(p) for _, p in scorer.calls] == [SCORE_SLICE, SCORE_SLICE, 4]
        whole = TableScorer({"theft": 0.9}).score("What is theft?", [c.text for c in ipc.values()])
        assert list(scores.by_id.values()) == whole[: self.PASSAGES]

    def test_past_the_deadline_no_model_call_is_made(self, ipc: Mapping[str, Chunk]) -> None:
        scorer = TableScorer({})

        with pytest.raises(DeadlineExceededError):
            score_evidence(
                scorer, "What is theft?", self.evidence(ipc), stop=Stop(time.monotonic() - 0.001)
            )

        assert scorer.calls == []

    @pytest.mark.parametrize("statement", [False, True], ids=["question", "statement"])
    def test_once_cancelled_the_next_model_call_is_not_made(
        self, ipc: Mapping[str, Chunk], statement: bool
    ) -> None:
        stop = Stop()
        scorer = SlowScorer({}, on_call=stop.cancelled.set)  # cancelled during the first call
        parts = ("What is theft?", "What is robbery?")

        with pytest.raises(DeadlineExceededError):
            if statement:
                score_statement(scorer, "Theft is a crime.", self.evidence(ipc), 0.9, stop=stop)
            else:
                score_evidence(scorer, "q", self.evidence(ipc), parts, stop=stop)

        assert len(scorer.calls) == 1

    async def test_the_pipeline_stops_scoring_at_the_deadline(
        self, ipc: Mapping[str, Chunk]
    ) -> None:
        # 8 parts x 20 passages = 24 calls of 20 ms: 0.48 s of model time, deadline at 0.1 s.
        question = ", and ".join(f"what is {o}" for o in OFFENCES[:8]).capitalize() + "?"
        retriever = FakeRetriever(self.evidence(ipc))
        scorer = SlowScorer({}, seconds=0.02)
        synth = _pipeline(retriever, scorer, "shadow")
        started = time.monotonic()

        with pytest.raises(DeadlineExceededError) as caught:
            await synth.answer(
                SynthesisRequest(question, top_k=self.PASSAGES), deadline=started + 0.1
            )

        assert "during answerability" in str(caught.value)
        assert time.monotonic() - started < 0.3  # a call's time past the deadline, not 0.4 s
        made = len(scorer.calls)
        await asyncio.sleep(0.1)
        assert len(scorer.calls) == made < 24  # the thread has stopped

    async def test_a_cancelled_request_stops_scoring(self, ipc: Mapping[str, Chunk]) -> None:
        question = ", and ".join(f"what is {o}" for o in OFFENCES[:8]).capitalize() + "?"
        scoring = threading.Event()
        scorer = SlowScorer({}, seconds=0.02, on_call=scoring.set)
        synth = _pipeline(FakeRetriever(self.evidence(ipc)), scorer, "shadow")
        task = asyncio.ensure_future(
            synth.answer(SynthesisRequest(question, top_k=self.PASSAGES))  # no deadline
        )
        assert await asyncio.to_thread(scoring.wait, 10)

        task.cancel()  # as gRPC cancels the handler when the caller goes away
        with pytest.raises(asyncio.CancelledError):
            await task
        made = len(scorer.calls)
        await asyncio.sleep(0.15)

        assert len(scorer.calls) <= made + 1  # at most the call under way when cancelled
        assert len(scorer.calls) < 24


OFFENCES = ("theft", "robbery", "extortion", "cheating", "dacoity", "murder", "forgery", "bribery")

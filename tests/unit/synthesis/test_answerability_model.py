"""The shipped answerability model: integrity on load, windows instead of truncation, its sense.

These load models/answerability-minilm-l6 (int8 ONNX) as a synthesis process with
SYNTHESIS_ANSWERABILITY on does; a missing or altered file must stop the load.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from services.common.answerability_model import (
    CONTRADICTION,
    ENTAILMENT,
    OnnxAnswerabilityScorer,
    load_scorer,
)
from services.common.cross_encoder import sha256
from services.common.errors import ModelUnavailableError, TooLongForModelError
from services.synthesis.answerability import AnswerabilityMode, StatementCheck
from services.synthesis.answerability_onnx import options_from_manifest
from services.synthesis.config import (
    DEFAULT_ANSWERABILITY_DIR,
    DEFAULT_STATEMENT_MODEL_DIR,
    AnswerabilitySettings,
    SynthesisConfig,
)
from tests.support.model_calls import count_encoder_calls

THEFT_DEFINITION = (
    "Whoever, intending to take dishonestly any moveable property out of the possession of any "
    "person without that person's consent, moves that property in order to such taking, is said "
    "to commit theft."
)
THEFT_PUNISHMENT = (
    "Whoever commits theft shall be punished with imprisonment of either description for a term "
    "which may extend to three years, or with fine, or with both."
)


@pytest.fixture(scope="module")
def scorer() -> OnnxAnswerabilityScorer:
    return load_scorer(DEFAULT_ANSWERABILITY_DIR)


class TestIntegrity:
    def test_shipped_files_match_the_manifest(self) -> None:
        manifest = json.loads((DEFAULT_ANSWERABILITY_DIR / "manifest.json").read_text())
        for name, digest in manifest["files"].items():
            assert sha256(DEFAULT_ANSWERABILITY_DIR / name) == digest, name
        assert manifest["labels"] == ["answers", "not_answers"]
        for threshold in ("veto_below", "rescue_at", "model_only_threshold"):
            assert 0.0 < manifest["calibration"][threshold] < 1.0

    def test_load_rejects_a_corrupt_model_file(self, tmp_path: Path) -> None:
        broken = tmp_path / "model"
        shutil.copytree(DEFAULT_ANSWERABILITY_DIR, broken)
        with (broken / "model.onnx").open("r+b") as handle:
            handle.seek(1000)
            handle.write(b"\x00" * 16)
        with pytest.raises(ModelUnavailableError, match="corrupt"):
            load_scorer(broken)

    def test_load_rejects_a_model_with_other_labels(self) -> None:
        entailment = DEFAULT_ANSWERABILITY_DIR.parent / "entailment-minilm-l6"
        with pytest.raises(ModelUnavailableError, match="no 'answers' label"):
            OnnxAnswerabilityScorer(entailment)
        with pytest.raises(ModelUnavailableError, match="no 'entailment' label"):
            OnnxAnswerabilityScorer(DEFAULT_ANSWERABILITY_DIR, label=ENTAILMENT)

    def test_the_entailment_model_scores_a_claim_its_evidence_states(self) -> None:
        """Statements (claims to verify) are scored by the entailment model: P(entailment)."""
        claims = load_scorer(DEFAULT_STATEMENT_MODEL_DIR, label=ENTAILMENT)
        stated, unrelated = claims.score(
            "Theft is punishable with imprisonment of up to three years.",
            [THEFT_PUNISHMENT, "The sky over the city was clear that evening."],
        )
        assert stated > 0.5 > unrelated

    def test_a_claim_the_evidence_contradicts_is_decided_only_with_the_counter_label(self) -> None:
        """A passage that contradicts a claim decides it as well (``counter_label``), once
        P(contradiction) reaches ``counter_at``; without it only P(entailment) counts."""
        claim = "Theft is punishable with imprisonment for life."
        plain = load_scorer(DEFAULT_STATEMENT_MODEL_DIR, label=ENTAILMENT)
        decided = load_scorer(
            DEFAULT_STATEMENT_MODEL_DIR,
            label=ENTAILMENT,
            counter_label=CONTRADICTION,
            counter_at=0.9,
        )
        (entailed,) = plain.score(claim, [THEFT_PUNISHMENT])
        (either,) = decided.score(claim, [THEFT_PUNISHMENT])
        assert entailed < 0.03  # the section does not state it ...
        assert either >= 0.9  # ... it contradicts it
        unreachable = load_scorer(
            DEFAULT_STATEMENT_MODEL_DIR,
            label=ENTAILMENT,
            counter_label=CONTRADICTION,
            counter_at=1.0,
        )
        assert unreachable.score(claim, [THEFT_PUNISHMENT]) == [entailed]

    def test_label_scores_hold_the_score_and_both_probabilities(self) -> None:
        """One model call gives a statement its score and the two probabilities its verdict
        reads; the score is exactly what ``score`` returns, for a passage of several windows
        too."""
        decided = load_scorer(
            DEFAULT_STATEMENT_MODEL_DIR,
            label=ENTAILMENT,
            counter_label=CONTRADICTION,
            counter_at=0.9,
        )
        claim = "Theft is punishable with imprisonment for life."
        passages = [THEFT_PUNISHMENT, " ".join([THEFT_PUNISHMENT] * 12)]  # the second: windows
        rows = decided.label_scores(claim, passages)

        assert [score for score, _, _ in rows] == decided.score(claim, passages)
        (score, entailed, contradicted), _ = rows
        assert entailed < 0.03 and contradicted >= 0.9 and score == contradicted


class TestScores:
    def test_the_answering_sentence_outscores_its_neighbour(
        self, scorer: OnnxAnswerabilityScorer
    ) -> None:
        punishment, definition = scorer.score(
            "What is the punishment for theft?", [THEFT_PUNISHMENT, THEFT_DEFINITION]
        )
        # The model ranks by topic first: the definition of theft still scores high for a
        # punishment question (a known weakness, see the model card), but below the penalty.
        assert punishment > definition

    def test_another_offence_or_topic_scores_low(self, scorer: OnnxAnswerabilityScorer) -> None:
        (theft,) = scorer.score("What is the punishment for theft?", [THEFT_PUNISHMENT])
        (murder,) = scorer.score("What is the punishment for murder?", [THEFT_PUNISHMENT])
        (france,) = scorer.score("What is the capital of France?", [THEFT_PUNISHMENT])

        assert theft > 0.9
        assert murder < theft - 0.3
        assert france < 0.1

    def test_a_long_passage_is_windowed_not_truncated(
        self, scorer: OnnxAnswerabilityScorer
    ) -> None:
        # The answer sits after ~400 tokens of unrelated text: a truncating scorer never sees it.
        filler = (
            "The Government may publish notices in the Official Gazette from time to time. " * 30
        )
        assert len(scorer.encoder.token_spans(filler)) > scorer.encoder.window_tokens()
        (short,) = scorer.score("What is the punishment for theft?", [THEFT_PUNISHMENT])
        (long_,) = scorer.score("What is the punishment for theft?", [filler + THEFT_PUNISHMENT])
        (without,) = scorer.score("What is the punishment for theft?", [filler])

        assert long_ == pytest.approx(short, abs=0.15)
        assert long_ > without

    def test_a_question_longer_than_the_window_is_too_long_not_a_broken_model(
        self, scorer: OnnxAnswerabilityScorer
    ) -> None:
        question = "What is the punishment for theft? " * 40
        assert len(scorer.encoder.token_spans(question)) > scorer.encoder.window_tokens()
        with pytest.raises(TooLongForModelError, match="no room for evidence") as caught:
            scorer.score(question, [THEFT_PUNISHMENT])
        assert not isinstance(caught.value, ModelUnavailableError)
        # The model still scores the next question.
        (after,) = scorer.score("What is the punishment for theft?", [THEFT_PUNISHMENT])
        assert after > 0.9

    def test_options_take_the_calibrated_thresholds_unless_overridden(
        self, scorer: OnnxAnswerabilityScorer
    ) -> None:
        calibration = scorer.encoder.manifest.calibration
        both = options_from_manifest(scorer, "both")
        model = options_from_manifest(scorer, "model")
        overridden = options_from_manifest(scorer, "veto", veto_below=0.42)

        assert both.mode is AnswerabilityMode.BOTH
        assert (both.veto_below, both.rescue_at) == (
            calibration["veto_below"],
            calibration["rescue_at"],
        )
        assert model.veto_below == calibration["model_only_threshold"]
        assert overridden.veto_below == 0.42
        # veto and rescue alone have their own thresholds
        assert options_from_manifest(scorer, "veto").veto_below == calibration["veto_only_below"]
        assert options_from_manifest(scorer, "rescue").rescue_at == calibration["rescue_only_at"]
        assert both.statements is StatementCheck.MODEL
        keywords = options_from_manifest(scorer, "both", statements=StatementCheck.KEYWORDS)
        assert keywords.statements is StatementCheck.KEYWORDS
        entailment = options_from_manifest(
            scorer,
            "both",
            statements=StatementCheck.ENTAILMENT,
            statement_veto_below=0.03,
            statement_rescue_at=1.0,
        )
        assert (entailment.statement_veto_below, entailment.statement_rescue_at) == (0.03, 1.0)


class TestConfig:
    def test_config_reads_mode_and_overrides(self) -> None:
        config = SynthesisConfig.from_env(
            {
                "SYNTHESIS_ANSWERABILITY": "both",
                "SYNTHESIS_ANSWERABILITY_RESCUE_AT": "0.95",
                "SYNTHESIS_MODEL_THREADS": "2",
            }
        )
        a = config.answerability
        assert (a.mode, a.rescue_at, a.veto_below, a.threads) == ("both", 0.95, None, 2)

    def test_config_rejects_an_unknown_mode_naming_the_modes(self) -> None:
        from services.common.config import InvalidSettingError

        with pytest.raises(
            InvalidSettingError, match=r"^SYNTHESIS_ANSWERABILITY='maybe': expected one of .*both"
        ):
            SynthesisConfig.from_env({"SYNTHESIS_ANSWERABILITY": "maybe"})
        assert SynthesisConfig.from_env({}).answerability.mode == AnswerabilitySettings().mode


class TestScoreCache:
    """A question asked again over the same evidence costs no model call: the model is
    deterministic, so the cache returns exactly what it would compute."""

    @staticmethod
    def counting(model: OnnxAnswerabilityScorer) -> list[int]:
        return count_encoder_calls(model.encoder)

    def test_passages_scored_before_are_not_scored_again(self) -> None:
        cached = load_scorer(DEFAULT_ANSWERABILITY_DIR, cache_size=100)
        pairs = self.counting(cached)
        question = "What is the punishment for theft?"

        first = cached.score(question, [THEFT_DEFINITION, THEFT_PUNISHMENT])
        again = cached.score(question, [THEFT_PUNISHMENT, THEFT_DEFINITION])
        other = cached.score("What is theft?", [THEFT_PUNISHMENT])

        assert pairs == [2, 1]  # nothing for the repeat; the other question is new
        assert again == first[::-1]
        uncached = load_scorer(DEFAULT_ANSWERABILITY_DIR, cache_size=0)
        assert uncached.score("What is theft?", [THEFT_PUNISHMENT]) == other

    def test_the_least_recently_used_goes_first_and_zero_keeps_nothing(self) -> None:
        small = load_scorer(DEFAULT_ANSWERABILITY_DIR, cache_size=1)
        pairs = self.counting(small)
        small.score("What is theft?", [THEFT_DEFINITION])
        small.score("What is theft?", [THEFT_PUNISHMENT])  # the definition's entry goes
        small.score("What is theft?", [THEFT_DEFINITION])
        assert pairs == [1, 1, 1]

        none = load_scorer(DEFAULT_ANSWERABILITY_DIR, cache_size=0)
        pairs = self.counting(none)
        none.score("What is theft?", [THEFT_DEFINITION])
        none.score("What is theft?", [THEFT_DEFINITION])
        assert pairs == [1, 1]

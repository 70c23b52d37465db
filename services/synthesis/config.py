"""Synthesis settings, read once from SYNTHESIS_* environment variables."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path

from services.common.config import (
    LOAD_BALANCING,
    EnvReader,
    InvalidSettingError,
    JudgeSettings,
    Secret,
    ServerSettings,
    TlsSettings,
)
from services.common.cross_encoder import DEFAULT_CACHE_SIZE, MAX_CACHE_SIZE
from services.common.judge_client import judge_band
from services.synthesis.answerability import DEFAULT_JUDGE_BAND
from services.synthesis.limits import (
    DEFAULT_TOP_K,
    MAX_TOP_K,
    RETRIEVAL_TIMEOUT_S,
    VALIDATION_TIMEOUT_S,
)

SERVICE_NAME = "grounded.synthesis.v1.SynthesisService"
GENERATORS = ("extractive", "openai")
ANSWERABILITY_MODES = ("off", "shadow", "veto", "rescue", "both", "model")
# The shipped answerability model, found from the repository root (the image copies models/).
DEFAULT_ANSWERABILITY_DIR = (
    Path(__file__).resolve().parents[2] / "models" / "answerability-minilm-l6"
)
# The shipped entailment model (the validator's), for statements in "entailment" mode; its
# thresholds on P(entailment) were chosen on SciFact's tune half (docs/SYNTHESIS.md, "Claims").
DEFAULT_STATEMENT_MODEL_DIR = (
    Path(__file__).resolve().parents[2] / "models" / "entailment-minilm-l6"
)
DEFAULT_STATEMENT_VETO_BELOW = 0.03
# A statement the keyword rules refused for words alone is answered when a chunk entails (or
# contradicts) it this surely; 1.0 rescues nothing.
DEFAULT_STATEMENT_RESCUE_AT = 0.9
# A chunk contradicting a statement this surely decides it too (docs/SYNTHESIS.md, "Claims").
DEFAULT_STATEMENT_CONTRADICTION_AT = 0.9
# SynthesizeAnswer / StreamAnswer / document calls handled at once (SYNTHESIS_MAX_CONCURRENT_RPCS;
# 0 = no limit), the front door's bound on work in flight: twice bench.load's highest
# concurrency (32, docs/RELIABILITY.md "Load and soak"), which one replica serves without error.
DEFAULT_MAX_CONCURRENT_RPCS = 64
# OpenAI's own endpoint: the default of SYNTHESIS_OPENAI_BASE_URL.
DEFAULT_OPENAI_BASE_URL = "https://api.openai.com/v1"
# SYNTHESIS_OPENAI_ALLOWED_MODELS=* lets a request name any model the endpoint (and its key)
# serves; unset, only SYNTHESIS_OPENAI_MODEL. A request's model name is at most this long.
ANY_MODEL = "*"
MAX_MODEL_NAME_CHARS = 200


@dataclass(frozen=True, slots=True)
class AnswerabilitySettings:
    """The answerability model (services/synthesis/answerability.py): mode, files, threads and
    threshold overrides (None keeps the model's calibrated values)."""

    mode: str = "both"
    model_dir: Path = DEFAULT_ANSWERABILITY_DIR
    threads: int = 1
    veto_below: float | None = None
    rescue_at: float | None = None
    # How much the extractive generator's sentence score gains per unit of the chunk's
    # P(answers) (0: the scores do not reach the generator).
    extractive_weight: float = 0.3
    # The extractive complement's bar for a second document the model finds answering
    # (ExtractiveOptions.complement_answering_at); None: off.
    complement_answering_at: float | None = None
    # What judges statements (claims to verify): the answerability model ("model"), the keyword
    # rules alone ("keywords"), or the entailment model ("entailment", from
    # ``statement_model_dir``, with its own thresholds on P(entailment)).
    statements: str = "entailment"
    statement_model_dir: Path = DEFAULT_STATEMENT_MODEL_DIR
    statement_veto_below: float = DEFAULT_STATEMENT_VETO_BELOW
    statement_rescue_at: float = DEFAULT_STATEMENT_RESCUE_AT
    # A statement some chunk contradicts with at least this P(contradiction) counts as decided
    # by the evidence (its score is that probability); 1.0: only entailment counts.
    statement_contradiction_at: float = DEFAULT_STATEMENT_CONTRADICTION_AT
    # (question, passage) scorings each model keeps in-process (LRU); 0: none.
    cache_size: int = DEFAULT_CACHE_SIZE

    @classmethod
    def from_env(cls, env: EnvReader) -> AnswerabilitySettings:
        return cls(
            mode=env.str("ANSWERABILITY", "both", choices=ANSWERABILITY_MODES),
            model_dir=Path(env.str("ANSWERABILITY_MODEL_DIR", str(DEFAULT_ANSWERABILITY_DIR))),
            threads=env.int("MODEL_THREADS", 1, minimum=1, maximum=64),
            veto_below=env.probability("ANSWERABILITY_VETO_BELOW"),
            rescue_at=env.probability("ANSWERABILITY_RESCUE_AT"),
            statements=env.str(
                "ANSWERABILITY_STATEMENTS",
                "entailment",
                choices=("model", "keywords", "entailment"),
            ),
            statement_model_dir=Path(
                env.str("STATEMENT_MODEL_DIR", str(DEFAULT_STATEMENT_MODEL_DIR))
            ),
            statement_veto_below=env.float(
                "STATEMENT_VETO_BELOW", DEFAULT_STATEMENT_VETO_BELOW, minimum=0.0, maximum=1.0
            ),
            statement_rescue_at=env.float(
                "STATEMENT_RESCUE_AT", DEFAULT_STATEMENT_RESCUE_AT, minimum=0.0, maximum=1.0
            ),
            statement_contradiction_at=env.float(
                "STATEMENT_CONTRADICTION_AT",
                DEFAULT_STATEMENT_CONTRADICTION_AT,
                minimum=0.0,
                maximum=1.0,
            ),
            cache_size=env.int(
                "MODEL_CACHE_SIZE", DEFAULT_CACHE_SIZE, minimum=0, maximum=MAX_CACHE_SIZE
            ),
            complement_answering_at=env.probability("EXTRACTIVE_COMPLEMENT_ANSWERING_AT"),
            extractive_weight=env.float(
                "EXTRACTIVE_ANSWERABILITY_WEIGHT", 0.3, minimum=0.0, maximum=1.0
            ),
        )


@dataclass(frozen=True, slots=True)
class OpenAISettings:
    base_url: str
    api_key: Secret
    model: str
    timeout_s: float
    max_tokens: int
    seed: int | None
    stream: bool
    # Streamed requests ask for token usage (stream_options); off for servers that reject it.
    stream_usage: bool
    # Models a request may name besides ``model`` (SYNTHESIS_OPENAI_ALLOWED_MODELS, as written);
    # None: any model (``*``). The default, (), offers the configured model alone.
    allowed_models: tuple[str, ...] | None = ()


@dataclass(frozen=True, slots=True)
class SynthesisConfig:
    server: ServerSettings
    retrieval_addr: str
    validator_addr: str
    retrieval_timeout_s: float
    validator_timeout_s: float
    generator: str
    default_top_k: int
    history_turns: int
    openai: OpenAISettings
    client_tls: TlsSettings
    answerability: AnswerabilitySettings = field(default_factory=AnswerabilitySettings)
    # The judge tier for sufficiency (SYNTHESIS_JUDGE_*; off unless SYNTHESIS_JUDGE_BASE_URL).
    judge: JudgeSettings = field(default_factory=JudgeSettings)
    # Downstream channels (services/common/channels.ChannelPolicy): balancing over every
    # address the target resolves to, retries of the idempotent calls, reconnect backoff cap.
    load_balancing: str = "round_robin"
    retry_attempts: int = 4
    reconnect_backoff_max_s: float = 1.0
    # A second retrieval with the question and the first passage (PipelineSettings.second_hop).
    second_hop: bool = False
    # One more retrieval per part of a multi-part question (PipelineSettings.part_retrieval).
    part_retrieval: bool = True
    # A candidate from a document the evidence names takes the last evidence slot
    # (PipelineSettings.promote_named), and how many candidates retrieval is asked for
    # (PipelineSettings.candidate_pool).
    promote_named: bool = True
    candidate_pool: int = 20
    # The extractive generator also quotes an evidence document its answer names by title
    # (ExtractiveOptions.bridge_titles).
    extractive_bridge_titles: bool = True
    # A named section's operative text joins the evidence and opens the extractive answer
    # (PipelineSettings.operative_text, ExtractiveOptions.operative_first); a statute list's
    # passages join the evidence whole and are quoted whole or not at all
    # (PipelineSettings.whole_lists, ExtractiveOptions.whole_lists).
    operative_text: bool = True
    whole_lists: bool = True
    # A quote keeps its final ':' or ';' (ExtractiveOptions.keep_clause_marks).
    extractive_keep_clause_marks: bool = True
    # The complement appends another statute section only for a missing term its title
    # names (ExtractiveOptions.complement_by_title; off: rule L(iv) was rejected).
    extractive_complement_by_title: bool = False
    # Each part of a multi-part question gets the sentence the model finds answering it
    # (ExtractiveOptions.part_answers_first; on: rule T).
    extractive_part_answers: bool = True
    # No quote whose chunk the answerability model scores below this, once one reaches it
    # (ExtractiveOptions.answering_floor; None: off).
    extractive_answering_floor: float | None = None

    @property
    def openai_offered(self) -> bool:
        """The OpenAI generator is offered when it is the default or an endpoint or key was
        configured (a caller may then ask for it per request)."""
        o = self.openai
        return (
            self.generator == "openai" or bool(o.api_key) or o.base_url != DEFAULT_OPENAI_BASE_URL
        )

    @property
    def statements_checked(self) -> bool:
        """A statement the entailment model finds stated is confirmed by a validator call of
        its own before the answer is drafted (``SynthesisPipeline._confirm_stated``)."""
        a = self.answerability
        return a.mode != "off" and a.statements == "entailment"

    @property
    def slowest_answer_s(self) -> float:
        """The longest one SynthesizeAnswer can wait on its dependencies when each runs to its
        limit, in the pipeline's order: retrieval (part retrievals run beside it; the second
        hop after it), then either the answerability judge or, for a statement, the
        validator's check of the passage that states it (never both: the judge does not see
        statements), then the LLM when it is offered, then validation. ``SYNTHESIS_GRACE_S``
        must be at least this, or a drain cuts answers off (synthesis warns at start-up, and
        tests/deploy checks every overlay). Local model work is not counted: milliseconds.
        StreamAnswer with a streaming LLM validates sentence by sentence and is not bounded by
        this (a stream cut off at shutdown has sent only validated sentences)."""
        total = self.retrieval_timeout_s * (2 if self.second_hop else 1)
        # The judge is asked only in a mode where the model decides (server.py warns otherwise).
        judged = self.judge.enabled and self.answerability.mode not in ("off", "shadow")
        judge_s = self.judge.timeout_s if judged else 0.0
        check_s = self.validator_timeout_s if self.statements_checked else 0.0
        total += max(judge_s, check_s)
        if self.openai_offered:
            total += self.openai.timeout_s
        return total + self.validator_timeout_s

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> SynthesisConfig:
        env = EnvReader("SYNTHESIS_", environ)
        seed = env.int("OPENAI_SEED", -1, minimum=-1)
        judge = JudgeSettings.from_env(env)
        judge_band(judge, DEFAULT_JUDGE_BAND)  # an inverted band stops start-up here, named
        if judge.enabled and judge.prompt == "document-claim":
            raise InvalidSettingError(
                "SYNTHESIS_JUDGE_PROMPT=document-claim: a claim checker cannot judge whether "
                "evidence answers a question; use the numbered prompt with an instruction model"
            )
        config = cls(
            server=ServerSettings.from_env(
                env,
                default_port=50052,
                default_metrics_port=9092,
                default_max_concurrent_rpcs=DEFAULT_MAX_CONCURRENT_RPCS,
            ),
            retrieval_addr=env.grpc_target("RETRIEVAL_ADDR", "127.0.0.1:50051"),
            validator_addr=env.grpc_target("VALIDATOR_ADDR", "127.0.0.1:50053"),
            retrieval_timeout_s=env.float(
                "RETRIEVAL_TIMEOUT_S", RETRIEVAL_TIMEOUT_S, minimum=0.01, maximum=120.0
            ),
            validator_timeout_s=env.float(
                "VALIDATOR_TIMEOUT_S", VALIDATION_TIMEOUT_S, minimum=0.01, maximum=120.0
            ),
            generator=env.str("GENERATOR", "extractive", choices=GENERATORS),
            default_top_k=env.int("DEFAULT_TOP_K", DEFAULT_TOP_K, minimum=1, maximum=MAX_TOP_K),
            history_turns=env.int("HISTORY_TURNS", 4, minimum=0, maximum=50),
            second_hop=env.bool("SECOND_HOP", False),
            part_retrieval=env.bool("PART_RETRIEVAL", True),
            promote_named=env.bool("PROMOTE_NAMED", True),
            candidate_pool=env.int("CANDIDATE_POOL", 20, minimum=0, maximum=MAX_TOP_K),
            extractive_bridge_titles=env.bool("EXTRACTIVE_BRIDGE_TITLES", True),
            operative_text=env.bool("OPERATIVE_TEXT", True),
            whole_lists=env.bool("WHOLE_LISTS", True),
            extractive_keep_clause_marks=env.bool("EXTRACTIVE_KEEP_CLAUSE_MARKS", True),
            extractive_complement_by_title=env.bool("EXTRACTIVE_COMPLEMENT_BY_TITLE", False),
            extractive_part_answers=env.bool("EXTRACTIVE_PART_ANSWERS", True),
            extractive_answering_floor=env.probability("EXTRACTIVE_ANSWERING_FLOOR"),
            openai=OpenAISettings(
                base_url=env.base_url(
                    "OPENAI_BASE_URL",
                    DEFAULT_OPENAI_BASE_URL,
                    api_key=env.secret("OPENAI_API_KEY"),
                    allow_plaintext="OPENAI_ALLOW_PLAINTEXT",
                ),
                api_key=env.secret("OPENAI_API_KEY"),
                model=env.str("OPENAI_MODEL", "gpt-4o-mini"),
                timeout_s=env.float("OPENAI_TIMEOUT_S", 20.0, minimum=0.1, maximum=600.0),
                max_tokens=env.int("OPENAI_MAX_TOKENS", 512, minimum=16, maximum=32_768),
                seed=None if seed < 0 else seed,
                stream=env.bool("OPENAI_STREAM", False),
                stream_usage=env.bool("OPENAI_STREAM_USAGE", True),
                allowed_models=_allowed_models(env),
            ),
            client_tls=TlsSettings.client_from_env(EnvReader("SYNTHESIS_CLIENT_", environ)),
            answerability=AnswerabilitySettings.from_env(env),
            judge=judge,
            load_balancing=env.str("LB_POLICY", "round_robin", choices=LOAD_BALANCING),
            retry_attempts=env.int("RETRY_ATTEMPTS", 4, minimum=1, maximum=5),
            reconnect_backoff_max_s=env.float(
                "RECONNECT_BACKOFF_MAX_S", 1.0, minimum=0.1, maximum=120.0
            ),
        )
        if env.is_set("GRACE_S"):
            return config
        # Unset: drain as long as the slowest answer these limits allow (15 s with the default
        # limits), so a shutdown never cuts an answer off that would have been delivered.
        return replace(config, server=replace(config.server, grace_s=config.slowest_answer_s))


def _allowed_models(env: EnvReader) -> tuple[str, ...] | None:
    """SYNTHESIS_OPENAI_ALLOWED_MODELS: comma-separated model names a request may name besides
    SYNTHESIS_OPENAI_MODEL (blank entries are skipped), or ``*`` alone for any model."""
    name = "OPENAI_ALLOWED_MODELS"
    raw = env.str(name, "")
    names = tuple(dict.fromkeys(part.strip() for part in raw.split(",") if part.strip()))
    if names == (ANY_MODEL,):
        return None
    expected = (
        f"comma-separated model names (each printable, at most {MAX_MODEL_NAME_CHARS} "
        f"characters), or {ANY_MODEL} alone for any model"
    )
    for model in names:
        if model == ANY_MODEL or len(model) > MAX_MODEL_NAME_CHARS or not model.isprintable():
            raise env.invalid(name, raw, expected)
    return names

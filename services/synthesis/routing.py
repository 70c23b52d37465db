"""Generators keyed by (kind, model), which ones a server offers, and the pool one pipeline draws from.

    SynthesizeAnswerRequest (generator, model)
        model "" or the configured one -> the configured generators
        an allowed model               -> ("openai", model): built on first use, LRU-bounded;
                                          an evicted one is closed once no request holds it
        any other model                -> INVALID_ARGUMENT, a field violation on ``model``
                                          naming the models offered (``model_not_offered``)

Which models a request may name is the operator's choice (SYNTHESIS_OPENAI_ALLOWED_MODELS):
by default only the configured one, since every model the API key can use (the most
expensive, a fine-tuned one) would otherwise be the caller's to spend on.

``offered_generators`` is the selection a server makes from its configuration (extractive
always, OpenAI when it is the default or an endpoint or key was configured, the configured
generator the default); the pipeline leases the generators for each request's model from the
pool (``SynthesisPipeline.lease``).
"""

from __future__ import annotations

import contextlib
import difflib
import logging
from collections import OrderedDict
from collections.abc import AsyncIterator, Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol

from services.common.errors import FieldViolation, InvalidInputError
from services.synthesis.config import SynthesisConfig
from services.synthesis.generation import Generator

logger = logging.getLogger(__name__)

OPENAI = "openai"
# Generators kept for caller-chosen models besides the configured one (LRU).
MAX_MODEL_VARIANTS = 8
# At most this many offered models are named in a refusal of another (the rest are counted).
_MAX_MODELS_NAMED = 20


class ModelGenerator(Generator, Protocol):
    """A generator for one model that holds connections (an OpenAI generator's HTTP pool)."""

    async def warm_up(self) -> None:
        """Load what its first call would otherwise load; sends nothing."""
        ...

    async def aclose(self) -> None:
        """Release the generator's connections."""
        ...


@dataclass(frozen=True, slots=True)
class ModelChoice:
    """The kind of generator a request may point at another model with.

    ``default_model`` is the configured generator's model: naming it (or none) uses that one.
    ``build`` makes the generator of this kind for another model. ``allowed`` are the other
    models a request may name (SYNTHESIS_OPENAI_ALLOWED_MODELS); None: any model.
    """

    kind: str
    default_model: str
    build: Callable[[str], ModelGenerator]
    allowed: tuple[str, ...] | None

    def allows(self, model: str) -> bool:
        """Whether a request may name ``model`` ("" = the configured one)."""
        return (
            not model
            or model == self.default_model
            or self.allowed is None
            or model in self.allowed
        )

    @property
    def offered(self) -> tuple[str, ...] | None:
        """The models a request may name, the configured one first; None: any."""
        if self.allowed is None:
            return None
        return tuple(dict.fromkeys((self.default_model, *self.allowed)))


@dataclass(slots=True)
class _Variant:
    generators: dict[str, Generator]
    generator: ModelGenerator
    leases: int = 0
    retired: bool = False


class GeneratorPool:
    """The generators requests may select by kind, and per-model ones built on demand.

    ``configured`` are the server's generators, the first the default. A request may name a
    model ``models`` allows (any, with ``allowed`` None); another is InvalidInputError on
    ``model``, and nothing is built for it. At most ``capacity`` model generators are kept,
    least recently used first out. An evicted one is closed as soon as no request holds it:
    closing it under an in-flight request would turn that request into a refusal. Without
    ``models`` every model gets the configured generators.
    """

    def __init__(
        self,
        configured: Sequence[Generator],
        *,
        models: ModelChoice | None = None,
        capacity: int = MAX_MODEL_VARIANTS,
    ) -> None:
        if not configured:
            raise ValueError("at least one generator is needed")
        if capacity < 1:
            raise ValueError("capacity must be at least 1")
        self._default = configured[0]
        self._configured: dict[str, Generator] = {g.name: g for g in configured}
        self._models = models
        self._capacity = capacity
        self._variants: OrderedDict[str, _Variant] = OrderedDict()

    @property
    def default(self) -> Generator:
        """The generator for requests that name none."""
        return self._default

    @property
    def configured(self) -> Mapping[str, Generator]:
        """The configured generators by kind (what a request naming no model may select)."""
        return self._configured

    @property
    def model_choice(self) -> ModelChoice | None:
        """Which models a request may name, and for which kind of generator (None: the model
        is not a choice here)."""
        return self._models

    @property
    def models(self) -> tuple[str, ...]:
        """Model names with a live generator, least recently used first."""
        return tuple(self._variants)

    @contextlib.asynccontextmanager
    async def lease(self, model: str) -> AsyncIterator[Mapping[str, Generator]]:
        """The generators by kind for a request naming ``model``, held (never closed) until the
        block exits: the configured ones, with the model's own in place of its kind's."""
        choice = self._models
        if not model or choice is None or model == choice.default_model:
            yield self._configured
            return
        if not choice.allows(model):
            # The request's parser says so first (convert.request_from_proto); this guards
            # every other way in, so that a name not allowed never reaches the endpoint.
            log_model_not_offered(model)
            raise InvalidInputError([FieldViolation("model", model_not_offered(model, choice))])
        variant = self._variants.get(model)
        if variant is None:
            generator = choice.build(model)
            variant = _Variant({**self._configured, choice.kind: generator}, generator)
            self._variants[model] = variant
            await self._evict_beyond_capacity()
        else:
            self._variants.move_to_end(model)
        variant.leases += 1
        try:
            yield variant.generators
        finally:
            variant.leases -= 1
            if variant.retired and variant.leases == 0:
                await _close(variant)

    async def aclose(self) -> None:
        """Close every model generator (server shutdown: no request is in flight any more).

        The configured generators belong to whoever built them.
        """
        while self._variants:
            _, variant = self._variants.popitem(last=False)
            await _close(variant)

    async def _evict_beyond_capacity(self) -> None:
        while len(self._variants) > self._capacity:
            model, variant = self._variants.popitem(last=False)
            logger.info("evicting model generator %s (%d in flight)", model, variant.leases)
            variant.retired = True
            if variant.leases == 0:
                await _close(variant)


async def _close(variant: _Variant) -> None:
    try:
        await variant.generator.aclose()
    except Exception:  # a failed close must not fail the request that triggered it
        logger.exception("closing an evicted model generator failed")


# What the operator sets to offer a generator or more models. For the server's log only: a
# caller cannot set a server's environment, and its variable names are the operator's business
# (a caller was told SYNTHESIS_OPENAI_BASE_URL ... until 2026-11-27).
_OFFERS_OPENAI = (
    "an OpenAI-compatible endpoint: SYNTHESIS_OPENAI_BASE_URL (and SYNTHESIS_OPENAI_API_KEY), "
    "or SYNTHESIS_GENERATOR=openai"
)
_OFFERS_MODELS = "SYNTHESIS_OPENAI_ALLOWED_MODELS (comma-separated names; * for any)"


def not_offered(name: str, offered: Iterable[str], *, named: Callable[[str], str] = str) -> str:
    """Why a request's generator cannot run on this server, for the caller: ``named`` writes a
    generator as the caller names it (at the gRPC edge, its GENERATOR_KIND_ name)."""
    listed = ", ".join(named(n) for n in offered)
    if name == OPENAI:
        return f"{named(name)} is not configured on this server (offered: {listed})"
    return f"unknown generator {named(name)!r}; offered: {listed}"


def log_not_offered(name: str) -> None:
    """Say in the server's log what would offer the generator ``name`` a request was refused."""
    if name == OPENAI:
        logger.info(
            "a request asked for the openai generator, which this server does not offer; "
            "it needs %s",
            _OFFERS_OPENAI,
        )


def log_model_not_offered(model: str) -> None:
    """Say in the server's log what would offer the ``model`` a request was refused."""
    logger.info(
        "a request asked for model %r, which this server does not offer; %s lists the models "
        "callers may name",
        model,
        _OFFERS_MODELS,
    )


def model_not_offered(model: str, choice: ModelChoice) -> str:
    """Why a request's ``model`` cannot run on this server, for the caller: the models it
    offers (a close one first, as "did you mean"); which setting offers more is the log's
    (``log_model_not_offered``)."""
    offered = choice.offered or ()
    named = ", ".join(offered[:_MAX_MODELS_NAMED])
    if len(offered) > _MAX_MODELS_NAMED:
        named += f" and {len(offered) - _MAX_MODELS_NAMED} more"
    same = [m for m in offered if m.casefold() == model.casefold()]
    meant = same or difflib.get_close_matches(model, offered, n=1)
    hint = f"; did you mean {meant[0]!r}?" if meant else ""
    return (
        f"model {model!r} is not offered by this server{hint} (offered: {named}); its operator "
        "chooses the models callers may name"
    )


def offered_generators(
    config: SynthesisConfig,
    *,
    extractive: Generator,
    openai: Callable[[str], ModelGenerator],
    capacity: int = MAX_MODEL_VARIANTS,
) -> tuple[GeneratorPool, ModelGenerator | None]:
    """The pool a server with ``config`` offers, and its configured OpenAI generator (None when
    OpenAI is not offered; the caller warms it up and closes it).

    ``openai(model)`` builds the OpenAI generator for a model ("" = the configured one).
    """
    if not config.openai_offered:
        return GeneratorPool([extractive], capacity=capacity), None
    default_openai = openai("")
    configured: list[Generator] = (
        [default_openai, extractive] if config.generator == OPENAI else [extractive, default_openai]
    )
    models = ModelChoice(OPENAI, config.openai.model, openai, config.openai.allowed_models)
    return GeneratorPool(configured, models=models, capacity=capacity), default_openai

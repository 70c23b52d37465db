"""Pipelines per caller-chosen model name: LRU-bounded, evicted generators closed once idle."""

from __future__ import annotations

import contextlib
import logging
from collections import OrderedDict
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from typing import Protocol

from services.synthesis.pipeline import SynthesisPipeline

logger = logging.getLogger(__name__)


class Closeable(Protocol):
    """A resource that holds connections (an OpenAI generator's HTTP pool)."""

    async def aclose(self) -> None:
        """Release the resource's connections."""
        ...


# Builds the pipeline for one model name and returns the resource to close when it is evicted.
VariantFactory = Callable[[str], tuple[SynthesisPipeline, Closeable]]


@dataclass(slots=True)
class _Variant:
    pipeline: SynthesisPipeline
    resource: Closeable
    leases: int = 0
    retired: bool = False


class PipelineRouter:
    """Picks the pipeline for a request's ``model``; "" or the default model is the default one.

    Callers choose model names freely, so at most ``capacity`` extra pipelines are kept, least
    recently used first out. An evicted pipeline's resource is closed as soon as no request
    holds it: closing it under an in-flight request would turn that request into a refusal.
    Without a ``factory`` (no OpenAI endpoint configured) every model gets the default.
    """

    def __init__(
        self,
        default: SynthesisPipeline,
        *,
        default_model: str = "",
        factory: VariantFactory | None = None,
        capacity: int = 8,
    ) -> None:
        if capacity < 1:
            raise ValueError("capacity must be at least 1")
        self._default = default
        self._default_model = default_model
        self._factory = factory
        self._capacity = capacity
        self._variants: OrderedDict[str, _Variant] = OrderedDict()

    @property
    def default(self) -> SynthesisPipeline:
        """The pipeline for requests that name no model."""
        return self._default

    @property
    def models(self) -> tuple[str, ...]:
        """Model names with a live pipeline, least recently used first."""
        return tuple(self._variants)

    @contextlib.asynccontextmanager
    async def lease(self, model: str) -> AsyncIterator[SynthesisPipeline]:
        """The pipeline for ``model``, held (never closed) until the block exits."""
        if not model or model == self._default_model or self._factory is None:
            yield self._default
            return
        variant = self._variants.get(model)
        if variant is None:
            pipeline, resource = self._factory(model)
            variant = _Variant(pipeline, resource)
            self._variants[model] = variant
            await self._evict_beyond_capacity()
        else:
            self._variants.move_to_end(model)
        variant.leases += 1
        try:
            yield variant.pipeline
        finally:
            variant.leases -= 1
            if variant.retired and variant.leases == 0:
                await _close(variant)

    async def aclose(self) -> None:
        """Close every variant (server shutdown: no request is in flight any more)."""
        while self._variants:
            _, variant = self._variants.popitem(last=False)
            await _close(variant)

    async def _evict_beyond_capacity(self) -> None:
        while len(self._variants) > self._capacity:
            model, variant = self._variants.popitem(last=False)
            logger.info("evicting model pipeline %s (%d in flight)", model, variant.leases)
            variant.retired = True
            if variant.leases == 0:
                await _close(variant)


async def _close(variant: _Variant) -> None:
    try:
        await variant.resource.aclose()
    except Exception:  # a failed close must not fail the request that triggered it
        logger.exception("closing an evicted model pipeline failed")

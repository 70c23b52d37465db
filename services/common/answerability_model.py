"""The shipped answerability model (``models/answerability-minilm-l6/``): P(a passage answers a
question), for synthesis's sufficiency and retrieval's rerank alike. The same scorer reads the
entailment model's P(a passage entails a claim) (``label=ENTAILMENT``), which synthesis may use
for statements (claims to verify).

Loading and checks live in ``services.common.cross_encoder`` (checksums verified before anything
runs; a missing or corrupt model stops the service at start-up). A passage longer than the
model's window is scored in overlapping windows (``services.common.language.windows``) and keeps
its best window's score: nothing is truncated. A question too long to leave room for any
passage raises ``TooLongForModelError``: the callers decide without the model and say so.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np

from services.common.cross_encoder import DEFAULT_CACHE_SIZE, OnnxCrossEncoder, ScoreCache
from services.common.errors import ModelUnavailableError, TooLongForModelError
from services.common.language.windows import token_windows

ANSWERS = "answers"
ENTAILMENT = "entailment"
CONTRADICTION = "contradiction"
# The fewest passage tokens a window must hold beside the question: a question longer than the
# window less these is too long for the model (TooLongForModelError), whatever the evidence.
MIN_PASSAGE_TOKENS = 16


class OnnxAnswerabilityScorer:
    """P(``label``) of (passage, question) pairs, the order both models were trained on: P(answers)
    from the answerability model, or P(entailment) from the entailment model (the validator's
    premise = evidence, hypothesis = claim)."""

    def __init__(
        self,
        directory: Path,
        *,
        threads: int = 1,
        label: str = ANSWERS,
        counter_label: str | None = None,
        counter_at: float = 1.0,
        cache_size: int = DEFAULT_CACHE_SIZE,
    ) -> None:
        self.encoder = OnnxCrossEncoder(directory, threads=threads)
        self._cache = ScoreCache(cache_size, self.encoder.name)
        labels = self.encoder.manifest.labels
        for wanted in filter(None, (label, counter_label)):
            if wanted not in labels:
                raise ModelUnavailableError(f"{directory} has no {wanted!r} label: {labels}")
        self._answers = labels.index(label)
        # A second label that decides as well, once it reaches ``counter_at``: a passage that
        # contradicts a claim decides it as much as one that entails it.
        self._counter = labels.index(counter_label) if counter_label else None
        self._counter_at = counter_at

    @property
    def name(self) -> str:
        return self.encoder.name

    @property
    def passage_format(self) -> str:
        """How this model reads an evidence chunk (its manifest's ``passage_format``)."""
        return self.encoder.manifest.passage_format

    def score(self, question: str, passages: Sequence[str]) -> list[float]:
        """One score per passage: the best of its windows."""
        return [score for score, _, _ in self.label_scores(question, passages)]

    def label_scores(
        self, question: str, passages: Sequence[str]
    ) -> list[tuple[float, float, float]]:
        """Per passage, best over its windows: (the score ``score`` gives, P(``label``),
        P(``counter_label``), 0 without one). A statement's verdict needs the two apart.
        Passages scored before against the same question come from the cache."""
        keys = [ScoreCache.key(question, p) for p in passages]
        rows = [self._cache.get(k) for k in keys]
        missing = [n for n, row in enumerate(rows) if row is None]
        if missing:
            fresh = self._compute(question, [passages[n] for n in missing])
            for n, row in zip(missing, fresh, strict=True):
                self._cache.put(keys[n], row)
                rows[n] = row
        return [row for row in rows if row is not None]

    def _compute(self, question: str, passages: Sequence[str]) -> list[tuple[float, float, float]]:
        encoder = self.encoder
        # [CLS] passage [SEP] question [SEP]: the question's tokens and three specials are fixed.
        budget = encoder.window_tokens() - len(encoder.token_spans(question)) - 3
        if budget < MIN_PASSAGE_TOKENS:
            raise TooLongForModelError(
                "the question leaves no room for evidence in the model's window",
                metadata={"window_tokens": str(encoder.window_tokens())},
            )
        owners: list[int] = []
        pairs: list[tuple[str, str]] = []
        for n, passage in enumerate(passages):
            for start, end in token_windows(passage, encoder, budget, overlap=budget // 4):
                owners.append(n)
                pairs.append((passage[start:end], question))
        label = [0.0] * len(passages)
        counter = [0.0] * len(passages)
        if pairs:
            table = encoder.probabilities(pairs)
            zeros = np.zeros(len(pairs))
            counters = table[:, self._counter] if self._counter is not None else zeros
            for n, p, c in zip(owners, table[:, self._answers], counters, strict=True):
                label[n] = max(label[n], float(p))
                counter[n] = max(counter[n], float(c))
        # A counter reaching counter_at decides as much as the label (the best window of each).
        return [
            (max(p, c if self._counter is not None and c >= self._counter_at else 0.0), p, c)
            for p, c in zip(label, counter, strict=True)
        ]


def load_scorer(
    directory: Path,
    *,
    threads: int = 1,
    label: str = ANSWERS,
    counter_label: str | None = None,
    counter_at: float = 1.0,
    cache_size: int = DEFAULT_CACHE_SIZE,
) -> OnnxAnswerabilityScorer:
    """Load, verify and smoke-run the model: fail at start-up, not on a request."""
    scorer = OnnxAnswerabilityScorer(
        directory,
        threads=threads,
        label=label,
        counter_label=counter_label,
        counter_at=counter_at,
        cache_size=cache_size,
    )
    # The pair a failed request's self-check scores (``OnnxCrossEncoder.self_check``), so that
    # check asks what start-up asked; then the scoring path itself (windows, passage format).
    failure = scorer.encoder.self_check()
    if failure is not None:
        raise ModelUnavailableError(f"the model {scorer.name} failed its start-up check: {failure}")
    scorer.score("What is theft?", ["Theft is punished with imprisonment."])
    return scorer

"""Reciprocal rank fusion of ranked candidate lists, normalised to a 0..1 score."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

DEFAULT_RRF_K: Final = 60


def reciprocal_rank_fusion(
    rankings: Sequence[Sequence[int]],
    *,
    k: int = DEFAULT_RRF_K,
    weights: Sequence[float] | None = None,
) -> list[tuple[int, float]]:
    """Fuse ranked position lists (best first) into ``(position, score)`` pairs, best first.

    A position's raw score is ``Σ weight_i / (k + rank_i)`` (ranks from 1) over the lists that
    hold it (Cormack et al., 2009). It is divided by the best possible raw score, ranked first
    in every list, so 1.0 means "top of every list" whatever ``k`` and the number of lists:
    that keeps ``min_score`` meaningful when stages are switched off. Ties go to the lower
    position, so results are deterministic. Duplicates inside one list count once (first rank).
    """
    if k < 1:
        raise ValueError(f"rrf k must be >= 1, got {k}")
    if weights is None:
        weights = [1.0] * len(rankings)
    if len(weights) != len(rankings):
        raise ValueError(f"{len(weights)} weights for {len(rankings)} rankings")
    if any(w < 0 for w in weights):
        raise ValueError("rrf weights must be >= 0")
    best = sum(w / (k + 1) for w in weights)
    if not rankings or best == 0:
        return []
    raw: dict[int, float] = {}
    for ranking, weight in zip(rankings, weights, strict=True):
        seen: set[int] = set()
        rank = 0
        for position in ranking:
            if position in seen:
                continue
            seen.add(position)
            rank += 1
            raw[position] = raw.get(position, 0.0) + weight / (k + rank)
    fused = [(p, s / best) for p, s in raw.items()]
    fused.sort(key=lambda item: (-item[1], item[0]))
    return fused


def merge_best(
    candidate_lists: Sequence[Sequence[tuple[int, float]]],
) -> list[tuple[int, float, int]]:
    """Union of ``(position, score)`` lists keeping each position's best score, best first.

    Each result is ``(position, score, source)`` where ``source`` indexes the list that gave
    the best score (the earliest list on a tie, so the primary query wins over expansions).
    """
    best: dict[int, tuple[float, int]] = {}
    for source, candidates in enumerate(candidate_lists):
        for position, score in candidates:
            if position not in best or score > best[position][0]:
                best[position] = (score, source)
    merged = [(p, s, src) for p, (s, src) in best.items()]
    merged.sort(key=lambda item: (-item[1], item[0]))
    return merged

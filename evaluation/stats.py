"""Small statistics shared by the evaluation harness and the benchmarks.

- ``wilson``: the Wilson score interval of a proportion k/n. It stays inside [0, 1], is not
  empty at 0/n or n/n (a percentile bootstrap collapses to a point there) and keeps close to
  its nominal coverage at small n, where the bootstrap is too narrow.
- ``mcnemar_exact``: the exact (binomial) McNemar test of two paired 0/1 outcomes per item,
  for a before → after change measured on the same items; ``paired_difference``: the change in
  the rate between them, with its interval.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from statistics import NormalDist
from typing import Any


def _z(confidence: float) -> float:
    return NormalDist().inv_cdf(0.5 + confidence / 2)


def wilson(k: int, n: int, confidence: float = 0.95) -> tuple[float, float]:
    """Wilson score interval of the proportion ``k`` / ``n`` (unrounded); (0, 1) when n is 0."""
    if n < 0 or not 0 <= k <= n:
        raise ValueError(f"need 0 <= k <= n, got k={k}, n={n}")
    if n == 0:
        return (0.0, 1.0)
    low, high = wilson_share(k / n, n, confidence)
    # At k == 0 (k == n) the exact bound is 0 (1); the formula gives it up to rounding error.
    return (0.0 if k == 0 else low, 1.0 if k == n else high)


def wilson_share(p: float, n: float, confidence: float = 0.95) -> tuple[float, float]:
    """Wilson's interval of a share ``p`` observed over ``n`` cases (unrounded). ``n`` may be
    an effective sample size (cases over a design effect), so it need not be whole."""
    if n <= 0 or not 0.0 <= p <= 1.0:
        raise ValueError(f"need n > 0 and 0 <= p <= 1, got p={p}, n={n}")
    z = _z(confidence)
    denominator = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denominator
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denominator
    return (max(0.0, centre - half), min(1.0, centre + half))


def proportion(k: int, n: int, confidence: float = 0.95) -> dict[str, Any]:
    """``{"k", "n", "rate", "ci95"}`` for a report: rate and Wilson bounds rounded to 4 places."""
    low, high = wilson(k, n, confidence)
    return {
        "k": k,
        "n": n,
        "rate": round(k / n, 4) if n else None,
        "ci95": (round(low, 4), round(high, 4)),
    }


@dataclass(frozen=True, slots=True)
class McNemar:
    """Paired outcomes of one set of items under two runs.

    ``gained``: items 0 before and 1 after; ``lost``: 1 before and 0 after; ``p_value``: exact
    two-sided McNemar (binomial on the discordant items, p = 1/2), 1.0 when none are discordant.
    """

    n: int
    before: int
    after: int
    gained: int
    lost: int
    p_value: float

    def difference(self, confidence: float = 0.95) -> tuple[float, tuple[float, float]]:
        """The rate after minus the rate before, with the Wald interval for paired proportions:
        the variance of the mean per-item difference (each -1, 0 or +1), ``((gained + lost) -
        (gained - lost)^2 / n) / n^2``. At thousands of items it is close to the exact
        intervals; it is 0 wide when no item changed."""
        if self.n == 0:
            raise ValueError("no paired outcomes")
        change = (self.gained - self.lost) / self.n
        discordant = self.gained + self.lost
        variance = max(0.0, discordant - (self.gained - self.lost) ** 2 / self.n) / self.n**2
        half = _z(confidence) * math.sqrt(variance)
        return change, (change - half, change + half)

    def describe(self) -> str:
        """``24 → 30 of 77; 9 gained, 3 lost; exact McNemar p = 0.146``."""
        return (
            f"{self.before} → {self.after} of {self.n}; {self.gained} gained, {self.lost} lost; "
            f"exact McNemar p = {self.p_value:.3g}"
        )


def mcnemar_exact(before: Sequence[bool], after: Sequence[bool]) -> McNemar:
    """The exact McNemar test of paired 0/1 outcomes (``before[i]`` and ``after[i]``: item i)."""
    if len(before) != len(after):
        raise ValueError(f"paired outcomes differ in length: {len(before)} and {len(after)}")
    gained = sum(1 for b, a in zip(before, after, strict=True) if a and not b)
    lost = sum(1 for b, a in zip(before, after, strict=True) if b and not a)
    discordant = gained + lost
    if discordant == 0:
        p_value = 1.0
    else:
        tail = sum(math.comb(discordant, i) for i in range(min(gained, lost) + 1))
        p_value = min(1.0, 2 * tail / 2**discordant)
    return McNemar(
        n=len(before),
        before=sum(map(bool, before)),
        after=sum(map(bool, after)),
        gained=gained,
        lost=lost,
        p_value=p_value,
    )


def paired_difference(
    before: Sequence[bool], after: Sequence[bool], confidence: float = 0.95
) -> tuple[float, tuple[float, float]]:
    """``McNemar.difference`` of two paired 0/1 outcomes: the rate of ``after`` minus that of
    ``before``, with its interval."""
    return mcnemar_exact(before, after).difference(confidence)

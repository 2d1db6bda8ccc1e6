"""How often does a page change? An estimate from its visit history (pure).

Each refetch tells us only whether the page changed since the previous visit, not how
often. With visits at irregular intervals t_i, Cho & Garcia-Molina ("Estimating frequency
of change", ACM TOIT 2003) model changes as a Poisson process of rate λ and give the
maximum-likelihood estimate as the root of

    Σ_changed  t_i / (e^{λ t_i} - 1)  =  Σ_unchanged  t_j

The left side falls from +∞ to 0 as λ grows, so the root is unique and bisection on log λ
finds it. Edge cases: no change seen → λ = 0 (the page drifts out to the maximum
interval); a change on every visit → the likelihood has no finite maximum, so we use the
estimate for one more, unchanged visit of the shortest interval (a standard bias
correction in the same spirit as their "+0.5" estimator for regular visits).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

_MIN_RATE = 1e-12  # per second: about once in 30,000 years
_MAX_RATE = 1e3  # per second
_STEPS = 80  # bisection steps on log(rate): far below float resolution


@dataclass(frozen=True, slots=True)
class Visit:
    """One refetch: `interval_s` since the previous visit, and whether the content changed."""

    interval_s: float
    changed: bool

    def __post_init__(self) -> None:
        if not (self.interval_s > 0 and math.isfinite(self.interval_s)):
            raise ValueError(f"visit interval must be a positive number, got {self.interval_s}")


def change_rate(visits: list[Visit]) -> float:
    """Estimated changes per second; 0.0 when no visit saw a change (or no visits)."""
    changed = [v.interval_s for v in visits if v.changed]
    if not changed:
        return 0.0
    unchanged_total = sum(v.interval_s for v in visits if not v.changed)
    if unchanged_total == 0.0:
        unchanged_total = min(changed)  # every visit changed: see the module docstring
    lo, hi = math.log(_MIN_RATE), math.log(_MAX_RATE)
    for _ in range(_STEPS):
        mid = (lo + hi) / 2
        if _changed_side(changed, math.exp(mid)) > unchanged_total:
            lo = mid  # rate too low: the changed side is still too big
        else:
            hi = mid
    return math.exp((lo + hi) / 2)


def _changed_side(intervals: list[float], rate: float) -> float:
    total = 0.0
    for t in intervals:
        x = rate * t
        total += t / math.expm1(x) if x < 700 else 0.0  # e^700 overflows; the term is ~0
    return total

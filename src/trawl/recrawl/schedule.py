"""When should a page be fetched again? From its change rate and importance (pure).

With changes arriving as a Poisson process of rate λ, the chance that a page has changed
t seconds after a visit is 1 - e^{-λt}. We come back when that chance reaches
`target_change_probability` (default one half: t = ln 2 / λ), sooner for important pages
(the interval is divided by the importance, ≥ 1), and always within [min_interval,
max_interval]. A page never seen to change drifts towards the maximum: each quiet visit
doubles its interval (starting from the minimum), as the design asks for quiet pages; its
importance lowers the ceiling it drifts to (max_interval / importance) instead of dividing
each step, which would stop an important page's doubling for good.
"""

from __future__ import annotations

import math
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class RecrawlPolicy:
    min_interval_s: float = 300.0  # 5 minutes
    max_interval_s: float = 30 * 86400.0  # 30 days
    target_change_probability: float = 0.5

    def __post_init__(self) -> None:
        if not 0 < self.min_interval_s <= self.max_interval_s:
            raise ValueError("need 0 < min_interval_s <= max_interval_s")
        if not 0 < self.target_change_probability < 1:
            raise ValueError("target_change_probability must be between 0 and 1")


def next_interval_s(
    rate_per_s: float,
    *,
    importance: float = 1.0,
    previous_interval_s: float | None = None,
    policy: RecrawlPolicy,
) -> float:
    """Seconds until the next fetch of a page with this change rate and importance."""
    weight = max(importance, 1.0)
    if rate_per_s <= 0:
        interval = policy.min_interval_s if previous_interval_s is None else 2 * previous_interval_s
        interval = min(interval, policy.max_interval_s / weight)
    else:
        interval = -math.log1p(-policy.target_change_probability) / rate_per_s / weight
    return min(policy.max_interval_s, max(policy.min_interval_s, interval))


def next_fetch_at(
    fetched_at: float,
    rate_per_s: float,
    *,
    importance: float = 1.0,
    previous_interval_s: float | None = None,
    policy: RecrawlPolicy,
) -> float:
    """Epoch seconds of the next fetch (the page record's nextFetchAt)."""
    return fetched_at + next_interval_s(
        rate_per_s,
        importance=importance,
        previous_interval_s=previous_interval_s,
        policy=policy,
    )


UNKNOWN_CHANGE_PROBABILITY = 0.5  # a page refetched for the first time: no history yet


def refresh_priority(
    rate_per_s: float, elapsed_s: float, *, visits: int, importance: float = 1.0
) -> float:
    """Order of due pages within a site: the chance the page has changed since its last
    fetch, times its importance. When a site cannot serve every due page at once (its
    politeness gap allows one request a second), busy, important pages go first, pages
    without a history next, and pages never seen to change wait until nothing else is due."""
    if visits == 0:
        chance = UNKNOWN_CHANGE_PROBABILITY
    elif rate_per_s <= 0 or elapsed_s <= 0:
        chance = 0.0
    else:
        chance = -math.expm1(-rate_per_s * elapsed_s)
    return chance * max(importance, 1.0)

"""A page's visit history and the refetch plan that follows from it (pure).

The page record keeps its last `keep` visits as `[interval_s, changed]` pairs (changed is
1 or 0), oldest first: enough for the change-rate estimate (recrawl.change_rate) and small
enough to ride in the record. A first fetch adds no visit: there is nothing to compare.
"""

from __future__ import annotations

from typing import NamedTuple

from trawl.recrawl.change_rate import Visit, change_rate
from trawl.recrawl.schedule import RecrawlPolicy, next_interval_s


class RefetchPlan(NamedTuple):
    visits: list[list[float]]
    change_rate: float  # estimated changes per second
    next_fetch_at: float


def add_visit(
    visits: list[list[float]], interval_s: float, changed: bool, *, keep: int
) -> list[list[float]]:
    """The history with one more visit, trimmed to the last `keep`; bad entries dropped."""
    kept = [v for v in visits if _is_visit(v)]
    if interval_s > 0:
        kept.append([round(interval_s, 3), 1.0 if changed else 0.0])
    return kept[-keep:]


def plan_refetch(
    visits: list[list[float]],
    fetched_at: float,
    *,
    importance: float,
    slowdown: float,
    previous_interval_s: float | None,
    policy: RecrawlPolicy,
) -> RefetchPlan:
    """Change rate from the history and the next fetch time.

    `slowdown` (≥ 1) stretches the interval for sites that mostly copy others' pages.
    """
    rate = change_rate([Visit(v[0], v[1] >= 0.5) for v in visits if _is_visit(v)])
    interval = next_interval_s(
        rate, importance=importance, previous_interval_s=previous_interval_s, policy=policy
    )
    interval = min(policy.max_interval_s, interval * max(slowdown, 1.0))
    return RefetchPlan(visits, rate, fetched_at + interval)


def _is_visit(v: object) -> bool:
    return (
        isinstance(v, list)
        and len(v) == 2
        and all(isinstance(x, int | float) for x in v)
        and v[0] > 0
        and v[0] < float("inf")
    )

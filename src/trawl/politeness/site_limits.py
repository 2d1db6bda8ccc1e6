"""An operator's override of one site's limits: its request gap, daily pages, or a pause.

Owners complain and partners ask for more, so `PUT /v1/hosts/{host}/limits` sets these on
the site's state (and host record: they survive restarts). The override never trades
politeness away:
- `crawl_delay_s` replaces the configured gap (`politeness.min_delay_s`) for this site, so
  it can speed a site up as well as slow it down, but never below the hard floor (1 s, or a
  test configuration's lower `min_delay_s`) and never under the site's own robots.txt
  Crawl-delay or 10x its last response time: those still apply (site_clock.gap_s).
- `max_pages_per_day` replaces the importance-scaled daily cap (frontier.traps), up or down.
- `paused` hands the site out to no one until the pause is lifted; its queue stays.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from trawl.errors import DataError

HARD_MIN_DELAY_S = 1.0
MAX_CRAWL_DELAY_S = 86400.0  # one request a day; slower than that is a pause
MAX_PAGES_PER_DAY = 1_000_000_000


@dataclass(frozen=True, slots=True)
class SiteLimits:
    crawl_delay_s: float | None = None
    max_pages_per_day: int | None = None
    paused: bool = False
    set_at: float = 0.0

    def to_json(self) -> dict[str, object]:
        return {
            "crawlDelay": self.crawl_delay_s,
            "maxPagesPerDay": self.max_pages_per_day,
            "paused": self.paused,
            "setAt": self.set_at,
        }

    @classmethod
    def from_json(cls, data: object, min_delay_s: float = HARD_MIN_DELAY_S) -> SiteLimits:
        """Restore a stored override; raises DataError when it is damaged."""
        if not isinstance(data, dict):
            raise DataError(f"limits override is not an object: {data!r}")
        set_at = data.get("setAt", 0.0)
        if isinstance(set_at, bool) or not isinstance(set_at, int | float):
            raise DataError(f"limits override setAt = {set_at!r} is not a number")
        try:
            return checked_limits(
                data.get("crawlDelay"),
                data.get("maxPagesPerDay"),
                data.get("paused", False),
                now=float(set_at),
                min_delay_s=min_delay_s,
            )
        except ValueError as exc:
            raise DataError(f"limits override is damaged: {exc}") from None


def delay_floor_s(min_delay_s: float) -> float:
    """The smallest override gap: the hard 1 s rule, or less only where the configuration
    itself went lower (tests against our own servers)."""
    return min(HARD_MIN_DELAY_S, min_delay_s)


def checked_limits(
    crawl_delay: object,
    max_pages_per_day: object,
    paused: object,
    *,
    now: float,
    min_delay_s: float,
) -> SiteLimits:
    """A validated override; raises ValueError with a message fit for the operator."""
    delay: float | None = None
    if crawl_delay is not None:
        if isinstance(crawl_delay, bool) or not isinstance(crawl_delay, int | float):
            raise ValueError(f"crawlDelay must be a number of seconds, not {crawl_delay!r}")
        delay = float(crawl_delay)
        floor = delay_floor_s(min_delay_s)
        if not (math.isfinite(delay) and floor <= delay <= MAX_CRAWL_DELAY_S):
            raise ValueError(
                f"crawlDelay must be between {floor:g} and {MAX_CRAWL_DELAY_S:g} seconds "
                f"(got {crawl_delay!r}); pause the site to stop it"
            )
    if max_pages_per_day is not None and (
        isinstance(max_pages_per_day, bool)
        or not isinstance(max_pages_per_day, int)
        or not 0 <= max_pages_per_day <= MAX_PAGES_PER_DAY
    ):
        raise ValueError(
            f"maxPagesPerDay must be a whole number from 0 to {MAX_PAGES_PER_DAY} "
            f"(got {max_pages_per_day!r})"
        )
    if not isinstance(paused, bool):
        raise ValueError(f"paused must be true or false, not {paused!r}")
    return SiteLimits(delay, max_pages_per_day, paused, now)

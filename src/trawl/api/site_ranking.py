"""Which sites an operator should look at: the busiest, the most troubled, the latest errors.

Pure: takes the crawl's SiteStates, `now` and the frontier's queue lengths (a function),
returns rows in the API's camelCase form. A continuous crawl knows many thousands of
sites, so each ranking is one pass with `heapq.nlargest` (n log limit), never a full sort,
and sites with nothing to show (no pages, no queue; no failure) are left out.
"""

from __future__ import annotations

import heapq
import math
from typing import TYPE_CHECKING

from trawl.politeness.site_clock import is_parked

if TYPE_CHECKING:
    from collections.abc import Callable, Iterable

    from trawl.politeness.site_clock import SiteClock, SiteClockStats
    from trawl.politeness.site_state import SiteState


def busiest(
    sites: Iterable[SiteState], now: float, queued_for: Callable[[str], int], limit: int
) -> list[dict[str, object]]:
    """Sites by pages fetched today, then by URLs queued."""
    keyed = ((s.pages_on(now), queued_for(s.site), s) for s in sites)
    top = heapq.nlargest(limit, (k for k in keyed if k[0] or k[1]), key=lambda k: k[:2])
    return [site_row(state, now, queued) for _, queued, state in top]


def most_troubled(
    sites: Iterable[SiteState], now: float, queued_for: Callable[[str], int], limit: int
) -> list[dict[str, object]]:
    """Failing sites: parked ones first, then by failures in a row, then by failures ever."""
    # Read off each live clock, not a stats copy of it: a copy of each of 2,000 clocks took
    # 7 ms (on the crawl loop, where this ran then); most sites have no trouble to rank.
    keyed = ((trouble, s) for s in sites if any(trouble := _trouble(s.clock, now)))
    top = heapq.nlargest(limit, keyed, key=lambda k: k[0])
    return [site_row(state, now, queued_for(state.site)) for _, state in top]


def recent_errors(sites: Iterable[SiteState], limit: int) -> list[dict[str, object]]:
    """The latest page errors across all sites, newest first."""
    entries = (
        (parsed, s.site)
        for s in sites
        for text in s.recent_errors
        if (parsed := parse_recent_error(text)) is not None
    )
    top = heapq.nlargest(limit, entries, key=lambda e: e[0][0])
    return [{"at": at, "host": site, "kind": kind, "url": url} for (at, kind, url), site in top]


def site_row(state: SiteState, now: float, queue_length: int) -> dict[str, object]:
    """One site as the dashboard's tables show it; `host` is the registered domain, as in
    the host record."""
    clock = state.clock.stats()
    last = parse_recent_error(state.recent_errors[-1]) if state.recent_errors else None
    return {
        "host": state.site,
        "state": site_condition(clock, now),
        "pagesToday": state.pages_on(now),
        "queueLength": queue_length,
        "errorCount": clock.error_count,
        "consecutiveFailures": clock.consecutive_failures,
        "avgResponseMs": round(clock.avg_response_ms, 1),
        "nextAllowedAt": clock.next_allowed_at,
        "parkedUntil": clock.parked_until,
        "lastError": None if last is None else {"at": last[0], "kind": last[1], "url": last[2]},
    }


def site_condition(clock: SiteClockStats, now: float) -> str:
    """The site's condition: parked, backingOff (failures in a row widen its gap),
    fetching or ok."""
    if is_parked(clock.parked_until, now):
        return "parked"
    if clock.consecutive_failures:
        return "backingOff"
    return "fetching" if clock.in_flight else "ok"


def parse_recent_error(text: str) -> tuple[float, str, str] | None:
    """(at, kind, url) of a `SiteState.recent_errors` entry ("epoch kind url"); None when
    it is damaged (entries come back from stored host records)."""
    parts = text.split(" ", 2)
    if len(parts) != 3:
        return None
    try:
        at = float(parts[0])
    except ValueError:
        return None
    return (at, parts[1], parts[2]) if math.isfinite(at) else None


def _trouble(clock: SiteClock, now: float) -> tuple[bool, int, int]:
    return is_parked(clock.parked_until, now), clock.consecutive_failures, clock.error_count

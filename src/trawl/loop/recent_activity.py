"""What the crawl did lately, for the progress line: a rate and a site count over a window.

Issue 14: the progress line showed the pages of the last half second (0.0/s and 2.0/s in
turn at a steady 1 page/s) and the sites holding a turn at that instant (0 at 47 pages/s:
a turn lasts milliseconds, a site's gap a second or more). Both are now over the last
WINDOW_S seconds. Pure: every call takes `now`; the shell passes the crawl clock's time.
"""

from __future__ import annotations

from collections import deque

WINDOW_S = 10.0


class RateWindow:
    """A running total's rate over the last `window_s`, from samples taken now and then
    (the progress loop's ticks): steady at a steady rate, whatever the tick."""

    def __init__(self, window_s: float = WINDOW_S) -> None:
        self.window_s = window_s
        self._samples: deque[tuple[float, int]] = deque()

    def add(self, now: float, total: int) -> float:
        """Record `total` at `now`; the rate since the oldest sample within the window (or
        the newest one before it, so a window is never empty after the second tick)."""
        samples = self._samples
        samples.append((now, total))
        while len(samples) > 2 and samples[1][0] <= now - self.window_s:
            samples.popleft()
        at, first = samples[0]
        return (total - first) / (now - at) if now > at else 0.0


class RecentSites:
    """Sites that had a request end in the last `window_s`: O(1) per request, amortised
    (each noted request is dropped once, when a later read finds it out of the window)."""

    def __init__(self, window_s: float = WINDOW_S) -> None:
        self.window_s = window_s
        self._requests: deque[tuple[float, str]] = deque()
        self._last_at: dict[str, float] = {}

    def note(self, site: str, now: float) -> None:
        self._requests.append((now, site))
        self._last_at[site] = now

    def count(self, now: float) -> int:
        requests, cutoff = self._requests, now - self.window_s
        while requests and requests[0][0] <= cutoff:
            at, site = requests.popleft()
            if self._last_at.get(site) == at:  # its latest request: the site drops out
                del self._last_at[site]
        return len(self._last_at)

    def __repr__(self) -> str:
        return f"<RecentSites window={self.window_s}s sites={len(self._last_at)}>"

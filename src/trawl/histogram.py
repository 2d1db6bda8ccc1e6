"""A fixed-bucket histogram of durations: cheap to fill on every request, Prometheus-shaped.

Cumulative counts per upper bound, as Prometheus wants them, are computed when read; each
observation is one bisect and one increment, so recording every fetch costs nothing worth
measuring next to the fetch.
"""

from __future__ import annotations

import bisect
import math

# Seconds: loopback answers in milliseconds, the web in tenths, slow servers up to the timeout.
FETCH_SECONDS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0)


class Histogram:
    __slots__ = ("_counts", "bounds", "count", "sum")

    def __init__(self, bounds: tuple[float, ...] = FETCH_SECONDS) -> None:
        if list(bounds) != sorted(set(bounds)) or not all(math.isfinite(b) for b in bounds):
            raise ValueError(f"histogram bounds must be finite and increasing: {bounds!r}")
        self.bounds = bounds
        self._counts = [0] * (len(bounds) + 1)  # the last one is +Inf
        self.count = 0
        self.sum = 0.0

    def observe(self, value: float) -> None:
        if not math.isfinite(value):
            return  # a clock glitch is not a latency
        self._counts[bisect.bisect_left(self.bounds, value)] += 1
        self.count += 1
        self.sum += value

    def cumulative(self) -> list[tuple[float, int]]:
        """(upper bound, observations <= it) for every bound, then (+inf, count)."""
        out, running = [], 0
        for bound, n in zip((*self.bounds, math.inf), self._counts, strict=True):
            running += n
            out.append((bound, running))
        return out

    def quantile(self, q: float) -> float | None:
        """The upper bound of the bucket holding the q-quantile (None when empty)."""
        if not self.count:
            return None
        rank = q * self.count
        for bound, running in self.cumulative():
            if running >= rank:
                return bound
        return math.inf

"""The crawl's recent past for the dashboard: counters sampled every few seconds, an hour kept.

How this works: the serve shell takes a `StatsSample` (cumulative counters and the frontier's
sizes at one instant) every couple of seconds and `add`s it; a ring keeps the newest
`capacity`. A *row* is the interval between two neighbouring samples: its rates and deltas
come from that pair, so `rows_since(t)` can answer a client polling with the last `at` it saw,
and every row it gets is complete. Pure: times come in as numbers; nothing here reads a clock.

Rules:
- A sample that is not later than the newest one is dropped (the wall clock stepped back),
  so no interval has a zero or negative length and no rate is infinite.
- A counter that shrank between two samples (it never should) counts as 0, never negative.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Mapping

# Classes of page answers: HTTP status classes, "error" for fetches that got no HTTP answer
# (timeout, reset, DNS, too large...), "other" for codes outside 200-599 (e.g. 999 blocks).
STATUS_CLASSES = ("2xx", "3xx", "4xx", "5xx", "error", "other")
DEFAULT_CAPACITY = 1800  # an hour at one sample per 2 s


def status_class(key: str) -> str | None:
    """The class of a `CrawlStats.statuses` key ("200" is "2xx", "error:timeout" is "error");
    None for robots.txt and sitemap fetches ("robots:rules", "sitemap:200"), not pages."""
    if key.startswith("error:"):
        return "error"
    if not (key.isascii() and key.isdigit()):
        return None
    code = int(key)
    return f"{code // 100}xx" if 200 <= code < 600 else "other"


def count_by_class(statuses: Mapping[str, int]) -> tuple[int, ...]:
    """Page answers so far, one count per STATUS_CLASSES entry."""
    counts = dict.fromkeys(STATUS_CLASSES, 0)
    for key, n in statuses.items():
        cls = status_class(key)
        if cls is not None:
            counts[cls] += n
    return tuple(counts.values())


@dataclass(frozen=True, slots=True)
class StatsSample:
    """The crawl at `at` (epoch seconds): counters since the process started, queues now."""

    at: float
    pages_fetched: int
    pages_stored: int
    bytes_downloaded: int
    errors: int
    statuses: tuple[int, ...]  # page answers so far, by STATUS_CLASSES
    queued: tuple[int, int, int]  # URLs in the frontier now: fast, slow, refresh line
    handed_out: tuple[int, int, int]  # site turns given so far: fast, slow, refresh line


@dataclass(frozen=True, slots=True)
class HistoryStats:
    samples: int
    capacity: int
    first_at: float | None
    last_at: float | None


class StatsHistory:
    """A ring of samples. Written by the sampling task, read by the API's routes (one loop)."""

    def __init__(self, capacity: int = DEFAULT_CAPACITY) -> None:
        if capacity < 2:
            raise ValueError(f"StatsHistory capacity {capacity!r}: need at least 2 samples")
        self._samples: deque[StatsSample] = deque(maxlen=capacity)

    def add(self, sample: StatsSample) -> bool:
        """Keep `sample` (the oldest goes when full); False if it was dropped as not later
        than the newest one."""
        if self._samples and sample.at <= self._samples[-1].at:
            return False
        self._samples.append(sample)
        return True

    def rows_since(self, since: float) -> list[dict[str, object]]:
        """The rows of the intervals that end after `since`, oldest first, in the API's form.

        Walks back from the newest sample, so a poll costs what it returns."""
        samples = self._samples
        start = len(samples)
        while start > 1 and samples[start - 1].at > since:
            start -= 1
        return [interval_row(samples[i - 1], samples[i]) for i in range(start, len(samples))]

    def copy(self) -> StatsHistory:
        """A copy to read on another thread: the samples are immutable, and the copy is made
        in one C-level pass under the GIL, so no append can land half-way through it."""
        twin = StatsHistory(self._samples.maxlen or DEFAULT_CAPACITY)
        twin._samples.extend(self._samples)
        return twin

    def pages_per_second(self, window_s: float) -> float | None:
        """Pages fetched per second over about the last `window_s` (None: < 2 samples)."""
        samples = self._samples
        if len(samples) < 2:
            return None
        newest, i = samples[-1], len(samples) - 2
        while i > 0 and newest.at - samples[i].at < window_s:
            i -= 1
        oldest = samples[i]
        return _grown(oldest.pages_fetched, newest.pages_fetched) / (newest.at - oldest.at)

    def stats(self) -> HistoryStats:
        first = self._samples[0].at if self._samples else None
        last = self._samples[-1].at if self._samples else None
        return HistoryStats(len(self._samples), self._samples.maxlen or 0, first, last)

    def __repr__(self) -> str:
        s = self.stats()
        return f"<StatsHistory {s.samples}/{s.capacity} samples, {s.first_at}..{s.last_at}>"


def interval_row(before: StatsSample, after: StatsSample) -> dict[str, object]:
    """The interval from `before` to `after`: counters at its end, rates and deltas over it.

    `turns` splits the site turns the frontier handed out in the interval into refresh
    (REFRESH line) and discovery (FAST and SLOW lines)."""
    dt = after.at - before.at
    if dt <= 0:
        raise ValueError(f"interval_row: {after.at!r} is not after {before.at!r}")
    turns = [_grown(a, b) for a, b in zip(before.handed_out, after.handed_out, strict=True)]
    statuses = zip(STATUS_CLASSES, before.statuses, after.statuses, strict=True)
    fast, slow, refresh = after.queued
    return {
        "at": after.at,
        "intervalS": dt,
        "pagesFetched": after.pages_fetched,
        "pagesStored": after.pages_stored,
        "bytesDownloaded": after.bytes_downloaded,
        "errors": after.errors,
        "pagesPerSecond": _per_second(_grown(before.pages_fetched, after.pages_fetched), dt),
        "storedPerSecond": _per_second(_grown(before.pages_stored, after.pages_stored), dt),
        "bytesPerSecond": _per_second(_grown(before.bytes_downloaded, after.bytes_downloaded), dt),
        "newErrors": _grown(before.errors, after.errors),
        "statuses": {cls: _grown(a, b) for cls, a, b in statuses},
        "frontier": {"fast": fast, "slow": slow, "refresh": refresh},
        "turns": {"discovery": turns[0] + turns[1], "refresh": turns[2]},
    }


def _per_second(n: int, dt: float) -> float:
    """`n` over `dt` seconds, finite: an interval of a few femtoseconds (a clock stepped
    between two samples) overflowed the division to inf, which JSON cannot carry."""
    return n / max(dt, _MIN_INTERVAL_S)


_MIN_INTERVAL_S = 1e-6


def _grown(before: int, after: int) -> int:
    return max(0, after - before)

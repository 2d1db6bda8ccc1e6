"""What was skipped, and why: counts by reason and a bounded sample of the last skips.

How this works (issue 16). Every URL the frontier does not queue because of scope, depth,
hops, an exclude or a trap rule is *noted* here with its reason (a short name such as
"scope" or "max_depth"), the rule that decided (the pattern, the limit, the seed) and the
page that linked it. Two things are kept:

- counts by reason, for the whole crawl (a resumed crawl starts from the stored counts);
- the last `sample_size` skips, in a ring: a fixed list written at `noted % sample_size`.

Rules:
- `note` is on the per-link path (~50 links a page), so it stores a plain tuple in the
  ring and adds one to a dict: no value object is built until someone reads (a frozen
  dataclass costs ~0.5 µs to construct; a tuple ~50 ns). bench/skips_bench.py measures it.
- The store is written on commit: `take_unflushed()` hands over the skips noted since the
  last call (at most `sample_size`: older ones have left the ring and would leave the
  stored window at once) and the counts that changed, then marks them written. If that
  transaction is then lost (a killed process), memory and database agree again at the next
  start, since both are read back from the database.
- Nothing here reads a clock or does I/O: `at` comes in with the note.

Written and read from the event loop thread only.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Iterable, Mapping

DEFAULT_SAMPLE_SIZE = 10_000

# One ring slot: (url, reason, rule, referrer, at). A tuple, not a Skip: see the header.
_Entry = tuple[str, str, str, str, float]


@dataclass(frozen=True, slots=True)
class Skip:
    """One URL not queued: its reason, the rule that decided, the page that linked it
    ("" for a URL that no page linked: a seed, a sitemap entry), and when (epoch seconds)."""

    url: str
    reason: str
    rule: str
    referrer: str
    at: float

    def __post_init__(self) -> None:
        if not self.reason:
            raise ValueError(f"a skip needs a reason: {self.url!r}")

    def to_json(self) -> dict[str, object]:
        return {
            "url": self.url,
            "reason": self.reason,
            "rule": self.rule,
            "referrer": self.referrer,
            "at": self.at,
        }


@dataclass(frozen=True, slots=True)
class SkipBatch:
    """What a commit writes: the new skips, oldest first, and every count that changed
    (the reason's whole count, not the increment, so writing it twice does no harm)."""

    skips: tuple[Skip, ...]
    counts: dict[str, int]

    @property
    def is_empty(self) -> bool:
        return not self.skips and not self.counts


@dataclass(frozen=True, slots=True)
class SkipStats:
    noted: int  # skips noted since this process started
    sampled: int  # skips in the ring now
    unflushed: int  # skips the next take_unflushed() hands over
    sample_size: int


class SkipTally:
    """Counts by reason and the last `sample_size` skips; see the module header."""

    def __init__(
        self,
        *,
        sample_size: int = DEFAULT_SAMPLE_SIZE,
        counts: Mapping[str, int] | None = None,
        recent: Iterable[Skip] = (),
    ) -> None:
        """`counts` and `recent` (oldest first) are what the store kept: a resumed crawl
        goes on from them, and they count as already written."""
        if sample_size < 1:
            raise ValueError(f"sample_size must be >= 1, got {sample_size}")
        self._size = sample_size
        self._ring: list[_Entry | None] = [None] * sample_size
        self._noted = 0  # skips ever put in the ring (restored ones included)
        self._flushed = 0  # the value of _noted at the last take_unflushed()
        self._counts: dict[str, int] = dict(counts or {})
        self._flushed_counts = dict(self._counts)
        for skip in recent:
            self._ring[self._noted % self._size] = (
                skip.url, skip.reason, skip.rule, skip.referrer, skip.at,
            )  # fmt: skip
            self._noted += 1
        self._flushed = self._noted
        self._restored = self._noted

    def note(self, url: str, reason: str, rule: str, referrer: str, at: float) -> None:
        """Count a skip and keep it in the sample (the oldest one leaves a full ring)."""
        n = self._noted
        self._ring[n % self._size] = (url, reason, rule, referrer, at)
        self._noted = n + 1
        counts = self._counts
        counts[reason] = counts.get(reason, 0) + 1

    def counts(self) -> dict[str, int]:
        """Skips by reason over the whole crawl, restored counts included."""
        return dict(self._counts)

    def recent(self, limit: int, reason: str | None = None) -> list[Skip]:
        """Up to `limit` skips from the sample, newest first; only `reason`'s if given."""
        found: list[Skip] = []
        n = self._noted
        oldest = max(0, n - self._size)
        while n > oldest and len(found) < limit:
            n -= 1
            entry = self._ring[n % self._size]
            assert entry is not None  # slots below _noted within the window are filled
            if reason is None or entry[1] == reason:
                found.append(Skip(*entry))
        return found

    def take_unflushed(self) -> SkipBatch:
        """The skips noted since the last call (only those still in the ring) and the
        counts changed since, marked written."""
        start = max(self._flushed, self._noted - self._size)
        skips = []
        for n in range(start, self._noted):
            entry = self._ring[n % self._size]
            assert entry is not None
            skips.append(Skip(*entry))
        changed = {
            reason: count
            for reason, count in self._counts.items()
            if self._flushed_counts.get(reason) != count
        }
        self._flushed = self._noted
        self._flushed_counts.update(changed)
        return SkipBatch(tuple(skips), changed)

    def stats(self) -> SkipStats:
        return SkipStats(
            noted=self._noted - self._restored,
            sampled=min(self._noted, self._size),
            unflushed=min(self._noted - self._flushed, self._size),
            sample_size=self._size,
        )

    def __repr__(self) -> str:
        s = self.stats()
        return (
            f"<SkipTally noted={s.noted} sampled={s.sampled}/{s.sample_size}"
            f" unflushed={s.unflushed} reasons={len(self._counts)}>"
        )

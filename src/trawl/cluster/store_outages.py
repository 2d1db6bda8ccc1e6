"""Which shared store a node cannot reach, since when, and whether it may start new fetches.

How this works (issue 19): a node keeps what it cannot write (its waiting commit cuts:
links, WARC chunks, a PostgreSQL batch, in `cluster_records.CommitPublisher`) and retries;
this module holds the rules around that, sans-I/O (times in, answers out; nothing here
reads a clock):

- A store is *failing* from its first failed call until a call to it succeeds again.
- New fetches pause while PostgreSQL is failing (a turn reads page and host records from
  it, and its outcome could not be completed) or while the backlog of waiting cuts passes
  `BacklogBound` (what a failing Redis or object store leaves in memory), and resume as soon
  as neither holds: nothing needs a restart.
- `member_info()` is what the node publishes about it in its member entry, which
  `trawl cluster status` and /metrics read.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum


class Store(Enum):
    POSTGRES = "postgres"
    S3 = "s3"
    REDIS = "redis"


@dataclass(frozen=True, slots=True)
class BacklogBound:
    """How much unwritten work a node holds before it stops starting fetches."""

    max_cuts: int = 40  # commit cuts (one every 0.5 s of publishing: 20 s of a full outage)
    max_bytes: int = 64 * 1024 * 1024  # sealed WARC chunk bytes waiting for upload

    def __post_init__(self) -> None:
        if self.max_cuts < 1 or self.max_bytes < 1:
            raise ValueError(f"BacklogBound needs positive bounds, got {self!r}")

    def is_over(self, cuts: int, chunk_bytes: int) -> bool:
        return cuts >= self.max_cuts or chunk_bytes >= self.max_bytes


@dataclass(frozen=True, slots=True)
class Outage:
    store: Store
    since: float  # epoch seconds of the first failure
    error: str  # the latest failure's message


@dataclass(frozen=True, slots=True)
class OutageStats:
    failing: tuple[Outage, ...]
    cuts_waiting: int
    chunk_bytes_waiting: int
    paused: bool
    outages: int  # outages that ended
    longest_outage_s: float
    peak_cuts_waiting: int
    peak_chunk_bytes_waiting: int


class StoreOutages:
    """The failing stores and the backlog, written by the publisher and the record reads
    (on the crawl's event loop), read by the placement's gate and the heartbeat."""

    def __init__(self, bound: BacklogBound | None = None) -> None:
        self.bound = bound or BacklogBound()
        self._failing: dict[Store, Outage] = {}
        self._cuts = 0
        self._chunk_bytes = 0
        self._ended = 0
        self._longest_s = 0.0
        self._peak_cuts = 0
        self._peak_bytes = 0

    def __repr__(self) -> str:
        failing = ",".join(o.store.value for o in self._failing.values()) or "none"
        return f"<StoreOutages failing={failing} cuts={self._cuts} paused={self.is_paused()}>"

    def note_failure(self, store: Store, now: float, error: str) -> bool:
        """Record a failed call; True when it starts an outage (worth a log line)."""
        outage = self._failing.get(store)
        self._failing[store] = Outage(store, now if outage is None else outage.since, error)
        return outage is None

    def note_success(self, store: Store, now: float) -> float | None:
        """Record a call that worked; the outage's length when it ends one, else None."""
        outage = self._failing.pop(store, None)
        if outage is None:
            return None
        lasted = max(0.0, now - outage.since)
        self._ended += 1
        self._longest_s = max(self._longest_s, lasted)
        return lasted

    def note_backlog(self, cuts: int, chunk_bytes: int) -> None:
        self._cuts, self._chunk_bytes = cuts, chunk_bytes
        self._peak_cuts = max(self._peak_cuts, cuts)
        self._peak_bytes = max(self._peak_bytes, chunk_bytes)

    def is_failing(self, store: Store) -> bool:
        return store in self._failing

    def is_paused(self) -> bool:
        """True while no new fetch may start (see the module docstring)."""
        return Store.POSTGRES in self._failing or self.bound.is_over(self._cuts, self._chunk_bytes)

    def stats(self) -> OutageStats:
        return OutageStats(
            tuple(self._failing.values()), self._cuts, self._chunk_bytes, self.is_paused(),
            self._ended, self._longest_s, self._peak_cuts, self._peak_bytes,
        )  # fmt: skip

    def member_info(self) -> dict[str, str]:
        """Fields for the node's member entry: `failing` (store@since,...), `backlog_cuts`,
        `backlog_bytes`, `paused` (yes/no)."""
        failing = ",".join(f"{o.store.value}@{o.since:.0f}" for o in self._failing.values())
        return {
            "failing": failing or "-",
            "backlog_cuts": str(self._cuts),
            "backlog_bytes": str(self._chunk_bytes),
            "paused": "yes" if self.is_paused() else "no",
        }

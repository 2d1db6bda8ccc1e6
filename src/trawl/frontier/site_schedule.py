"""Which site may be served next: the frontier's two layers, as pure state.

How this works
- Back layer: every site with queued work has a ready time (its clock's nextAllowedAt) and
  sits in a min-heap keyed on it, so finding a ready site is O(log n).
- Front layer: ready sites move from the time heap into FIFOs: the REFRESH FIFO when the
  site has due pages queued, and the FIFO of its best discovery line (FAST if it has any
  fast-line URL, else SLOW). A site with both kinds of work waits in both. `pop_ready`
  first picks refresh or discovery — refresh `refresh_share` of the time when both have
  ready sites, either alone otherwise — then, for discovery, fast `fast_share` of the time.
  So neither kind of work starves the other, and neither wastes slots the other could use.
- A popped (or `hold`-taken) site is busy until `release(site, ready_at)`; a busy site is
  never handed out again. This is the frontier's half of "one request at a time per
  site"; the site clock (politeness.site_clock) is the other half and refuses an early
  start on its own.

Heap and FIFO entries are never removed in place: each site has a version number, bumped on
release, and stale entries are skipped when they surface (lazy deletion). Versions are
drawn from one counter for all slots, never reused, so a slot dropped and made again never
matches its old entries: `forget_idle` drops slots without sweeping the heap, and costs
what was emptied since the last call, not what the schedule holds (a sweep of a million
slots held the loop ~0.9 s).
"""

from __future__ import annotations

import heapq
import itertools
from collections import deque
from dataclasses import dataclass
from typing import TYPE_CHECKING

from trawl.model import Line

if TYPE_CHECKING:
    from collections.abc import Iterable

_LINES = len(Line)


@dataclass(slots=True)
class _SiteSlot:
    counts: list[int]  # queued (unleased) URLs per line
    ready_at: float
    busy: bool = False
    version: int = 0
    waiting: bool = False  # in the heap or in a ready FIFO


@dataclass(frozen=True, slots=True)
class ScheduleStats:
    sites: int
    busy: int
    ready: int
    waiting: int
    queued_fast: int
    queued_slow: int
    queued_refresh: int = 0
    handed_out: tuple[int, int, int] = (0, 0, 0)  # turns given per line (FAST, SLOW, REFRESH)
    # Turns given while both refresh and discovery had ready sites: (refresh, discovery).
    contested: tuple[int, int] = (0, 0)


class SiteSchedule:
    """Pure scheduling state. Written and read by the frontier shell only."""

    def __init__(self, fast_share: float = 0.8, refresh_share: float = 0.6) -> None:
        self._slots: dict[str, _SiteSlot] = {}
        self._heap: list[tuple[float, int, str]] = []
        self._ready: tuple[deque[tuple[str, int]], ...] = tuple(deque() for _ in Line)
        self._fast_share = fast_share
        self._refresh_share = refresh_share
        self._credit = 0.0
        self._refresh_credit = 0.0
        self._queued = [0] * _LINES
        self._handed_out = [0] * _LINES
        self._contested = [0, 0]
        self._versions = itertools.count(1)
        # Sites whose slot was left with no work and not busy since the last forget_idle:
        # the only ones it looks at (an ordered set).
        self._emptied: dict[str, None] = {}

    # -- work accounting ----------------------------------------------------------------
    def add_work(self, site: str, line: Line, n: int = 1, ready_at: float = 0.0) -> None:
        slot = self._slots.get(site)
        if slot is None:
            slot = self._new_slot(site, ready_at)
        slot.counts[line] += n
        self._queued[line] += n
        self._enqueue(site, slot)

    def take_work(self, site: str, line: Line, n: int = 1) -> None:
        """URLs of `site` left the queue (leased or skipped)."""
        slot = self._slots[site]
        if slot.counts[line] < n:
            raise ValueError(f"{site}: taking {n} from line {line.name} holding {slot.counts}")
        slot.counts[line] -= n
        self._queued[line] -= n
        if not slot.busy and not any(slot.counts):
            self._emptied[site] = None

    def best_line(self, site: str) -> Line | None:
        """The site's best discovery line, else REFRESH when it has only due pages."""
        slot = self._slots.get(site)
        if slot is None:
            return None
        for line in Line:
            if slot.counts[line]:
                return line
        return None

    def queued(self, site: str) -> int:
        slot = self._slots.get(site)
        return 0 if slot is None else sum(slot.counts)

    # -- hand-out -----------------------------------------------------------------------
    def pop_ready(self, now: float) -> tuple[str, Line] | None:
        """A site that is free, has work and whose ready time has passed, and the line its
        turn should serve; the site becomes busy."""
        self._promote(now)
        while True:
            contested = bool(self._ready[Line.REFRESH]) and bool(
                self._ready[Line.FAST] or self._ready[Line.SLOW]
            )
            line = self._choose_line()
            if line is None:
                return None
            site, version = self._ready[line].popleft()
            slot = self._slots.get(site)
            if slot is None or slot.version != version or slot.busy or not slot.counts[line]:
                continue  # stale: taken through its other FIFO, or its work went meanwhile
            slot.waiting = False
            slot.busy = True
            self._handed_out[line] += 1
            if contested:
                self._contested[0 if line is Line.REFRESH else 1] += 1
            return site, line

    def hold(self, site: str) -> bool:
        """Make a site that no turn holds busy, for a request made outside its own turn (a
        robots.txt redirect from another site to it); False when a turn holds it already.

        The caller waits for the site's clock itself, then gives it back with `release`,
        as a turn does. A site with no slot gets an empty one (forget_idle drops it later).
        """
        slot = self._slots.get(site)
        if slot is None:
            slot = self._new_slot(site, 0.0)
        elif slot.busy:
            return False
        slot.busy = True
        slot.waiting = False  # its heap and FIFO entries go stale: release bumps the version
        return True

    def is_busy(self, site: str) -> bool:
        slot = self._slots.get(site)
        return slot is not None and slot.busy

    def release(self, site: str, ready_at: float) -> None:
        """The busy site is free again from `ready_at` on."""
        slot = self._slots.get(site)
        if slot is None:
            return  # dropped while busy (drop_sites)
        if not slot.busy:
            raise ValueError(f"{site} released while not busy")
        slot.busy = False
        slot.ready_at = ready_at
        slot.version = next(self._versions)
        slot.waiting = False
        if any(slot.counts):
            self._enqueue(site, slot)
        else:
            self._emptied[site] = None

    def move(self, site: str, ready_at: float) -> None:
        """Set a waiting (not busy) site's ready time, earlier or later (an operator's
        override changed its clock); stale heap and FIFO entries are skipped by version."""
        slot = self._slots.get(site)
        if slot is None or slot.busy:
            return
        slot.ready_at = ready_at
        slot.version = next(self._versions)
        slot.waiting = False
        self._enqueue(site, slot)

    def next_ready_at(self) -> float | None:
        """Earliest time a waiting site becomes ready (None when nothing waits)."""
        if any(self._ready):
            return 0.0
        while self._heap:
            ready_at, version, site = self._heap[0]
            slot = self._slots.get(site)
            if slot is not None and slot.version == version and slot.waiting:
                return ready_at
            heapq.heappop(self._heap)
        return None

    def forget_idle(self) -> int:
        """Drop slots of sites with no work and not busy; returns how many were dropped.
        Costs the sites emptied since the last call; their stale heap and FIFO entries are
        skipped when they surface, as any stale entry is."""
        dropped = 0
        slots = self._slots
        for site in self._emptied:
            slot = slots.get(site)
            if slot is not None and not slot.busy and not any(slot.counts):
                del slots[site]
                dropped += 1
        self._emptied.clear()
        return dropped

    def drop_sites(self, sites: Iterable[str]) -> int:
        """Forget these sites and their work (their partition moved to another machine);
        busy ones too: their turn's release is then a no-op. Returns the URLs forgotten."""
        dropped = 0
        for site in sites:
            slot = self._slots.pop(site, None)
            if slot is not None:
                for line in Line:
                    self._queued[line] -= slot.counts[line]
                    dropped += slot.counts[line]
        self._sweep()
        return dropped

    def _sweep(self) -> None:
        """Drop heap and FIFO entries of sites that no longer have a slot."""
        self._heap = [e for e in self._heap if e[2] in self._slots]
        heapq.heapify(self._heap)
        for fifo in self._ready:
            kept = [entry for entry in fifo if entry[0] in self._slots]
            fifo.clear()
            fifo.extend(kept)

    def stats(self) -> ScheduleStats:
        busy = sum(1 for slot in self._slots.values() if slot.busy)
        return ScheduleStats(
            sites=len(self._slots),
            busy=busy,
            ready=sum(len(fifo) for fifo in self._ready),
            waiting=sum(1 for slot in self._slots.values() if slot.waiting),
            queued_fast=self._queued[Line.FAST],
            queued_slow=self._queued[Line.SLOW],
            queued_refresh=self._queued[Line.REFRESH],
            handed_out=(
                self._handed_out[Line.FAST],
                self._handed_out[Line.SLOW],
                self._handed_out[Line.REFRESH],
            ),
            contested=(self._contested[0], self._contested[1]),
        )

    def __repr__(self) -> str:
        s = self.stats()
        return (
            f"<SiteSchedule sites={s.sites} busy={s.busy} ready={s.ready} "
            f"queued={s.queued_fast}+{s.queued_slow}+{s.queued_refresh}>"
        )

    # -- internals ----------------------------------------------------------------------
    def _new_slot(self, site: str, ready_at: float) -> _SiteSlot:
        slot = _SiteSlot(counts=[0] * _LINES, ready_at=ready_at, version=next(self._versions))
        self._slots[site] = slot
        return slot

    def _enqueue(self, site: str, slot: _SiteSlot) -> None:
        if slot.busy or slot.waiting or not sum(slot.counts):
            return
        slot.waiting = True
        heapq.heappush(self._heap, (slot.ready_at, slot.version, site))

    def _promote(self, now: float) -> None:
        heap = self._heap
        while heap and heap[0][0] <= now:
            _, version, site = heapq.heappop(heap)
            slot = self._slots.get(site)
            if slot is None or slot.version != version or not slot.waiting or slot.busy:
                continue
            counts = slot.counts
            if not any(counts):
                slot.waiting = False
                continue
            if counts[Line.REFRESH]:
                self._ready[Line.REFRESH].append((site, version))
            if counts[Line.FAST]:
                self._ready[Line.FAST].append((site, version))
            elif counts[Line.SLOW]:
                self._ready[Line.SLOW].append((site, version))

    def _choose_line(self) -> Line | None:
        fast, slow, refresh = self._ready
        if refresh and (fast or slow):
            self._refresh_credit += self._refresh_share
            if self._refresh_credit >= 1.0:
                self._refresh_credit -= 1.0
                return Line.REFRESH
        elif refresh:
            return Line.REFRESH
        if fast and slow:
            self._credit += 1.0 - self._fast_share
            if self._credit >= 1.0:
                self._credit -= 1.0
                return Line.SLOW
            return Line.FAST
        if fast:
            return Line.FAST
        if slow:
            return Line.SLOW
        return None

"""Requests cut at their partition lease's local deadline, the deadline moving as renewals
extend it: what lets a lease be shorter than the longest fetch.

How this works:
- The ownership shell tells `deadline(partition, fetch_until)` whenever a partition's local
  deadline changes (a lease won, renewed, lost: -inf), on this machine's monotonic clock.
- A request to a site of the partition runs inside `cut(partition)`: an `asyncio.Timeout`
  set to the deadline, moved (`reschedule`) each time the deadline moves. A fetch that
  outlives a deadline no renewal extended is cancelled there: the request is no longer on
  the wire by the time another member may take the partition (`sent_at + ttl_s`, at least
  `margin_s` later), so the margin need not exceed the fetch timeout.
- No polling and no task per request: one timer per request in flight, moved in place.

Written and read on the node's one event loop.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Callable


class LeaseCuts:
    """The local deadline of each partition's lease, and the requests it cuts."""

    def __init__(self, monotonic: Callable[[], float] = time.monotonic) -> None:
        self._now = monotonic
        self._deadlines: dict[int, float] = {}
        self._open: dict[int, set[asyncio.Timeout]] = {}
        self.cut_count = 0  # requests cut at a deadline, for the node's log and stats

    def __repr__(self) -> str:
        in_flight = sum(len(timeouts) for timeouts in self._open.values())
        return f"<LeaseCuts partitions={len(self._deadlines)} in_flight={in_flight}>"

    def deadline(self, partition: int, fetch_until: float) -> None:
        """The partition's local deadline is now `fetch_until` (monotonic; -inf: none)."""
        if fetch_until == float("-inf"):
            self._deadlines.pop(partition, None)
        else:
            self._deadlines[partition] = fetch_until
        for timeout in self._open.get(partition, ()):
            if not timeout.expired():  # one already cutting its request is past moving
                timeout.reschedule(self._loop_time(fetch_until))

    @contextlib.asynccontextmanager
    async def cut(self, partition: int) -> AsyncIterator[None]:
        """A block ending with TimeoutError at the partition's deadline, moved as it moves."""
        until = self._deadlines.get(partition, float("-inf"))
        timeout = asyncio.timeout_at(self._loop_time(until))
        try:
            async with timeout:
                self._open.setdefault(partition, set()).add(timeout)
                try:
                    yield
                finally:
                    self._closed(partition, timeout)
        except TimeoutError:
            self.cut_count += 1
            raise

    def _loop_time(self, fetch_until: float) -> float | None:
        """`fetch_until` on the event loop's clock (None: never), which need not be
        time.monotonic (uvloop keeps its own)."""
        if fetch_until == float("inf"):
            return None
        loop = asyncio.get_running_loop()
        return loop.time() + (fetch_until - self._now())

    def _closed(self, partition: int, timeout: asyncio.Timeout) -> None:
        open_ = self._open.get(partition)
        if open_ is not None:
            open_.discard(timeout)
            if not open_:
                del self._open[partition]

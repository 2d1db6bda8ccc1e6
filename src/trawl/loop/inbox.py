"""Calls from other threads (the API's) that the crawl loop runs between its own steps.

Why not `call_soon_threadsafe` alone: a callback scheduled from another thread runs after
every callback already ready on the crawl loop, and a crawl at full speed keeps its loop
saturated, so that wait is a whole loop iteration: the loop's lag, 30-250 ms at p50-p99
under bench/api_latency.py, and `run_coroutine_threadsafe` waited for two (one to start
the task, one to step it). Here the crawl's busy paths call `drain()` each time they
resume from an await (a page's fetch or parse came back, a turn slot freed), so a call
waits only for the step that is running when it arrives. Running it there is the same as
running it as a callback just before that step: a task resuming from an await finds the
crawl's state as any other callback may have left it.

`submit` also schedules a drain on the loop the ordinary way, which serves a loop that is
idle or a call that arrives between busy paths; whichever runs first takes the call.

A drain is bounded: it runs the calls that were waiting when it began, for up to
`DRAIN_BUDGET_S`, and leaves the rest to the next drain point. Unbounded, a burst of API
calls held the loop for as long as the API's thread kept handing in more: pausing 2,000
sites from 16 connections stalled the crawl loop 310-732 ms at a time (bench.api_latency's
pause phase under bench.loop_stalls' probe), since the API's thread answers and submits the
next call whenever the loop lets go of the GIL, at each SQLite statement of a call.
"""

from __future__ import annotations

import concurrent.futures
import time
from collections import deque
from typing import TYPE_CHECKING, TypeVar

if TYPE_CHECKING:
    import asyncio
    from collections.abc import Callable

T = TypeVar("T")

__all__ = ["DRAIN_BUDGET_S", "CrawlInbox"]

# Seconds of calls one drain runs (it stops after the call that passes it): a tenth of the
# loop's lag goal (p99 < 50 ms), and a burst still goes in a few drains.
DRAIN_BUDGET_S = 0.005


class CrawlInbox:
    """`submit` from any thread; `drain` on the crawl loop only."""

    __slots__ = ("_calls", "_clock", "_draining", "_loop", "ran")

    def __init__(self, clock: Callable[[], float] = time.perf_counter) -> None:
        # deque.append and popleft are atomic: no lock between the two threads.
        self._calls: deque[tuple[Callable[[], object], concurrent.futures.Future[object]]]
        self._calls = deque()
        self._clock = clock
        self._draining = False
        self._loop: asyncio.AbstractEventLoop | None = None
        self.ran = 0  # calls run so far (tests, stats)

    def submit(
        self, call: Callable[[], T], loop: asyncio.AbstractEventLoop
    ) -> concurrent.futures.Future[T]:
        """Queue `call` for the crawl loop `loop`; its future settles with what it returns
        or raises. Raises RuntimeError when `loop` is closed."""
        future: concurrent.futures.Future[T] = concurrent.futures.Future()
        self._loop = loop
        self._calls.append((call, future))  # type: ignore[arg-type]  # T is erased here
        loop.call_soon_threadsafe(self.drain)
        return future

    def drain(self) -> None:
        """Run the calls waiting when it begins, in the order they came, until
        `DRAIN_BUDGET_S` has passed; what is left waits for the next drain point (one is
        scheduled on the loop)."""
        if not self._calls or self._draining:
            return
        self._draining = True
        try:
            deadline = self._clock() + DRAIN_BUDGET_S
            for _ in range(len(self._calls)):  # not the calls handed in meanwhile
                call, future = self._calls.popleft()
                if not future.set_running_or_notify_cancel():
                    continue  # the caller gave up
                try:
                    result = call()
                except Exception as exc:
                    future.set_exception(exc)
                else:
                    future.set_result(result)
                self.ran += 1
                if self._clock() >= deadline:
                    break
        finally:
            self._draining = False
        if self._calls and self._loop is not None:
            self._loop.call_soon(self.drain)

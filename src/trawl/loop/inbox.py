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
"""

from __future__ import annotations

import concurrent.futures
from collections import deque
from typing import TYPE_CHECKING, TypeVar

if TYPE_CHECKING:
    import asyncio
    from collections.abc import Callable

T = TypeVar("T")

__all__ = ["CrawlInbox"]


class CrawlInbox:
    """`submit` from any thread; `drain` on the crawl loop only."""

    __slots__ = ("_calls", "_draining", "ran")

    def __init__(self) -> None:
        # deque.append and popleft are atomic: no lock between the two threads.
        self._calls: deque[tuple[Callable[[], object], concurrent.futures.Future[object]]]
        self._calls = deque()
        self._draining = False
        self.ran = 0  # calls run so far (tests, stats)

    def submit(
        self, call: Callable[[], T], loop: asyncio.AbstractEventLoop
    ) -> concurrent.futures.Future[T]:
        """Queue `call` for the crawl loop `loop`; its future settles with what it returns
        or raises. Raises RuntimeError when `loop` is closed."""
        future: concurrent.futures.Future[T] = concurrent.futures.Future()
        self._calls.append((call, future))  # type: ignore[arg-type]  # T is erased here
        loop.call_soon_threadsafe(self.drain)
        return future

    def drain(self) -> None:
        """Run the calls waiting, in the order they came."""
        if not self._calls or self._draining:
            return
        self._draining = True
        try:
            while self._calls:
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
        finally:
            self._draining = False

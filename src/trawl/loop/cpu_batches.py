"""Page work for the worker processes, sent in small batches.

Why: ProcessPoolExecutor's per-call machinery (an envelope pickled per call, a feeder
thread, a manager thread, a concurrent future chained to an asyncio one) cost 0.9 ms per
page in bench/profile_crawl.py — more than parsing, hashing and compressing the page.
Batching a few pages per call pays that once per batch. A batch goes out when it is full
or `max_wait_s` after its first page, so a quiet crawl adds at most that much latency.
The wait is 20 ms, not less: each batch still costs the loop ~0.6 ms of CPU (threads
woken, pipes written), and at 400 pages/s a 3 ms wait made batches of 1.9 pages, 20 ms
makes ~9 (bench/fetch_bench.py --part handoff, issue 17). The added latency holds no
site: a site is released before its page's outcome is worked out (loop.crawler).
A batch's pages come back one per turn of the event loop, not all at once: each page's
outcome (records, links queued, duplicates) is a few ms of work on the loop, and waking a
batch's 9-16 waiting tasks together made one turn of 30-50 ms that every timer, response
and API call waited behind (issue 17's loop lag).
A batch whose worker died is redone on a fresh pool (loop.workers.WorkerPool); one that
kept killing its workers (WorkerCrashed) is redone an item at a time, so that only the item
that kills them fails.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Generic, TypeVar

from trawl.fetch.http_common import one_line
from trawl.loop.workers import WorkerCrashed

if TYPE_CHECKING:
    from collections.abc import Callable

    from trawl.loop.workers import WorkerPool

In = TypeVar("In")
Out = TypeVar("Out")


def failed_work(exc: Exception) -> str:
    """A page work's failure (its exception, or WorkerCrashed) as a record's error: one
    short line, as the fetcher words its own errors."""
    return f"page_work: {type(exc).__name__}: {one_line(exc)}"


class BatchedWorkers(Generic[In, Out]):
    """`await run(item)` computes `fn_batch([item, ...])[i]` in `pool`. Event loop only."""

    def __init__(
        self,
        pool: WorkerPool,
        fn_batch: Callable[[list[In]], list[Out | BaseException]],
        *,
        max_batch: int = 16,
        max_wait_s: float = 0.02,
    ) -> None:
        self._pool = pool
        self._fn_batch = fn_batch
        self._max_batch = max_batch
        self._max_wait_s = max_wait_s
        self._items: list[In] = []
        self._futures: list[asyncio.Future[Out]] = []
        self._timer: asyncio.TimerHandle | None = None
        self._running: set[asyncio.Task[list[Out | BaseException]]] = set()  # strong refs
        self.batches = 0
        self.split = 0  # batches redone an item at a time after they kept killing workers
        self.pending = 0  # items given to `run` whose result has not been handed back
        self._room: list[tuple[int, asyncio.Future[None]]] = []  # `wait_below` callers

    async def run(self, item: In) -> Out:
        loop = asyncio.get_running_loop()
        future: asyncio.Future[Out] = loop.create_future()
        self._items.append(item)
        self._futures.append(future)
        if len(self._items) >= self._max_batch:
            self._flush()
        elif self._timer is None:
            self._timer = loop.call_later(self._max_wait_s, self._flush)
        self.pending += 1
        try:
            return await future
        finally:
            self.pending -= 1
            if self._room:
                self._wake_room()

    async def wait_below(self, limit: int) -> None:
        """Until fewer than `limit` items are pending: what admits new work that would
        only wait here (a page fetched now and worked out seconds later is stale)."""
        if self.pending < limit:
            return
        waiter: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._room.append((limit, waiter))
        await waiter

    def _wake_room(self) -> None:
        keep = []
        for limit, waiter in self._room:
            if waiter.done():
                continue
            if self.pending < limit:
                waiter.set_result(None)
            else:
                keep.append((limit, waiter))
        self._room = keep

    def _flush(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        if not self._items:
            return
        items, futures = self._items, self._futures
        self._items, self._futures = [], []
        self.batches += 1
        done = asyncio.get_running_loop().create_task(self._run_batch(items))
        self._running.add(done)
        done.add_done_callback(self._running.discard)
        done.add_done_callback(lambda d: _settle(d, futures))

    async def _run_batch(self, items: list[In]) -> list[Out | BaseException]:
        try:
            return await self._pool.run(self._fn_batch, items)
        except WorkerCrashed:
            if len(items) == 1:
                raise
        # Some item kills its worker every time (a page no parser survives): the batch is
        # tried again an item at a time, one after another, so that only that item fails
        # and not the pages that shared its batch (nor its crawl: loop.outcomes).
        self.split += 1
        out: list[Out | BaseException] = []
        for item in items:
            try:
                out += await self._pool.run(self._fn_batch, [item])
            except WorkerCrashed as exc:
                out.append(exc)
        return out

    def __repr__(self) -> str:
        return f"<BatchedWorkers waiting={len(self._items)} batches={self.batches}>"


def _settle(
    done: asyncio.Future[list[Out | BaseException]], futures: list[asyncio.Future[Out]]
) -> None:
    if done.cancelled() or done.exception() is not None:
        error = done.exception() if not done.cancelled() else asyncio.CancelledError()
        for f in futures:
            if not f.done():
                f.set_exception(error or RuntimeError("worker batch failed"))
        return
    _hand_back(list(zip(futures, done.result(), strict=True)), 0)


def _hand_back(pairs: list[tuple[asyncio.Future[Out], Out | BaseException]], i: int) -> None:
    """Settle page `i`'s future, and the next one on the loop's next turn: a callback
    scheduled now waits for the ones already ready, and runs beside the timers and I/O
    due by then."""
    f, result = pairs[i]
    if not f.done():  # else the waiting task was cancelled
        if isinstance(result, BaseException):
            f.set_exception(result)
        else:
            f.set_result(result)
    if i + 1 < len(pairs):
        asyncio.get_running_loop().call_soon(_hand_back, pairs, i + 1)

"""A trawl.clock.Clock whose time moves only when every task is waiting on it.

How this works: `sleep_until` and `wait_for`'s timeouts are timers on a virtual time line.
`run(main)` runs `main` beside a driver task. Whenever the event loop has nothing else to
run, the driver moves `now()` to the earliest timer and fires every timer due then; a
minute of politeness gaps passes in milliseconds, and every timestamp is exact.

"Nothing else to run" means, after the driver yields once:
- the loop's ready queue is empty (no callback or woken task waits for its turn);
- no work is running on a thread of a `TrackedExecutor` (the loop's default executor, which
  `run_in_executor(None, ...)` and `asyncio.to_thread` use, is replaced by one; page workers
  get another via `executor()`): a thread's result wakes its task through the loop, so time
  must not jump while one runs;
- no live timer of the event loop itself (a `call_later`, an `asyncio.sleep` on real time).
  Short ones (the page batches' 3 ms) are waited out in real time; one longer than
  `max_real_wait_s` means some code still times itself on real time instead of the Clock,
  and `run` raises `RealTimeWait` naming it rather than let a test hang or pass by luck.
Every task waiting while no timer is set is a deadlock: `run` raises `Deadlock`.

The ready queue and the timer heap are CPython's `BaseEventLoop._ready` / `_scheduled`:
private, but the only way to see them; tests/loop/test_virtual_clock.py fails loudly if a
Python release renames them.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import heapq
import itertools
import threading
from typing import TYPE_CHECKING, Any, TypeVar

if TYPE_CHECKING:
    from collections.abc import Callable, Coroutine

T = TypeVar("T")

START_AT = 1_767_225_600.0  # 2026-01-01T00:00:00Z: a round epoch, far from 0


class Deadlock(RuntimeError):
    """Every task waits, and nothing (timer, thread, loop callback) can wake one."""


class RealTimeWait(RuntimeError):
    """The loop holds a real-time timer longer than the clock allows: a missing Clock seam."""


class TrackedExecutor(concurrent.futures.ThreadPoolExecutor):
    """A thread pool whose calls the clock's driver waits for.

    The future `submit` returns is settled *on the event loop*, from the worker's result,
    and only then does the busy count drop. Settling it there runs asyncio's own callback,
    which queues the awaiting task's wake-up, in the same step. (Counting down from a
    done-callback on the worker thread raced: the count could reach the loop before the
    wake-up did, and time jumped while a page was still on its way to its task.)
    """

    def __init__(self, clock: VirtualClock, max_workers: int = 2, **kwargs: Any) -> None:
        super().__init__(max_workers=max_workers, **kwargs)
        self._clock = clock

    def submit(
        self, fn: Callable[..., T], /, *args: Any, **kwargs: Any
    ) -> concurrent.futures.Future[T]:
        clock = self._clock
        loop = clock.loop
        outer: concurrent.futures.Future[T] = concurrent.futures.Future()
        inner = super().submit(fn, *args, **kwargs)
        clock._thread_started()
        outer.add_done_callback(lambda f: inner.cancel() if f.cancelled() else None)
        inner.add_done_callback(lambda f: loop.call_soon_threadsafe(_settle, clock, f, outer))
        return outer


def _settle(
    clock: VirtualClock, inner: concurrent.futures.Future[T], outer: concurrent.futures.Future[T]
) -> None:
    """On the loop: hand the worker's outcome on, then count the call as ended."""
    try:
        if outer.cancelled():
            return
        if inner.cancelled():
            outer.cancel()
        elif (exc := inner.exception()) is not None:
            outer.set_exception(exc)
        else:
            outer.set_result(inner.result())
    finally:
        clock._thread_ended()


class VirtualClock:
    """Virtual epoch seconds from `start_at`; use it inside `await clock.run(main())`."""

    def __init__(self, start_at: float = START_AT, *, max_real_wait_s: float = 0.1) -> None:
        self._now = start_at
        self.started_at = start_at
        self.max_real_wait_s = max_real_wait_s
        self._timers: list[tuple[float, int, asyncio.Future[None]]] = []
        self._seq = itertools.count()
        self._threads = 0  # TrackedExecutor calls running; written on the loop thread only
        self._threads_idle: asyncio.Event | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._loop_thread = threading.get_ident()
        self.jumps = 0  # times the driver moved time forward

    # -- the Clock protocol -------------------------------------------------------------
    def now(self) -> float:
        return self._now

    async def sleep_until(self, at: float) -> None:
        if at <= self._now:
            return  # as SystemClock: a deadline already past costs no turn of the loop
        timer = self._add_timer(at)
        try:
            await timer
        finally:
            timer.cancel()

    async def wait_for(self, event: asyncio.Event, timeout_s: float) -> bool:
        if event.is_set():
            return True
        timer = self._add_timer(self._now + max(0.0, timeout_s))
        waiter = asyncio.ensure_future(event.wait())
        try:
            await asyncio.wait({waiter, timer}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            timer.cancel()
            waiter.cancel()
        return event.is_set()

    # -- driving ------------------------------------------------------------------------
    @property
    def loop(self) -> asyncio.AbstractEventLoop:
        if self._loop is None:
            raise RuntimeError("VirtualClock: use it inside `await clock.run(...)`")
        return self._loop

    def executor(self, max_workers: int = 2, **kwargs: Any) -> TrackedExecutor:
        """A thread pool the driver waits for (page workers: pass it a WorkerPool factory)."""
        return TrackedExecutor(self, max_workers, **kwargs)

    async def run(self, main: Coroutine[Any, Any, T]) -> T:
        """Run `main` on virtual time; its result, or its exception (or Deadlock,
        RealTimeWait when time cannot move)."""
        self._loop = asyncio.get_running_loop()
        default = self.executor(max_workers=4, thread_name_prefix="vclock-default")
        self._loop.set_default_executor(default)
        task = asyncio.ensure_future(main)
        driver = asyncio.ensure_future(self._drive(task))
        try:
            await asyncio.wait({task, driver}, return_when=asyncio.FIRST_COMPLETED)
            if driver.done() and not task.done():
                task.cancel()
                await asyncio.gather(task, return_exceptions=True)
                driver.result()  # raises the driver's Deadlock / RealTimeWait
            return task.result()
        finally:
            driver.cancel()
            await asyncio.gather(driver, return_exceptions=True)
            default.shutdown(wait=True)

    async def _drive(self, main: asyncio.Future[Any]) -> None:
        while not main.done():
            await self._wait_idle()
            if main.done():
                return
            self._drop_cancelled()
            if not self._timers:
                raise Deadlock(f"every task waits and no timer is set: {_waiting_tasks()}")
            self._advance(self._timers[0][0])

    async def _wait_idle(self) -> None:
        loop = self.loop
        while True:
            await asyncio.sleep(0)
            if loop._ready:  # type: ignore[attr-defined]  # see the module docstring
                continue
            if self._threads:
                self._threads_idle = asyncio.Event()
                await self._threads_idle.wait()
                continue
            real_timer = _earliest_loop_timer(loop)
            if real_timer is not None:
                delay = real_timer.when() - loop.time()
                if delay > self.max_real_wait_s:
                    raise RealTimeWait(
                        f"a real-time timer {delay:.3f}s away ({real_timer!r}): some code "
                        "waits on the event loop's clock, not on trawl.clock.Clock"
                    )
                await asyncio.sleep(max(0.0, delay))
                continue
            return

    def _advance(self, at: float) -> None:
        self._now = max(self._now, at)
        self.jumps += 1
        while self._timers and self._timers[0][0] <= self._now:
            _, _, timer = heapq.heappop(self._timers)
            if not timer.done():
                timer.set_result(None)

    def _add_timer(self, at: float) -> asyncio.Future[None]:
        timer: asyncio.Future[None] = self.loop.create_future()
        heapq.heappush(self._timers, (at, next(self._seq), timer))
        return timer

    def _drop_cancelled(self) -> None:
        live = [t for t in self._timers if not t[2].done()]
        if len(live) != len(self._timers):
            heapq.heapify(live)
            self._timers = live

    def _thread_started(self) -> None:
        self._threads += 1

    def _thread_ended(self) -> None:
        self._threads -= 1
        if not self._threads and self._threads_idle is not None:
            self._threads_idle.set()

    def pending_timers(self) -> list[float]:
        """The virtual times of live timers, earliest first (for tests and messages)."""
        return sorted(at for at, _, timer in self._timers if not timer.done())

    def __repr__(self) -> str:
        elapsed_s = self._now - self.started_at
        timers = len(self.pending_timers())
        return (
            f"<VirtualClock +{elapsed_s:.3f}s {timers=} threads={self._threads} jumps={self.jumps}>"
        )


def _earliest_loop_timer(loop: asyncio.AbstractEventLoop) -> asyncio.TimerHandle | None:
    live = [h for h in loop._scheduled if not h.cancelled()]  # type: ignore[attr-defined]
    return min(live, key=lambda h: h.when()) if live else None


def _waiting_tasks() -> str:
    tasks = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
    return ", ".join(sorted(t.get_name() + ":" + repr(t.get_coro()) for t in tasks))

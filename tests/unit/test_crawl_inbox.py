"""loop.inbox: calls from another thread run at the crawl's next drain point."""

from __future__ import annotations

import asyncio
import threading
import time
from typing import TYPE_CHECKING

import pytest

from trawl.loop.inbox import DRAIN_BUDGET_S, CrawlInbox

if TYPE_CHECKING:
    import concurrent.futures


def _burn(seconds: float) -> None:
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        pass


async def _busy_crawl(inbox: CrawlInbox | None, stop: threading.Event) -> None:
    """60 tasks, each resuming from an await and then holding the loop for 2 ms: every loop
    iteration runs all 60 (~120 ms), like a saturated crawl loop."""

    async def task() -> None:
        while not stop.is_set():
            await asyncio.sleep(0)
            if inbox is not None:
                inbox.drain()
            _burn(0.002)

    await asyncio.gather(*(task() for _ in range(60)))


def _latency_from_another_thread(*, drained: bool) -> float:
    """Seconds from submitting a call on another thread to its answer, median of 5."""
    inbox = CrawlInbox()
    stop = threading.Event()
    loop = asyncio.new_event_loop()
    crawl = threading.Thread(
        target=loop.run_until_complete, args=(_busy_crawl(inbox if drained else None, stop),)
    )
    crawl.start()
    try:
        time.sleep(0.3)
        waits = []
        for _ in range(5):
            began = time.perf_counter()
            assert inbox.submit(lambda: 42, loop).result(timeout=5) == 42
            waits.append(time.perf_counter() - began)
            time.sleep(0.05)
        return sorted(waits)[2]
    finally:
        stop.set()
        crawl.join()
        loop.close()


def test_a_call_waits_for_one_step_not_for_the_whole_busy_iteration() -> None:
    # Without drain points the call waits for the next iteration (the ~120 ms of callbacks
    # already ready); with them, for the 2 ms step that is running, plus thread hand-offs
    # (~6 ms measured on an idle machine: the margin is for a loaded one).
    undrained = _latency_from_another_thread(drained=False)
    drained = _latency_from_another_thread(drained=True)
    assert undrained > 0.06
    assert drained < undrained / 3


def test_results_errors_order_and_cancelled_calls() -> None:
    inbox = CrawlInbox()
    loop = asyncio.new_event_loop()
    try:
        ran: list[int] = []

        def note(n: int, answer: str) -> str:
            ran.append(n)
            return answer

        first = inbox.submit(lambda: note(1, "one"), loop)
        failing = inbox.submit(lambda: 1 / 0, loop)
        dropped = inbox.submit(lambda: note(99, "never"), loop)
        assert dropped.cancel()  # a caller that gave up: never run
        last = inbox.submit(lambda: note(2, "two"), loop)
        assert not first.done()  # nothing runs until the crawl loop drains
        inbox.drain()
        assert (first.result(), last.result(), ran) == ("one", "two", [1, 2])
        with pytest.raises(ZeroDivisionError):
            failing.result()
        assert inbox.ran == 3
        loop.run_until_complete(asyncio.sleep(0))  # the scheduled drains find nothing left
        assert inbox.ran == 3
    finally:
        loop.close()


def test_an_idle_loop_runs_a_call_without_any_drain_point() -> None:
    inbox = CrawlInbox()
    loop = asyncio.new_event_loop()
    crawl = threading.Thread(target=loop.run_forever)
    crawl.start()
    try:
        future: concurrent.futures.Future[str] = inbox.submit(lambda: "idle", loop)
        assert future.result(timeout=5) == "idle"
    finally:
        loop.call_soon_threadsafe(loop.stop)
        crawl.join()
        loop.close()


def test_a_drain_leaves_calls_handed_in_while_it_runs_to_the_next_one() -> None:
    """The API's thread hands in the next call whenever the loop lets go of the GIL; a
    drain that took those too ran for as long as they kept coming (a 732 ms stall while
    2,000 sites were paused from 16 connections)."""
    inbox = CrawlInbox()
    loop = asyncio.new_event_loop()
    try:
        ran: list[str] = []
        later: list[concurrent.futures.Future[None]] = []

        def first() -> None:
            ran.append("first")
            later.append(inbox.submit(lambda: ran.append("handed in meanwhile"), loop))

        inbox.submit(first, loop)
        inbox.drain()
        assert ran == ["first"]
        assert not later[0].done()
        inbox.drain()
        assert ran == ["first", "handed in meanwhile"]
    finally:
        loop.close()


def test_a_drain_stops_at_its_budget_and_the_loop_runs_the_rest_soon() -> None:
    now = [0.0]
    inbox = CrawlInbox(clock=lambda: now[0])
    loop = asyncio.new_event_loop()
    try:
        ran: list[int] = []

        def call(n: int) -> None:
            ran.append(n)
            now[0] += DRAIN_BUDGET_S * 0.4  # each call takes 40 % of the budget

        futures = [inbox.submit(lambda n=n: call(n), loop) for n in range(5)]
        inbox.drain()
        assert ran == [0, 1, 2]  # the third call passed the budget: the drain stopped there
        assert not futures[3].done()
        # No drain point comes (an idle loop): the drain the first one scheduled runs the rest.
        loop.run_until_complete(asyncio.sleep(0))
        assert ran == [0, 1, 2, 3, 4]
        assert all(f.done() for f in futures)
    finally:
        loop.close()

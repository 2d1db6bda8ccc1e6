"""The virtual clock itself: time moves only when every task waits on it, and exactly."""

from __future__ import annotations

import asyncio
import time

import pytest
from tests.loop.virtual_clock import START_AT, Deadlock, RealTimeWait, VirtualClock


def run(clock: VirtualClock, main):  # type: ignore[no-untyped-def]
    return asyncio.run(clock.run(main))


def test_sleep_until_wakes_exactly_at_its_time() -> None:
    clock = VirtualClock()
    woke: list[tuple[str, float]] = []

    async def sleeper(name: str, at: float) -> None:
        await clock.sleep_until(at)
        woke.append((name, clock.now()))

    async def main() -> None:
        async with asyncio.TaskGroup() as tasks:
            tasks.create_task(sleeper("late", START_AT + 90.25))
            tasks.create_task(sleeper("early", START_AT + 1.5))
            tasks.create_task(sleeper("past", START_AT - 10))

    run(clock, main())
    assert woke == [("past", START_AT), ("early", START_AT + 1.5), ("late", START_AT + 90.25)]


def test_time_stands_still_while_any_task_can_run() -> None:
    clock = VirtualClock()
    seen: list[float] = []

    async def busy() -> None:
        for _ in range(200):
            seen.append(clock.now())
            await asyncio.sleep(0)

    async def main() -> None:
        async with asyncio.TaskGroup() as tasks:
            tasks.create_task(busy())
            tasks.create_task(clock.sleep_until(START_AT + 5))
        seen.append(clock.now())

    run(clock, main())
    assert set(seen[:-1]) == {START_AT}
    assert seen[-1] == START_AT + 5


def test_wait_for_returns_true_when_set_and_false_at_its_timeout() -> None:
    clock = VirtualClock()
    event = asyncio.Event()
    results: list[tuple[bool, float]] = []

    async def waiter(timeout_s: float) -> None:
        results.append((await clock.wait_for(event, timeout_s), clock.now() - START_AT))

    async def setter() -> None:
        await clock.sleep_until(START_AT + 3)
        event.set()

    async def main() -> None:
        async with asyncio.TaskGroup() as tasks:
            tasks.create_task(waiter(2.0))  # times out before the event
            tasks.create_task(waiter(10.0))  # the event comes first
            tasks.create_task(setter())
        results.append((await clock.wait_for(event, 100.0), clock.now() - START_AT))

    run(clock, main())
    assert results == [(False, 2.0), (True, 3.0), (True, 3.0)]
    assert clock.pending_timers() == []  # the 10 s timeout went away with its wait


def test_time_does_not_jump_while_a_thread_works() -> None:
    clock = VirtualClock()
    order: list[tuple[str, float]] = []

    def slow_work() -> str:
        time.sleep(0.05)  # real time: the virtual clock must wait for it
        return "done"

    async def threaded() -> None:
        order.append((await asyncio.to_thread(slow_work), clock.now() - START_AT))

    async def in_executor() -> None:
        loop = asyncio.get_running_loop()
        await loop.run_in_executor(None, slow_work)
        order.append(("executor", clock.now() - START_AT))

    async def tracked_pool() -> None:
        pool = clock.executor(1)
        try:
            await asyncio.get_running_loop().run_in_executor(pool, slow_work)
        finally:
            pool.shutdown()
        order.append(("pool", clock.now() - START_AT))

    async def sleeper() -> None:
        await clock.sleep_until(START_AT + 1)
        order.append(("sleeper", clock.now() - START_AT))

    async def main() -> None:
        async with asyncio.TaskGroup() as tasks:
            for work in (threaded, in_executor, tracked_pool, sleeper):
                tasks.create_task(work())

    run(clock, main())
    assert sorted(order[:3]) == [("done", 0.0), ("executor", 0.0), ("pool", 0.0)]
    assert order[3] == ("sleeper", 1.0)


def test_a_threads_result_reaches_its_task_before_time_moves() -> None:
    """Many quick thread calls beside a ticking timer: each result is seen at the virtual
    instant its call was made (a count dropped ahead of the result let time jump)."""
    clock = VirtualClock()
    seen_at: list[float] = []

    async def worker() -> None:
        pool = clock.executor(2)
        loop = asyncio.get_running_loop()
        try:
            for _ in range(300):
                made_at = clock.now()
                await loop.run_in_executor(pool, sum, range(50))
                seen_at.append(clock.now() - made_at)
                await clock.sleep_until(clock.now() + 0.01)
        finally:
            pool.shutdown()

    async def ticker() -> None:
        for n in range(1, 3000):
            await clock.sleep_until(START_AT + n * 0.001)

    async def main() -> None:
        async with asyncio.TaskGroup() as tasks:
            tasks.create_task(worker())
            tasks.create_task(ticker())

    run(clock, main())
    assert seen_at == [0.0] * 300


def test_short_loop_timers_are_waited_out_in_real_time() -> None:
    clock = VirtualClock()
    order: list[str] = []

    async def main() -> None:
        loop = asyncio.get_running_loop()
        loop.call_later(0.003, order.append, "batch timer")  # as loop.cpu_batches does
        await clock.sleep_until(START_AT + 60)
        order.append("sleeper")

    run(clock, main())
    assert order == ["batch timer", "sleeper"]


def test_a_long_real_time_wait_is_reported_not_waited() -> None:
    clock = VirtualClock(max_real_wait_s=0.1)

    async def main() -> None:
        await asyncio.sleep(30)

    started = time.monotonic()
    with pytest.raises(RealTimeWait, match=r"not on trawl\.clock\.Clock"):
        run(clock, main())
    assert time.monotonic() - started < 5


def test_every_task_waiting_without_a_timer_is_a_deadlock() -> None:
    clock = VirtualClock()

    async def main() -> None:
        await asyncio.Event().wait()

    with pytest.raises(Deadlock, match="no timer is set"):
        run(clock, main())


def test_an_hour_of_one_second_steps_takes_little_real_time() -> None:
    clock = VirtualClock()

    async def ticker(offset: float) -> None:
        for second in range(3600):
            await clock.sleep_until(START_AT + offset + second)

    async def main() -> None:
        async with asyncio.TaskGroup() as tasks:
            for n in range(4):
                tasks.create_task(ticker(n / 4))

    started = time.monotonic()
    run(clock, main())
    real_s = time.monotonic() - started
    print(f"3600 virtual s in {real_s:.3f} real s, {clock.jumps} jumps")
    assert clock.now() == START_AT + 3599.75
    assert clock.jumps == 4 * 3600 - 1  # the first tick of the first ticker is now


def test_the_loop_internals_the_driver_reads_exist() -> None:
    """The driver reads CPython's private ready queue and timer heap: fail here, loudly,
    if a Python release renames them."""

    async def main() -> None:
        loop = asyncio.get_running_loop()
        assert hasattr(loop, "_ready")
        assert hasattr(loop, "_scheduled")

    asyncio.run(main())

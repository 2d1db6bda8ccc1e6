"""ProcessPool: real worker processes behind socket pairs, answered on the event loop
(loop.process_pool). Each test starts its own small pool on a plain fork context (faster
than the forkserver; the crawl's forkserver path is covered by test_cpu_batches)."""

from __future__ import annotations

import asyncio
import multiprocessing
import os
import pickle
import signal
import struct
import time
from concurrent.futures.process import BrokenProcessPool
from typing import TYPE_CHECKING, Any, TypeVar

import pytest
import uvloop

from trawl.loop.process_pool import PREFETCH, ProcessPool, _Worker, frame_header

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable, Iterator

T = TypeVar("T")


def _no_setup() -> None:
    return None


def _echo(value: Any) -> Any:
    return value


def _pid_after(seconds: float) -> int:
    time.sleep(seconds)
    return os.getpid()


def _fail(message: str) -> None:
    raise ValueError(message)


def _unpicklable() -> Any:
    return lambda: None


def _die() -> None:
    os.kill(os.getpid(), signal.SIGKILL)


@pytest.fixture(params=["asyncio", "uvloop"])
def loop_factory(request: pytest.FixtureRequest) -> Callable[[], asyncio.AbstractEventLoop]:
    """Both loops: the crawl runs on uvloop, whose transports differ from asyncio's."""
    return uvloop.new_event_loop if request.param == "uvloop" else asyncio.new_event_loop


def _run(loop_factory: Callable[[], asyncio.AbstractEventLoop], main: Awaitable[T]) -> T:
    with asyncio.Runner(loop_factory=loop_factory) as runner:
        return runner.run(main)  # type: ignore[arg-type]


@pytest.fixture
def pool() -> Iterator[ProcessPool]:
    started = ProcessPool.start(2, _no_setup, multiprocessing.get_context("fork"))
    yield started
    started.kill()


def test_answers_and_errors_come_back_to_their_callers(
    loop_factory: Callable[[], asyncio.AbstractEventLoop], pool: ProcessPool
) -> None:
    async def main() -> list[Any]:
        try:
            calls = [pool.call(_echo, i) for i in range(20)] + [pool.call(_fail, "no")]
            return await asyncio.gather(*calls, return_exceptions=True)
        finally:
            pool.shutdown()

    *answers, error = _run(loop_factory, main())
    assert answers == list(range(20))
    assert isinstance(error, ValueError)
    assert str(error) == "no"


def test_a_large_payload_crosses_whole_both_ways(
    loop_factory: Callable[[], asyncio.AbstractEventLoop], pool: ProcessPool
) -> None:
    body = os.urandom(5_000_000)  # many reads and writes of the socket each way

    async def main() -> bytes:
        try:
            return await pool.call(_echo, body)  # type: ignore[no-any-return]
        finally:
            pool.shutdown()

    assert _run(loop_factory, main()) == body


def test_an_unpicklable_answer_is_an_error_not_a_hang(
    loop_factory: Callable[[], asyncio.AbstractEventLoop], pool: ProcessPool
) -> None:
    async def main() -> Any:
        try:
            return await asyncio.wait_for(pool.call(_unpicklable), 30)
        finally:
            pool.shutdown()

    with pytest.raises(RuntimeError, match="unpicklable answer"):
        _run(loop_factory, main())


def test_work_spreads_over_the_workers_and_waits_beyond_what_they_hold(
    loop_factory: Callable[[], asyncio.AbstractEventLoop], pool: ProcessPool
) -> None:
    n = 2 * PREFETCH + 3  # more than both workers take at once: some wait in the pool

    async def main() -> list[int]:
        try:
            return list(await asyncio.gather(*(pool.call(_pid_after, 0.05) for _ in range(n))))
        finally:
            pool.shutdown()

    pids = _run(loop_factory, main())
    assert len(pids) == n
    assert set(pids) == set(pool.pids)


def test_a_dead_worker_breaks_the_pool_for_its_calls_and_all_later_ones(
    loop_factory: Callable[[], asyncio.AbstractEventLoop], pool: ProcessPool
) -> None:
    async def main() -> tuple[BaseException | None, BaseException | None]:
        try:
            slow = asyncio.ensure_future(pool.call(_pid_after, 0.5))
            with pytest.raises(BrokenProcessPool):
                await asyncio.wait_for(pool.call(_die), 30)
            # The other worker's call in flight fails too (the pool is replaced whole).
            outcome = await asyncio.gather(slow, return_exceptions=True)
            later = await asyncio.gather(pool.call(_echo, 1), return_exceptions=True)
            return outcome[0] if isinstance(outcome[0], BaseException) else None, later[0]
        finally:
            pool.shutdown()

    slow_error, later_error = _run(loop_factory, main())
    assert pool.broken
    assert isinstance(slow_error, BrokenProcessPool)
    assert isinstance(later_error, BrokenProcessPool)


def test_shutdown_ends_every_worker_promptly(
    loop_factory: Callable[[], asyncio.AbstractEventLoop],
) -> None:
    pool = ProcessPool.start(2, _no_setup, multiprocessing.get_context("fork"))

    async def main() -> None:
        assert await pool.call(_echo, 3) == 3
        started = time.monotonic()
        pool.shutdown()
        assert time.monotonic() - started < 2.0

    _run(loop_factory, main())
    assert all(not _alive(pid) for pid in pool.pids)


def test_shutdown_ends_workers_whose_sockets_never_met_a_loop() -> None:
    pool = ProcessPool.start(2, _no_setup, multiprocessing.get_context("fork"))
    started = time.monotonic()
    pool.shutdown()
    assert time.monotonic() - started < 2.0
    assert all(not _alive(pid) for pid in pool.pids)


def test_a_pool_answers_on_one_event_loop_only(
    loop_factory: Callable[[], asyncio.AbstractEventLoop], pool: ProcessPool
) -> None:
    async def first() -> Any:
        return await pool.call(_echo, 1)

    async def second() -> Any:
        try:
            return await pool.call(_echo, 2)
        finally:
            pool.shutdown()

    with asyncio.Runner(loop_factory=loop_factory) as one:
        assert one.run(first()) == 1
        with asyncio.Runner() as other, pytest.raises(RuntimeError, match="event loop"):
            other.run(second())


def test_a_worker_that_fails_to_start_is_reported() -> None:
    with pytest.raises(BrokenProcessPool):
        ProcessPool.start(1, _die, multiprocessing.get_context("fork"))


def test_frames_are_read_across_reads_and_in_the_long_form() -> None:
    """The answer parser: a frame split over reads, two in one read, and the 2 GiB form
    (header -1, then an 8-byte length) that Connection.send_bytes writes for huge answers."""
    answered: list[bytes] = []

    class Recorder(_Worker):
        def _answered(self, payload: bytes) -> None:
            answered.append(payload)

    worker = Recorder.__new__(Recorder)
    worker._buffer = bytearray()
    one = frame_header(12) + b"first answer"
    two = frame_header(6) + b"second"
    long_form = struct.pack("!i", -1) + struct.pack("!Q", 5) + b"third"
    stream = one + two + long_form
    for i in range(0, len(stream), 5):
        worker.data_received(stream[i : i + 5])
    assert answered == [b"first answer", b"second", b"third"]
    assert frame_header(1) == struct.pack("!i", 1)
    assert frame_header(1 << 31) == struct.pack("!i", -1) + struct.pack("!Q", 1 << 31)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().rsplit(")", 1)[1].split()[0] not in ("Z", "X")
    except FileNotFoundError:
        return False


def test_unpicklable_arguments_fail_their_own_call_only(
    loop_factory: Callable[[], asyncio.AbstractEventLoop], pool: ProcessPool
) -> None:
    n = 2 * PREFETCH + 2  # the bad call waits in the pool, and is pickled from there

    async def main() -> list[Any]:
        try:
            calls = [pool.call(_pid_after, 0.05) for _ in range(n)]
            calls.append(pool.call(_echo, lambda: None))
            calls.append(pool.call(_echo, "after"))
            return await asyncio.gather(*calls, return_exceptions=True)
        finally:
            pool.shutdown()

    *pids, bad, after = _run(loop_factory, main())
    assert set(pids) == set(pool.pids)
    assert isinstance(bad, (pickle.PicklingError, AttributeError, TypeError)), bad
    assert after == "after"


def test_a_call_cut_short_by_shutdown_is_cancelled_not_broken(
    loop_factory: Callable[[], asyncio.AbstractEventLoop], pool: ProcessPool
) -> None:
    """WorkerPool replaces a broken pool and redoes its calls: a pool shut down under a call
    must not look broken, or a stopping crawl would start new workers."""

    async def main() -> BaseException | None:
        slow = asyncio.ensure_future(pool.call(_pid_after, 1.0))
        await asyncio.sleep(0.1)
        pool.shutdown()
        (outcome,) = await asyncio.gather(slow, return_exceptions=True)
        return outcome if isinstance(outcome, BaseException) else None

    assert isinstance(_run(loop_factory, main()), asyncio.CancelledError)
    assert not pool.broken

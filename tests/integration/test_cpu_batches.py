"""BatchedWorkers over a real process pool: every page gets its own result or error, and
a batch whose worker process died is redone on a fresh pool (issue 13)."""

from __future__ import annotations

import asyncio
import functools
import os
import signal
from typing import TYPE_CHECKING

import pytest

from trawl.loop.cpu_batches import BatchedWorkers
from trawl.loop.workers import MAX_ATTEMPTS, WorkerCrashed, WorkerPool, start_process_pool

if TYPE_CHECKING:
    from collections.abc import Iterator
    from pathlib import Path


def square_or_fail(items: list[int]) -> list[int | BaseException]:
    return [ValueError(f"bad {i}") if i < 0 else i * i for i in items]


def die_once_then_square(marker: str, items: list[int]) -> list[int | BaseException]:
    """SIGKILLs its own worker process the first time (`marker` does not exist yet)."""
    try:
        with open(marker, "x"):
            pass
    except FileExistsError:
        return [i * i for i in items]
    os.kill(os.getpid(), signal.SIGKILL)
    raise AssertionError("unreachable: SIGKILL cannot be caught")


def always_die(items: list[int]) -> list[int | BaseException]:
    os.kill(os.getpid(), signal.SIGKILL)
    raise AssertionError("unreachable: SIGKILL cannot be caught")


def no_setup() -> None:
    pass


def new_pool() -> WorkerPool:
    return WorkerPool(functools.partial(start_process_pool, 2, no_setup, ()))


@pytest.fixture(scope="module")
def pool() -> Iterator[WorkerPool]:
    workers = new_pool()
    yield workers
    workers.shutdown()


def test_results_reach_their_own_callers_in_batches(pool: WorkerPool) -> None:
    async def main() -> tuple[list[int], int]:
        workers: BatchedWorkers[int, int] = BatchedWorkers(pool, square_or_fail, max_batch=8)
        results = await asyncio.gather(*(workers.run(i) for i in range(50)))
        return list(results), workers.batches

    results, batches = asyncio.run(main())
    assert results == [i * i for i in range(50)]
    assert batches == 7  # 6 full batches of 8, then 2 sent by the timer


def test_a_lone_item_is_sent_after_the_wait(pool: WorkerPool) -> None:
    async def main() -> int:
        workers: BatchedWorkers[int, int] = BatchedWorkers(pool, square_or_fail, max_wait_s=0.01)
        return await workers.run(7)

    assert asyncio.run(main()) == 49


def test_one_failure_is_raised_only_to_its_caller(pool: WorkerPool) -> None:
    async def main() -> list[int | BaseException]:
        workers: BatchedWorkers[int, int] = BatchedWorkers(pool, square_or_fail)
        return await asyncio.gather(*(workers.run(i) for i in (1, -2, 3)), return_exceptions=True)

    one, bad, three = asyncio.run(main())
    assert (one, three) == (1, 9)
    assert isinstance(bad, ValueError)
    assert str(bad) == "bad -2"


def test_a_cancelled_caller_does_not_disturb_the_batch(pool: WorkerPool) -> None:
    async def main() -> int:
        workers: BatchedWorkers[int, int] = BatchedWorkers(pool, square_or_fail, max_wait_s=0.05)
        doomed = asyncio.ensure_future(workers.run(2))
        survivor = asyncio.ensure_future(workers.run(5))
        await asyncio.sleep(0)
        doomed.cancel()
        return await survivor

    assert asyncio.run(main()) == 25


def test_issue_13_a_killed_worker_is_replaced_and_its_batch_redone(tmp_path: Path) -> None:
    pool = new_pool()
    fn = functools.partial(die_once_then_square, str(tmp_path / "died"))

    async def main() -> list[int]:
        workers: BatchedWorkers[int, int] = BatchedWorkers(pool, fn, max_batch=4)
        return list(await asyncio.gather(*(workers.run(i) for i in range(10))))

    try:
        assert asyncio.run(main()) == [i * i for i in range(10)]
        stats = pool.stats()
        assert stats.replaced == 1, repr(pool)
        assert stats.redone >= 1, repr(pool)  # the batch that died, and any pending with it
        # The fresh pool goes on working.
        assert asyncio.run(main()) == [i * i for i in range(10)]
        assert pool.stats().replaced == 1
    finally:
        pool.shutdown()


def test_issue_13_work_that_always_kills_its_worker_is_raised_as_a_bug() -> None:
    pool = new_pool()

    async def main() -> int:
        workers: BatchedWorkers[int, int] = BatchedWorkers(pool, always_die)
        return await workers.run(3)

    try:
        with pytest.raises(WorkerCrashed, match=f"{MAX_ATTEMPTS} times"):
            asyncio.run(main())
        assert pool.stats().replaced == MAX_ATTEMPTS
    finally:
        pool.shutdown()


def square_or_die_on_13(items: list[int]) -> list[int | BaseException]:
    """Squares, but 13 SIGKILLs the worker it runs in, every time (a poison page)."""
    if 13 in items:
        os.kill(os.getpid(), signal.SIGKILL)
    return [i * i for i in items]


def test_a_batch_that_kept_killing_its_worker_is_split_so_only_its_culprit_fails() -> None:
    pool = new_pool()

    workers: BatchedWorkers[int, int] = BatchedWorkers(pool, square_or_die_on_13, max_batch=8)

    async def main() -> list[int | BaseException]:
        return list(
            await asyncio.gather(*(workers.run(i) for i in range(10, 18)), return_exceptions=True)
        )

    try:
        results = asyncio.run(main())
        assert (workers.batches, workers.split) == (1, 1)
        assert isinstance(results[3], WorkerCrashed), results
        assert results[:3] + results[4:] == [i * i for i in (10, 11, 12, 14, 15, 16, 17)]
        # The whole batch broke MAX_ATTEMPTS pools, then 13 alone did as many again.
        assert pool.stats().replaced == 2 * MAX_ATTEMPTS, repr(pool)
    finally:
        pool.shutdown()

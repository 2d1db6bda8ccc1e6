"""BatchedWorkers over a real process pool: every page gets its own result or error."""

from __future__ import annotations

import asyncio
import multiprocessing
from concurrent.futures import ProcessPoolExecutor
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from collections.abc import Iterator

from trawl.cpu_batches import BatchedWorkers


def square_or_fail(items: list[int]) -> list[int | BaseException]:
    return [ValueError(f"bad {i}") if i < 0 else i * i for i in items]


@pytest.fixture(scope="module")
def pool() -> Iterator[ProcessPoolExecutor]:
    with ProcessPoolExecutor(2, mp_context=multiprocessing.get_context("forkserver")) as p:
        yield p


def test_results_reach_their_own_callers_in_batches(pool: ProcessPoolExecutor) -> None:
    async def main() -> tuple[list[int], int]:
        workers: BatchedWorkers[int, int] = BatchedWorkers(pool, square_or_fail, max_batch=8)
        results = await asyncio.gather(*(workers.run(i) for i in range(50)))
        return list(results), workers.batches

    results, batches = asyncio.run(main())
    assert results == [i * i for i in range(50)]
    assert batches == 7  # 6 full batches of 8, then 2 sent by the timer


def test_a_lone_item_is_sent_after_the_wait(pool: ProcessPoolExecutor) -> None:
    async def main() -> int:
        workers: BatchedWorkers[int, int] = BatchedWorkers(pool, square_or_fail, max_wait_s=0.01)
        return await workers.run(7)

    assert asyncio.run(main()) == 49


def test_one_failure_is_raised_only_to_its_caller(pool: ProcessPoolExecutor) -> None:
    async def main() -> list[int | BaseException]:
        workers: BatchedWorkers[int, int] = BatchedWorkers(pool, square_or_fail)
        return await asyncio.gather(*(workers.run(i) for i in (1, -2, 3)), return_exceptions=True)

    one, bad, three = asyncio.run(main())
    assert (one, three) == (1, 9)
    assert isinstance(bad, ValueError)
    assert str(bad) == "bad -2"


def test_a_cancelled_caller_does_not_disturb_the_batch(pool: ProcessPoolExecutor) -> None:
    async def main() -> int:
        workers: BatchedWorkers[int, int] = BatchedWorkers(pool, square_or_fail, max_wait_s=0.05)
        doomed = asyncio.ensure_future(workers.run(2))
        survivor = asyncio.ensure_future(workers.run(5))
        await asyncio.sleep(0)
        doomed.cancel()
        return await survivor

    assert asyncio.run(main()) == 25

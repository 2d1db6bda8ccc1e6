"""Calls made together are served as one batch (cluster/call_batches.py, issue 19)."""

from __future__ import annotations

import asyncio

import pytest

from trawl.cluster.call_batches import CallBatches


def test_calls_of_one_loop_pass_form_one_batch_and_later_ones_the_next() -> None:
    seen: list[dict[int, str]] = []

    async def work(batch: dict[int, str]) -> None:
        seen.append(dict(batch))
        await asyncio.sleep(0.01)

    async def body() -> None:
        batches = CallBatches(work)
        first = [asyncio.create_task(batches.join(p, f"t{p}")) for p in range(5)]
        await asyncio.sleep(0.001)  # the first batch is running now
        late = [asyncio.create_task(batches.join(p, "late")) for p in (7, 8)]
        await asyncio.gather(*first, *late)
        assert batches.batches == 2

    asyncio.run(body())
    assert seen == [{p: f"t{p}" for p in range(5)}, {7: "late", 8: "late"}]


def test_a_batchs_error_reaches_each_of_its_calls_and_the_next_batch_runs() -> None:
    async def work(batch: dict[int, None]) -> None:
        if 1 in batch:
            raise ValueError("checkpoint store refused")

    async def body() -> None:
        batches: CallBatches[int, None] = CallBatches(work)
        failing = await asyncio.gather(
            batches.join(1, None), batches.join(2, None), return_exceptions=True
        )
        assert [type(e) for e in failing] == [ValueError, ValueError]
        await batches.join(3, None)  # the runner carries on

    asyncio.run(body())


def test_a_cancelled_call_leaves_its_batch_to_run() -> None:
    done: list[int] = []

    async def work(batch: dict[int, None]) -> None:
        await asyncio.sleep(0.01)
        done.extend(batch)

    async def body() -> None:
        batches: CallBatches[int, None] = CallBatches(work)
        gone = asyncio.create_task(batches.join(1, None))
        stays = asyncio.create_task(batches.join(2, None))
        await asyncio.sleep(0.001)
        gone.cancel()
        await stays
        with pytest.raises(asyncio.CancelledError):
            await gone

    asyncio.run(body())
    assert done == [1, 2]


def test_a_key_is_joined_once_at_a_time() -> None:
    async def work(batch: dict[int, None]) -> None:
        await asyncio.sleep(0.01)

    async def body() -> None:
        batches: CallBatches[int, None] = CallBatches(work)
        first = asyncio.create_task(batches.join(1, None))
        await asyncio.sleep(0)
        with pytest.raises(AssertionError, match="joined twice"):
            await batches.join(1, None)
        await first

    asyncio.run(body())

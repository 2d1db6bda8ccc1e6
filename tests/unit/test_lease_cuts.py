"""Requests cut at their lease's local deadline, moved by renewals (cluster/lease_cuts.py)."""

from __future__ import annotations

import asyncio
import time

import pytest

from trawl.cluster.lease_cuts import LeaseCuts


async def on_the_wire(cuts: LeaseCuts, partition: int, for_s: float) -> float | None:
    """None when the block ran its `for_s`; else when it was cut (monotonic)."""
    try:
        async with cuts.cut(partition):
            await asyncio.sleep(for_s)
    except TimeoutError:
        return time.monotonic()
    return None


def test_a_partition_without_a_deadline_cuts_at_once() -> None:
    cuts = LeaseCuts()
    assert asyncio.run(on_the_wire(cuts, 3, 1.0)) is not None
    assert cuts.cut_count == 1


def test_an_endless_lease_never_cuts() -> None:
    cuts = LeaseCuts()
    cuts.deadline(3, float("inf"))
    assert asyncio.run(on_the_wire(cuts, 3, 0.05)) is None
    assert cuts.cut_count == 0


def test_other_partitions_deadlines_leave_a_request_alone() -> None:
    async def body() -> None:
        cuts = LeaseCuts()
        cuts.deadline(1, time.monotonic() + 0.3)
        cuts.deadline(2, time.monotonic() + 0.05)
        request = asyncio.create_task(on_the_wire(cuts, 1, 0.2))
        await asyncio.sleep(0.1)
        cuts.deadline(2, float("-inf"))  # another partition lost
        assert await request is None

    asyncio.run(body())


def test_a_deadline_told_while_a_cut_is_under_way_is_no_error() -> None:
    # A renewal's answer can arrive in the loop pass where its request's timer fired: the
    # cut goes ahead (CI-like load found it: "Cannot change state of expiring Timeout").
    async def body() -> None:
        cuts = LeaseCuts()
        cuts.deadline(7, time.monotonic() + 0.01)
        request = asyncio.create_task(on_the_wire(cuts, 7, 1.0))
        await asyncio.sleep(0)  # the request is on the wire
        time.sleep(0.03)  # noqa: ASYNC251 - a late loop: the timer is due at the next pass
        await asyncio.sleep(0)  # the pass that runs the due timer after this task's step
        await asyncio.sleep(0)  # the timer has fired: the request's cancel is pending...
        cuts.deadline(7, time.monotonic() + 5.0)  # ...as a renewal's answer arrives
        assert await request is not None

    asyncio.run(body())


@pytest.mark.parametrize("moves", [1, 3])
def test_each_renewal_moves_the_cut(moves: int) -> None:
    async def body() -> tuple[float, float | None]:
        cuts = LeaseCuts()
        start = time.monotonic()
        cuts.deadline(0, start + 0.1)
        request = asyncio.create_task(on_the_wire(cuts, 0, 5.0))
        for i in range(moves):
            await asyncio.sleep(0.05)
            cuts.deadline(0, start + 0.1 + 0.1 * (i + 1))
        return start, await request

    start, cut_at = asyncio.run(body())
    assert cut_at is not None
    assert 0.1 + 0.1 * moves <= cut_at - start < 0.1 + 0.1 * moves + 0.1

"""Page workers run niced below the crawl loop (loop.workers.yield_cpu_to_the_loop)."""

from __future__ import annotations

import asyncio
import os
from typing import TYPE_CHECKING, Any

from trawl.loop.gc_tuning import GC_THRESHOLDS
from trawl.loop.workers import WORKER_NICENESS, start_process_pool

if TYPE_CHECKING:
    from collections.abc import Callable

    from trawl.loop.process_pool import ProcessPool


async def _in_workers(
    pool: ProcessPool, fn: Callable[..., Any], *args: Any, times: int = 1
) -> list[Any]:
    """`fn(*args)` `times` times at once, so that each worker gets some; then the pool is
    shut down (on its loop, which closes its sockets)."""
    try:
        return list(await asyncio.gather(*(pool.call(fn, *args) for _ in range(times))))
    finally:
        pool.shutdown()


def _gc_state() -> tuple[tuple[int, ...], int]:
    import gc

    return gc.get_threshold(), gc.get_freeze_count()


def test_workers_run_at_a_lower_cpu_priority_than_the_loop() -> None:
    pool = start_process_pool(2, int, ())
    try:
        niceness = set(asyncio.run(_in_workers(pool, os.nice, 0, times=4)))
    finally:
        pool.shutdown()
    ours = os.nice(0)
    assert niceness == {min(19, ours + WORKER_NICENESS)}


def test_workers_and_the_crawl_process_collect_garbage_less_often() -> None:
    import subprocess
    import sys

    pool = start_process_pool(1, int, ())
    try:
        ((thresholds, frozen),) = asyncio.run(_in_workers(pool, _gc_state))
    finally:
        pool.shutdown()
    assert thresholds == GC_THRESHOLDS
    assert frozen > 0
    # The crawl's own process: run_async tunes it before the loop starts.
    probe = (
        "import gc; from trawl.cli.runner import run_async\n"
        "async def main(): return gc.get_threshold(), gc.get_freeze_count()\n"
        "print(run_async(main()))"
    )
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert out.stdout.startswith(f"({GC_THRESHOLDS}, ")
    assert not out.stdout.startswith(f"({GC_THRESHOLDS}, 0)")

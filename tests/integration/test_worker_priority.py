"""Page workers run niced below the crawl loop (loop.workers.yield_cpu_to_the_loop)."""

from __future__ import annotations

import os

from trawl.loop.gc_tuning import GC_THRESHOLDS
from trawl.loop.workers import WORKER_NICENESS, start_process_pool


def test_workers_run_at_a_lower_cpu_priority_than_the_loop() -> None:
    pool = start_process_pool(2, int, ())
    try:
        niceness = {pool.submit(os.nice, 0).result() for _ in range(4)}
    finally:
        pool.shutdown(wait=True)
    ours = os.nice(0)
    assert niceness == {min(19, ours + WORKER_NICENESS)}


def test_workers_and_the_crawl_process_collect_garbage_less_often() -> None:
    import gc
    import subprocess
    import sys

    pool = start_process_pool(1, int, ())
    try:
        thresholds = pool.submit(gc.get_threshold).result()
        frozen = pool.submit(gc.get_freeze_count).result()
    finally:
        pool.shutdown(wait=True)
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

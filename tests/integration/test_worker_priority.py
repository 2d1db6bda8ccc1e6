"""Page workers run niced below the crawl loop (loop.workers.yield_cpu_to_the_loop)."""

from __future__ import annotations

import os

from trawl.loop.workers import WORKER_NICENESS, start_process_pool


def test_workers_run_at_a_lower_cpu_priority_than_the_loop() -> None:
    pool = start_process_pool(2, int, ())
    try:
        niceness = {pool.submit(os.nice, 0).result() for _ in range(4)}
    finally:
        pool.shutdown(wait=True)
    ours = os.nice(0)
    assert niceness == {min(19, ours + WORKER_NICENESS)}

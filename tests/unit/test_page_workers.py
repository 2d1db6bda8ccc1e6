"""How many page workers a crawl starts (loop.workers.page_workers)."""

from __future__ import annotations

import os

from trawl.loop.workers import MAX_PAGE_WORKERS, page_workers, usable_cpus


def test_two_cores_get_two_workers() -> None:
    # The workers are niced: the crawl loop still gets a core when it wants one.
    assert page_workers(2) == 2


def test_one_core_still_gets_a_worker() -> None:
    assert page_workers(1) == 1
    assert page_workers(0) == 1


def test_more_cores_add_workers_up_to_the_cap() -> None:
    assert [page_workers(n) for n in (3, 4, 8, 64)] == [MAX_PAGE_WORKERS] * 4


def test_usable_cpus_counts_this_process_s_cores() -> None:
    cpus = usable_cpus()
    assert 1 <= cpus <= (os.cpu_count() or cpus)

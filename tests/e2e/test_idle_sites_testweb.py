"""A whole crawl of the local test web with sites leaving memory between nearly every pair of
requests (`crawl.site_idle_s` = 0.5 s against gaps of 1 s and more), checked from outside.

Every site is read back from its host record again and again: its clock, robots rules,
Crawl-delay and counters must come back whole, or the request log shows it (a second
robots.txt, a short gap, a page fetched twice or never).
"""

from __future__ import annotations

import asyncio
import io
from collections import Counter
from typing import TYPE_CHECKING

import pytest
from tests.e2e.test_crawl_testweb import (
    PAGES,
    SITES,
    CrawlRun,
    crawl_settings,
    page_requests,
)

from trawl.cli.runner import run_crawl
from trawl.config import with_overrides
from trawl.testweb.politeness import check_politeness
from trawl.testweb.process import TestWebProcess

if TYPE_CHECKING:
    from collections.abc import Iterator

IDLE_S = 0.5


@pytest.fixture(scope="module")
def churned(tmp_path_factory: pytest.TempPathFactory) -> Iterator[CrawlRun]:
    tmp = tmp_path_factory.mktemp("idle")
    with TestWebProcess(sites=SITES, pages=PAGES, seed=7, workdir=tmp / "web") as web:
        seeds = [(u, "test seed") for u in web.seeds]
        settings = with_overrides(crawl_settings(web), crawl={"site_idle_s": IDLE_S})
        summary = asyncio.run(run_crawl(settings, tmp / "data", seeds, io.StringIO(), is_tty=False))
        web.stop()
        yield CrawlRun(web, tmp / "data", summary, web.requests())


def test_sites_left_memory_and_came_back_many_times(churned: CrawlRun) -> None:
    assert churned.summary.stats.sites_forgotten >= SITES


def test_every_page_is_fetched_once_and_no_rule_is_broken(churned: CrawlRun) -> None:
    web = churned.web.web
    fetched = page_requests(churned.requests)
    assert set(fetched) == web.expected_fetches(churned.web.port)
    assert [k for k, n in fetched.items() if n > 1] == []
    assert check_politeness(churned.requests, **web.politeness_inputs()) == []
    robots = Counter(r.host for r in churned.requests if r.path == "/robots.txt")
    assert set(robots) == web.expected_robots(churned.web.port)
    assert max(robots.values()) == 1  # the rules came back from the host record

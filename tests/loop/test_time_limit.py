"""The time limit bounds the run, even when many turns wait behind one busy address.

A directory page linking 5,000 new sites that share one address put hundreds of site
turns in line for that address's gap (politeness.per_ip_min_gap_s), each to fetch its
robots.txt. At `--max-time 20` the crawl stopped handing out turns but let those finish:
it ran 172 s. Now the time limit's stop is a signal's: turns still waiting to send their
request give up, their URLs back in line for the next run; requests on the wire finish.
The page limit's stop still lets them finish (N pages asked, N got).

Real parts: the crawl loop, the SQLite frontier and records, page work on threads, on a
virtual clock with a scripted fetcher (tests/loop/test_crawl_loop.py's settings).
"""

from __future__ import annotations

import asyncio
import sqlite3
from typing import TYPE_CHECKING

from tests.fakes.fetcher import Answer, ScriptedFetcher
from tests.loop.one_crawl import crawl_on
from tests.loop.test_crawl_loop import PER_IP_GAP_S, page, settings
from tests.loop.virtual_clock import VirtualClock

from trawl.config import with_overrides
from trawl.store.layout import DB_NAME

if TYPE_CHECKING:
    from pathlib import Path

    from tests.fakes.fetcher import SentRequest

SITES = 40  # linked from the directory, all on one address
ADDRESS = "198.51.100.20"
MAX_TIME_S = 4.0  # virtual; the 40 robots.txt alone need SITES * PER_IP_GAP_S = 20 s
HOME = "http://dir.test/"


def directory_web() -> dict[str, Answer | list[Answer]]:
    w: dict[str, Answer | list[Answer]] = {
        HOME: page(*(f"http://s{i}.test/" for i in range(SITES)))
    }
    for i in range(SITES):
        w[f"http://s{i}.test/"] = page()
    return w


async def crawl(data_dir: Path, clock: VirtualClock, **limits: float) -> list[SentRequest]:
    s = with_overrides(settings(), crawl={"max_time_s": 0.0, "max_pages": 0, **limits})
    hosts = {"dir.test": ADDRESS} | {f"s{i}.test": ADDRESS for i in range(SITES)}
    fetcher = ScriptedFetcher(directory_web(), clock=clock, hosts=hosts, default_ip=None)
    await crawl_on(s, data_dir, clock, fetcher, [HOME])
    return fetcher.requests


def queued(data_dir: Path) -> int:
    conn = sqlite3.connect(data_dir / DB_NAME)
    try:
        return int(conn.execute("SELECT count(*) FROM queue").fetchone()[0])
    finally:
        conn.close()


def test_issue_17_the_time_limit_ends_turns_waiting_behind_a_busy_address(
    tmp_path: Path,
) -> None:
    clock = VirtualClock()
    requests = asyncio.run(clock.run(crawl(tmp_path, clock, max_time_s=MAX_TIME_S)))
    ran_s = clock.now() - clock.started_at
    # Scripted answers take no time: nothing was on the wire at the limit to wait for.
    assert ran_s <= MAX_TIME_S + PER_IP_GAP_S
    assert all(r.sent_at - clock.started_at <= MAX_TIME_S for r in requests)
    robots = [r for r in requests if r.url.endswith("/robots.txt")]
    assert 2 <= len(robots) < SITES  # some sites had their turn, the rest wait for a rerun
    assert queued(tmp_path) >= SITES - len(robots)


def test_issue_17_the_page_limit_still_lets_waiting_turns_send(tmp_path: Path) -> None:
    clock = VirtualClock()
    requests = asyncio.run(clock.run(crawl(tmp_path, clock, max_pages=3)))
    pages = [r for r in requests if not r.url.endswith(("/robots.txt", "/sitemap.xml"))]
    assert len(pages) == 3

"""Issue 19: a shared store that goes away mid-outcome (a cluster's PostgreSQL stopped)
stops neither the crawl nor loses the page: the turn gives it back to the queue, and it is
fetched and stored once the store answers again. Nor does one that goes away as a turn
reads its site's host record (a site's first turn, or one back in memory: loop.idle_sites):
the turn sends nothing and the site's URLs wait for the next.

Real parts: the crawl loop, the SQLite frontier and records, the page workers, on a virtual
clock with a scripted fetcher (tests/loop/test_crawl_loop.py's web). The outage: the
records' `put_page`, the outcome's last step, raises StoreUnavailable for the first pages.
"""

from __future__ import annotations

import asyncio
import sqlite3
from collections import Counter
from typing import TYPE_CHECKING

from tests.fakes.fetcher import Answer, ScriptedFetcher
from tests.loop.one_crawl import crawl_on
from tests.loop.test_crawl_loop import HOSTS, SEEDS, page, settings, web
from tests.loop.virtual_clock import VirtualClock

from trawl.errors import StoreUnavailable
from trawl.store.layout import DB_NAME
from trawl.store.records_sqlite import SqliteRecords
from trawl.store.sqlite_db import open_database

if TYPE_CHECKING:
    from pathlib import Path

    from trawl.model import PageFetchedEvent, PageRecord

FAILURES = 3


class OutageRecords(SqliteRecords):
    """Records whose first FAILURES page writes meet a store that went away."""

    def __init__(self, conn: sqlite3.Connection) -> None:
        super().__init__(conn)
        self.refused: list[str] = []

    def put_page(self, record: PageRecord, event: PageFetchedEvent | None) -> None:
        if len(self.refused) < FAILURES and record.url not in self.refused:
            self.refused.append(record.url)
            raise StoreUnavailable("PostgreSQL 127.0.0.1:5432/trawl: query failed: (a test)")
        super().put_page(record, event)


async def crawl(data_dir: Path, clock: VirtualClock, fetcher: ScriptedFetcher) -> list[str]:
    conn = open_database(data_dir / DB_NAME)
    records = OutageRecords(conn)
    await crawl_on(settings(), data_dir, clock, fetcher, SEEDS, conn=conn, records=records)
    return records.refused


def test_issue_19_a_page_whose_outcome_met_an_outage_is_fetched_again_and_stored(
    tmp_path: Path,
) -> None:
    clock = VirtualClock()
    fetcher = ScriptedFetcher(web(), clock=clock, hosts=HOSTS, default_ip=None)
    refused = asyncio.run(clock.run(crawl(tmp_path, clock, fetcher)))
    assert len(refused) == FAILURES
    sent = Counter(request.url for request in fetcher.requests)
    conn = sqlite3.connect(tmp_path / DB_NAME)
    try:
        stored = {url for (url,) in conn.execute("SELECT url FROM pages")}
    finally:
        conn.close()
    for url in refused:
        assert sent[url] >= 2, f"{url} was not fetched again"
        assert url in stored, f"{url} was never stored"
    assert {seed for seed in SEEDS} <= stored


class UnreadableHosts(SqliteRecords):
    """Records whose first `failures` host-record reads (of `only` that site, if given) meet
    a store that went away."""

    def __init__(
        self, conn: sqlite3.Connection, failures: int = FAILURES, only: str | None = None
    ) -> None:
        super().__init__(conn)
        self.refused: list[str] = []
        self._failures = failures
        self._only = only

    def get_host(self, site: str) -> dict[str, object] | None:
        if len(self.refused) < self._failures and self._only in (None, site):
            self.refused.append(site)
            raise StoreUnavailable("PostgreSQL 127.0.0.1:5432/trawl: query failed: (a test)")
        return super().get_host(site)


def test_a_turn_whose_host_record_is_unreadable_sends_nothing_and_the_crawl_goes_on(
    tmp_path: Path,
) -> None:
    clock = VirtualClock()
    fetcher = ScriptedFetcher(web(), clock=clock, hosts=HOSTS, default_ip=None)

    async def crawl_unreadable() -> list[str]:
        conn = open_database(tmp_path / DB_NAME)
        records = UnreadableHosts(conn)
        await crawl_on(settings(), tmp_path, clock, fetcher, SEEDS, conn=conn, records=records)
        return records.refused

    refused = asyncio.run(clock.run(crawl_unreadable()))
    assert len(refused) == FAILURES
    conn = sqlite3.connect(tmp_path / DB_NAME)
    try:
        stored = {url for (url,) in conn.execute("SELECT url FROM pages")}
    finally:
        conn.close()
    assert set(SEEDS) <= stored
    robots = Counter(r.url for r in fetcher.requests if r.url.endswith("/robots.txt"))
    assert max(robots.values()) == 1  # no site asked twice for lack of its record


TARGET_SITE = "to.test"


def test_a_robots_redirect_whose_target_record_is_unreadable_leaves_no_site_held(
    tmp_path: Path,
) -> None:
    # from.test's robots.txt redirects to another site's: the turn holds to.test for that
    # request (RunState.hold_site) and first reads its host record. When that read meets an
    # outage, the hold must go back with it: a site left held never gets a turn again (the
    # origin's robots.txt waits on it turn after turn, and neither site is crawled).
    answers: dict[str, Answer | list[Answer]] = {
        "http://from.test/robots.txt": Answer(
            301, (("Location", "http://to.test/robots.txt"),), b""
        ),
        "http://from.test/": page("/f1", "http://to.test/t1"),
        "http://from.test/f1": page(),
        "http://to.test/t1": page(),
    }
    clock = VirtualClock()
    hosts = {"from.test": "198.51.100.1", "to.test": "198.51.100.2"}
    fetcher = ScriptedFetcher(answers, clock=clock, hosts=hosts, default_ip=None)

    async def crawl_one() -> tuple[list[str], float]:
        conn = open_database(tmp_path / DB_NAME)
        records = UnreadableHosts(conn, failures=1, only=TARGET_SITE)
        started = clock.now()
        await crawl_on(
            settings(), tmp_path, clock, fetcher, ["http://from.test/"], conn=conn, records=records
        )
        return records.refused, clock.now() - started

    refused, virtual_s = asyncio.run(clock.run(crawl_one()))
    assert refused == [TARGET_SITE]
    conn = sqlite3.connect(tmp_path / DB_NAME)
    try:
        stored = {url for (url,) in conn.execute("SELECT url FROM pages")}
    finally:
        conn.close()
    assert {"http://from.test/", "http://from.test/f1", "http://to.test/t1"} <= stored
    assert virtual_s < 120.0  # not the crawl's time limit (3,600 s)

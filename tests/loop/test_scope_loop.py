"""Issue 16: crawl scope in the real loop, on a virtual clock over a scripted web.

Two seeds with scopes of their own ([[seeds]] tables), a crawl-wide exclude, one hop out, an
off-scope redirect captured, a sitemap with off-scope entries, and a run-time exclusion
while the crawl runs. What was fetched is read from the fetcher's request log; what was
skipped from the data directory's skip log, as `trawl skipped` reads it.
"""

from __future__ import annotations

import asyncio
import dataclasses
from dataclasses import dataclass
from typing import TYPE_CHECKING

import pytest
from tests.fakes.fetcher import Answer, ScriptedFetcher, SentRequest
from tests.loop.virtual_clock import VirtualClock

from trawl.config import SeedSettings, Settings, with_overrides
from trawl.loop.crawler import Crawler
from trawl.loop.workers import WorkerPool
from trawl.parse.page_work import init_worker
from trawl.store.layout import DB_NAME
from trawl.store.records_sqlite import SqliteRecords
from trawl.store.skips_sqlite import SqliteSkipLog
from trawl.store.sqlite_db import open_database
from trawl.wiring.embedded import build_context, normalise_rules
from trawl.wiring.seeds import add_seeds, seed_scopes

if TYPE_CHECKING:
    from pathlib import Path

    from trawl.frontier.skips import Skip

HTML = (("Content-Type", "text/html; charset=utf-8"),)
XML = (("Content-Type", "application/xml"),)
LATE = [f"http://home.test/late/{n}" for n in range(12)]
CAPPED = [f"http://cap.test/{n}" for n in range(10)]
EXCLUDE_AT_S = 12.0  # virtual seconds into the crawl


def page(*links: str) -> Answer:
    body = "".join(f'<a href="{link}">{link}</a>\n' for link in links)
    return Answer(200, HTML, f"<html><body>{body}</body></html>".encode())


def moved(to: str) -> Answer:
    return Answer(301, (("Location", to),), b"")


def web() -> dict[str, Answer | list[Answer]]:
    w: dict[str, Answer | list[Answer]] = {
        # domain scope, one hop out, a crawl-wide exclude, pages a run-time exclude removes
        "http://home.test/": page(
            "/p1", "http://blog.home.test/", "http://out.test/", "/private/x", *LATE
        ),
        "http://out.test/": page("http://further.test/", "http://home.test/p2"),
        # prefix scope, no hops: an off-scope link, a redirect out, a sitemap
        "http://docs.test/robots.txt": Answer(
            200, (("Content-Type", "text/plain"),), b"Sitemap: http://docs.test/sitemap.xml\n"
        ),
        "http://docs.test/sitemap.xml": Answer(
            200,
            XML,
            b'<?xml version="1.0"?><urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">'
            b"<url><loc>http://docs.test/guide/listed</loc></url>"
            b"<url><loc>http://docs.test/blog/listed</loc></url></urlset>",
        ),
        "http://docs.test/guide/": page("/guide/a", "/blog/x", "/guide/moved"),
        "http://docs.test/guide/moved": moved("http://cdn.test/file"),
        "http://cdn.test/file": page("http://cdn.test/more"),
        # a page budget: the seed and two of its links
        "http://cap.test/": page(*CAPPED),
    }
    for url in ("http://home.test/p1", "http://home.test/p2", "http://blog.home.test/",
                "http://docs.test/guide/a", "http://docs.test/guide/listed", *LATE,
                *CAPPED):  # fmt: skip
        w.setdefault(url, page())
    return w


FETCHED = {
    "http://home.test/", "http://home.test/p1", "http://home.test/p2", "http://blog.home.test/",
    "http://out.test/", "http://docs.test/guide/", "http://docs.test/guide/a",
    "http://docs.test/guide/moved", "http://cdn.test/file", "http://docs.test/guide/listed",
}  # fmt: skip
NEVER = {
    "http://further.test/", "http://home.test/private/x", "http://docs.test/blog/x",
    "http://docs.test/blog/listed", "http://cdn.test/more",
}  # fmt: skip


def settings() -> Settings:
    s = with_overrides(
        Settings(),
        crawl={"contact_url": "https://trawl.invalid/test", "max_time_s": 600.0},
        scope={"exclude": ("/private/",)},
    )
    seeds = (
        SeedSettings("http://home.test/", type="domain", extra_hops=1),
        SeedSettings("http://docs.test/guide/", type="prefix"),
        SeedSettings("http://cap.test/", type="host", max_pages=3),
    )
    return dataclasses.replace(s, seeds=seeds).validate()


@dataclass(frozen=True)
class Crawl:
    requests: list[SentRequest]
    excluded_at: float
    dropped: int | None
    skips: list[Skip]
    counts: dict[str, int]
    stored: set[str]


async def crawl(
    data_dir: Path, clock: VirtualClock, fetcher: ScriptedFetcher
) -> tuple[float, int | None]:
    s = settings()
    rules = normalise_rules(s)
    pool = WorkerPool(lambda: clock.executor(2, initializer=init_worker, initargs=(rules,)))
    ctx = build_context(s, data_dir, clock, fetcher=fetcher, cpu_pool=pool)
    result: list[int | None] = []

    async def exclude_later() -> None:
        await clock.sleep_until(clock.started_at + EXCLUDE_AT_S)
        result.append(ctx.add_exclusion("/late/"))

    try:
        add_seeds(ctx, seed_scopes(s, [], rules))
        later = asyncio.ensure_future(exclude_later())
        await Crawler(ctx, watch_lag=False).run()
        await later
    finally:
        await ctx.durability.close()
    return clock.started_at + EXCLUDE_AT_S, result[0]


@pytest.fixture(scope="module")
def crawled(tmp_path_factory: pytest.TempPathFactory) -> Crawl:
    clock = VirtualClock()
    fetcher = ScriptedFetcher(web(), clock=clock, default_ip="198.51.100.1")
    data = tmp_path_factory.mktemp("data")
    excluded_at, dropped = asyncio.run(clock.run(crawl(data, clock, fetcher)))
    conn = open_database(data / DB_NAME, readonly=True)
    log = SqliteSkipLog(conn)
    stored = {p.url for p in SqliteRecords(conn).iter_pages()}
    print(f"\nscope loop test: {len(fetcher.requests)} requests, {dropped} dropped at run time")
    return Crawl(fetcher.requests, excluded_at, dropped, log.recent(1000), log.counts(), stored)


def pages(crawl: Crawl) -> set[str]:
    return {r.url for r in crawl.requests if not r.url.endswith(("/robots.txt", ".xml"))}


def test_in_scope_pages_and_the_one_hop_out_are_fetched(crawled: Crawl) -> None:
    assert pages(crawled) >= FETCHED


def test_nothing_out_of_scope_is_requested(crawled: Crawl) -> None:
    assert not NEVER & pages(crawled)
    hosts = {r.url.split("/")[2] for r in crawled.requests}
    assert hosts == {
        "home.test", "blog.home.test", "out.test", "docs.test", "cdn.test", "cap.test"
    }  # fmt: skip


def test_a_seeds_page_budget_holds(crawled: Crawl) -> None:
    capped = {url for url in pages(crawled) if url.startswith("http://cap.test/")}
    assert len(capped) == 3
    assert "http://cap.test/" in capped
    skipped = {s.url for s in crawled.skips if s.reason == "max_pages"}
    assert skipped == set(CAPPED) - capped


def test_an_off_scope_redirect_target_is_stored_but_not_followed(crawled: Crawl) -> None:
    assert "http://cdn.test/file" in crawled.stored
    assert "http://cdn.test/more" not in pages(crawled)


def test_a_run_time_exclusion_empties_the_queue_and_stops_requests(crawled: Crawl) -> None:
    late = [r for r in crawled.requests if "/late/" in r.url]
    assert all(r.sent_at <= crawled.excluded_at for r in late)
    assert crawled.dropped is not None
    assert crawled.dropped > 0
    assert len(late) + crawled.dropped == len(LATE)


def test_every_skip_is_reported_with_its_reason_and_was_never_fetched(crawled: Crawl) -> None:
    reasons = {s.url: s.reason for s in crawled.skips}
    assert reasons["http://further.test/"] == "extra_hops"
    assert reasons["http://home.test/private/x"] == "exclude"
    assert reasons["http://docs.test/blog/x"] == "scope"
    assert reasons["http://docs.test/blog/listed"] == "scope"
    assert reasons["http://cdn.test/more"] == "capture"
    assert {url for url, why in reasons.items() if why == "exclude"} >= {
        url for url in LATE if url not in pages(crawled)
    }
    assert not set(reasons) & pages(crawled)
    assert sum(crawled.counts.values()) == len(reasons)
    referrers = {s.url: s.referrer for s in crawled.skips}
    assert referrers["http://further.test/"] == "http://out.test/"
    assert referrers["http://docs.test/blog/listed"] == ""  # a sitemap entry: no page

"""A crawl of the test web with its hostile sites: it ends by itself, bounded and polite.

The hostile sites (trawl.testweb.hostile): stalls, a 50 MB page, a gzip bomb, 429 with
Retry-After, endless 503s, robots.txt answering 500 or stalling, broken HTML and HTTP,
200 MB / 1 GB binaries, redirect loops and chains, an endless calendar, session ids,
repeating paths, faceted search, thousands of near-identical pages and one page re-served
under ever longer paths. The trap sites are contained by the default trap rules (issue 13);
only the depth limit is set low. Each is a config value (docs/CONFIG.md).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import TYPE_CHECKING

import pytest
from tests.e2e.support import crawl_in_process, web_settings

from trawl.store.records_sqlite import SqliteRecords
from trawl.store.sqlite_db import open_database
from trawl.store.warc import read_record
from trawl.testweb.politeness import check_politeness
from trawl.testweb.process import TestWebProcess

if TYPE_CHECKING:
    from collections.abc import Iterator
    from pathlib import Path

    from trawl.cli.runner import CrawlSummary
    from trawl.model import PageRecord
    from trawl.testweb.request_log import RequestLogRecord

MAX_TIME_S = 240.0
# Not pages: robots.txt (and its redirect target), and the sitemap trawl guesses per host.
ROBOTS_PATHS = {"/robots.txt", "/robots-rules.txt", "/sitemap.xml"}


@dataclass
class HostileRun:
    web: TestWebProcess
    data: Path
    summary: CrawlSummary
    requests: list[RequestLogRecord]
    pages: list[PageRecord]


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> Iterator[HostileRun]:
    tmp = tmp_path_factory.mktemp("hostile")
    with TestWebProcess(sites=12, pages=4, seed=3, hostile=True, workdir=tmp / "web") as web:
        settings = web_settings(
            web,
            MAX_TIME_S,
            # Short timeouts and gaps keep the run near a minute; the 10x-response-time
            # rule would otherwise space the stalling site's 3 s timeouts 30 s apart.
            fetch={"total_timeout_s": 3.0, "max_attempts": 2},
            politeness={"backoff_max_s": 4.0, "slow_factor": 2.0},
            traps={"max_depth": 20},
        )
        summary, pages = crawl_in_process(settings, tmp / "data", web.seeds)
        web.stop()
        yield HostileRun(web, tmp / "data", summary, web.requests(), pages)


def page_requests(run: HostileRun) -> list[RequestLogRecord]:
    return [r for r in run.requests if r.path not in ROBOTS_PATHS]


def test_crawl_ends_by_itself(run: HostileRun) -> None:
    assert run.summary.elapsed_s < MAX_TIME_S - 10


def test_no_politeness_violation_retry_after_and_backoff_included(run: HostileRun) -> None:
    assert check_politeness(run.requests, **run.web.web.politeness_inputs()) == []
    throttled = [r for r in run.requests if r.retry_after_s]
    assert throttled  # the 429/503 answers with Retry-After were met


def test_requests_to_every_hostile_site_are_bounded(run: HostileRun) -> None:
    per_site = Counter(r.site for r in page_requests(run))
    bounds = run.web.web.hostile_bounds()
    over = {site: per_site[site] for site, bound in bounds.items() if per_site[site] > bound}
    assert over == {}
    assert per_site["hostile-robots-5xx.test"] == 0
    assert per_site["hostile-robots-stall.test"] == 0


def test_the_normal_web_is_still_crawled_completely(run: HostileRun) -> None:
    expected = run.web.web.expected_fetches(run.web.port)
    fetched = Counter((r.host, r.path) for r in page_requests(run) if (r.host, r.path) in expected)
    assert set(fetched) == expected
    assert max(fetched.values()) == 1


def test_binaries_cost_headers_not_bodies(run: HostileRun) -> None:
    binary = [r for r in page_requests(run) if r.site == "hostile-binary.test" and r.status == 200]
    big = [r for r in binary if r.path.endswith((".pdf", ".mp4"))]
    assert big
    assert all(r.body_bytes < 50_000_000 for r in big)
    records = [p for p in run.pages if p.url.endswith((".pdf", ".mp4"))]
    assert records
    assert all(p.storage_key == "" for p in records)


def test_giant_page_is_stored_truncated_and_marked(run: HostileRun) -> None:
    giant = [p for p in run.pages if p.site == "hostile-giant.test" and p.storage_key]
    assert giant
    for page in giant:
        stored = read_record(run.data / "warc", page.storage_key)
        if page.extra.get("truncated"):
            assert stored.truncated
            assert len(stored.payload) <= 10 * 1024 * 1024
    assert any(p.extra.get("truncated") for p in giant)


def test_gzip_bomb_is_stopped_and_not_stored(run: HostileRun) -> None:
    bomb = [p for p in run.pages if p.site == "hostile-bomb.test"]
    assert bomb
    assert any("too_big" in p.error for p in bomb)
    assert all(p.storage_key == "" for p in bomb if "too_big" in p.error)


def test_trap_defences_fired_and_were_counted(run: HostileRun) -> None:
    traps = run.summary.traps
    # Calendar, repeating paths, facets, items and the re-served page are contained (issue
    # 13) before the depth or repetition rules would cut them.
    assert traps.get("copy_page_links", 0) > 0  # the near-identical items, the re-served page
    assert traps.get("contained_copies", 0) + traps.get("contained_similar_pages", 0) >= 5
    assert run.summary.stats.retries  # 429/503/timeouts went back in line


def test_host_records_show_the_trouble(run: HostileRun) -> None:
    records = SqliteRecords(open_database(run.data / "trawl.db", readonly=True))
    flaky = records.get_host("hostile-flaky.test")
    assert flaky is not None
    assert int(str(flaky["errorCount"])) > 0
    assert flaky["recentErrors"]
    copies = records.get_host("hostile-copies.test")
    assert copies is not None
    containment = copies["containment"]
    assert isinstance(containment, dict)
    assert containment["contained"] is True
    assert containment["reason"] == "copies"

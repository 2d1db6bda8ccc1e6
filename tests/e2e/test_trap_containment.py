"""Issue 13 §1: a trap site is contained within 20 fetches, and its real pages still fetched.

One crawl, seeded with the home pages of the hostile web's trap sites only (calendar,
session ids, repeating paths, faceted search, near-identical items, one page re-served under
ever longer relative paths), with the DEFAULT trap settings. Each trap site also has real
pages (`HostileSite.real_paths`: a home, news, products with text of their own). What each
site cost is read from the test web's request log, never from trawl's counters.
"""

from __future__ import annotations

import io
from collections import Counter
from dataclasses import dataclass
from typing import TYPE_CHECKING

import pytest
from tests.e2e.support import crawl_in_process, web_settings

from trawl.cli.runner import CrawlSummary, print_summary
from trawl.config import Duration
from trawl.store.records_sqlite import SqliteRecords
from trawl.store.sqlite_db import open_database
from trawl.testweb.hostile import TRAP_ENTRIES, HostileKind, HostileSite
from trawl.testweb.politeness import check_politeness
from trawl.testweb.process import TestWebProcess

if TYPE_CHECKING:
    from collections.abc import Iterator
    from pathlib import Path

    from trawl.testweb.request_log import RequestLogRecord

MAX_TIME_S = 90.0
NOT_PAGES = {"/robots.txt", "/sitemap.xml"}
TRAP_BUDGET = 20  # fetches beyond a trap site's real pages (issue 13)
# Kinds that containment must catch; the session site's nine pages (ids stripped by the
# normaliser) differ in their ids' letters, and end long before 20 fetches anyway.
CONTAINED = {
    HostileKind.CALENDAR,
    HostileKind.FACETS,
    HostileKind.COPIES,
    HostileKind.RELPATH,
    HostileKind.REPEAT,
}


@dataclass
class TrapRun:
    web: TestWebProcess
    data: Path
    summary: CrawlSummary
    summary_text: str
    requests: list[RequestLogRecord]
    sites: dict[HostileKind, HostileSite]


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> Iterator[TrapRun]:
    tmp = tmp_path_factory.mktemp("traps")
    with TestWebProcess(sites=1, pages=1, seed=3, hostile=True, workdir=tmp / "web") as web:
        sites = {s.kind: s for s in web.web.hostile_sites() if s.kind in TRAP_ENTRIES}
        seeds = [f"http://{s.domain}:{web.port}/" for s in sites.values()]
        summary, _ = crawl_in_process(web_settings(web, MAX_TIME_S), tmp / "data", seeds)
        web.stop()
        text = io.StringIO()
        print_summary(summary, text)
        yield TrapRun(web, tmp / "data", summary, text.getvalue(), web.requests(), sites)


def page_path(record: RequestLogRecord) -> str:
    return record.path.split("?", 1)[0].split(";", 1)[0]


def pages_of(run: TrapRun, site: HostileSite) -> list[str]:
    return [
        page_path(r)
        for r in run.requests
        if r.site == site.domain and page_path(r) not in NOT_PAGES
    ]


def host_record(run: TrapRun, site: HostileSite) -> dict[str, object]:
    records = SqliteRecords(open_database(run.data / "trawl.db", readonly=True))
    record = records.get_host(site.domain)
    assert record is not None
    return record


def test_issue_13_report_per_kind(run: TrapRun, capsys: pytest.CaptureFixture[str]) -> None:
    """The figures for the issue note: what each trap cost and the real pages fetched."""
    with capsys.disabled():
        print(f"\n{run.summary_text}")
        for kind, site in run.sites.items():
            pages = pages_of(run, site)
            beyond = [p for p in pages if p not in site.real_paths]
            real = set(pages) & set(site.real_paths)
            containment = host_record(run, site)["containment"]
            assert isinstance(containment, dict)
            print(
                f"{kind.value:>8}: fetches beyond real pages {len(beyond):>2}, real pages "
                f"{len(real)}/{len(site.real_paths)}, contained {containment['reason']}, "
                f"fetchesBeforeContainment {containment['fetchesBeforeContainment']}"
            )


def test_issue_13_each_trap_costs_at_most_20_fetches_beyond_its_real_pages(run: TrapRun) -> None:
    beyond = {
        kind: sum(1 for p in pages_of(run, site) if p not in site.real_paths)
        for kind, site in run.sites.items()
    }
    assert all(n > 0 for n in beyond.values()), beyond  # each trap was entered
    assert {kind: n for kind, n in beyond.items() if n > TRAP_BUDGET} == {}


def test_issue_13_every_real_page_of_a_trap_site_is_fetched_once(run: TrapRun) -> None:
    for site in run.sites.values():
        fetched = Counter(p for p in pages_of(run, site) if p in site.real_paths)
        assert set(fetched) == set(site.real_paths), site.kind
        assert max(fetched.values()) == 1


def test_issue_13_host_records_say_why_since_when_and_what_it_cost(run: TrapRun) -> None:
    for kind in CONTAINED:
        site = run.sites[kind]
        containment = host_record(run, site)["containment"]
        assert isinstance(containment, dict)
        assert containment["contained"] is True, kind
        assert containment["reason"] in ("copies", "similar_pages", "url_patterns")
        since = containment["containedSince"]
        assert isinstance(since, float)
        first = min(r.t_start for r in run.requests if r.site == site.domain)
        assert first <= since <= max(r.t_end for r in run.requests)
        cost = containment["fetchesBeforeContainment"]
        assert isinstance(cost, int)
        assert 1 <= cost <= TRAP_BUDGET


def test_issue_13_rules_are_counted_in_the_summary(run: TrapRun) -> None:
    traps = run.summary.traps
    contained = sum(traps.get(f"contained_{r}", 0) for r in ("copies", "similar_pages"))
    assert contained + traps.get("contained_url_patterns", 0) >= len(CONTAINED)
    assert traps.get("copy_page_links", 0) > 0  # the copies and the re-served pages
    assert traps.get("contained_rest", 0) > 0
    assert "sites contained" in run.summary_text


def test_issue_13_crawl_ends_by_itself_and_politely(run: TrapRun) -> None:
    assert run.summary.elapsed_s < MAX_TIME_S - 5  # trickled URLs do not hold it open
    assert check_politeness(run.requests, **run.web.web.politeness_inputs()) == []


# -- a contained site in a continuous crawl: its known pages are still refreshed ----------

REFRESH_TIME_S = 40.0
TRICKLE_S = 6.0


@dataclass
class RefreshRun:
    requests: list[RequestLogRecord]
    site: HostileSite
    containment: dict[str, object]


@pytest.fixture(scope="module")
def refresh_run(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RefreshRun]:
    """The calendar site alone, crawled continuously with second-scale recrawl intervals
    and a trickle of one new URL per 6 s (the only trap setting changed)."""
    tmp = tmp_path_factory.mktemp("traps-refresh")
    with TestWebProcess(sites=1, pages=1, seed=3, hostile=True, workdir=tmp / "web") as web:
        site = next(s for s in web.web.hostile_sites() if s.kind is HostileKind.CALENDAR)
        settings = web_settings(
            web,
            REFRESH_TIME_S,
            crawl={"continuous": True},
            recrawl={"min_interval": Duration(4.0), "max_interval": Duration(8.0)},
            traps={"contained_interval_s": TRICKLE_S},
        )
        crawl_in_process(settings, tmp / "data", [f"http://{site.domain}:{web.port}/"])
        web.stop()
        records = SqliteRecords(open_database(tmp / "data" / "trawl.db", readonly=True))
        record = records.get_host(site.domain)
        assert record is not None
        containment = record["containment"]
        assert isinstance(containment, dict)
        yield RefreshRun(web.requests(), site, containment)


def test_issue_13_contained_sites_known_pages_are_still_refreshed(refresh_run: RefreshRun) -> None:
    since = refresh_run.containment["containedSince"]
    assert isinstance(since, float)
    later = Counter(
        page_path(r)
        for r in refresh_run.requests
        if r.t_start > since and page_path(r) in refresh_run.site.real_paths
    )
    # Recrawl intervals of 4-8 s (doubling while unchanged) over the ~20 s left: every
    # real page comes back, more of them than the trickle would have allowed.
    assert set(later) == set(refresh_run.site.real_paths)
    assert sum(later.values()) > REFRESH_TIME_S / TRICKLE_S


def test_issue_13_contained_sites_new_urls_trickle_at_the_interval(refresh_run: RefreshRun) -> None:
    since = refresh_run.containment["containedSince"]
    assert isinstance(since, float)
    seen: set[str] = set()
    firsts = []  # first fetches of trap URLs after containment: the trickle
    for r in sorted(refresh_run.requests, key=lambda r: r.t_start):
        path = page_path(r)
        if path in NOT_PAGES or path in refresh_run.site.real_paths or path in seen:
            continue
        seen.add(path)
        if r.t_start > since:
            firsts.append(r.t_start)
    assert firsts  # the trickle went on
    gaps = [b - a for a, b in zip([since, *firsts], firsts, strict=False)]
    assert min(gaps) >= TRICKLE_S - 0.1  # containedSince is taken after the page's fetch
    assert len(firsts) <= REFRESH_TIME_S / TRICKLE_S + 1

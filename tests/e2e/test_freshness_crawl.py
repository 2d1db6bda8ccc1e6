"""A continuous crawl of the freshness test web: recrawl, 304s, sitemaps, copies, scores.

One `trawl crawl --continuous` run of ~100 s with second-scale recrawl intervals
(`[recrawl] min_interval = "5s"`), judged from the outside: the test web's request log
(what was asked, with which validators, and when), the page records (`trawl pages`) and
the WARC files (read with warcio).
"""

from __future__ import annotations

import asyncio
import io
import json
import statistics
from collections import Counter, defaultdict
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

import pytest
from warcio.archiveiterator import ArchiveIterator

from trawl.cli import main
from trawl.cli.runner import CrawlSummary, run_crawl
from trawl.config import Duration, Settings, with_overrides
from trawl.testweb.politeness import check_politeness
from trawl.testweb.process import TestWebProcess

if TYPE_CHECKING:
    from collections.abc import Iterator
    from pathlib import Path

    from trawl.testweb.freshness import Freshness
    from trawl.testweb.request_log import RequestLogRecord

SITES, PAGES = 12, 8
RUN_S = 100.0
Key = tuple[str, str]


@dataclass
class Run:
    web: TestWebProcess
    spec: Freshness
    data: Path
    summary: CrawlSummary
    requests: list[RequestLogRecord]
    records: dict[Key, dict[str, Any]]  # page records by (host, path)


def _key(url: str) -> Key:
    parts = urlsplit(url)
    return (parts.hostname or "", parts.path or "/")


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Run]:
    tmp = tmp_path_factory.mktemp("fresh")
    with TestWebProcess(
        sites=SITES, pages=PAGES, seed=7, workdir=tmp / "web", freshness=True
    ) as web:
        settings = with_overrides(
            Settings(),
            crawl={
                "contact_url": "https://trawl.invalid/test",
                "max_time_s": RUN_S,
                "continuous": True,
            },
            network={"hosts_file": str(web.hosts_file)},
            recrawl={"min_interval": Duration(5.0), "max_interval": Duration(120.0)},
        )
        seeds = [(u, "test seed") for u in web.seeds]
        summary = asyncio.run(run_crawl(settings, tmp / "data", seeds, io.StringIO(), is_tty=False))
        web.stop()
        out = io.StringIO()
        _pages(tmp / "data", out)
        records = {_key(r["url"]): r for r in map(json.loads, out.getvalue().splitlines())}
        yield Run(web, web.web.freshness(), tmp / "data", summary, web.requests(), records)


def _pages(data: Path, out: io.StringIO) -> None:
    import contextlib

    with contextlib.redirect_stdout(out):
        assert main(["pages", "--data", str(data)]) == 0


def _gets(run: Run) -> dict[Key, list[RequestLogRecord]]:
    by_key: dict[Key, list[RequestLogRecord]] = defaultdict(list)
    for r in run.requests:
        by_key[(r.host, r.path.split("?")[0])].append(r)
    return by_key


def test_politeness_holds_through_recrawls(run: Run) -> None:
    assert check_politeness(run.requests, **run.web.web.politeness_inputs()) == []


def test_refetches_are_conditional_and_304s_store_nothing(run: Run) -> None:
    gets = _gets(run)
    static = [gets[k] for k in run.spec.static_urls]
    assert all(len(g) >= 2 for g in static), [len(g) for g in static]
    for requests in static:
        first, *later = requests
        assert first.if_none_match is None  # nothing stored yet
        assert all(r.if_none_match and r.status == 304 and r.body_bytes == 0 for r in later)
    # Every page with validators is revalidated on its refetches, not downloaded again.
    refetched = [r for g in gets.values() for r in g[1:] if r.path != "/robots.txt"]
    assert sum(1 for r in refetched if r.status == 304) > 0
    # A 304 adds no WARC record: one response per static page, however often it was asked.
    responses = _warc_records(run.data)
    for key in run.spec.static_urls:
        assert responses[("response", key)] == 1
        record = run.records[key]
        assert record["lastStatus"] == 304
        assert record["httpStatus"] == 200
        assert record["storageKey"]
        assert record["changeRate"] == 0.0


def test_changing_pages_are_refetched_markedly_more_often(run: Run) -> None:
    gets = _gets(run)
    changing = [len(gets[k]) for k in run.spec.changing_urls]
    static = [len(gets[k]) for k in run.spec.static_urls]
    assert statistics.mean(changing) >= 2 * statistics.mean(static), (changing, static)
    for key in run.spec.changing_urls:
        record = run.records[key]
        assert record["changeRate"] > 0
        # It changed at every visit: it comes back no later than the shortest gap seen.
        shortest = min(v[0] for v in record["visits"])
        assert record["nextFetchAt"] - record["lastFetchedAt"] <= shortest + 0.01
        assert sum(v[1] for v in record["visits"]) == len(record["visits"])  # changed each time


def test_sitemap_only_pages_are_found_and_foreign_entries_ignored(run: Run) -> None:
    gets = _gets(run)
    assert {k for k in run.spec.sitemap_only if not gets.get(k)} == set()
    assert {k for k in run.spec.foreign_sitemap_entries if gets.get(k)} == set()
    assert {k for k in run.spec.sitemap_files if not gets.get(k)} == set()
    for key in run.spec.sitemap_files:
        assert run.records[key]["kind"] == "sitemap"
    assert run.summary.stats.sitemap_new >= len(run.spec.sitemap_only)


def test_a_newer_lastmod_makes_a_known_page_due(run: Run) -> None:
    # The sitemap lists these (also linked) pages with lastmod = the time of each request:
    # every refetch of the sitemap brings their refetch forward to now.
    assert run.summary.stats.sitemap_due > 0
    gets = _gets(run)
    assert all(len(gets[k]) >= 2 for k in run.spec.lastmod_now), run.spec.lastmod_now


def test_exact_copies_are_stored_once(run: Run) -> None:
    responses = _warc_records(run.data)
    for group in run.spec.copy_groups:
        records = [run.records[k] for k in group]
        assert len({r["contentHash"] for r in records}) == 1
        assert len({r["storageKey"] for r in records}) == 1  # all point at one body
        originals = [r for r in records if not r["duplicateOf"]]
        assert len(originals) == 1
        assert all(r["duplicateOf"] == originals[0]["url"] for r in records if r["duplicateOf"])
        stored = sum(responses[("response", k)] for k in group)
        assert stored == 1
        assert all(responses[("revisit", k)] >= 1 for k in group if k != _key(originals[0]["url"]))


def test_near_copies_name_their_main_copy(run: Run) -> None:
    for original, *copies in run.spec.near_copy_groups:
        main_copy = run.records[original]
        assert main_copy["nearDuplicateOf"] == ""
        for key in copies:
            assert run.records[key]["nearDuplicateOf"] == main_copy["url"]
    assert run.summary.stats.near_duplicates >= 1


def test_most_linked_pages_are_fetched_before_deep_leaves(run: Run) -> None:
    first_at = {k: g[0].t_start for k, g in _gets(run).items()}
    for popular in run.spec.popular:
        leaves = [k for k in run.spec.deep_leaves if k[0] == popular[0]]
        assert leaves
        assert all(first_at[popular] < first_at[leaf] for leaf in leaves), (popular, leaves)
    assert all(run.records[k]["importance"] > 1.0 for k in run.spec.popular)


def test_refresh_and_discovery_both_get_turns(run: Run) -> None:
    fast, slow, refresh = run.summary.turns_by_line
    assert refresh > 0
    assert fast + slow > 0
    assert run.summary.stats.not_modified > 0
    assert run.summary.stats.bytes_saved > 0
    # While both kinds of work waited, refresh got about its configured 60 % of turns.
    refresh_turns, discovery_turns = run.summary.contested_turns
    assert refresh_turns + discovery_turns >= 20
    assert 0.45 <= refresh_turns / (refresh_turns + discovery_turns) <= 0.75


def _warc_records(data: Path) -> Counter[tuple[str, Key]]:
    counts: Counter[tuple[str, Key]] = Counter()
    for path in sorted((data / "warc").glob("*.warc.gz")):
        with path.open("rb") as f:
            for record in ArchiveIterator(f, check_digests="raise"):
                uri = record.rec_headers.get_header("WARC-Target-URI")
                if uri:
                    counts[(record.rec_type, _key(uri))] += 1
    return counts

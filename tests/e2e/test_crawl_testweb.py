"""A whole crawl of the local test web, checked from the outside.

The test web's request log is the witness for politeness and completeness; WARC files are
read back with warcio and FastWARC; records and events through the read-back commands.
"""

from __future__ import annotations

import asyncio
import io
import itertools
import json
import subprocess
import sys
import time
from collections import Counter
from dataclasses import dataclass
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

import pytest
from fastwarc.warc import ArchiveIterator as FastArchiveIterator
from warcio.archiveiterator import ArchiveIterator

from trawl.cli import main
from trawl.cli.runner import CrawlSummary, run_crawl
from trawl.config import Settings, with_overrides
from trawl.testweb.politeness import check_politeness
from trawl.testweb.process import TestWebProcess

if TYPE_CHECKING:
    from collections.abc import Iterator
    from pathlib import Path

    from trawl.testweb.request_log import RequestLogRecord

SITES, PAGES = 12, 8  # 12 sites cover every robots.txt variant of the test web
# Not pages: robots.txt (and its redirect target), and the sitemap trawl guesses per host.
ROBOTS_PATHS = {"/robots.txt", "/robots-rules.txt", "/sitemap.xml"}


@dataclass
class CrawlRun:
    web: TestWebProcess
    data: Path
    summary: CrawlSummary
    requests: list[RequestLogRecord]


def crawl_settings(web: TestWebProcess) -> Settings:
    return with_overrides(
        Settings(),
        crawl={"contact_url": "https://trawl.invalid/test", "max_time_s": 240.0},
        network={"hosts_file": str(web.hosts_file)},
    )


@pytest.fixture(scope="module")
def crawl_run(tmp_path_factory: pytest.TempPathFactory) -> Iterator[CrawlRun]:
    tmp = tmp_path_factory.mktemp("crawl")
    with TestWebProcess(sites=SITES, pages=PAGES, seed=7, workdir=tmp / "web") as web:
        seeds = [(u, "test seed") for u in web.seeds]
        summary = asyncio.run(
            run_crawl(crawl_settings(web), tmp / "data", seeds, io.StringIO(), is_tty=False)
        )
        web.stop()
        yield CrawlRun(web, tmp / "data", summary, web.requests())


def page_requests(requests: list[RequestLogRecord]) -> Counter[tuple[str, str]]:
    return Counter((r.host, r.path) for r in requests if r.path not in ROBOTS_PATHS)


def test_every_reachable_allowed_page_is_fetched_exactly_once(crawl_run: CrawlRun) -> None:
    expected = crawl_run.web.web.expected_fetches(crawl_run.web.port)
    fetched = page_requests(crawl_run.requests)
    assert set(fetched) == expected
    assert [k for k, n in fetched.items() if n > 1] == []
    assert crawl_run.summary.stats.pages_fetched == len(expected)


def test_no_politeness_violation_in_the_request_log(crawl_run: CrawlRun) -> None:
    violations = check_politeness(crawl_run.requests, **crawl_run.web.web.politeness_inputs())
    assert violations == []


def test_robots_txt_requested_once_per_discovered_host(crawl_run: CrawlRun) -> None:
    robots = Counter(r.host for r in crawl_run.requests if r.path == "/robots.txt")
    assert set(robots) == crawl_run.web.web.expected_robots(crawl_run.web.port)
    # the 503 answer is not retried within this short crawl (first retry after 60 s)
    assert max(robots.values()) == 1


def test_user_agent_names_trawl_and_a_contact_url(crawl_run: CrawlRun) -> None:
    agents = {r.ua for r in crawl_run.requests}
    assert len(agents) == 1
    (ua,) = agents
    assert ua.startswith("trawl/")
    assert "(+https://trawl.invalid/test)" in ua


def _read_lines(args: list[str], capsys: pytest.CaptureFixture[str]) -> list[dict[str, object]]:
    assert main(args) == 0
    return [json.loads(line) for line in capsys.readouterr().out.splitlines()]


def test_every_fetch_has_a_record_and_every_stored_page_one_event(
    crawl_run: CrawlRun, capsys: pytest.CaptureFixture[str]
) -> None:
    records = _read_lines(["pages", "--data", str(crawl_run.data)], capsys)
    pages = [r for r in records if r["kind"] == "page"]
    sitemaps = [r for r in records if r["kind"] == "sitemap"]
    assert len(pages) == crawl_run.summary.stats.pages_fetched
    assert len(sitemaps) == crawl_run.summary.stats.sitemap_fetches
    statuses = Counter(p["httpStatus"] for p in pages)
    assert statuses[200] > 0
    assert statuses[404] > 0
    assert statuses[301] + statuses[302] > 0
    redirects = [p for p in pages if p["httpStatus"] in (301, 302)]
    assert all(p["redirectTo"] and not p["storageKey"] for p in redirects)
    stored = {p["urlHash"]: p for p in pages if p["storageKey"]}
    events = _read_lines(["events", "--data", str(crawl_run.data)], capsys)
    assert sorted(e["urlHash"] for e in events) == sorted(stored)  # type: ignore[type-var]
    offsets = [e["offset"] for e in events]
    assert offsets == sorted(offsets)
    assert len(set(offsets)) == len(offsets)
    for e in events:
        page = stored[str(e["urlHash"])]
        assert e["storageKey"] == page["storageKey"]
        assert e["contentHash"] == page["contentHash"]
        assert e["type"] == "page.fetched"
    later = _read_lines(
        ["events", "--data", str(crawl_run.data), "--from", str(offsets[-1])], capsys
    )
    assert [e["offset"] for e in later] == [offsets[-1]]


def test_non_html_is_recorded_without_a_body(
    crawl_run: CrawlRun, capsys: pytest.CaptureFixture[str]
) -> None:
    pages = _read_lines(["pages", "--data", str(crawl_run.data)], capsys)
    pdfs = [p for p in pages if str(p["url"]).endswith(".pdf")]
    assert pdfs
    assert all(p["httpStatus"] == 200 and p["storageKey"] == "" for p in pdfs)
    assert all(str(p["contentType"]).startswith("application/pdf") for p in pdfs)


def test_warc_files_validate_with_warcio_and_fastwarc(crawl_run: CrawlRun) -> None:
    files = sorted((crawl_run.data / "warc").glob("*.warc.gz"))
    assert files
    responses = 0
    for path in files:
        with path.open("rb") as fh:
            for record in ArchiveIterator(fh, check_digests="raise"):
                if record.rec_type == "response":
                    assert record.rec_headers.get_header("WARC-Payload-Digest")
                    assert record.rec_headers.get_header("WARC-Block-Digest")
                    # Stored pages; robots.txt, redirects and 404s are archived too (issue 14).
                    target = urlsplit(record.rec_headers.get_header("WARC-Target-URI")).path
                    status = record.http_headers.get_statuscode()
                    responses += status.startswith("2") and target not in ROBOTS_PATHS
                record.content_stream().read()
        with path.open("rb") as fh:
            for record in FastArchiveIterator(fh, parse_http=False):
                assert record.verify_block_digest()
    assert responses == crawl_run.summary.stats.pages_stored


def test_page_and_body_read_back_by_url_and_hash(
    crawl_run: CrawlRun, capsys: pytest.CaptureFixture[str]
) -> None:
    seed = crawl_run.web.seeds[0]
    (record,) = _read_lines(["page", seed, "--data", str(crawl_run.data)], capsys)
    assert record["httpStatus"] == 200
    assert record["depth"] == 0
    by_hash = _read_lines(["page", str(record["urlHash"]), "--data", str(crawl_run.data)], capsys)
    assert by_hash == [record]
    assert main(["page", seed, "--data", str(crawl_run.data), "--body"]) == 0
    body = capsys.readouterr().out
    assert body.lstrip().lower().startswith("<!doctype html")


def test_host_record_by_hostname_or_registered_domain(
    crawl_run: CrawlRun, capsys: pytest.CaptureFixture[str]
) -> None:
    site = crawl_run.web.web.sites[0]
    by_site = _read_lines(["host", site.domain, "--data", str(crawl_run.data)], capsys)
    by_host = _read_lines(["host", f"www.{site.domain}", "--data", str(crawl_run.data)], capsys)
    assert by_site == by_host
    (record,) = by_site
    for key in (
        "host", "nextAllowedAt", "crawlDelay", "robotsRules", "robotsFetchedAt",
        "errorCount", "avgResponseMs", "pagesToday", "ownerMachine",
    ):  # fmt: skip
        assert key in record
    assert record["host"] == site.domain
    assert int(str(record["pagesToday"])) > 0


def test_crawl_delay_site_is_spaced_by_its_delay(crawl_run: CrawlRun) -> None:
    delays = crawl_run.web.web.politeness_inputs()["crawl_delays"]
    assert delays
    for site, delay in delays.items():
        starts = sorted(r.t_start for r in crawl_run.requests if r.site == site)
        if len(starts) > 1:
            assert min(b - a for a, b in itertools.pairwise(starts)) >= delay


def test_events_follow_streams_existing_events_and_keeps_running(crawl_run: CrawlRun) -> None:
    cmd = [sys.executable, "-m", "trawl", "events", "--data", str(crawl_run.data), "--follow"]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None
        lines = [
            json.loads(proc.stdout.readline()) for _ in range(crawl_run.summary.stats.pages_stored)
        ]
        assert [e["offset"] for e in lines] == sorted(e["offset"] for e in lines)
        time.sleep(1.0)
        assert proc.poll() is None  # still following
    finally:
        proc.terminate()
        proc.wait(timeout=10)
        if proc.stdout is not None:
            proc.stdout.close()

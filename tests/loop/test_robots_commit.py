"""A robots.txt answer is committed at once only when a crash must not lose it.

A Crawl-delay sets the gap a restarted crawl keeps for the site, so the host record that
holds it is committed the moment the answer is read, before the site's next request. Any
other answer goes with the loop's next commit: a crash before it only means robots.txt is
asked again after the restart gap. (A commit for every robots.txt was 40 % of the crawl
loop's commit time in a bench crawl, issue 17.)

Real parts: the crawl loop, SQLite frontier and records, on a virtual clock with a scripted
fetcher; what each commit made durable is read through a second connection.
"""

from __future__ import annotations

import asyncio
import json
import sqlite3
from typing import TYPE_CHECKING

from tests.fakes.fetcher import Answer, ScriptedFetcher
from tests.loop.one_crawl import crawl_on
from tests.loop.test_crawl_loop import HTML, settings
from tests.loop.virtual_clock import VirtualClock

from trawl.config import with_overrides
from trawl.store.layout import DB_NAME
from trawl.store.records_sqlite import SqliteRecords

if TYPE_CHECKING:
    from pathlib import Path

    import pytest

COMMIT_INTERVAL_S = 60.0  # longer than the crawl: only the commits asked for happen in it
TEXT = (("Content-Type", "text/plain"),)
PAGES = 3


def web(robots: str | list[Answer]) -> dict[str, Answer | list[Answer]]:
    links = "".join(f'<a href="/p{i}">page {i}</a>' for i in range(1, PAGES))
    w: dict[str, Answer | list[Answer]] = {
        "http://site.test/robots.txt": (
            Answer(200, TEXT, robots.encode()) if isinstance(robots, str) else robots
        ),
        "http://site.test/": Answer(200, HTML, f"<html><body>{links}</body></html>".encode()),
    }
    for i in range(1, PAGES):
        w[f"http://site.test/p{i}"] = Answer(200, HTML, b"<html><body>page</body></html>")
    return w


def crawl_watching_commits(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    robots: str | list[Answer],
    *,
    extra: dict[str, Answer | list[Answer]] | None = None,
    seeds: tuple[str, ...] = (),
) -> tuple[ScriptedFetcher, list[tuple[float, dict[str, object] | None]]]:
    """Crawl site.test (with `extra` answers and `seeds` beside it); for each commit, when
    it came and site.test's host record it made durable (None while there is none)."""
    clock = VirtualClock()
    commits: list[tuple[float, dict[str, object] | None]] = []
    real = SqliteRecords.commit

    def watched(self: SqliteRecords) -> None:
        real(self)
        reader = sqlite3.connect(tmp_path / DB_NAME)
        try:
            row = reader.execute("SELECT record FROM hosts WHERE site = 'site.test'").fetchone()
        finally:
            reader.close()
        commits.append((clock.now(), None if row is None else json.loads(row[0])))

    monkeypatch.setattr(SqliteRecords, "commit", watched)
    s = with_overrides(settings(), crawl={"commit_interval_s": COMMIT_INTERVAL_S})
    fetcher = ScriptedFetcher({**web(robots), **(extra or {})}, clock=clock)
    seed_urls = ["http://site.test/", *seeds]
    asyncio.run(clock.run(crawl_on(s, tmp_path, clock, fetcher, seed_urls)))
    return fetcher, commits


def test_a_crawl_delay_is_durable_before_the_sites_next_request(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fetcher, commits = crawl_watching_commits(
        tmp_path, monkeypatch, "User-agent: *\nCrawl-delay: 3\n"
    )
    robots_at, first_page_at = (r.sent_at for r in fetcher.requests[:2])
    assert fetcher.requests[0].url == "http://site.test/robots.txt"
    assert first_page_at - robots_at >= 3.0  # the delay is kept
    durable = [
        at for at, record in commits if record is not None and record.get("crawlDelay") == 3.0
    ]
    assert durable, "the host record with the Crawl-delay was never committed"
    assert robots_at <= durable[0] < first_page_at


def test_an_answer_without_a_crawl_delay_waits_for_the_next_commit(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fetcher, commits = crawl_watching_commits(tmp_path, monkeypatch, "User-agent: *\nAllow: /\n")
    assert [r.url for r in fetcher.requests][:1] == ["http://site.test/robots.txt"]
    assert {r.url for r in fetcher.requests} >= {"http://site.test/", "http://site.test/p1"}
    robots_at, last_at = fetcher.requests[0].sent_at, fetcher.requests[-1].sent_at
    # The record is durable only with the commit that comes when the crawl ends, not
    # with one for its robots.txt (the interval's commits are a minute apart).
    durable = [at for at, record in commits if record is not None]
    assert durable, "the host record was never committed"
    assert robots_at < last_at <= durable[0]


def test_the_hold_on_an_unreachable_robots_txt_is_durable_at_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # site.test's robots.txt answers 503: the site is held (and, alone, ends the crawl), so
    # other.test, crawled beside it, keeps the crawl going past that answer.
    robots = [Answer(503, TEXT, b"busy")]
    other = {
        url.replace("site.test", "other.test"): answer
        for url, answer in web("User-agent: *\nAllow: /\n").items()
    }
    fetcher, commits = crawl_watching_commits(
        tmp_path, monkeypatch, robots, extra=other, seeds=["http://other.test/"]
    )
    (held,) = (r for r in fetcher.requests if r.url == "http://site.test/robots.txt")
    last_at = fetcher.requests[-1].sent_at
    assert fetcher.requests[-1].url.startswith("http://other.test/")
    durable = [at for at, record in commits if record is not None]
    assert durable, "the host record was never committed"
    assert held.sent_at <= durable[0] < last_at

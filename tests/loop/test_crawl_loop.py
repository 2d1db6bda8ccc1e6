"""Issue 15: the real crawl loop on a virtual clock, over a scripted web.

The real Crawler, real SQLite frontier, records and seen set (a file in tmp_path:
build_context opens `data_dir / trawl.db`, so no ":memory:" database) and real page work on
threads, driven by tests/loop/virtual_clock.VirtualClock: minutes of politeness gaps, backoffs
and Retry-After waits pass in a fraction of a second, and every time below is exact virtual
seconds. Politeness is read from the fetcher's request log, as a site would see it, never from
trawl's counters (STYLE §8). One crawl serves the whole module; each test checks one rule.
"""

from __future__ import annotations

import asyncio
import itertools
import sqlite3
import time
from collections import defaultdict
from dataclasses import dataclass
from typing import TYPE_CHECKING

import pytest
from tests.fakes.fetcher import NOT_FOUND, Answer, ScriptedFetcher, SentRequest
from tests.loop.virtual_clock import VirtualClock

from trawl.config import Settings, with_overrides
from trawl.loop.crawler import Crawler
from trawl.loop.workers import WorkerPool
from trawl.parse.page_work import init_worker
from trawl.urls.registered_domain import host_of
from trawl.wiring.embedded import IP_GAP_MARGIN_S, build_context, normalise_rules
from trawl.wiring.seeds import add_seeds, normalise_seeds, seed_scopes

if TYPE_CHECKING:
    from pathlib import Path

MIN_DELAY_S = 1.0
SLOW_FACTOR = 10.0
PER_IP_GAP_S = 0.5
COMMIT_INTERVAL_S = 2.0
MAX_ATTEMPTS = 3
CRAWL_DELAY_S = 3.0
RETRY_AFTER_S = 120
SLOW_S = 0.5
SHARED_IP = "203.0.113.7"
POLL_S = 0.25  # how often the second connection looks for durable page records
EPS = 1e-6

HTML = (("Content-Type", "text/html; charset=utf-8"),)
TEXT = (("Content-Type", "text/plain"),)


def page(*links: str, elapsed_s: float = 0.0) -> Answer:
    body = "".join(f'<a href="{link}">{link}</a>\n' for link in links)
    return Answer(200, HTML, f"<html><body>{body}</body></html>".encode(), None, elapsed_s)


def robots(text: str, elapsed_s: float = 0.0) -> Answer:
    return Answer(200, TEXT, text.encode(), None, elapsed_s)


def web() -> dict[str, Answer | list[Answer]]:
    """The scripted web: one site per politeness rule. Unscripted URLs (most robots.txt)
    answer 404, which allows everything (RFC 9309 2.3.1.3)."""
    w: dict[str, Answer | list[Answer]] = {
        "http://alpha.test/robots.txt": robots("User-agent: *\nDisallow: /private/\n"),
        "http://alpha.test/": page("/a1", "/private/secret", "/a2", "/a3"),
        "http://delay.test/robots.txt": robots(f"User-agent: *\nCrawl-delay: {CRAWL_DELAY_S}\n"),
        "http://delay.test/": page("/d1", "/d2", "/d3"),
        "http://slow.test/robots.txt": Answer(404, TEXT, b"", None, SLOW_S),
        "http://slow.test/sitemap.xml": Answer(404, TEXT, b"", None, SLOW_S),
        "http://slow.test/": page("/s1", "/s2", elapsed_s=SLOW_S),
        "http://one.test/": page("/1", "/2", "/3"),
        "http://two.test/": page("/1", "/2", "/3"),
        "http://throttle.test/": page("/t1", "/t2", "/t3"),
        "http://throttle.test/t1": [
            Answer(429, (("Retry-After", str(RETRY_AFTER_S)), *TEXT), b"slow down"),
            page(),
        ],
        "http://busy.test/": page("/b1", "/b2", "/b3", "/b4"),
        "http://busy.test/b1": [Answer(503, TEXT, b"busy"), page()],
        "http://busy.test/b4": Answer(500, TEXT, b"broken"),
    }
    leaves = {"alpha": "a1 a2 a3", "delay": "d1 d2 d3", "throttle": "t2 t3", "busy": "b2 b3"}
    for site, paths in leaves.items():
        for path in paths.split():
            w[f"http://{site}.test/{path}"] = page()
    for site in ("one", "two"):
        for path in "123":
            w[f"http://{site}.test/{path}"] = page()
    w["http://slow.test/s1"] = w["http://slow.test/s2"] = page(elapsed_s=SLOW_S)
    return w


SITES = ("alpha", "delay", "slow", "one", "two", "throttle", "busy")
SEEDS = [f"http://{site}.test/" for site in SITES]
# An address of its own for each site, but one and two share theirs.
HOSTS = {f"{site}.test": f"198.51.100.{n}" for n, site in enumerate(SITES, 1)}
HOSTS["one.test"] = HOSTS["two.test"] = SHARED_IP


@dataclass(frozen=True)
class Crawl:
    requests: list[SentRequest]
    answers: dict[str, Answer | list[Answer]]
    durable_at: dict[str, float]  # page URL -> first virtual time a second connection saw it
    started_at: float
    virtual_s: float
    real_s: float


def settings() -> Settings:
    return with_overrides(
        Settings(),
        crawl={
            "contact_url": "https://trawl.invalid/test",
            "max_time_s": 3600.0,
            "commit_interval_s": COMMIT_INTERVAL_S,
        },
        politeness={
            "min_delay_s": MIN_DELAY_S,
            "slow_factor": SLOW_FACTOR,
            "per_ip_min_gap_s": PER_IP_GAP_S,
        },
        fetch={"max_attempts": MAX_ATTEMPTS},
    )


async def crawl(data_dir: Path, clock: VirtualClock, fetcher: ScriptedFetcher) -> dict[str, float]:
    s = settings()
    rules = normalise_rules(s)
    pool = WorkerPool(lambda: clock.executor(2, initializer=init_worker, initargs=(rules,)))
    ctx = build_context(s, data_dir, clock, fetcher=fetcher, cpu_pool=pool)
    durable_at: dict[str, float] = {}
    watcher = asyncio.ensure_future(watch_durable(data_dir, clock, durable_at))
    try:
        seeds = normalise_seeds([(u, "test seed") for u in SEEDS], rules)
        add_seeds(ctx, seed_scopes(s, seeds, rules))
        await Crawler(ctx, watch_lag=False).run()
    finally:
        await ctx.durability.close()
        watcher.cancel()
    poll_durable(data_dir, clock, durable_at)  # what the final checkpoint made durable
    return durable_at


async def watch_durable(data_dir: Path, clock: VirtualClock, durable_at: dict[str, float]) -> None:
    """What another process would find after a crash: committed page records, polled
    through a second connection every POLL_S of virtual time."""
    while True:
        poll_durable(data_dir, clock, durable_at)
        await clock.sleep_until(clock.now() + POLL_S)


def poll_durable(data_dir: Path, clock: VirtualClock, durable_at: dict[str, float]) -> None:
    # A fresh connection each time, as another process would open: a long-lived reader
    # could hold an old snapshot.
    conn = sqlite3.connect(f"file:{data_dir / 'trawl.db'}?mode=ro", uri=True)
    try:
        for (url,) in conn.execute("SELECT url FROM pages"):
            durable_at.setdefault(url, clock.now())
    finally:
        conn.close()


@pytest.fixture(scope="module")
def crawled(tmp_path_factory: pytest.TempPathFactory) -> Crawl:
    clock = VirtualClock()
    answers = web()
    fetcher = ScriptedFetcher(answers, clock=clock, hosts=HOSTS, default_ip=None)
    real_started = time.monotonic()
    durable_at = asyncio.run(clock.run(crawl(tmp_path_factory.mktemp("data"), clock, fetcher)))
    real_s = time.monotonic() - real_started
    virtual_s = clock.now() - clock.started_at
    print(f"\nloop test crawl: {virtual_s:.1f} virtual s in {real_s:.3f} real s")
    assert fetcher.closed
    return Crawl(fetcher.requests, answers, durable_at, clock.started_at, virtual_s, real_s)


# -- reading the log ------------------------------------------------------------------------
def answer_to(crawl: Crawl, request: SentRequest, nth: int) -> Answer:
    script = crawl.answers.get(request.url, NOT_FOUND)
    return script if isinstance(script, Answer) else script[min(nth, len(script) - 1)]


def exchanges(crawl: Crawl, host: str) -> list[tuple[str, float, float, Answer]]:
    """(url, sent_at, ended_at, answer) of every request to `host`, in order (virtual s)."""
    served: dict[str, int] = defaultdict(int)
    out = []
    for r in crawl.requests:
        if host_of(r.url) != host:
            continue
        answer = answer_to(crawl, r, served[r.url])
        served[r.url] += 1
        out.append((r.url, r.sent_at, r.sent_at + answer.elapsed_s, answer))
    return out


def gaps(crawl: Crawl, host: str) -> list[tuple[str, float]]:
    """Each request's URL and its start minus the previous request's end, on `host`."""
    ex = exchanges(crawl, host)
    return [(b[0], b[1] - a[2]) for a, b in itertools.pairwise(ex)]


def hosts(crawl: Crawl) -> set[str]:
    return {host_of(r.url) for r in crawl.requests}


# -- the tests ------------------------------------------------------------------------------
def test_issue_15_robots_txt_is_each_origins_first_request(crawled: Crawl) -> None:
    assert hosts(crawled) == {host_of(u) for u in SEEDS}
    for host in hosts(crawled):
        first = exchanges(crawled, host)[0]
        assert first[0] == f"http://{host}/robots.txt", host


def test_issue_15_a_disallowed_url_is_never_requested(crawled: Crawl) -> None:
    urls = [r.url for r in crawled.requests]
    assert "http://alpha.test/private/secret" not in urls
    assert {"http://alpha.test/a1", "http://alpha.test/a2", "http://alpha.test/a3"} <= set(urls)


def test_issue_15_one_request_at_a_time_and_min_delay_after_each_end(crawled: Crawl) -> None:
    for host in hosts(crawled):
        for url, gap in gaps(crawled, host):
            assert gap >= MIN_DELAY_S - EPS, (host, url, gap)


def test_issue_15_crawl_delay_is_honoured(crawled: Crawl) -> None:
    delay_gaps = gaps(crawled, "delay.test")
    assert {url for url, _ in delay_gaps} >= {f"http://delay.test/d{n}" for n in (1, 2, 3)}
    assert all(gap >= CRAWL_DELAY_S - EPS for _, gap in delay_gaps), delay_gaps


def test_issue_15_a_slow_site_waits_slow_factor_times_its_response(crawled: Crawl) -> None:
    slow_gaps = gaps(crawled, "slow.test")
    assert {url for url, _ in slow_gaps} >= {"http://slow.test/s1", "http://slow.test/s2"}
    for url, gap in slow_gaps:  # every answer there takes SLOW_S
        assert gap == pytest.approx(SLOW_FACTOR * SLOW_S, abs=1e-3), (url, gap)


def test_issue_15_sites_sharing_an_ip_keep_the_per_ip_gap(crawled: Crawl) -> None:
    shared = ("one.test", "two.test")
    starts = sorted(r.sent_at for r in crawled.requests if host_of(r.url) in shared)
    # robots.txt, home, sitemap.xml and three leaves on each site
    assert len(starts) == 2 * 6
    spacing = [b - a for a, b in itertools.pairwise(starts)]
    assert min(spacing) >= PER_IP_GAP_S + IP_GAP_MARGIN_S - EPS, spacing
    assert min(spacing) < MIN_DELAY_S  # the two sites interleave: the IP gate spaced them


def test_issue_15_retry_after_is_waited_out(crawled: Crawl) -> None:
    ex = exchanges(crawled, "throttle.test")
    throttled = [i for i, e in enumerate(ex) if e[3].status == 429]
    assert len(throttled) == 1
    after = ex[throttled[0] + 1]
    assert after[1] - ex[throttled[0]][2] >= RETRY_AFTER_S - EPS
    assert [e[0] for e in ex].count("http://throttle.test/t1") == 2  # retried once, then 200


def test_issue_15_a_503_backs_off(crawled: Crawl) -> None:
    ex = exchanges(crawled, "busy.test")
    i = next(i for i, e in enumerate(ex) if e[3].status == 503)
    # One backoff step: the normal gap times backoff_factor (2).
    assert ex[i + 1][1] - ex[i][2] >= 2 * MIN_DELAY_S - EPS


def test_issue_15_a_retried_url_is_retried_after_the_sites_next_turn(crawled: Crawl) -> None:
    ex = exchanges(crawled, "busy.test")
    urls = [e[0] for e in ex]
    assert urls.count("http://busy.test/b4") == MAX_ATTEMPTS  # a 500 every time: given up
    assert urls.count("http://busy.test/b1") == 2  # 503, then 200
    first, retry = (i for i, u in enumerate(urls) if u == "http://busy.test/b1")
    assert urls[first + 1] in ("http://busy.test/b2", "http://busy.test/b3")  # ready, went first
    # outcomes.retry_not_before: the backoff (2 gaps), then one normal gap per attempt.
    assert ex[retry][1] - ex[first][2] >= 3 * MIN_DELAY_S - EPS
    assert len(urls) == len(set(urls)) + 1 + (MAX_ATTEMPTS - 1)  # nothing else twice


def test_issue_15_fetched_pages_are_durable_within_the_commit_interval(crawled: Crawl) -> None:
    final_end: dict[str, float] = {}  # a retried URL's record follows its last answer
    for host in hosts(crawled):
        for url, _sent, ended, _answer in exchanges(crawled, host):
            if not url.endswith("/robots.txt"):
                final_end[url] = ended
    assert len(final_end) >= 30
    for url, ended in final_end.items():
        assert url in crawled.durable_at, url
        late = crawled.durable_at[url] - ended
        assert 0 <= late <= COMMIT_INTERVAL_S + POLL_S + EPS, (url, late)


def test_issue_15_minutes_of_crawl_in_seconds_of_real_time(crawled: Crawl) -> None:
    print(f"\n{crawled.virtual_s:.1f} virtual s in {crawled.real_s:.3f} real s")
    assert crawled.virtual_s >= RETRY_AFTER_S  # the Retry-After alone takes that long
    assert crawled.real_s < 60  # a generous bound on a shared machine: it takes ~1 s

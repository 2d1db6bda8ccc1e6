"""Idle sites leave memory and come back from their host records with their politeness whole.

`far.test` is crawled first and then left idle for longer than `crawl.site_idle_s`, so its
state leaves memory; a slow chain of pages on another site links back to it later. Read
from the fetcher's log, as the site sees it: its robots.txt is not fetched again (its rules
came back from the host record), its Crawl-delay still spaces the requests and its Disallow
still holds.

Real parts: the crawl loop, the SQLite frontier and records, page work on threads, on a
virtual clock with a scripted fetcher (tests/loop/test_crawl_loop.py's settings).
"""

from __future__ import annotations

import asyncio
import itertools
from typing import TYPE_CHECKING, Any

from tests.fakes.fetcher import Answer, ScriptedFetcher
from tests.loop.one_crawl import crawl_on
from tests.loop.test_crawl_loop import HTML, page, robots, settings
from tests.loop.virtual_clock import VirtualClock

from trawl.config import with_overrides
from trawl.loop.placement import EmbeddedPlacement

if TYPE_CHECKING:
    from pathlib import Path

    from trawl.model import FetchResult

IDLE_S = 30.0
CRAWL_DELAY_S = 3.0
CHAIN = 6  # slow pages before the link back: each ~2 s, so ~20 s apart (the 10x rule)
SLOW_S = 2.0
FAR = "http://far.test"


def prose_page(n: int, link: str) -> Answer:
    """A page of its own words: pages alike would be contained as a trap (similar pages)."""
    words = " ".join(f"w{n}x{i * (n + 7)}" for i in range(200))
    body = f'<html><body><p>{words}</p><a href="{link}">next</a></body></html>'
    return Answer(200, HTML, body.encode(), None, SLOW_S)


def web() -> dict[str, Answer | list[Answer]]:
    chain = [f"http://chain.test/c{i}" for i in range(1, CHAIN + 1)]
    w: dict[str, Answer | list[Answer]] = {
        f"{FAR}/robots.txt": robots(
            f"User-agent: *\nCrawl-delay: {CRAWL_DELAY_S}\nDisallow: /private/\n"
        ),
        f"{FAR}/": page(),
        "http://chain.test/": prose_page(0, chain[0]),
        chain[-1]: prose_page(CHAIN, f"{FAR}/late"),
        f"{FAR}/late": page("/l1", "/l2", "/private/x"),
        f"{FAR}/l1": page(),
        f"{FAR}/l2": page(),
    }
    for n, (this, after) in enumerate(itertools.pairwise(chain), 1):
        w[this] = prose_page(n, after)
    return w


def test_an_idle_site_leaves_memory_and_comes_back_with_its_politeness(tmp_path: Path) -> None:
    clock = VirtualClock()
    s = with_overrides(settings(), crawl={"max_time_s": 0.0, "site_idle_s": IDLE_S})
    hosts = {"far.test": "198.51.100.31", "chain.test": "198.51.100.32"}
    fetcher = ScriptedFetcher(web(), clock=clock, hosts=hosts, default_ip=None)
    seeds = [f"{FAR}/", "http://chain.test/"]
    ctx = asyncio.run(clock.run(crawl_on(s, tmp_path, clock, fetcher, seeds)))

    far = [(r.url, r.sent_at - clock.started_at) for r in fetcher.requests if FAR in r.url]
    urls = [url for url, _ in far]
    home_at = dict(far)[f"{FAR}/"]
    late_at = dict(far)[f"{FAR}/late"]
    assert late_at - home_at > IDLE_S * 1.25 + 1  # idle for longer than a sweep could miss
    state = ctx.sites.loaded("far.test")
    assert state is not None
    assert state.loaded_at - clock.started_at > home_at + IDLE_S  # read back, not kept
    assert ctx.stats.sites_forgotten >= 1

    assert urls.count(f"{FAR}/robots.txt") == 1
    assert sorted(urls[urls.index(f"{FAR}/late") :]) == [f"{FAR}/l1", f"{FAR}/l2", f"{FAR}/late"]
    times = [t for _, t in far]
    assert all(b - a >= CRAWL_DELAY_S - 1e-6 for a, b in itertools.pairwise(times))
    # It still counts the site that linked to it while it was out of memory.
    assert state.traps.referring_sites() == 1


class DoubtAfter(EmbeddedPlacement):
    """A cluster node's placement, as far as this test needs: from `at` on, its hold on
    `site`'s partition is in doubt (a hand-over under way, a lease unsure)."""

    def __init__(self, clock: VirtualClock, site: str, at: float) -> None:
        super().__init__(None)
        self._clock, self._site, self._at = clock, site, at

    def may_fetch(self, site: str) -> bool:
        return site != self._site or self._clock.now() < self._at


def test_a_site_whose_partition_is_in_doubt_stays(tmp_path: Path) -> None:
    """Its host record is not written: the partition's next owner may be writing it."""
    clock = VirtualClock()
    s = with_overrides(settings(), crawl={"max_time_s": 200.0, "site_idle_s": IDLE_S})
    hosts = {"far.test": "198.51.100.31", "chain.test": "198.51.100.32"}
    fetcher = ScriptedFetcher(web(), clock=clock, hosts=hosts, default_ip=None)
    placement = DoubtAfter(clock, "far.test", clock.started_at + 10.0)
    seeds = [f"{FAR}/", "http://chain.test/"]
    ctx = asyncio.run(clock.run(crawl_on(s, tmp_path, clock, fetcher, seeds, placement=placement)))
    assert clock.now() - clock.started_at > IDLE_S * 3  # long enough to have left
    assert all(r.sent_at - clock.started_at < 10.0 for r in fetcher.requests if FAR in r.url)
    state = ctx.sites.loaded("far.test")
    assert state is not None
    assert state.loaded_at - clock.started_at < 10.0  # never left memory
    assert ctx.stats.sites_forgotten == 1  # chain.test, idle after its last page


DEAD = "http://dead.far.test"


class Attempts(ScriptedFetcher):
    """Notes every fetch it is asked for, sent or not: (url, when)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.attempts: list[tuple[str, float]] = []

    async def fetch(self, url: str, **kwargs: Any) -> FetchResult:
        self.attempts.append((url, self.clock.now()))
        return await super().fetch(url, **kwargs)


def test_a_site_whose_origin_fails_leaves_memory_and_comes_back_with_the_failures(
    tmp_path: Path,
) -> None:
    """`dead.far.test` refuses connections while `far.test` answers: that origin's failures
    are its own (politeness/origin_health.py). Its robots.txt is retried a minute later, so
    the site idles past `site_idle_s` in between and leaves memory; read back from its host
    record, the origin's failures count on."""
    clock = VirtualClock()
    s = with_overrides(
        settings(), crawl={"max_time_s": 200.0, "continuous": True, "site_idle_s": IDLE_S}
    )
    refused = Answer(status=0, error_kind="connect")
    w: dict[str, Answer | list[Answer]] = {
        f"{FAR}/": page(f"{DEAD}/x"),
        f"{DEAD}/robots.txt": refused,
        f"{DEAD}/x": refused,
    }
    hosts = {"far.test": "198.51.100.31", "dead.far.test": "198.51.100.31"}
    fetcher = Attempts(w, clock=clock, hosts=hosts, default_ip=None)
    ctx = asyncio.run(clock.run(crawl_on(s, tmp_path, clock, fetcher, [f"{FAR}/"])))

    # A refused connection sends no request (no server logs it): count the attempts.
    dead_at = [at - clock.started_at for url, at in fetcher.attempts if DEAD in url]
    assert len(dead_at) >= 2
    assert dead_at[1] - dead_at[0] > IDLE_S * 1.25 + 1  # idle for longer than a sweep
    assert ctx.stats.sites_forgotten >= 1
    state = ctx.sites.loaded("far.test")
    assert state is not None  # read back for its last attempt, under `IDLE_S` before the end
    assert state.loaded_at - clock.started_at > dead_at[0] + IDLE_S
    failing = state.origins.failing or {}
    assert failing[DEAD].failures == len(dead_at)  # none lost while out of memory
    times = [r.sent_at for r in fetcher.requests]
    assert all(b - a >= 1.0 - 1e-6 for a, b in itertools.pairwise(times))  # one site, one IP

"""A one-shot rerun does not wait out what the run before it left blocked.

`trawl demo` run three times in one directory took 62 s, 3.9 s and 84 s, idle most of the
time: the first run left URLs queued behind an unreadable robots.txt (RFC 9309 2.3.1.3:
retried later, up to an hour apart), and the rerun held their sites' turns until those
retries, because a site joined the crawl's blocked set (loop.run_state) only when its
turn found the robots.txt failing — and a held site's turn comes at its retry time. The
same held a rerun until the next UTC day for a site over its daily cap. A rerun now sees
at a site's first turn that its hold is such a wait, and does not stay open for it; once
the retry is due, a rerun asks the robots.txt again.

Real parts: the crawl loop, the SQLite frontier and host records, page work on threads, on
a virtual clock with a scripted fetcher (tests/loop/test_crawl_loop.py's settings).
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, NamedTuple

from tests.fakes.fetcher import Answer, ScriptedFetcher
from tests.loop.one_crawl import crawl_on
from tests.loop.test_crawl_loop import page, settings
from tests.loop.virtual_clock import VirtualClock

from trawl.config import with_overrides

if TYPE_CHECKING:
    from collections.abc import Callable
    from pathlib import Path

    from tests.fakes.fetcher import SentRequest

    from trawl.config import Settings

HOME = "http://ok.test/"
BROKEN = "http://broken.test/"  # its robots.txt answers 500: unreachable, retried later
CAPPED = "http://capped.test/"
BUSY = "http://busy.test/"
RETRY_BASE_S = 60.0  # the default robots retry's first wait


def web() -> dict[str, Answer | list[Answer]]:
    capped_pages = [f"{CAPPED}p{i}" for i in range(6)]
    return {
        HOME: page(f"{BROKEN}a", f"{BROKEN}b", *capped_pages),
        f"{BROKEN}robots.txt": Answer(500, body=b"down"),
        **{url: page() for url in capped_pages},
    }


class Ran(NamedTuple):
    urls: list[str]  # asked for, in order
    seconds: float  # virtual
    waiting: dict[str, tuple[int, int]]  # what the URLs left wait for (RunState.waiting_left)


async def crawl(
    data_dir: Path, clock: VirtualClock, s: Settings, answers: dict[str, Answer | list[Answer]]
) -> tuple[list[SentRequest], dict[str, tuple[int, int]]]:
    fetcher = ScriptedFetcher(answers, clock=clock)
    ctx = await crawl_on(s, data_dir, clock, fetcher, [HOME])
    return fetcher.requests, ctx.run.waiting_left()


def run(
    data_dir: Path,
    start_at: float,
    web: Callable[[], dict[str, Answer | list[Answer]]] = web,
    **traps: object,
) -> Ran:
    """One one-shot crawl from `start_at` of `web`."""
    s = with_overrides(settings(), crawl={"max_time_s": 0.0, "max_pages": 0})
    if traps:
        s = with_overrides(s, traps=traps)
    clock = VirtualClock(start_at)
    requests, waiting = asyncio.run(clock.run(crawl(data_dir, clock, s, web())))
    return Ran([r.url for r in requests], clock.now() - start_at, waiting)


def test_a_rerun_does_not_wait_for_an_unreadable_robots_txt_retry(tmp_path: Path) -> None:
    first, first_s, waiting = run(tmp_path, 1_767_225_600.0)
    assert f"{BROKEN}robots.txt" in first
    assert not any(u.startswith(BROKEN) and not u.endswith("robots.txt") for u in first)
    assert first_s < RETRY_BASE_S  # the first run did not wait for the retry either
    assert waiting == {"robots.txt": (1, 2)}  # the summary says what the two wait for

    rerun_at = 1_767_225_600.0 + first_s + 5.0  # the retry is still ahead
    second, second_s, waiting = run(tmp_path, rerun_at)
    assert second_s < 10.0, f"the rerun sat {second_s:.0f} s waiting for the robots retry"
    assert f"{BROKEN}robots.txt" not in second  # not asked before its retry time
    assert waiting == {"robots.txt": (1, 2)}

    # Once the retry is due, a rerun asks again (the site is not given up).
    third, _, _ = run(tmp_path, rerun_at + 2 * 3600.0)
    assert f"{BROKEN}robots.txt" in third


def test_a_rerun_does_not_wait_for_tomorrow_for_a_site_over_its_daily_cap(
    tmp_path: Path,
) -> None:
    # A cap of 2 pages a day: capped.test's other 4 pages wait for the next UTC day.
    start = 1_767_225_600.0 + 3600.0  # 01:00 UTC: the next day is 23 h away
    first, first_s, _ = run(tmp_path, start, daily_page_cap=2, max_importance=1.0)
    assert sum(u.startswith(CAPPED) and "/p" in u for u in first) == 2
    second, second_s, waiting = run(
        tmp_path, start + first_s + 5.0, daily_page_cap=2, max_importance=1.0
    )
    assert second_s < 10.0, f"the rerun sat {second_s:.0f} s waiting for the next day"
    assert not any(u.startswith(CAPPED) and "/p" in u for u in second)
    assert waiting["the daily cap"] == (1, 5)  # 4 pages and its /sitemap.xml


def test_a_one_shot_crawl_does_not_stay_open_for_a_retry_after_of_hours(tmp_path: Path) -> None:
    # Before: a crawl of these three URLs ran 43,203 virtual s (12 h), six times 7,200 s.
    def busy_web() -> dict[str, Answer | list[Answer]]:
        busy = Answer(503, headers=(("Retry-After", "7200"),))
        return {HOME: page(f"{BUSY}a", f"{BUSY}b"), f"{BUSY}a": busy, f"{BUSY}b": busy}

    start = 1_767_225_600.0
    first, first_s, waiting = run(tmp_path, start, web=busy_web)
    assert first.count(f"{BUSY}a") + first.count(f"{BUSY}b") == 1  # one 503, then the wait
    assert first_s < 10.0, f"the crawl sat {first_s:.0f} s waiting for a Retry-After"
    assert waiting["a backoff or Retry-After"] == (1, 3)  # /a, /b, /sitemap.xml
    # A rerun inside the Retry-After sends nothing to the site; one after it does.
    second, second_s, _ = run(tmp_path, start + first_s + 60.0, web=busy_web)
    assert not any(u.startswith(BUSY) for u in second)
    assert second_s < 10.0
    third, _, _ = run(tmp_path, start + 7300.0, web=busy_web)
    assert any(u.startswith(BUSY) and not u.endswith(".txt") for u in third)


def test_a_short_backoff_is_still_waited_out(tmp_path: Path) -> None:
    def busy_web() -> dict[str, Answer | list[Answer]]:
        busy = Answer(503, headers=(("Retry-After", "30"),))
        return {HOME: page(f"{BUSY}a"), f"{BUSY}a": [busy, page()]}

    urls, ran_s, _ = run(tmp_path, 1_767_225_600.0, web=busy_web)
    assert urls.count(f"{BUSY}a") == 2  # a 503, then after the 30 s, the page
    assert ran_s >= 30.0


def test_a_long_crawl_delay_is_the_sites_pace_and_is_waited_out(tmp_path: Path) -> None:
    # Crawl-delay: 600 is a pace, not a site asking to be left alone: a one-shot crawl
    # fetches all of the site, ten minutes apart, longer than crawl.max_site_wait_s.
    slow = "http://slow.test/"

    def slow_web() -> dict[str, Answer | list[Answer]]:
        return {
            HOME: page(f"{slow}a"),
            f"{slow}robots.txt": Answer(200, body=b"User-agent: *\nCrawl-delay: 600\n"),
            f"{slow}a": page(f"{slow}b"),
            f"{slow}b": page(),
        }

    urls, ran_s, _ = run(tmp_path, 1_767_225_600.0, web=slow_web)
    assert f"{slow}a" in urls
    assert f"{slow}b" in urls
    assert ran_s >= 1200.0

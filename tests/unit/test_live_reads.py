"""CrawlView.read_live: the API's reads of live site states run on the API's own thread,
and a walk the crawl spoils under them is tried again, then run on the crawl loop."""

from __future__ import annotations

import asyncio
import random
import sys
import threading
from contextlib import contextmanager
from functools import partial
from types import SimpleNamespace
from typing import TYPE_CHECKING, Any

from trawl.api.crawl_view import LIVE_READ_TRIES, CrawlView
from trawl.api.site_ranking import busiest, most_troubled, recent_errors
from trawl.loop.inbox import CrawlInbox
from trawl.politeness.site_clock import ClockPolicy, FetchOutcome
from trawl.politeness.site_state import SiteState

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator

POLICY = ClockPolicy(park_after_failures=3, park_s=600.0)


@contextmanager
def crawl_loop_thread(
    step: Callable[[], None] | None = None,
) -> Iterator[tuple[CrawlView, CrawlInbox, threading.Event]]:
    """A crawl loop on a thread of its own, running `step` and draining its inbox between
    steps as the crawl's busy paths do; yields a CrawlView built on it."""
    inbox = CrawlInbox()
    loop = asyncio.new_event_loop()
    stop = threading.Event()

    async def crawl() -> None:
        while not stop.is_set():
            if step is not None:
                step()
            inbox.drain()
            await asyncio.sleep(0 if step is not None else 0.001)

    async def make_view() -> CrawlView:
        return CrawlView(SimpleNamespace(inbox=inbox))  # type: ignore[arg-type]

    thread = threading.Thread(target=loop.run_until_complete, args=(crawl(),), daemon=True)
    thread.start()
    try:
        view = asyncio.run_coroutine_threadsafe(make_view(), loop).result(timeout=5)
        yield view, inbox, stop
    finally:
        stop.set()
        thread.join(timeout=5)
        loop.close()


def test_a_read_runs_on_the_callers_thread_without_the_crawl_loop() -> None:
    with crawl_loop_thread() as (view, inbox, _):
        where = asyncio.run(view.read_live(threading.get_ident))
    assert where == threading.get_ident()
    assert inbox.ran == 0
    assert view.live_read_retries == 0


def test_a_walk_spoilt_every_time_is_run_on_the_crawl_loop() -> None:
    here = threading.get_ident()
    calls: list[int] = []

    def read() -> int:
        calls.append(threading.get_ident())
        if threading.get_ident() == here:
            raise RuntimeError("dictionary changed size during iteration")
        return threading.get_ident()

    with crawl_loop_thread() as (view, inbox, _):
        where = asyncio.run(view.read_live(read))
    assert calls[:LIVE_READ_TRIES] == [here] * LIVE_READ_TRIES
    assert where != here
    assert calls[-1] == where
    assert view.live_read_retries == LIVE_READ_TRIES
    assert inbox.ran == 1


def test_a_walk_spoilt_once_is_read_again_on_the_callers_thread() -> None:
    spoilt = [True]

    def read() -> int:
        if spoilt.pop() if spoilt else False:
            raise RuntimeError("deque mutated during iteration")
        return threading.get_ident()

    with crawl_loop_thread() as (view, inbox, _):
        where = asyncio.run(view.read_live(read))
    assert where == threading.get_ident()
    assert (view.live_read_retries, inbox.ran) == (1, 0)


def test_rankings_and_host_records_read_while_the_crawl_changes_its_sites() -> None:
    """The crawl adds sites, fails and recovers them and notes errors on its thread while
    this one ranks them and reads host records as the API does: no read raises, and
    each answer is one the sites could give (known hosts, newest error first)."""
    sites: dict[str, SiteState] = {}
    rng = random.Random(17)
    now = [1_000_000.0]

    def crawl_step() -> None:  # a few of the crawl's changes, as its steps make them
        for _ in range(20):
            now[0] += 0.01
            name = f"s{rng.randrange(400)}.test"
            state = sites.get(name)
            if state is None:
                state = sites[name] = SiteState(name)
            clock = state.clock
            clock.parked_until = None  # the test drives the clock, not its gaps
            clock.next_allowed_at = now[0]
            clock.start(now[0])
            outcome = rng.choice([FetchOutcome.OK, FetchOutcome.SERVER_ERROR])
            clock.finish(now[0] + 0.05, 0.05, outcome, policy=POLICY)
            state.count_page(now[0])
            if outcome is not FetchOutcome.OK:
                state.note_error(now[0], f"http://{name}/p{rng.randrange(99)}", "http_500")
            state.traps.note_page(rng.getrandbits(64))
            state.traps.note_referrer(f"r{rng.randrange(50)}.test")

    answers: list[Any] = []
    old_interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-5)  # hand the GIL over often, so walks do get spoilt
    try:
        with crawl_loop_thread(crawl_step) as (view, inbox, _):

            async def api() -> None:
                for i in range(300):
                    copy = partial(list, sites.values())
                    at = now[0]
                    for rank in (_latest_errors, most_troubled, busiest):
                        answers.append(await view.read_live(partial(_ranked, rank, copy, at)))
                    state = sites.get(f"s{i % 400}.test")
                    if state is not None:
                        answers.append(
                            await view.read_live(partial(state.to_host_record, "this-node"))
                        )

            asyncio.run(api())
            fallbacks = inbox.ran
    finally:
        sys.setswitchinterval(old_interval)

    assert len(answers) >= 900
    # The rankings walk a copy of the site list, so only a host record's short walks (a
    # site's recent fingerprints) can be spoilt, a few times a run and never thrice in a
    # row; ranking the live dict view instead went to the crawl loop ~30 times a run.
    assert fallbacks == 0
    for answer in answers:
        if isinstance(answer, dict):  # a host record
            assert answer["host"] in sites
            assert answer["ownerMachine"] == "this-node"
            continue
        assert all(row["host"] in sites for row in answer)
        times = [row["at"] for row in answer if "at" in row]
        assert times == sorted(times, reverse=True)


def _ranked(
    rank: Callable[..., list[dict[str, object]]],
    copy: Callable[[], list[SiteState]],
    at: float,
) -> list[dict[str, object]]:
    return rank(copy(), at, len, 10)


def _latest_errors(
    sites: list[SiteState], _at: float, _queued: object, limit: int
) -> list[dict[str, object]]:
    return recent_errors(sites, limit)

"""Which sites this crawl process is working on, and whether it goes on.

Each fact is tracked once:
- *held*: a site whose next request belongs to one task: popped for a turn (`take_site`) or
  taken for a robots.txt redirect hop (`hold_site`), until released at its clock's next
  allowed time; the frontier's schedule keeps it (`Frontier.is_held`), nothing here;
- *working*: sites with work running, a turn's outcome included (a partition hand-over waits
  for them), counted per site;
- *blocked*: sites whose queued URLs do not keep a one-shot crawl open (an unreadable
  robots.txt, a pause, a contained trap site's rest, a daily cap, a wait for the site's
  next request longer than `RunLimits.max_site_wait_s`);
- *turns*: turns running (the dispatcher's count), and the stop: limits, a signal, the end.

Event loop thread only.
"""

from __future__ import annotations

import asyncio
from collections import Counter
from typing import TYPE_CHECKING

from trawl.model import Line
from trawl.politeness.robots import RobotsStatus

if TYPE_CHECKING:
    from trawl.clock import Clock
    from trawl.frontier.ports import Frontier
    from trawl.loop.placement import Placement
    from trawl.loop.policy import RunLimits
    from trawl.loop.stats import CrawlStats
    from trawl.model import CrawlUrl
    from trawl.politeness.site_book import SiteBook
    from trawl.politeness.site_state import SiteState

PAUSE_RECHECK_S = 60.0  # a paused site's turn comes back this often, to no effect
GATE_RECHECK_S = 1.0  # a site of a partition we may not fetch now is looked at again then


class RunState:
    def __init__(
        self,
        *,
        clock: Clock,
        limits: RunLimits,
        frontier: Frontier,
        sites: SiteBook,
        placement: Placement,
        stats: CrawlStats,
    ) -> None:
        self._clock = clock
        self.limits = limits
        self._frontier = frontier
        self._sites = sites
        self._placement = placement
        self._stats = stats
        self.started_at = clock.now()
        self.pages_started = 0
        self.turns = 0
        # Pages queued for a browser (loop.renders): their links may be new URLs, so a
        # one-shot crawl is not finished while any waits.
        self.renders_waiting = 0
        self.stopping = False
        # A stop that sends no new request (a signal's, or the time limit's): requests not
        # yet sent are not sent.
        self.interrupted = False
        self.blocked: set[str] = set()
        self.working: Counter[str] = Counter()
        self._stop_event = asyncio.Event()
        self._interrupt_event = asyncio.Event()

    # -- holding sites ------------------------------------------------------------------
    def take_site(self) -> tuple[str, Line] | None:
        """A site whose turn has come and the line its turn serves; held until
        `release_site`."""
        now = self._clock.now()
        while (turn := self._frontier.pop_ready_site(now)) is not None:
            if self._placement.may_fetch(turn[0]):
                return turn
            # Its partition is being handed over or its lease is in doubt: not ours to fetch.
            self._frontier.release_site(turn[0], now + GATE_RECHECK_S)
        return None

    def release_site(self, site: str) -> None:
        """Hand the site back to the frontier at its clock's next allowed time (idempotent)."""
        if self._frontier.is_held(site):
            state = self._sites.loaded(site)
            if state is None:
                # Its host record could not be read (a cluster's store went away), so the
                # turn sent nothing: the next turn reads it again and waits for its clock.
                self._frontier.release_site(site, self._clock.now() + GATE_RECHECK_S)
                return
            self._sites.mark_changed(site)
            # The politeness wait most requests see: the site's next URL waits out its gap
            # (or backoff) in the frontier, not in a turn (issue 14: it went uncounted).
            wait_s = state.clock.next_allowed_at - self._clock.now()
            if wait_s > 0 and not state.paused and self._frontier.queued_for(site):
                self._stats.note_wait("site_clock", wait_s)
            ready_at = self.ready_at(state)
            self.note_wait_until(state, ready_at)
            self._frontier.release_site(site, ready_at)

    def note_wait_until(self, state: SiteState, ready_at: float) -> None:
        """A site whose next request waits longer than `max_site_wait_s` and than its own
        pace (a Retry-After of hours, a backoff, a parked site; not a long Crawl-delay) is
        blocked: a one-shot crawl does not stay open for it (one site answering 503 with
        `Retry-After: 7200` held a crawl of three URLs open for 12 h). Unblocked when its
        turn leases a URL."""
        if self.limits.continuous:
            return  # it waits for every site
        wait_s = ready_at - self._clock.now()
        if wait_s > self.limits.max_site_wait_s and wait_s > state.clock.gap_s(
            self._sites.clock_policy
        ):
            self.blocked.add(state.site)

    def hold_site(self, site: str) -> bool:
        """Hold `site` outside its own turn, as `take_site` holds a popped one (a robots.txt
        redirect from another site to it), until `release_held_site`. False when a turn
        holds it already. The caller checks `may_fetch` first and waits for its clock.
        Raises what reading the site's host record raises (StoreUnavailable), the hold
        given back."""
        if not self._frontier.hold_site(site):
            return False
        self.working[site] += 1  # a partition hand-over waits for this request too
        try:
            self._sites.state(site)
        except BaseException:
            # Its host record could not be read (a cluster's store went away): the hold
            # goes back with the error, or the site would stay held for the crawl's life,
            # no turn of its own ever coming.
            self.release_held_site(site)
            raise
        return True

    def release_held_site(self, site: str) -> None:
        """Give back a site taken with `hold_site`, at its clock's next allowed time."""
        self.release_site(site)
        self.end_work(site)

    def begin_work(self, site: str) -> None:
        self.working[site] += 1

    def end_work(self, site: str) -> None:
        self.working[site] -= 1
        if not self.working[site]:
            del self.working[site]

    def ready_at(self, state: SiteState) -> float:
        """When the site's next turn may come."""
        if state.paused:  # looked at again now and then; lifting the pause wakes it at once
            return self._clock.now() + PAUSE_RECHECK_S
        if state.containment.resting:  # nothing to serve before its next trickle
            trickle_at = state.containment.next_trickle_at(self._clock.now())
            return max(state.clock.next_allowed_at, trickle_at)
        return state.clock.next_allowed_at

    def reschedule(self, state: SiteState) -> None:
        """The site's turn comes at its new ready time (a changed override); a held site
        gets it when released."""
        ready_at = self.ready_at(state)
        if not state.paused:
            self.blocked.discard(state.site)
            self.note_wait_until(state, ready_at)
        self._frontier.move_site(state.site, ready_at)  # not while held

    def wake(self, state: SiteState, item: CrawlUrl) -> None:
        """A contained site resting until its next trickle gets work it may serve now (a due
        page, a vouched URL): its turn comes back at its clock's time."""
        containment = state.containment
        if item.line is not Line.REFRESH:
            if not containment.is_vouched(item.depth):
                return
            containment.maybe_vouched = True
        if containment.resting:
            containment.resting = False
            self.blocked.discard(state.site)
            self._frontier.move_site(state.site, self.ready_at(state))  # not while held

    # -- limits and the stop ------------------------------------------------------------
    def may_start_page(self) -> bool:
        max_pages = self.limits.max_pages
        return not self.stopping and (max_pages <= 0 or self.pages_started < max_pages)

    def should_stop(self) -> bool:
        if self.stopping or self.time_is_up():
            return True
        max_pages = self.limits.max_pages
        return max_pages > 0 and self.pages_started >= max_pages

    def time_left(self) -> float | None:
        """Seconds until the time limit (0 once passed); None without one."""
        max_time = self.limits.max_time_s
        if max_time <= 0:
            return None
        return max(0.0, self.started_at + max_time - self._clock.now())

    def time_is_up(self) -> bool:
        return self.time_left() == 0.0

    def is_finished(self) -> bool:
        """No turn running, no render waiting and nothing queued but URLs of blocked sites.

        Those stay queued (a rerun or a continuous crawl retries them); a one-shot crawl
        does not sit out robots retry waits of up to an hour, nor the trickle of a contained
        trap site (frontier.containment), nor a site over its daily cap.
        """
        if self.turns or self.limits.continuous or self.renders_waiting:
            return False
        waiting = sum(self._frontier.queued_for(site) for site in self.blocked)
        return self._frontier.queued() == waiting

    def waiting_left(self) -> dict[str, tuple[int, int]]:
        """What the blocked sites' queued URLs wait for, as (sites, URLs) by reason, for the
        crawl's summary: a user told only "URLs left in queue 60" cannot tell a site that
        asked for two hours' rest from one whose robots.txt is down."""
        now = self._clock.now()
        left: dict[str, tuple[int, int]] = {}
        for site in self.blocked:
            urls = self._frontier.queued_for(site)
            if urls:
                reason = self._why_blocked(self._sites.state(site), now)
                sites, total = left.get(reason, (0, 0))
                left[reason] = (sites + 1, total + urls)
        return left

    def _why_blocked(self, state: SiteState, now: float) -> str:
        if state.paused:
            return "a pause"
        if state.containment.resting:
            return "a trap site's trickle"
        if state.is_over_daily_cap(now, self._sites.trap_policy):
            return "the daily cap"
        if any(rules.status is RobotsStatus.UNREACHABLE for rules in state.robots.values()):
            return "robots.txt"
        return "a backoff or Retry-After"

    def request_stop(self) -> None:
        """Stop handing out work; turns in flight finish (limits, the end of a crawl)."""
        self.stopping = True
        self._stop_event.set()

    def interrupt(self) -> None:
        """A stop asked for by a signal (SIGINT/SIGTERM), or the time limit's: as
        `request_stop`, and turns still waiting to send their request (an IP's gap, the
        cluster's IP slot) give it up, their URL back in line, so the stop, and a node's
        hand-over, wait only for requests on the wire and pages being worked out. The page
        limit's stop lets them finish: a crawl asked for N pages gets N."""
        self.interrupted = True
        self._interrupt_event.set()
        self.request_stop()

    @property
    def interrupted_event(self) -> asyncio.Event:
        """Set by `interrupt`."""
        return self._interrupt_event

    @property
    def stopped(self) -> asyncio.Event:
        """Set by `request_stop`."""
        return self._stop_event

    async def wait_stopped(self) -> None:
        """Return once `request_stop` was called (a limit, a signal, or the end)."""
        await self._stop_event.wait()

    async def wait_stopped_for(self, timeout_s: float) -> bool:
        """Until the stop (True) or `timeout_s` on the crawl's clock (False)."""
        return await self._clock.wait_for(self._stop_event, timeout_s)

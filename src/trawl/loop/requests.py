"""Steps 1-2 of the loop: pick a site's next request and make it, politely.

Every request to a site — robots.txt, its redirect hops, pages, a render's — goes through
`request`, the one place where the per-IP gate is taken and the site clock is started and
finished.
The caller holds the site (frontier.site_schedule hands a site to one task at a time); a
robots.txt redirect to another site holds that site too (`fetch_robots`).
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING

from trawl.errors import FetchError
from trawl.frontier.traps import TrapReason
from trawl.model import FetchResult, Line, UrlKind
from trawl.politeness.retry_after import parse_retry_after
from trawl.politeness.robots import (
    HopAction,
    RobotsRules,
    RobotsStatus,
    robots_from_response,
    robots_hop,
    robots_redirect_target,
    robots_url,
)
from trawl.politeness.robots_fetch import Blocking, robots_read
from trawl.politeness.site_clock import FetchOutcome, classify_result
from trawl.urls.registered_domain import host_of, origin_of, site_of

if TYPE_CHECKING:
    from trawl.frontier.ports import QueuedUrl
    from trawl.loop.content import StoredContent
    from trawl.loop.context import CrawlContext
    from trawl.loop.sitemaps import Sitemaps
    from trawl.model import CrawlUrl, Lease, PageRecord
    from trawl.politeness.site_state import SiteState

_MAX_SKIPS_PER_TURN = 200  # disallowed URLs dropped in one turn before yielding


class SiteRequests:
    def __init__(self, ctx: CrawlContext, sitemaps: Sitemaps, content: StoredContent) -> None:
        self.ctx = ctx
        self.sitemaps = sitemaps
        self.content = content

    async def take_turn(self, site: str, line: Line | None = None) -> Lease | None:
        """Lease the site's next allowed URL (from `line`'s kind of work when it has some),
        or spend the turn on robots.txt (None)."""
        ctx = self.ctx
        state = ctx.sites.state(site)
        now = ctx.clock.now()
        if not state.clock.is_ready(now):
            ctx.stats.note_wait("site_clock", state.clock.next_allowed_at - now)
            run = ctx.run
            if (
                not run.limits.continuous  # which waits for every site
                and site not in run.blocked
                and self._holds_a_blocked_wait(state, line, now)
            ):
                run.blocked.add(site)
            return None  # released at its clock's time
        if state.paused:
            ctx.stats.note_wait("paused", 0.0)
            ctx.run.blocked.add(site)  # a one-shot crawl does not wait for the pause
            return None  # released to re-check later; lifting the pause wakes it at once
        for _ in range(_MAX_SKIPS_PER_TURN):
            queued = ctx.frontier.head(site, line, now)
            if queued is not None and state.containment.is_contained:
                queued = self._contained_head(state, queued, now)
            if queued is None:
                return None
            if ctx.scope.current.is_excluded(queued.item.url):  # a run-time exclude
                ctx.frontier.drop(queued)
                ctx.intake.note_excluded(queued.item.url, queued.item.url_hash)
                continue
            origin = origin_of(queued.item.url)
            rules = state.robots.get(origin)
            if rules is None or not rules.is_fresh(now):
                await self.fetch_robots(state, origin, rules)
                return None
            held_until = _origin_held_until(state, origin, rules)
            if held_until > now:
                if queued.not_before <= now:  # the site's other ready URLs go first
                    ctx.frontier.defer(queued, held_until)
                    continue
                self._hold(state, rules, held_until)
                return None
            if not rules.is_prepared(ctx.agent_token):
                # Rules read back from a host record (a restart, a site back in memory:
                # loop.idle_sites) are parsed at first use, on a thread as a fresh file's
                # are: a 500 KiB file held the loop ~0.1-0.2 s. The head is read again.
                await asyncio.get_running_loop().run_in_executor(
                    None, rules.prepare, ctx.agent_token
                )
                now = ctx.clock.now()
                continue
            if not rules.is_allowed(queued.item.url, ctx.agent_token):
                ctx.frontier.drop(queued)
                ctx.stats.count(ctx.stats.skipped, "robots")
                continue
            if not ctx.run.may_start_page():
                return None
            if self._over_daily_cap(state, now):
                return None
            if queued.item.kind is UrlKind.PAGE:
                ctx.run.pages_started += 1
            ctx.run.blocked.discard(site)  # it has work it may do
            if state.containment.is_contained:
                self._note_contained_lease(state, queued.item, now)
            return ctx.frontier.lease(queued, now)
        return None

    def _holds_a_blocked_wait(self, state: SiteState, line: Line | None, now: float) -> bool:
        """Whether the site's clock holds it for a wait that would block it had its turn
        come (a robots.txt retry, a daily cap): so set by an earlier run on this data
        directory, whose blocked set this run does not have. Without this, a one-shot rerun
        sat idle until the retry time, or the next UTC day (`trawl demo` run thrice)."""
        ctx = self.ctx
        if state.is_over_daily_cap(now, ctx.policy.traps):
            return True
        queued = ctx.frontier.head(state.site, line, now)
        if queued is None:
            return False
        origin = origin_of(queued.item.url)
        rules = state.robots.get(origin)
        return (
            rules is not None
            and rules.status is RobotsStatus.UNREACHABLE
            and _origin_held_until(state, origin, rules) > now
        )

    def _hold(self, state: SiteState, rules: RobotsRules, held_until: float) -> None:
        """Every ready URL of the site waits on a failing origin: the site's turn comes back
        after one normal gap (new URLs of its other origins may arrive), or when the hold
        ends, whichever is first. URLs waiting on an unreadable robots.txt only hold a
        one-shot crawl as they always did: not at all (see RunState.is_finished)."""
        ctx = self.ctx
        if rules.status is RobotsStatus.UNREACHABLE:
            ctx.run.blocked.add(state.site)
        else:  # an origin's own backoff: as long a wait as the site clock's would be
            ctx.run.note_wait_until(state, held_until)
        recheck = ctx.clock.now() + state.clock.gap_s(ctx.policy.clock)
        state.clock.hold_until(min(held_until, recheck))

    def _contained_head(self, state: SiteState, head: QueuedUrl, now: float) -> QueuedUrl | None:
        """What a contained site may serve now (frontier.containment): `head` when it is a
        due page, vouched or the trickle's turn has come; else a vouched URL, else a due
        page; None rests the site until its next trickle (the shell releases it then)."""
        ctx = self.ctx
        containment = state.containment
        if head.item.line is Line.REFRESH or containment.is_vouched(head.item.depth):
            return head
        if containment.maybe_vouched:
            vouched = ctx.frontier.head_within_depth(
                state.site, containment.max_vouched_depth(), now
            )
            if vouched is not None:
                return vouched
            containment.maybe_vouched = False  # until a vouched URL is queued again
        if containment.may_trickle(now):
            return head
        due = ctx.frontier.head(state.site, Line.REFRESH, now)
        if due is not None and due.item.line is Line.REFRESH:
            return due
        containment.resting = True
        ctx.traps.count(TrapReason.CONTAINED_REST)
        ctx.run.blocked.add(state.site)  # a one-shot crawl does not wait for the trickle
        return None

    def _note_contained_lease(self, state: SiteState, item: CrawlUrl, now: float) -> None:
        containment = state.containment
        containment.resting = False
        self.ctx.run.blocked.discard(state.site)
        if item.line is not Line.REFRESH and not containment.is_vouched(item.depth):
            containment.note_trickle(now)
            self.ctx.traps.count(TrapReason.CONTAINED_TRICKLE)
            self.ctx.sites.mark_changed(state.site)

    def _over_daily_cap(self, state: SiteState, now: float) -> bool:
        """A site over its daily page cap rests until the next UTC day; its URLs stay queued."""
        ctx = self.ctx
        if not state.is_over_daily_cap(now, ctx.policy.traps):
            return False
        ctx.traps.count(TrapReason.DAILY_CAP)
        state.clock.hold_until((now // 86400 + 1) * 86400)
        ctx.run.blocked.add(state.site)
        ctx.sites.mark_changed(state.site)
        return True

    async def fetch_page(self, lease: Lease, previous: PageRecord | None) -> FetchResult:
        """GET the leased URL; a refetch asks only for a changed copy (RFC 9110 13.1)."""
        state = self.ctx.sites.state(lease.item.site)
        headers = conditional_headers(previous)
        if lease.item.kind is UrlKind.SITEMAP:
            max_bytes = self.ctx.policy.sitemaps.max_bytes
            return await self.request(
                state, lease.item.url, read_any_type=True, max_body_bytes=max_bytes, headers=headers
            )
        return await self.request(state, lease.item.url, headers=headers, in_scope_only=True)

    async def fetch_robots(
        self, state: SiteState, origin: str, previous: RobotsRules | None
    ) -> None:
        """RFC 9309 2.3: fetch an origin's robots.txt, following up to 5 redirects.

        Redirects may lead to another site (2.3.1.2); its answer is still the origin's
        rules. A request to another site keeps that site's politeness: it is made while
        holding that site as a turn would (one request at a time), after its clock allows
        (gap, Crawl-delay, backoff), through the per-IP gate like any request; the robots
        check is not needed for a robots.txt. `robots_hop` decides whether to follow.
        """
        ctx = self.ctx
        url, hops = robots_url(origin), 0
        via = state  # the site the next request goes to; held by this turn
        try:
            while True:
                try:
                    result = await self.request(
                        via, url, read_any_type=True, max_body_bytes=ctx.policy.robots.max_bytes
                    )
                except NotSent:
                    return  # nothing was asked: the origin's rules stay as they were
                ctx.stats.robots_fetches += 1
                if result.status:  # a replay shows the rules the crawl obeyed
                    self.content.archive_answer(url, result)
                status: int | None = result.status or None
                if status is not None and 300 <= status < 400:
                    target = robots_redirect_target(url, status, result.header("Location"), hops)
                    if target is not None:
                        action, next_via = self._robots_hop(state, via, target)
                        if action is HopAction.RETRY_NEXT_TURN:
                            return  # rules unchanged: the origin's next turn asks again
                        if next_via is not None:
                            via, url, hops = next_via, target, hops + 1
                            wait_s = via.clock.next_allowed_at - ctx.clock.now()
                            ctx.stats.note_wait("site_clock", wait_s)
                            await ctx.clock.sleep_until(via.clock.next_allowed_at)
                            continue
                        status = None  # UNREACHABLE: crawl nothing, retry with backoff
                await self._set_robots(state, origin, previous, status, result.body)
                return
        finally:
            if via is not state:
                ctx.run.release_held_site(via.site)

    def _robots_hop(
        self, origin: SiteState, via: SiteState, target: str
    ) -> tuple[HopAction, SiteState | None]:
        """The action for a robots.txt redirect to `target`, and the site state to make
        the next request through when it is followed (held by this turn from now on)."""
        ctx = self.ctx
        try:
            site = site_of(target)
        except ValueError:
            return HopAction.UNREACHABLE, None
        if site in (via.site, origin.site):
            following = via if site == via.site else origin
        else:
            # Cluster mode: a site of another machine's partition is not ours to ask; the
            # origin's robots.txt counts as unreachable and is retried with backoff.
            may_fetch = ctx.placement.may_fetch(site)
            held = may_fetch and ctx.run.hold_site(site)
            other = ctx.sites.state(site) if held else None
            hop = robots_hop(
                may_fetch=may_fetch,
                held=held,
                paused=other is not None and other.paused,
                ready_at=other.clock.next_allowed_at if other is not None else 0.0,
                gap_s=other.clock.gap_s(ctx.policy.clock) if other is not None else 0.0,
                now=ctx.clock.now(),
            )
            if hop.action is not HopAction.FOLLOW:
                if held:
                    ctx.run.release_held_site(site)
                if hop.not_before is not None:
                    origin.clock.hold_until(hop.not_before)
                # Counted as a wait: the origin's robots.txt is asked again later.
                wait_s = (hop.not_before or ctx.clock.now()) - ctx.clock.now()
                ctx.stats.note_wait(f"robots_redirect_{hop.action.value}", wait_s)
                return hop.action, None
            assert other is not None
            following = other
        if via is not origin and via is not following:
            ctx.run.release_held_site(via.site)  # done with it: its own turns may go on
        return HopAction.FOLLOW, following

    async def _set_robots(
        self,
        state: SiteState,
        origin: str,
        previous: RobotsRules | None,
        status: int | None,
        body: bytes | None,
    ) -> None:
        """Store the origin's rules from the final answer (on the origin's site state) and
        apply what they decide (politeness.robots_fetch)."""
        ctx = self.ctx
        s = ctx.policy.robots
        rules = robots_from_response(
            origin,
            status,
            body,
            ctx.clock.now(),
            previous_failures=previous.failures if previous is not None else 0,
            cache_s=s.cache_s,
            retry_base_s=s.retry_base_s,
            retry_max_s=s.retry_max_s,
            max_bytes=s.max_bytes,
        )
        await asyncio.get_running_loop().run_in_executor(None, rules.prepare, ctx.agent_token)
        delay_before = state.clock.crawl_delay_s
        state.set_robots(rules, ctx.agent_token)
        read = robots_read(
            rules,
            previous,
            others_answer=state.origins.others_answer(origin),
            now=ctx.clock.now(),
            gap_s=state.clock.gap_s(ctx.policy.clock),
            delay_before=delay_before,
            delay_after=state.clock.crawl_delay_s,
        )
        state.clock.hold_until(read.hold_until)
        if read.blocking is Blocking.BLOCK:
            ctx.run.blocked.add(state.site)
        elif read.blocking is Blocking.UNBLOCK:
            ctx.run.blocked.discard(state.site)
        ctx.stats.count(ctx.stats.statuses, read.status_label)
        if read.reads_sitemaps:
            self.sitemaps.queue_from_robots(state, origin, rules)
        ctx.sites.write(state.site)
        if read.commit_now:
            ctx.records.commit()

    async def request(
        self,
        state: SiteState,
        url: str,
        *,
        read_any_type: bool = False,
        max_body_bytes: int | None = None,
        headers: dict[str, str] | None = None,
        in_scope_only: bool = False,
    ) -> FetchResult:
        """`in_scope_only`: a page, not sent if a run-time exclude came while it waited
        for its IP (NotSent: the next turn takes it out of the queue)."""
        ctx = self.ctx
        start = ctx.clock.now()
        try:
            ip = await ctx.fetcher.resolve(host_of(url))
        except FetchError as exc:
            # No request reached the site, but its clock still moves (with backoff), so a
            # site whose name does not resolve is not retried in a tight loop.
            state.clock.start(start)
            end = ctx.clock.now()
            outcome = self._outcome(state, url, end, 0, exc.kind)
            state.clock.finish(end, 0.0, outcome, policy=ctx.policy.clock)
            failed = FetchResult.failed(url, start, end, exc.kind, str(exc))
            _count_request(ctx, state.site, failed, end)
            return failed
        while (retry_at := ctx.ip_gate.try_acquire(ip, ctx.clock.now())) is not None:
            ctx.stats.note_wait("ip_gate", retry_at - ctx.clock.now())
            await ctx.clock.sleep_until(retry_at)
            if ctx.run.interrupted:
                # An interrupt lets requests on the wire finish and sends no new one: a
                # node handing its partitions over waits for these turns, which a busy IP
                # may hold for long. No IP slot is held here.
                state.clock.hold_until(ctx.clock.now() + NOT_SENT_WAIT_S)
                raise NotSent(url)
        excluded = in_scope_only and ctx.scope.current.is_excluded(url)
        try:
            admitted = not excluded and not ctx.run.interrupted
            admitted = admitted and await self._placement_admits(state.site, ip)
        except BaseException:
            # Cancelled while waiting for the cluster's slot: an unsent slot kept would
            # hold its IP for good.
            ctx.ip_gate.release(ip, ctx.clock.now(), sent=False)
            raise
        if not admitted:
            end = ctx.clock.now()
            ctx.ip_gate.release(ip, end, sent=False)
            # Not the site's doing, so no backoff; but no tight loop of turns either.
            state.clock.hold_until(end + NOT_SENT_WAIT_S)
            raise NotSent(url)
        start = ctx.clock.now()
        state.clock.start(start)
        result: FetchResult | None = None
        sent = False

        def on_sent() -> None:
            nonlocal sent
            sent = True
            ctx.ip_gate.note_sent(ip, ctx.clock.now())
            ctx.placement.note_ip_sent(ip)

        try:
            async with ctx.placement.cut(state.site):
                result = await ctx.fetcher.fetch(
                    url,
                    headers=headers,
                    read_any_type=read_any_type,
                    max_body_bytes=max_body_bytes,
                    ip=ip,
                    on_sent=on_sent,
                )
            return result
        except TimeoutError:
            raise LeaseCut(url) from None
        finally:
            end = ctx.clock.now()
            ctx.ip_gate.release(ip, end, sent=sent)
            await ctx.placement.give_ip_slot(ip)
            ctx.stats.fetch_seconds.observe(end - start)
            status = result.status if result is not None else 0
            retry_after = None
            if result is not None and status in (429, 503):
                retry_after = parse_retry_after(result.header("Retry-After"), end)
            error_kind = result.error_kind if result is not None else None
            state.clock.finish(
                end,
                end - start,
                self._outcome(state, url, end, status, error_kind),
                policy=ctx.policy.clock,
                retry_after_s=retry_after,
            )
            if result is not None:
                _count_request(ctx, state.site, result, end)
                if result.body is not None:
                    ctx.stats.bytes_downloaded += len(result.body)

    def _outcome(
        self, state: SiteState, url: str, now: float, status: int, error_kind: str | None
    ) -> FetchOutcome:
        """What the exchange means for the site clock (site_clock, origin_health)."""
        policy = self.ctx.policy.clock
        return state.origins.note(
            origin_of(url),
            now,
            classify_result(status, error_kind),
            error_kind,
            gap_s=state.clock.gap_s(policy),
            policy=policy,
        )

    async def _placement_admits(self, site: str, ip: str) -> bool:
        """The cross-machine slot on `ip` is ours, and the site is still ours to fetch
        (checked last: the wait for the slot may have seen a partition hand-over begin).
        Always True at once in the embedded default."""
        ctx = self.ctx
        placement = ctx.placement
        waited_from = ctx.clock.now()
        if not await placement.take_ip_slot(ip, ctx.run.interrupted_event):
            return False
        waited_s = ctx.clock.now() - waited_from
        if waited_s > 0:
            ctx.stats.note_wait("cluster_ip_gate", waited_s)
        if not placement.may_fetch(site) or ctx.run.interrupted:
            await placement.give_ip_slot(ip)
            return False
        return True


class NotSent(Exception):
    """The request was never sent (cluster mode: the site's partition is moving, or the
    coordinator can't be asked): not an outcome; the URL goes back in line unchanged."""


class LeaseCut(NotSent):
    """Cluster mode: the request was cut at its partition lease's local deadline (the
    partition may be another machine's from then on). Its site clock ran as for any request,
    but it is no outcome: the URL goes back in line for whoever owns the site next."""


NOT_SENT_WAIT_S = 1.0  # a site whose request could not be sent is looked at again then


def conditional_headers(previous: PageRecord | None) -> dict[str, str] | None:
    """If-None-Match / If-Modified-Since from the stored copy's validators, if it has any."""
    if previous is None or not previous.storage_key:
        return None  # nothing stored to fall back on: a 304 would leave us without a copy
    headers = {}
    if previous.etag:
        headers["If-None-Match"] = previous.etag
    if previous.last_modified:
        headers["If-Modified-Since"] = previous.last_modified
    return headers or None


def _origin_held_until(state: SiteState, origin: str, rules: RobotsRules) -> float:
    """Until when `origin`'s URLs wait: its unreadable robots.txt's retry, or its own
    connection backoff (0.0: they may go now)."""
    held = state.origins.held_until(origin)
    if rules.status is RobotsStatus.UNREACHABLE:
        held = max(held, rules.retry_at or rules.expires_at)
    return held


def _count_request(ctx: CrawlContext, site: str, result: FetchResult, end: float) -> None:
    """Every request, robots.txt included, is counted here once: answered, or failed for a
    named reason (issue 14: a refused or unresolvable seed must not end as "errors 0")."""
    kind = result.error_kind
    ctx.stats.recent_sites.note(site, end)
    if kind is None:
        ctx.stats.answered += 1
    else:
        message = (result.error or "").removeprefix(f"{kind}: ")
        ctx.stats.note_failure(kind, f"{result.url}: {message}")

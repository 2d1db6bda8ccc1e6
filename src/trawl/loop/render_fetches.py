"""The browser's requests, made by trawl under the rules of every fetch (issue 18).

How this works. A page being rendered asks for scripts, styles and data. The renderer
(render/browser.py) blocks other sites, images, fonts and media itself, and hands the rest
to `RenderFetches.fetch`, which makes each request as a site turn makes a page's:
- the site is held (`RunState.hold_site`), so it has one request at a time, the
  browser's and the plain crawl's together; its plain turns wait meanwhile;
- robots.txt is read first when the origin has no fresh rules, and obeyed (RFC 9309);
- the request waits for the site clock (the gap, Crawl-delay, ~10x the last response
  time, backoff after 429/503 and Retry-After) and goes through the per-IP gate, the
  fetcher's SSRF guard and its body cap (`SiteRequests.request`, the one place where
  requests are made);
- the answer is archived as a request/response pair, so the rendered page can be replayed.
A request that cannot be made by the render's deadline (the site busy or its clock far
off), that robots.txt forbids, or whose site is paused or not this machine's, gets None:
the renderer aborts it and the render is marked as cut. Runs on the crawl loop only.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from trawl.loop.requests import NotSent
from trawl.render.ports import SubrequestOutcome
from trawl.urls.registered_domain import origin_of, site_of

if TYPE_CHECKING:
    from trawl.loop.content import StoredContent
    from trawl.loop.context import CrawlContext
    from trawl.loop.requests import SiteRequests
    from trawl.model import FetchResult
    from trawl.politeness.site_state import SiteState

HOLD_POLL_S = 0.05  # how often a render looks whether its site's turn has ended


class RenderFetches:
    def __init__(
        self,
        ctx: CrawlContext,
        requests: SiteRequests,
        content: StoredContent,
        *,
        max_body_bytes: int,
    ) -> None:
        self._ctx = ctx
        self._requests = requests
        self._content = content
        self._max_body_bytes = max_body_bytes

    async def fetch(self, url: str, deadline: float) -> FetchResult | None:
        """The answer to the browser's GET of `url`, or None when it may not be made
        before `deadline` (crawl clock seconds) or at all. Counted by its
        `SubrequestOutcome` in `CrawlStats.render_requests`."""
        ctx = self._ctx
        try:
            site = site_of(url)
        except ValueError:
            return self._counted(None, SubrequestOutcome.INVALID)
        if not ctx.placement.may_fetch(site):
            return self._counted(None, SubrequestOutcome.NOT_OURS)
        if not await self._hold(site, deadline):
            return self._counted(None, SubrequestOutcome.SITE_BUSY)
        try:
            return await self._fetch_held(ctx.sites.state(site), url, deadline)
        finally:
            ctx.run.release_held_site(site)

    async def _hold(self, site: str, deadline: float) -> bool:
        clock = self._ctx.clock
        while not self._ctx.run.hold_site(site):
            now = clock.now()
            if now >= deadline:
                return False
            await clock.sleep_until(min(deadline, now + HOLD_POLL_S))
        return True

    async def _fetch_held(self, state: SiteState, url: str, deadline: float) -> FetchResult | None:
        ctx = self._ctx
        origin = origin_of(url)
        rules = state.robots.get(origin)
        if rules is None or not rules.is_fresh(ctx.clock.now()):
            if state.paused or not await self._wait_clock(state, deadline):
                return self._counted(None, SubrequestOutcome.SITE_BUSY)
            await self._requests.fetch_robots(state, origin, rules)
            rules = state.robots.get(origin)
        if rules is None or not rules.is_allowed(url, ctx.agent_token):
            return self._counted(None, SubrequestOutcome.ROBOTS)
        if state.paused or not await self._wait_clock(state, deadline):
            return self._counted(None, SubrequestOutcome.SITE_BUSY)
        try:
            result = await self._requests.request(
                state, url, read_any_type=True, max_body_bytes=self._max_body_bytes
            )
        except NotSent:
            return self._counted(None, SubrequestOutcome.NOT_OURS)
        if not result.status:
            return self._counted(None, SubrequestOutcome.FAILED)
        self._content.archive_answer(url, result)
        return self._counted(result, SubrequestOutcome.FETCHED)

    async def _wait_clock(self, state: SiteState, deadline: float) -> bool:
        """Wait for the site clock's next allowed time; False if that is past `deadline`."""
        ctx = self._ctx
        at = state.clock.next_allowed_at
        if at > deadline:
            return False
        now = ctx.clock.now()
        if at > now:
            ctx.stats.note_wait("site_clock", at - now)
            await ctx.clock.sleep_until(at)
        return True

    def _counted(
        self, result: FetchResult | None, outcome: SubrequestOutcome
    ) -> FetchResult | None:
        stats = self._ctx.stats
        stats.count(stats.render_requests, outcome.value)
        return result

"""Steps 3-7 of the loop: store the fetch, hand it off, and queue what it links to.

Each leased URL ends here in exactly one outcome. Every fetch gets a page record (200, 404,
redirect, error); a stored body also gets a WARC record and a page.fetched event, written in
the same transaction as the record and the links it adds to the frontier. (A page of more
than `loop.slices.LINK_SLICE` links queues them in slices with turns of the loop between,
and a commit may fall between two: a crash then refetches the page, whose record is written
last, and finds the links already queued.) Redirects and
final 4xx/5xx answers are archived too (response and request records) so a replay is
faithful, but they are not content: no storageKey, no event.
"""

from __future__ import annotations

import dataclasses
import logging
from enum import Enum
from typing import TYPE_CHECKING

from trawl.errors import InvalidUrl
from trawl.frontier.containment import ContainReason, PageVerdict
from trawl.frontier.retries import retry_cause, retry_not_before
from trawl.frontier.scoring import importance
from trawl.frontier.traps import TrapReason
from trawl.loop.cpu_batches import failed_work
from trawl.loop.renders import carried_render
from trawl.loop.slices import in_slices
from trawl.model import CrawlUrl, FetchResult, Line, PageRecord, UrlKind
from trawl.parse.page_work import PageInput, PageOutput
from trawl.recrawl.visits import add_visit, plan_refetch
from trawl.urls.normalise import normalise_url, url_hash
from trawl.urls.registered_domain import host_of, site_of

log = logging.getLogger(__name__)

# The error of a redirect whose target would be one hop past fetch.max_redirects.
TOO_MANY_REDIRECTS = "too_many_redirects"

if TYPE_CHECKING:
    from collections.abc import Sequence

    from trawl.loop.content import StoredContent
    from trawl.loop.context import CrawlContext
    from trawl.loop.renders import Renders
    from trawl.loop.sitemaps import Sitemaps
    from trawl.model import Lease
    from trawl.parse.page_work import FoundLink
    from trawl.politeness.site_state import SiteState


class PageOutcomes:
    def __init__(
        self,
        ctx: CrawlContext,
        sitemaps: Sitemaps,
        content: StoredContent,
        renders: Renders | None = None,
    ) -> None:
        self.ctx = ctx
        self.content = content
        self.sitemaps = sitemaps
        self.renders = renders

    async def handle(self, lease: Lease, result: FetchResult, previous: PageRecord | None) -> None:
        """`previous` is the page's record before this fetch (refetches only)."""
        ctx = self.ctx
        item = lease.item
        if self._should_retry(lease, result):
            return
        record = self._record(item, result, previous)
        event = None
        changed: bool | None = None  # None: nothing to compare with
        if result.status == 304 and previous is not None:
            record, changed = self._not_modified(record, previous, result), False
        elif item.kind is UrlKind.SITEMAP:
            await self.sitemaps.handle(item, result, record)
            if previous is not None and record.content_hash:
                changed = record.content_hash != previous.content_hash
        # The fetcher reads a page's body only for fetch.stored_types (HTML).
        elif result.body is not None and 200 <= result.status < 300:
            known = previous.content_hash if previous is not None else ""
            state = ctx.sites.state(item.site)
            page = self._page_input(result, known, state.main_text_window)
            try:
                out: PageOutput = await ctx.page_workers.run(page)
            except Exception as exc:  # see _page_work_failed
                self._page_work_failed(item, record, exc)
            else:
                state.main_text_window = out.window_hint
                ctx.inbox.drain()
                if previous is not None:
                    changed = out.content_hash != previous.content_hash
                event = self.content.store(item, result, record, out, previous)
                if out.render_reason is not None:
                    ctx.stats.count(ctx.stats.render_candidates, out.render_reason.value)
                if self.renders is not None:
                    self.renders.consider(item, record, out)
                await self._queue_links(item, out, record)
        elif 300 <= result.status < 400:
            self._archive_answer(item, result, record)
            self._follow_redirect(item, result, record)
        elif result.status >= 400:
            self._archive_answer(item, result, record)
        if previous is not None and changed is None:
            changed = result.status != previous.http_status
        self._plan_refetch(item, record, previous, changed)
        ctx.records.put_page(record, event)
        ctx.frontier.done(lease)

    def _page_work_failed(self, item: CrawlUrl, record: PageRecord, exc: Exception) -> None:
        """A page its worker could not work out: an exception from the page work (a parser
        bug met on some input) or a worker that died on it every time (WorkerCrashed).

        Page work runs apart so that such a page costs that page only: it is recorded with
        the error, neither stored nor followed, and refetched on its schedule like any
        other answer. Raised on, it ended the crawl's task group: one hostile page stopped
        the whole crawl (tests/loop/test_page_work_failure.py).
        """
        record.error = failed_work(exc)
        self.ctx.stats.count(self.ctx.stats.skipped, "page_work_failed")
        log.warning("%s: page work failed, not stored: %s", item.url, record.error)

    async def _queue_links(self, item: CrawlUrl, out: PageOutput, record: PageRecord) -> None:
        ctx = self.ctx
        state = ctx.sites.state(item.site)
        similar = False
        if out.trap_fingerprint:
            if state.traps.note_page(out.trap_fingerprint):
                ctx.traps.count(TrapReason.SIMILAR_PAGES)
            similar = state.traps.last_page_has_twin
        ctx.stats.links_found += len(out.links)
        # A script shell's plain copy (an app serves the same shell at every URL) says
        # nothing about the site's shape: its content is what rendering finds (issue 18).
        shell = out.render_reason is not None
        copy = _Copy.NONE if shell else _same_site_copy(item, record)
        if copy is not _Copy.NONE:
            # New spellings of known content at best (frontier.containment): not followed.
            ctx.traps.count(TrapReason.COPY_PAGE_LINKS, len(out.links))
            if copy is _Copy.SAME_HOST:
                self._judge_page(item, state, PageVerdict.COPY)
            # A copy on another host of the site (www. and bare, a mirror) is an alias, not
            # a trap: it says nothing about the site's shape, so it gets no verdict.
            return
        if out.links_dropped:
            ctx.stats.count(ctx.stats.skipped, "page_links_cap", out.links_dropped)
        url_rule_hits = 0  # this page's own: other pages' count too between two slices

        def take(links: Sequence[FoundLink]) -> None:
            nonlocal url_rule_hits
            before = ctx.traps.url_rule_hits()
            ctx.intake.add_page_links(item, links)
            url_rule_hits += ctx.traps.url_rule_hits() - before

        await in_slices(out.links, take)
        verdict = PageVerdict.SIMILAR if similar else PageVerdict.DISTINCT
        if verdict is PageVerdict.DISTINCT and url_rule_hits > 0:
            verdict = PageVerdict.URL_PATTERNS
        self._judge_page(item, state, verdict)

    def _judge_page(self, item: CrawlUrl, state: SiteState, verdict: PageVerdict) -> None:
        """Feed a discovery page's verdict to its site's containment (refetches do not
        count: a known page says nothing new about the site's shape)."""
        if item.line is Line.REFRESH or item.kind is not UrlKind.PAGE:
            return
        ctx = self.ctx
        containment = state.containment
        was_contained = containment.is_contained
        reason = containment.note_page(verdict, item.depth, ctx.clock.now())
        if reason is not None:
            ctx.traps.count(_CONTAINED_COUNTER[reason])
            ctx.sites.mark_changed(item.site)
        elif was_contained and not containment.is_contained:
            ctx.traps.count(TrapReason.CONTAINED_CLEARED)
            ctx.run.blocked.discard(item.site)
            ctx.sites.mark_changed(item.site)

    def _not_modified(
        self, record: PageRecord, previous: PageRecord, result: FetchResult
    ) -> PageRecord:
        """A 304: the stored copy is still current; nothing downloaded, nothing stored."""
        ctx = self.ctx
        ctx.stats.not_modified += 1
        ctx.stats.bytes_saved += previous.body_bytes
        return dataclasses.replace(
            previous,
            last_fetched_at=record.last_fetched_at,
            last_status=304,
            etag=result.header("ETag") or previous.etag,
            last_modified=result.header("Last-Modified") or previous.last_modified,
            extra=dict(previous.extra),
        )

    def _plan_refetch(
        self, item: CrawlUrl, record: PageRecord, previous: PageRecord | None, changed: bool | None
    ) -> None:
        """changeRate and nextFetchAt from the visit history (recrawl.visits)."""
        ctx = self.ctx
        r = ctx.policy.store
        visits = previous.visits if previous is not None else []
        previous_interval = None
        if previous is not None and changed is not None:
            elapsed = record.last_fetched_at - previous.last_fetched_at
            visits = add_visit(visits, elapsed, changed, keep=r.history_visits)
            if previous.next_fetch_at > previous.last_fetched_at:
                previous_interval = previous.next_fetch_at - previous.last_fetched_at
            ctx.stats.count(ctx.stats.refetches, "changed" if changed else "unchanged")
        state = ctx.sites.state(item.site)
        plan = plan_refetch(
            visits,
            record.last_fetched_at,
            importance=record.importance,
            slowdown=state.recrawl_slowdown(
                copy_share=r.copy_heavy_share, factor=r.copy_heavy_factor
            ),
            previous_interval_s=previous_interval,
            policy=ctx.policy.recrawl,
        )
        record.visits = plan.visits
        record.change_rate = plan.change_rate
        record.next_fetch_at = plan.next_fetch_at

    def _should_retry(self, lease: Lease, result: FetchResult) -> bool:
        """Outcome `retry`: a transient failure with attempts left goes back in line."""
        ctx = self.ctx
        attempts = ctx.frontier.attempts(lease) + 1
        kind = retry_cause(result.status, result.error_kind, attempts, ctx.policy.max_attempts)
        if kind is None:
            return False
        ctx.stats.count(ctx.stats.retries, kind)
        state = ctx.sites.state(lease.item.site)
        state.note_error(result.started_at, lease.item.url, kind)
        ctx.sites.mark_changed(lease.item.site)
        ctx.frontier.retry(lease, retry_not_before(state, attempts, ctx.policy.clock))
        return True

    def _record(
        self, item: CrawlUrl, result: FetchResult, previous: PageRecord | None
    ) -> PageRecord:
        ctx = self.ctx
        state = ctx.sites.state(item.site)
        if item.kind is UrlKind.SITEMAP:
            # Not a page: counted apart, like robots.txt, and not against the daily cap.
            ctx.stats.sitemap_fetches += 1
            label = f"error:{result.error_kind}" if result.error_kind else str(result.status)
            ctx.stats.count(ctx.stats.statuses, f"sitemap:{label}")
            ctx.sites.mark_changed(item.site)
        else:
            self._count_page(state, item, result)
        record = PageRecord(
            url_hash=item.url_hash,
            url=item.url,
            last_fetched_at=result.started_at,
            http_status=result.status,
            etag=result.header("ETag") or "",
            last_modified=result.header("Last-Modified") or "",
            site=item.site,
            depth=item.depth,
            content_type=result.header("Content-Type") or "",
            error=f"{result.error_kind}: {result.error}" if result.error_kind else "",
            last_status=result.status,
            importance=item_importance(item, previous),
            kind=item.kind,
            render=carried_render(previous.render) if previous is not None else {},
        )
        if result.truncated:
            record.extra["truncated"] = "length"
        return record

    def _count_page(self, state: SiteState, item: CrawlUrl, result: FetchResult) -> None:
        ctx = self.ctx
        ctx.stats.pages_fetched += 1
        if result.error_kind:  # the failure itself is counted where it happened (_request)
            ctx.stats.count(ctx.stats.statuses, f"error:{result.error_kind}")
            state.note_error(result.started_at, item.url, result.error_kind)
        else:
            ctx.stats.count(ctx.stats.statuses, str(result.status))
            state.count_page(result.started_at)
        ctx.sites.mark_changed(item.site)

    def _page_input(
        self, result: FetchResult, known_content_hash: str, window_hint: int
    ) -> PageInput:
        assert result.body is not None
        return PageInput(
            url=result.url,
            fetched_at=result.started_at,
            ip=result.ip,
            http_head=result.raw_headers_block,
            body=result.body,
            truncated=result.truncated,
            x_robots_tag=tuple(v for k, v in result.headers if k.lower() == "x-robots-tag"),
            agent_token=self.ctx.agent_token,
            store_body=True,
            warc_level=self.ctx.policy.store.warc_compress_level,
            known_content_hash=known_content_hash,
            request_head=result.request_head,
            max_links=self.ctx.policy.max_links_per_page,
            window_hint=window_hint,
        )

    def _archive_answer(self, item: CrawlUrl, result: FetchResult, record: PageRecord) -> None:
        """Write a redirect or error answer to the WARC for replay (store/capture.py)."""
        record.warc_record_id = self.content.archive_answer(item.url, result)

    def _follow_redirect(self, item: CrawlUrl, result: FetchResult, record: PageRecord) -> None:
        """A redirect is recorded and its target queued like any discovered link, carrying
        the chain's length: the hop past fetch.max_redirects is recorded as an error."""
        ctx = self.ctx
        location = result.header("Location")
        if not location:
            return
        try:
            target = normalise_url(location, item.url, ctx.rules)
            site = site_of(target)
        except (InvalidUrl, ValueError):
            ctx.stats.count(ctx.stats.skipped, "bad_redirect")
            return
        record.redirect_to = target
        limit = ctx.policy.max_redirects
        if item.redirects >= limit:
            record.error = f"{TOO_MANY_REDIRECTS}: {limit} hops followed, not {target}"
            ctx.stats.note_failure(TOO_MANY_REDIRECTS, f"{item.url}: {record.error}")
            ctx.stats.count(ctx.stats.statuses, f"error:{TOO_MANY_REDIRECTS}")
            ctx.sites.state(item.site).note_error(result.started_at, item.url, TOO_MANY_REDIRECTS)
            return
        ctx.intake.add_redirect_target(item, target, url_hash(target), site)


_CONTAINED_COUNTER = {
    ContainReason.COPIES: TrapReason.CONTAINED_COPIES,
    ContainReason.SIMILAR_PAGES: TrapReason.CONTAINED_SIMILAR_PAGES,
    ContainReason.URL_PATTERNS: TrapReason.CONTAINED_URL_PATTERNS,
}


class _Copy(Enum):
    NONE = "none"
    SAME_HOST = "same_host"  # a trap's signature: one host serving known content anew
    OTHER_HOST = "other_host"  # a host alias of the site (www. and bare): not a trap


def _same_site_copy(item: CrawlUrl, record: PageRecord) -> _Copy:
    """Whether the stored body is an exact or near copy of another page of the page's own
    site, and on which host that page is."""
    copy_of = record.duplicate_of or record.near_duplicate_of
    if not copy_of:
        return _Copy.NONE
    try:
        if site_of(copy_of) != item.site:
            return _Copy.NONE
        return _Copy.SAME_HOST if host_of(copy_of) == host_of(item.url) else _Copy.OTHER_HOST
    except ValueError:
        return _Copy.NONE


def item_importance(item: CrawlUrl, previous: PageRecord | None) -> float:
    """Recrawl weight: from the URL's score when it was discovered, kept afterwards."""
    return previous.importance if previous is not None else importance(item.score)

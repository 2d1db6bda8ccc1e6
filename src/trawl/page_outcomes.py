"""Steps 3-7 of the loop: store the fetch, hand it off, and queue what it links to.

Each leased URL ends here in exactly one outcome. Every fetch gets a page record (200, 404,
redirect, error); a stored body also gets a WARC record and a page.fetched event, written in
the same transaction as the record and the links it adds to the frontier.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from trawl.errors import InvalidUrl
from trawl.frontier.traps import TrapReason
from trawl.model import FetchResult, Line, PageFetchedEvent, PageRecord
from trawl.page_work import PageInput, PageOutput
from trawl.parse.fingerprint import format_simhash
from trawl.urls.normalise import normalise_url, url_hash
from trawl.urls.registered_domain import site_of

# Failures worth another try later; "protocol", "too_big", "decode" and "blocked_address"
# would fail the same way again.
RETRIABLE_ERRORS = frozenset({"timeout", "reset", "connect", "dns"})

if TYPE_CHECKING:
    from trawl.crawl_context import CrawlContext
    from trawl.model import CrawlUrl, Lease


class PageOutcomes:
    def __init__(self, ctx: CrawlContext) -> None:
        self.ctx = ctx

    async def handle(self, lease: Lease, result: FetchResult) -> None:
        ctx = self.ctx
        item = lease.item
        if self._should_retry(lease, result):
            return
        record = self._record(item, result)
        event = None
        # The fetcher reads a page's body only for fetch.stored_types (HTML).
        if result.body is not None and 200 <= result.status < 300:
            out: PageOutput = await ctx.page_workers.run(self._page_input(result))
            record.content_hash = out.content_hash
            record.simhash = format_simhash(out.simhash)
            record.extra.update(_flags(out))
            state = ctx.site_state(item.site)
            if out.simhash and state.traps.note_page(out.simhash):
                ctx.traps.count(TrapReason.SIMILAR_PAGES)
            if out.warc_record is not None:
                record.storage_key = ctx.warc.append(out.warc_record)
                event = _event(record)
                ctx.stats.pages_stored += 1
            ctx.stats.links_found += len(out.links)
            for link in out.links:
                if link.site != item.site:
                    ctx.note_referrer(link.site, item.site)
                line = Line.FAST if _is_home_of_new_site(link.url, link.site, item) else Line.SLOW
                if ctx.discover(link.url, link.url_hash, link.site, item.depth + 1, line,
                                must_crawl=False):  # fmt: skip
                    ctx.stats.links_new += 1
        elif 300 <= result.status < 400:
            self._follow_redirect(item, result, record)
        ctx.records.put_page(record, event)
        ctx.frontier.done(lease)

    def _should_retry(self, lease: Lease, result: FetchResult) -> bool:
        """Outcome `retry`: a transient failure with attempts left goes back in line."""
        ctx = self.ctx
        transient = result.status == 429 or 500 <= result.status < 600
        if result.status == 0:
            transient = result.error_kind in RETRIABLE_ERRORS
        if not transient or ctx.frontier.attempts(lease) + 1 >= ctx.settings.fetch.max_attempts:
            return False
        kind = str(result.status) if result.status else str(result.error_kind)
        ctx.stats.count(ctx.stats.retries, kind)
        state = ctx.site_state(lease.item.site)
        state.note_error(result.started_at, lease.item.url, kind)
        ctx.mark_dirty(lease.item.site)
        ctx.frontier.retry(lease)
        return True

    def _record(self, item: CrawlUrl, result: FetchResult) -> PageRecord:
        ctx = self.ctx
        state = ctx.site_state(item.site)
        ctx.stats.pages_fetched += 1
        if result.error_kind:
            ctx.stats.errors += 1
            ctx.stats.count(ctx.stats.statuses, f"error:{result.error_kind}")
            state.note_error(result.started_at, item.url, result.error_kind)
        else:
            ctx.stats.count(ctx.stats.statuses, str(result.status))
            state.count_page(result.started_at)
        ctx.mark_dirty(item.site)
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
        )
        if result.truncated:
            record.extra["truncated"] = "length"
        return record

    def _page_input(self, result: FetchResult) -> PageInput:
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
            warc_level=self.ctx.settings.storage.warc_compress_level,
        )

    def _follow_redirect(self, item: CrawlUrl, result: FetchResult, record: PageRecord) -> None:
        """A redirect is recorded and its target queued like any discovered link."""
        location = result.header("Location")
        if not location:
            return
        try:
            target = normalise_url(location, item.url, self.ctx.rules)
            site = site_of(target)
        except (InvalidUrl, ValueError):
            self.ctx.stats.count(self.ctx.stats.skipped, "bad_redirect")
            return
        record.redirect_to = target
        self.ctx.discover(target, url_hash(target), site, item.depth, item.line, must_crawl=False)


def _event(record: PageRecord) -> PageFetchedEvent:
    return PageFetchedEvent(
        url=record.url,
        url_hash=record.url_hash,
        storage_key=record.storage_key,
        content_hash=record.content_hash,
        http_status=record.http_status,
        fetched_at=record.last_fetched_at,
    )


def _flags(out: PageOutput) -> dict[str, str]:
    flags = {}
    if out.noindex:
        flags["noindex"] = "true"
    if out.nofollow:
        flags["nofollow"] = "true"
    return flags


def _is_home_of_new_site(url: str, site: str, parent: CrawlUrl) -> bool:
    """Front-line rule until scoring lands (issue 5): other sites' home pages go fast.

    `url` is normalised, so a home page is exactly "scheme://authority/".
    """
    return site != parent.site and url.endswith("/") and url.count("/") == 3

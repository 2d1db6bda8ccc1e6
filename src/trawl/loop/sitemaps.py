"""Sitemaps (sitemaps.org): found through robots.txt, fetched politely, read for URLs.

How this works. When an origin's robots.txt is first read, its `Sitemap:` lines of the
same site — or, when it lists none and the origin is the site's apex or www host, the
origin's /sitemap.xml (one guess per site, not one per subdomain) — are queued as SITEMAP
URLs in the fast line; they are fetched through the site's clock like any page. A fetched
sitemap is parsed and normalised in a worker process (page_work.process_sitemap):
- an index queues its child sitemaps;
- a urlset (or a plain-text list) discovers its new URLs, boosted when the site is trusted,
  and makes a known page due at once when its <lastmod> is newer than our last fetch.
Entries outside the sitemap's site are ignored (sitemaps.org: a sitemap speaks for its own
site only), and so are entries out of the crawl's scope; a site the scope cannot hold (reached
by an off-scope hop or a captured redirect) has no sitemap fetched at all. Per site and UTC
day, at most `sitemaps.max_files_per_site` files and `sitemaps.max_urls_per_site` entries are
taken. A sitemap gets a page record (kind
"sitemap") and is refetched by its own change rate, but no WARC record and no event.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from trawl.errors import InvalidUrl
from trawl.loop.cpu_batches import failed_work
from trawl.loop.slices import in_slices
from trawl.parse.page_work import SitemapOutput, process_sitemap
from trawl.urls.normalise import normalise_url, url_hash
from trawl.urls.registered_domain import host_of, site_of_normalised

if TYPE_CHECKING:
    from collections.abc import Sequence

    from trawl.loop.context import CrawlContext
    from trawl.model import CrawlUrl, FetchResult, PageRecord
    from trawl.parse.page_work import SitemapLink
    from trawl.politeness.robots import RobotsRules
    from trawl.politeness.site_state import SiteState

log = logging.getLogger(__name__)


class Sitemaps:
    def __init__(self, ctx: CrawlContext) -> None:
        self.ctx = ctx

    def queue_from_robots(self, state: SiteState, origin: str, rules: RobotsRules) -> int:
        """Queue an origin's sitemaps after its first robots.txt; returns how many."""
        ctx = self.ctx
        if not ctx.policy.sitemaps.enabled:
            return 0
        if not ctx.scope.current.may_hold(state.site):
            # Reached by an off-scope hop or a captured redirect: its sitemaps could only
            # list URLs the scope skips, so they are not fetched at all.
            ctx.stats.count(ctx.stats.skipped, "sitemap_off_scope")
            return 0
        listed = rules.sitemaps()
        if not listed and _is_main_host(origin, state.site):
            listed = [origin + "/sitemap.xml"]
        queued = 0
        for raw in listed:
            try:
                url = normalise_url(raw.strip(), origin + "/", ctx.rules)
                site = site_of_normalised(url)
            except (InvalidUrl, ValueError):
                ctx.stats.count(ctx.stats.skipped, "bad_sitemap_url")
                continue
            if site != state.site:
                ctx.stats.count(ctx.stats.skipped, "sitemap_other_site")
                continue
            queued += self._queue_file(state, url, depth=0)
        return queued

    async def handle(self, item: CrawlUrl, result: FetchResult, record: PageRecord) -> None:
        """Read a fetched sitemap into the frontier; fills `record` (no body is stored)."""
        ctx = self.ctx
        if result.body is None or not 200 <= result.status < 300:
            return
        s = ctx.policy.sitemaps
        try:
            out: SitemapOutput = await ctx.cpu_pool.run(
                process_sitemap, result.body, s.max_urls_per_site, s.max_bytes
            )
        except Exception as exc:  # its worker died on it every time: as loop.outcomes does
            record.error = f"sitemap: {failed_work(exc)}"
            ctx.stats.count(ctx.stats.skipped, "sitemap_error")
            log.warning("%s: sitemap not read: %s", item.url, record.error)
            return
        record.content_hash = out.content_hash
        record.body_bytes = len(result.body)
        if out.error:
            record.error = f"sitemap: {out.error}"
            ctx.stats.count(ctx.stats.skipped, "sitemap_error")
        if out.skipped:
            ctx.stats.count(ctx.stats.skipped, "sitemap_entry", out.skipped)
        state = ctx.sites.state(item.site)
        if out.is_index:

            def take_files(links: Sequence[SitemapLink]) -> None:
                for link in links:
                    if link.site == item.site:
                        self._queue_file(state, link.url, depth=item.depth + 1)
                    else:
                        ctx.stats.count(ctx.stats.skipped, "sitemap_other_site")

            await in_slices(out.links, take_files)
            return
        await self._read_urls(item, state, out)

    async def _read_urls(self, item: CrawlUrl, state: SiteState, out: SitemapOutput) -> None:
        ctx = self.ctx

        def take(links: Sequence[SitemapLink]) -> None:
            # The day's budget is read again for each slice: another sitemap of the site may
            # have taken some of it between two.
            _, taken = state.sitemap_budget(ctx.clock.now())
            room = max(0, ctx.policy.sitemaps.max_urls_per_site - taken)
            known: dict[str, float] = {}  # lastmod of known pages, by urlHash
            used = 0
            for link in links:
                if link.site != item.site:
                    ctx.stats.count(ctx.stats.skipped, "sitemap_other_site")
                    continue
                if used >= room:
                    ctx.stats.count(ctx.stats.skipped, "sitemap_cap")
                    continue
                used += 1
                if ctx.intake.add_sitemap_entry(link.url, link.url_hash, link.site):
                    ctx.stats.sitemap_new += 1
                elif link.lastmod_at is not None:
                    known[link.url_hash] = link.lastmod_at
            state.sitemap_urls += used
            ctx.stats.sitemap_urls += used
            if known:  # a slice's worth of record reads, not a whole sitemap's
                fetched = ctx.records.last_fetched(list(known))
                newer = [h for h, at in fetched.items() if known[h] > at]
                ctx.stats.sitemap_due += ctx.records.make_due(newer, ctx.clock.now())

        await in_slices(out.links, take)
        ctx.sites.mark_changed(item.site)

    def _queue_file(self, state: SiteState, url: str, *, depth: int) -> int:
        ctx = self.ctx
        files, _ = state.sitemap_budget(ctx.clock.now())
        if files >= ctx.policy.sitemaps.max_files_per_site:
            ctx.stats.count(ctx.stats.skipped, "sitemap_file_cap")
            return 0
        if not ctx.intake.add_sitemap_file(url, url_hash(url), state.site, depth):
            return 0
        state.sitemap_files += 1
        ctx.sites.mark_changed(state.site)
        return 1


def _is_main_host(origin: str, site: str) -> bool:
    return host_of(origin) in (site, "www." + site)

"""Step 3b of the loop: pages built by JavaScript, rendered by a browser (issue 18).

How this works.
- `consider` runs after a page is stored: the page worker named it a script shell, or
  not (parse.render_need); the render policy decides (render.policy: shares of the
  site's and the crawl's pages, what earlier renders of the site gained, the operator's
  force_on/force_off); a page it sends is queued (render.queue_sqlite), pointing at the
  plain response's WARC record, in the crawl's transaction, and its record says so
  (`render.queuedAt`).
- `run` leases queued pages, one a site at a time, at `[render] concurrency`, and renders
  each: the browser is served the stored bytes (never a second fetch), and every other
  request it makes goes through `RenderFetches` (robots.txt, the site clock, the per-IP
  gate, the SSRF guard, the body cap) by the render's deadline.
- A finished render is read against the plain page in a worker (links and text gained),
  goes through the duplicate checks and is stored as a WARC conversion record referring
  to the plain capture (loop.content), its links go through intake like any page's, its
  gains teach the policy, the page record's `render` fields say what happened and a
  page.rendered event goes out with it. Then its queue row goes.
- A one-shot crawl is not finished while renders wait (their links may be new URLs); a
  stop cancels the renders in flight, whose rows stay queued for the next run.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass
from typing import TYPE_CHECKING

from trawl.errors import DataError, StoreUnavailable
from trawl.loop.cpu_batches import failed_work
from trawl.loop.lag import HIGH_LAG_S
from trawl.loop.slices import in_slices
from trawl.model import CrawlUrl, Line
from trawl.parse.page_work import process_rendered
from trawl.render.cpu_budget import CpuBudget
from trawl.render.ports import RenderItem, RenderJob, RenderState, SubresourceAnswer

if TYPE_CHECKING:
    from collections.abc import Callable

    from trawl.config import RenderSettings
    from trawl.loop.content import StoredContent
    from trawl.loop.context import CrawlContext
    from trawl.loop.render_fetches import RenderFetches
    from trawl.model import PageRecord
    from trawl.parse.page_work import PageOutput, RenderedOutput
    from trawl.render.policy import RenderBook
    from trawl.render.ports import Renderer, RenderResult
    from trawl.render.queue_sqlite import SqliteRenderQueue
    from trawl.store.warc_record import StoredBody

log = logging.getLogger(__name__)

LEASE_MARGIN_S = 60.0  # a render's lease outlives its timeout by this much
RETRY_AFTER_S = 30.0  # a render the browser failed is tried again this much later
MAX_ATTEMPTS = 2  # leases of a render the browser failed
MAX_READ_ATTEMPTS = 6  # leases of a render whose plain copy could not be read yet
NOT_READY_AFTER_S = 5.0
IDLE_POLL_S = 0.5  # how often an idle runner looks at the queue
QUEUE_FULL = "queue_full"  # a candidate not queued: `[render] max_queued` are waiting


QUEUED_KEYS = ("queuedAt", "queuedReason")  # a page record's mark of a queued render


def carried_render(previous: dict[str, object]) -> dict[str, object]:
    """A refetched page's `render` field: its last render, which stays named until a new one
    replaces it (its copy is still what the API's rendered body and a consumer read), without
    the mark of a render queued then (`consider` marks the page again if it queues it)."""
    return {k: v for k, v in previous.items() if k not in QUEUED_KEYS}


@dataclass(frozen=True, slots=True, eq=False)
class Rendering:
    """The render step's parts, built by wiring when rendering is on."""

    book: RenderBook
    queue: SqliteRenderQueue
    # Makes the renderer when the first page needs one: a crawl that finds no page built
    # by JavaScript neither imports Playwright nor starts a browser.
    make_renderer: Callable[[], Renderer]
    settings: RenderSettings
    # A storage key's record (DataError when missing or damaged): the local WARC files, or
    # a cluster's object store.
    read_body: Callable[[str], StoredBody]


class Renders:
    def __init__(
        self, ctx: CrawlContext, parts: Rendering, fetches: RenderFetches, content: StoredContent
    ) -> None:
        self._ctx = ctx
        self._parts = parts
        self._fetches = fetches
        self._content = content
        self._active: set[asyncio.Task[None]] = set()
        self._wakeup = asyncio.Event()
        self._renderer: Renderer | None = None
        self._budget = CpuBudget(parts.settings.cpu_share)
        # Before the crawl's first look at whether it is finished: a resumed crawl whose
        # frontier is empty still has its queued renders to do.
        parts.queue.reset_leases()  # a crawl starting has no render in flight
        ctx.run.renders_waiting = parts.queue.stats().queued

    def consider(self, item: CrawlUrl, record: PageRecord, out: PageOutput) -> None:
        """After a plain HTML page is stored: queue it for a browser if the policy says so."""
        book = self._parts.book
        book.note_plain_page(item.site)
        reason = out.render_reason.value if out.render_reason is not None else ""
        stats = self._ctx.stats
        if self._ctx.run.renders_waiting >= self._parts.settings.max_queued:
            # Not asked of the book: a page it let through would count as rendered.
            if reason:
                stats.count(stats.render_decisions, QUEUE_FULL)
            return
        decision = book.decide(item.url, item.site, reason)
        if reason or decision.render:
            stats.count(stats.render_decisions, decision.why.value)
        if not decision.render or not record.storage_key:
            return
        # The page's own capture (a response, or a revisit when the same shell was stored
        # before at another URL): what its conversion record refers to.
        queued = RenderItem(
            item.url, item.url_hash, item.site, reason or "forced", record.storage_key,
            record.warc_record_id, record.last_fetched_at, depth=item.depth,
            standing=item.standing, score=item.score,
        )  # fmt: skip
        queue = self._parts.queue
        now = self._ctx.clock.now()
        queue.offer(queued, now)
        # Marked on the record as well (which the caller writes): a cluster node's queue is
        # checkpointed now and then, and the partition's next owner re-queues the pages
        # marked since its checkpoint (cluster.node). The render's own fields replace it.
        record.render = {**record.render, QUEUED_KEYS[0]: now, QUEUED_KEYS[1]: queued.reason}
        self._ctx.run.renders_waiting = queue.stats().queued
        self._wakeup.set()

    async def run(self) -> None:
        """Lease and render queued pages until the crawl stops. A render's unexpected
        error (a bug, not the web's doing) ends the crawl with it, as any task's does."""
        ctx = self._ctx
        try:
            async with asyncio.TaskGroup() as tasks:
                while not ctx.run.stopping:
                    self._start_renders(tasks)
                    self._wakeup.clear()
                    await ctx.clock.wait_for(self._wakeup, IDLE_POLL_S)
                for task in self._active:
                    task.cancel()  # its row stays queued for the next run
        finally:
            if self._renderer is not None:
                await self._renderer.close()

    def _start_renders(self, tasks: asyncio.TaskGroup) -> None:
        free = self._parts.settings.concurrency - len(self._active)
        if free <= 0 or not self._budget.may_start(self._ctx.clock.now()):
            return  # the browser had its share of the CPU (render.cpu_budget)
        if self._ctx.stats.loop_lag.last > HIGH_LAG_S:
            # A loop already late (loop.lag: the admission gate holds site turns too) is
            # not given a browser's work as well: the plain crawl comes first.
            return
        lease_s = self._parts.settings.page_timeout_s + LEASE_MARGIN_S
        for item in self._parts.queue.lease(self._ctx.clock.now(), lease_s, free):
            task = tasks.create_task(self._render(item))
            self._active.add(task)
            task.add_done_callback(self._ended)

    def _ended(self, task: asyncio.Task[None]) -> None:
        self._active.discard(task)
        self._wakeup.set()

    async def _render(self, item: RenderItem) -> None:
        ctx = self._ctx
        if not ctx.placement.may_fetch(item.site):
            # A cluster node whose partition of the site is moving: its requests could not
            # be made. The row moves with the partition, or waits here until it settles.
            self._parts.queue.retry(item.url_hash, ctx.clock.now() + RETRY_AFTER_S, uncounted=True)
            return
        try:
            if ctx.records.get_page(item.url_hash) is None:
                raise DataError("its page record is not stored yet")
            stored = await asyncio.to_thread(self._parts.read_body, item.storage_key)
        except StoreUnavailable:
            # A cluster's shared store is out of reach: the copy is there, only not now, so
            # the render waits however many leases the outage takes (fetches pause
            # meanwhile too). Uncounted: against MAX_READ_ATTEMPTS, an outage of half a
            # minute dropped the renders queued then as unreadable, and against
            # MAX_ATTEMPTS a browser failure after a long outage was never tried again.
            self._parts.queue.retry(
                item.url_hash, ctx.clock.now() + NOT_READY_AFTER_S, uncounted=True
            )
            return
        except DataError as exc:
            # A cluster node's page and body reach the shared stores at its next publish,
            # which may come after the render's lease; on one machine this is damage.
            if item.attempts < MAX_READ_ATTEMPTS:
                self._parts.queue.retry(item.url_hash, ctx.clock.now() + NOT_READY_AFTER_S)
                return
            log.warning("render of %s skipped: its plain copy is unreadable: %s", item.url, exc)
            self._finish(item, "unreadable")
            return
        started = ctx.clock.now()
        result = await self._browse(item, stored)
        self._budget.charge(started, result.cpu_s)
        if result.state is RenderState.FAILED and item.attempts < MAX_ATTEMPTS:
            self._parts.queue.retry(item.url_hash, ctx.clock.now() + RETRY_AFTER_S)
            ctx.stats.count(ctx.stats.renders, "failed-retry")
            return
        fields: dict[str, object] = {
            "state": result.state.value,
            "reason": item.reason,
            "renderedAt": ctx.clock.now(),
            "renderMs": round(result.wall_s * 1000),
            "requestsFetched": result.requests_fetched,
            "requestsBlocked": result.requests_blocked,
        }
        outcome = result.state.value
        if result.state is not RenderState.FAILED and result.html:
            outcome = await self._store(item, stored, result, fields)
        else:
            fields["message"] = result.message
            self._note_record(item, fields)
        self._finish(item, outcome)

    async def _browse(self, item: RenderItem, stored: StoredBody) -> RenderResult:
        ctx, s = self._ctx, self._parts.settings
        content_type = next(
            (v for k, v in stored.http_headers if k.lower() == "content-type"), "text/html"
        )
        job = RenderJob(
            item.url, item.site, stored.payload, content_type, s.page_timeout_s,
            s.max_subrequests, s.max_subresource_bytes,
        )  # fmt: skip
        deadline = ctx.clock.now() + s.page_timeout_s

        async def fetch(url: str, resource_type: str) -> SubresourceAnswer | None:
            answer = await self._fetches.fetch(url, deadline)
            if answer is None or answer.body is None or not 100 <= answer.status <= 599:
                return None
            return SubresourceAnswer(answer.status, answer.headers, answer.body)

        if self._renderer is None:
            self._renderer = self._parts.make_renderer()
        return await self._renderer.render(job, fetch)

    async def _store(
        self, item: RenderItem, stored: StoredBody, result: RenderResult,
        fields: dict[str, object],
    ) -> str:  # fmt: skip
        """The DOM through the duplicate checks and into the WARC, its links into intake,
        what it gained into the policy and the page record; the render's outcome."""
        ctx = self._ctx
        html = result.html.encode("utf-8", errors="replace")
        try:
            out: RenderedOutput = await ctx.cpu_pool.run(
                process_rendered, item.url, html, stored.payload, ctx.agent_token,
                ctx.policy.max_links_per_page,
            )  # fmt: skip
        except Exception as exc:  # a DOM no parser copes with: as loop.outcomes does a page
            message = failed_work(exc)
            log.warning("render of %s not stored: %s", item.url, message)
            fields.update(state=RenderState.FAILED.value, message=message)
            self._note_record(item, fields)
            return RenderState.FAILED.value
        # From here to the record's write nothing awaits: the record read is the latest.
        record = ctx.records.get_page(item.url_hash)
        if record is None:
            return result.state.value
        copy = self._content.store_rendered(
            item, record, html, out, result.state.value, item.record_id or stored.record_id
        )
        text_gained = max(0, out.text_chars - out.plain_text_chars)
        if ctx.placement.may_fetch(item.site):  # else its state is another node's now
            self._parts.book.note_render(
                item.site, text_gained_chars=text_gained, links_gained=out.links_gained
            )
            ctx.sites.mark_changed(item.site)  # the book's state of it is in its host record
        fields.update(linksGained=out.links_gained, textGained=text_gained)
        fields.update(storageKey=copy.storage_key, duplicateOf=copy.duplicate_of)
        if out.noindex:
            fields["noindex"] = True
        record.render = fields
        ctx.records.put_page(record, copy.event)
        if out.links_dropped:
            ctx.stats.count(ctx.stats.skipped, "page_links_cap", out.links_dropped)
        if out.links and not ctx.run.stopping:
            source = CrawlUrl(
                item.url, item.url_hash, item.site, item.depth, Line.FAST, item.fetched_at,
                score=item.score, standing=item.standing,
            )  # fmt: skip
            ctx.stats.links_found += len(out.links)
            # After the record's write: the slices may await (loop.slices).
            await in_slices(out.links, lambda links: ctx.intake.add_page_links(source, links))
        return result.state.value

    def _note_record(self, item: RenderItem, fields: dict[str, object]) -> None:
        records = self._ctx.records
        record = records.get_page(item.url_hash)
        if record is not None:
            record.render = fields
            records.put_page(record, None)

    def _finish(self, item: RenderItem, outcome: str) -> None:
        ctx = self._ctx
        queue = self._parts.queue
        queue.done(item.url_hash)
        ctx.run.renders_waiting = queue.stats().queued
        ctx.stats.count(ctx.stats.renders, outcome)

"""Headless Chromium through Playwright: the adapter of the render port (issue 18).

How this works. One browser (Debian's `chromium`, never a downloaded one) serves every render;
each render gets a fresh context (no cookies or storage carried between pages, service
workers blocked, downloads refused) whose every request is routed here, so the browser makes
no request of its own. What happens to a request is `request_verdict`'s call:

1. The page's first top-level navigation is the main document: it is answered from the
   job's bytes, never fetched again. Later top-level navigations (a script setting
   `location`, a popup) and navigations of iframes that may not load get an empty 204, which
   Chromium reads as "stay where you are" (an abort would commit an error page in the frame).
2. Blocked: methods other than GET; schemes other than http(s); resource types other than
   scripts, styles, xhr and fetch requests and iframe documents (so images, media, fonts,
   websockets, eventsource, beacons and prefetches); anything outside the job's site
   (registered domain).
3. The rest goes through the caller's `SubresourceFetch`, within the job's caps on
   subrequests and bytes; a script or style fetched for an earlier render of the site is
   served from the `SubresourceCache` instead. A request past a cap, or a script or style
   trawl refused, fails in the browser and marks the render `CUT`.
WebSocket connections are routed too (Playwright routes them apart) and closed at once.
As a second wall, Chromium runs with every host name unresolvable and a dead proxy, so a
request that somehow escaped routing fails instead of leaving the machine.

Settling: a render waits for the load event, then until no routed request has started or
ended for `QUIET_S` (blocked ones included: a page that retries a websocket or polls every
100 ms never settles), all within the job's `timeout_s` on the wall clock (a real browser
cannot run on a fake clock). A page that never settles gives its DOM at the cap, `TIMEOUT`.
A subresource still being fetched when the render ends is cancelled and not reported.

The browser's life (render.launches): it runs below the crawl loop (a niced launcher: the
plain crawl's loop gets the CPU first, and renders take what is left), writes its profile
to tmpfs, and is recycled after `recycle_after_pages` renders or past `max_rss_mb`. A
browser that dies under a render makes that render `FAILED`, and the next render launches
a new one.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import os
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from playwright.async_api import Error as PlaywrightError
from playwright.async_api import TimeoutError as PlaywrightTimeout

from trawl.render.chromium import find_chromium
from trawl.render.launches import Launch, Launches
from trawl.render.ports import (
    FetchedSubresource,
    RendererStats,
    RenderJob,
    RenderResult,
    RenderState,
    SubresourceAnswer,
    SubresourceFetch,
)
from trawl.render.request_rule import Verdict, request_verdict
from trawl.render.subresource_cache import SubresourceCache

if TYPE_CHECKING:
    from collections.abc import Iterable

    from playwright.async_api import (
        BrowserContext,
        Page,
        Request,
        Route,
        ViewportSize,
        WebSocketRoute,
    )

__all__ = ["ChromiumRenderer"]

QUIET_S = 0.5  # no routed request started or ended for this long: the page has settled
CONTENT_GRACE_S = 3.0  # serialising the DOM after the cap; a page busy in a loop fails
CLOSE_GRACE_S = 5.0  # closing a render's context; longer means the browser is stuck
CACHED_TYPES = frozenset({"script", "stylesheet"})  # and a page needs them: refused is CUT
# Not passed to the browser with a decoded body (the fetcher already undid them).
_DROPPED_HEADERS = frozenset(
    {"content-length", "content-encoding", "transfer-encoding", "connection", "keep-alive"}
)


@dataclass(slots=True, eq=False)
class _Run:
    """One render's state, written by its route handlers and read by its settling loop
    (all on the renderer's event loop)."""

    job: RenderJob
    fetch: SubresourceFetch
    cache: SubresourceCache
    main_served: bool = False
    loaded: bool = False  # the page's load event has fired
    navigations: list[str] = field(default_factory=list)  # top-level ones held back
    ending: bool = False  # set when the DOM is taken: later requests are blocked
    in_flight: int = 0
    last_activity: float = field(default_factory=time.monotonic)
    changed: asyncio.Event = field(default_factory=asyncio.Event)
    requested: int = 0  # fetches started (the subrequest cap counts these)
    fetched: list[FetchedSubresource] = field(default_factory=list)
    bytes_fetched: int = 0
    blocked: int = 0
    cached: int = 0
    cut: str = ""  # what ran out first
    broken: str = ""  # why the page is gone (crash, closed)
    error: BaseException | None = None  # raised by the caller's fetch: re-raised by render
    pending: set[asyncio.Task[SubresourceAnswer | None]] = field(default_factory=set)

    def touch(self, in_flight_change: int = 0) -> None:
        self.in_flight += in_flight_change
        self.last_activity = time.monotonic()
        self.changed.set()

    def mark_cut(self, why: str) -> None:
        self.cut = self.cut or why


class ChromiumRenderer:
    """Renders pages in one headless Chromium driven by Playwright (see the module's docstring).

    `user_agent` is sent with every request the page makes; `executable` is found by
    `find_chromium` (raises ConfigError when there is none). `sandbox` defaults to Chromium's
    sandbox unless running as root, where Chromium refuses it.
    """

    def __init__(
        self,
        *,
        user_agent: str,
        executable: str | None = None,
        cache: SubresourceCache | None = None,
        recycle_after_pages: int = 200,
        max_rss_mb: int = 1500,
        viewport: tuple[int, int] = (1280, 800),
        sandbox: bool | None = None,
    ) -> None:
        self.executable = find_chromium(executable)
        self._browsers = Launches(
            executable=self.executable,
            recycle_after_pages=recycle_after_pages,
            max_rss_mb=max_rss_mb,
            sandbox=os.geteuid() != 0 if sandbox is None else sandbox,
        )
        self._user_agent = user_agent
        self._cache = SubresourceCache() if cache is None else cache
        self._viewport: ViewportSize = {"width": viewport[0], "height": viewport[1]}
        self._counts = {state: 0 for state in RenderState}
        self._active = 0
        self._requests = [0, 0, 0, 0]  # fetched, blocked, cached, bytes

    async def render(self, job: RenderJob, fetch: SubresourceFetch) -> RenderResult:
        """See Renderer.render. Raises UsageError after close(), ConfigError when Chromium
        does not start, and what `fetch` raises."""
        launch = await self._browsers.start_render()
        self._active += 1
        try:
            cpu_before = await self._browsers.cpu_s(launch)
            result = await self._render_on(launch, job, fetch)
            cpu_s = await self._browsers.cpu_s(launch) - cpu_before
            result = dataclasses.replace(result, cpu_s=max(0.0, cpu_s))
        finally:
            self._active -= 1
            await self._browsers.end_render(launch)
        self._count(result)
        return result

    async def browser_processes(self) -> tuple[int, ...]:
        """The process ids of the running browser's tree (empty when none runs); for the
        memory bound and for benchmarks that add up its CPU time."""
        return await self._browsers.processes()

    async def close(self) -> None:
        await self._browsers.close()

    def stats(self) -> RendererStats:
        cache = self._cache.stats()
        fetched, blocked, cached, bytes_fetched = self._requests
        return RendererStats(
            renders=sum(self._counts.values()),
            done=self._counts[RenderState.DONE],
            timed_out=self._counts[RenderState.TIMEOUT],
            cut=self._counts[RenderState.CUT],
            failed=self._counts[RenderState.FAILED],
            active=self._active,
            launches=self._browsers.launched,
            crashes=self._browsers.crashes,
            requests_fetched=fetched,
            requests_blocked=blocked,
            requests_cached=cached,
            bytes_fetched=bytes_fetched,
            rss_bytes=self._browsers.rss_bytes,
            cache_entries=cache.entries,
            cache_bytes=cache.bytes,
        )

    def __repr__(self) -> str:
        s = self.stats()
        return (
            f"<ChromiumRenderer renders={s.renders} done={s.done} timeout={s.timed_out}"
            f" cut={s.cut} failed={s.failed} active={s.active} launches={s.launches}"
            f" crashes={s.crashes} rss_mb={s.rss_bytes // 1_000_000}"
            f" cache={s.cache_entries}/{s.cache_bytes}B closed={self._browsers.closed}>"
        )

    # -- one render --------------------------------------------------------------------------

    async def _render_on(
        self, launch: Launch, job: RenderJob, fetch: SubresourceFetch
    ) -> RenderResult:
        started = time.monotonic()
        deadline = started + job.timeout_s
        run = _Run(job, fetch, self._cache)
        html, state, message = "", RenderState.FAILED, ""
        context: BrowserContext | None = None
        try:
            context = await launch.browser.new_context(
                user_agent=self._user_agent,
                viewport=self._viewport,
                java_script_enabled=True,
                service_workers="block",
                accept_downloads=False,
            )
            await context.route("**/*", lambda route: self._on_route(run, route))
            await context.route_web_socket("**/*", lambda ws: self._on_websocket(run, ws))
            page = await context.new_page()
            page.on("crash", lambda _: _break(run, "the page's renderer process crashed"))
            page.on("close", lambda _: _break(run, "the page was closed"))
            page.on("load", lambda _: _loaded(run))
            state, message = await self._load_and_settle(page, run, deadline)
            if state is not RenderState.FAILED:
                html, state, message = await self._serialise(page, run, state, message)
        except PlaywrightError as exc:
            state, message = RenderState.FAILED, _first_line(exc)
        finally:
            run.ending = True
            await _cancel_pending(run)
            if context is not None:
                await self._close_context(launch, context)
        if run.error is not None:
            raise run.error
        if state is RenderState.FAILED and not launch.browser.is_connected():
            message = f"the browser died during the render ({message})"
        return RenderResult(
            html=html,
            state=state,
            wall_s=time.monotonic() - started,
            requests_fetched=len(run.fetched),
            requests_blocked=run.blocked,
            requests_cached=run.cached,
            bytes_fetched=run.bytes_fetched,
            fetched=tuple(run.fetched),
            navigations=tuple(run.navigations),
            message=message,
        )

    async def _load_and_settle(
        self, page: Page, run: _Run, deadline: float
    ) -> tuple[RenderState, str]:
        """Load the page and wait for it to settle: (TIMEOUT or DONE, message), or FAILED."""
        timeout_ms = max(1.0, (deadline - time.monotonic()) * 1000)
        try:
            await page.goto(run.job.url, wait_until="commit", timeout=timeout_ms)
        except PlaywrightTimeout:
            return RenderState.TIMEOUT, f"the page did not start within {run.job.timeout_s:g} s"
        except PlaywrightError as exc:
            if run.error is not None or run.broken:
                return RenderState.FAILED, run.broken or "the caller's fetch raised"
            return RenderState.FAILED, _first_line(exc)
        if await _wait_settled(run, deadline):
            return RenderState.DONE, ""
        if not (run.loaded or run.navigations):
            return RenderState.TIMEOUT, f"no load event within {run.job.timeout_s:g} s"
        return RenderState.TIMEOUT, f"requests still going after {run.job.timeout_s:g} s"

    async def _serialise(
        self, page: Page, run: _Run, state: RenderState, message: str
    ) -> tuple[str, RenderState, str]:
        if run.broken or run.error is not None:
            return "", RenderState.FAILED, run.broken or "the caller's fetch raised"
        try:
            async with asyncio.timeout(CONTENT_GRACE_S):
                html = await page.content()
        except TimeoutError:
            return "", RenderState.FAILED, f"the page's DOM not read within {CONTENT_GRACE_S} s"
        if run.cut:
            return html, RenderState.CUT, run.cut
        return html, state, message

    async def _close_context(self, launch: Launch, context: BrowserContext) -> None:
        try:
            async with asyncio.timeout(CLOSE_GRACE_S):
                await context.close()
        except TimeoutError:
            self._browsers.retire(launch)  # a browser that cannot close a context is stuck
        except PlaywrightError:
            pass  # the browser is gone: _render_on reports it

    # -- the browser's requests --------------------------------------------------------------

    async def _on_route(self, run: _Run, route: Route) -> None:
        run.touch(+1)
        try:
            await self._answer(run, route)
        except PlaywrightError:
            pass  # the page or its browser went away: nobody waits for this answer
        finally:
            run.touch(-1)

    async def _answer(self, run: _Run, route: Route) -> None:
        request = route.request
        verdict = Verdict.BLOCK
        if not run.ending:
            verdict = request_verdict(
                request.url,
                request.resource_type,
                site=run.job.site,
                is_navigation=request.is_navigation_request(),
                is_top_level=_is_top_level(request),
                main_served=run.main_served,
                method=request.method,
            )
        if verdict is Verdict.STAY and _is_top_level(request):
            run.navigations.append(request.url)
        if verdict is Verdict.MAIN_DOCUMENT:
            run.main_served = True
            content_type = run.job.content_type or "text/html"
            await route.fulfill(status=200, content_type=content_type, body=run.job.html)
            return
        answer = None
        if verdict is Verdict.FETCH:
            answer = await _subresource(run, request.url, request.resource_type)
        if answer is not None:
            await route.fulfill(
                status=answer.status, headers=_browser_headers(answer.headers), body=answer.body
            )
            return
        run.blocked += 1
        if verdict is Verdict.STAY or request.is_navigation_request():
            await route.fulfill(status=204)
        else:
            await route.abort("blockedbyclient")

    async def _on_websocket(self, run: _Run, ws: WebSocketRoute) -> None:
        run.blocked += 1
        run.touch()
        with contextlib.suppress(PlaywrightError):  # the page went away first
            await ws.close(code=1008, reason="trawl: websockets are not rendered")

    def _count(self, result: RenderResult) -> None:
        self._counts[result.state] += 1
        totals = (
            result.requests_fetched,
            result.requests_blocked,
            result.requests_cached,
            result.bytes_fetched,
        )
        self._requests = [a + b for a, b in zip(self._requests, totals, strict=True)]


async def _subresource(run: _Run, url: str, resource_type: str) -> SubresourceAnswer | None:
    """The answer for a request `request_verdict` let through, or None (counted by the
    caller as blocked) past a cap or when trawl refused it."""
    job = run.job
    if resource_type in CACHED_TYPES:
        kept = run.cache.get(job.site, url)
        if kept is not None:
            run.cached += 1
            return kept
    if run.requested >= job.max_subrequests:
        run.mark_cut(f"subrequests: the cap of {job.max_subrequests} was reached")
        return None
    if run.bytes_fetched >= job.max_subresource_bytes:
        run.mark_cut(f"bytes: the cap of {job.max_subresource_bytes} was reached")
        return None
    run.requested += 1
    task = asyncio.ensure_future(run.fetch(url, resource_type))
    run.pending.add(task)
    await asyncio.wait({task})  # not `await task`: the render may cancel it, this goes on
    run.pending.discard(task)
    if task.cancelled():
        return None
    error = task.exception()
    if error is not None:
        run.error = run.error or error
        run.changed.set()
        return None
    answer = task.result()
    if answer is None:
        if resource_type in CACHED_TYPES:
            run.mark_cut(f"refused: trawl did not fetch the {resource_type} {url}")
        return None
    run.fetched.append(FetchedSubresource(url, resource_type, answer))
    run.bytes_fetched += len(answer.body)
    if run.bytes_fetched > job.max_subresource_bytes:
        run.mark_cut(f"bytes: the cap of {job.max_subresource_bytes} was passed by {url}")
        return None
    if resource_type in CACHED_TYPES:
        run.cache.put(job.site, url, answer)
    return answer


async def _wait_settled(run: _Run, deadline: float) -> bool:
    """Until the page has loaded and its requests have been quiet for QUIET_S (True), or the
    deadline (False). A fetch that raised or a page that broke ends the wait early (True).

    A script that navigates away while the page loads stops its parser, and Chromium then
    fires no load event, even though the navigation gets a 204: a page held back from
    leaving counts as loaded."""
    while True:
        now = time.monotonic()
        if run.error is not None or run.broken:
            return True
        quiet_at = run.last_activity + QUIET_S
        if (run.loaded or run.navigations) and run.in_flight == 0 and now >= quiet_at:
            return True
        if now >= deadline:
            return False
        wake_at = min(deadline, quiet_at) if run.in_flight == 0 else deadline
        run.changed.clear()
        try:
            async with asyncio.timeout(wake_at - now):
                await run.changed.wait()
        except TimeoutError:
            pass  # time to look again


async def _cancel_pending(run: _Run) -> None:
    for task in run.pending:
        task.cancel()
    if run.pending:
        await asyncio.wait(run.pending)


def _loaded(run: _Run) -> None:
    run.loaded = True
    run.changed.set()


def _break(run: _Run, why: str) -> None:
    if not run.ending:
        run.broken = run.broken or why
        run.changed.set()


def _is_top_level(request: Request) -> bool:
    try:
        return request.frame.parent_frame is None
    except PlaywrightError:
        return False  # a worker's request has no frame


def _browser_headers(headers: Iterable[tuple[str, str]]) -> dict[str, str]:
    """Headers as Playwright takes them: one value per name (repeats joined as HTTP allows,
    Set-Cookie lines by newlines), without those describing the raw body."""
    out: dict[str, str] = {}
    for name, value in headers:
        key = name.lower()
        if key in _DROPPED_HEADERS:
            continue
        if key in out:
            out[key] += ("\n" if key == "set-cookie" else ", ") + value
        else:
            out[key] = value
    return out


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__

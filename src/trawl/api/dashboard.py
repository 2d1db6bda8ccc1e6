"""The live dashboard at `/`, and the read-only JSON it polls.

How this works: while the app runs, its lifespan samples the crawl every SAMPLE_INTERVAL_S
into a StatsHistory (an hour of samples), so a freshly opened page shows the recent past,
not just what happens after it loads. `/v1/stats/history`, `/v1/sites` and `/v1/errors`
serve that and the sites' politeness state. The page (static/) is plain HTML, CSS and JS
with uPlot vendored beside it: no CDN, so it works on a machine with no way out. It polls
every 2 s and builds its DOM with textContent only: URLs and error kinds come from the web.

Who writes what: the sampling task writes the history; the routes read it and the crawl's
state, all on the crawl's event loop.
"""

from __future__ import annotations

import asyncio
import contextlib
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Literal

from fastapi import APIRouter, HTTPException, Query
from fastapi.responses import FileResponse

from trawl.api.site_ranking import busiest, most_troubled, recent_errors
from trawl.api.stats_history import StatsHistory, StatsSample, count_by_class

if TYPE_CHECKING:
    from collections.abc import AsyncIterator

    from fastapi import FastAPI

    from trawl.crawl_context import CrawlContext

SAMPLE_INTERVAL_S = 2.0
STATIC_DIR = Path(__file__).parent / "static"
_MEDIA_TYPES = {
    ".html": "text/html; charset=utf-8",
    ".js": "text/javascript; charset=utf-8",
    ".css": "text/css; charset=utf-8",
    ".LICENSE": "text/plain; charset=utf-8",
}


def dashboard_router(ctx: CrawlContext, history: StatsHistory) -> APIRouter:
    """The dashboard's page, assets and JSON; its lifespan samples the crawl into `history`
    (the server must run the app's lifespan, as `serve_api` does)."""

    @contextlib.asynccontextmanager
    async def sampling(app: FastAPI) -> AsyncIterator[None]:
        task = asyncio.create_task(sample_every(ctx, history, SAMPLE_INTERVAL_S))
        try:
            yield
        finally:
            task.cancel()
            await asyncio.wait({task})  # its CancelledError ends it; ours must not be eaten
            if not task.cancelled():
                task.result()  # a bug in sampling surfaces here, not nowhere

    router = APIRouter(lifespan=sampling)
    _add_page_routes(router)
    _add_data_routes(router, ctx, history)
    return router


def _add_data_routes(router: APIRouter, ctx: CrawlContext, history: StatsHistory) -> None:
    @router.get("/v1/stats/history", summary="The last hour, one row per ~2 s interval")
    async def get_history(
        since: Annotated[float, Query(ge=0, allow_inf_nan=False)] = 0.0,
    ) -> dict[str, Any]:
        return {"intervalS": SAMPLE_INTERVAL_S, "rows": history.rows_since(since)}

    @router.get("/v1/sites", summary="The busiest or the most troubled sites")
    async def get_sites(
        sort: Literal["busy", "troubled"] = "busy",
        limit: Annotated[int, Query(ge=1, le=1000)] = 10,
    ) -> list[dict[str, Any]]:
        rank = busiest if sort == "busy" else most_troubled
        return rank(ctx.sites.values(), ctx.clock.now(), ctx.frontier.queued_for, limit)

    @router.get("/v1/errors", summary="The latest page errors across sites, newest first")
    async def get_errors(
        limit: Annotated[int, Query(ge=1, le=1000)] = 20,
    ) -> list[dict[str, Any]]:
        return recent_errors(ctx.sites.values(), limit)


def _add_page_routes(router: APIRouter) -> None:
    # Only the files shipped in static/: a name is looked up, never joined to a path.
    assets = {p.name: p for p in STATIC_DIR.iterdir() if p.suffix in _MEDIA_TYPES}

    def asset(name: str) -> FileResponse:
        path = assets.get(name)
        if path is None:
            raise HTTPException(404, f"no dashboard asset {name!r}")
        headers = {"Cache-Control": "no-cache"}  # revalidate: an upgrade changes them
        return FileResponse(path, media_type=_MEDIA_TYPES[path.suffix], headers=headers)

    @router.get("/", include_in_schema=False)
    async def get_index() -> FileResponse:
        return asset("index.html")

    @router.get("/static/{name}", include_in_schema=False)
    async def get_asset(name: str) -> FileResponse:
        return asset(name)


def sample_of(ctx: CrawlContext, now: float) -> StatsSample:
    st = ctx.stats
    sched = ctx.frontier.stats()
    return StatsSample(
        at=now,
        pages_fetched=st.pages_fetched,
        pages_stored=st.pages_stored,
        bytes_downloaded=st.bytes_downloaded,
        errors=st.errors,
        statuses=count_by_class(st.statuses),
        queued=(sched.queued_fast, sched.queued_slow, sched.queued_refresh),
        handed_out=sched.handed_out,
    )


async def sample_every(ctx: CrawlContext, history: StatsHistory, interval_s: float) -> None:
    """Sample the crawl into `history` every `interval_s`, from now until cancelled."""
    at = ctx.clock.now()
    while True:
        history.add(sample_of(ctx, ctx.clock.now()))
        # After a stalled loop, go on from now: no burst of catch-up samples.
        at = max(at + interval_s, ctx.clock.now())
        await ctx.clock.sleep_until(at)

"""The live dashboard at `/`, and the read-only JSON it polls.

How this works: the crawl loop samples the crawl every HISTORY_INTERVAL_S into a
StatsHistory (an hour of samples, api.crawl_view), so a freshly opened page shows the recent
past, not just what happens after it loads. `/v1/stats/history`, `/v1/sites` and `/v1/errors`
serve that and the sites' politeness state. The page (static/) is plain HTML, CSS and JS
with uPlot vendored beside it: no CDN, so it works on a machine with no way out. It polls
every 2 s and builds its DOM with textContent only: URLs and error kinds come from the web.
`/docs` (Swagger UI) is served the same way, from swagger-ui-dist's files in static/.

Who writes what: the crawl loop writes the history and the sites' states; the routes copy
the history, rank the live site states (`CrawlView.read_live`: each site list is copied in
one C-level pass, each field read as the crawl last wrote it), and answer from the API's
own thread.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Literal

from fastapi import APIRouter, HTTPException, Query
from fastapi.openapi.docs import get_swagger_ui_html
from fastapi.responses import FileResponse, HTMLResponse

from trawl.api.crawl_view import HISTORY_EVERY, PUBLISH_INTERVAL_S
from trawl.api.site_ranking import busiest, most_troubled, recent_errors

if TYPE_CHECKING:
    from trawl.api.crawl_view import CrawlView

HISTORY_INTERVAL_S = PUBLISH_INTERVAL_S * HISTORY_EVERY
STATIC_DIR = Path(__file__).parent / "static"
_MEDIA_TYPES = {
    ".html": "text/html; charset=utf-8",
    ".js": "text/javascript; charset=utf-8",
    ".css": "text/css; charset=utf-8",
    ".LICENSE": "text/plain; charset=utf-8",
    ".png": "image/png",
}


def dashboard_router(view: CrawlView) -> APIRouter:
    """The dashboard's page, assets and JSON (the crawl loop fills `view.history`)."""
    router = APIRouter()
    _add_page_routes(router)
    _add_data_routes(router, view)
    return router


def _add_data_routes(router: APIRouter, view: CrawlView) -> None:
    ctx = view.ctx

    @router.get("/v1/stats/history", summary="The last hour, one row per ~2 s interval")
    async def get_history(
        since: Annotated[float, Query(ge=0, allow_inf_nan=False)] = 0.0,
    ) -> dict[str, Any]:
        # The crawl loop appends to the ring; the copy is one C-level pass under the GIL.
        samples = view.history.copy()
        return {"intervalS": HISTORY_INTERVAL_S, "rows": samples.rows_since(since)}

    @router.get("/v1/sites", summary="The busiest or the most troubled sites")
    async def get_sites(
        sort: Literal["busy", "troubled"] = "busy",
        limit: Annotated[int, Query(ge=1, le=1000)] = 10,
    ) -> list[dict[str, Any]]:
        rank = busiest if sort == "busy" else most_troubled
        return await view.read_live(
            lambda: rank(list(ctx.sites.states()), ctx.clock.now(), ctx.frontier.queued_for, limit)
        )

    @router.get("/v1/errors", summary="The latest page errors across sites, newest first")
    async def get_errors(
        limit: Annotated[int, Query(ge=1, le=1000)] = 20,
    ) -> list[dict[str, Any]]:
        return await view.read_live(lambda: recent_errors(list(ctx.sites.states()), limit))


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

    @router.get("/docs", include_in_schema=False)
    async def get_docs() -> HTMLResponse:
        # FastAPI's own /docs loads Swagger UI from a CDN: a blank page offline (issue 14).
        # Relative URLs, as the dashboard's: they resolve under any path prefix.
        return get_swagger_ui_html(
            openapi_url="openapi.json",
            title="trawl API",
            swagger_js_url="static/swagger-ui-bundle.js",
            swagger_css_url="static/swagger-ui.css",
            swagger_favicon_url="static/swagger-ui-favicon-32x32.png",
            # Swagger UI's validator badge would send the spec's URL to validator.swagger.io.
            swagger_ui_parameters={"validatorUrl": None},
        )

"""The control API: page records and bodies, host state and limits, seeds, events, stats
(and, in api.scope, the crawl's scope and what it skipped).

Routes are thin and run on the API's own thread and loop; `CrawlView` says how each one
reaches the crawl (committed rows through a read-only connection, counters from the crawl's
latest snapshot, live state on the crawl loop). Field names are the design's
(`PageRecord.to_json`, `SiteState.to_host_record`).
"""

from __future__ import annotations

import asyncio
import functools
import secrets
from typing import TYPE_CHECKING, Annotated, Any, Literal

from fastapi import Depends, FastAPI, Header, HTTPException, Query, Request
from fastapi.responses import JSONResponse, Response
from pydantic import BaseModel, ConfigDict, Field

from trawl import __version__
from trawl.api.crawl_view import LIMITS_WAIT_S, STORE_RETRY_AFTER_S
from trawl.api.dashboard import dashboard_router
from trawl.api.metrics import CONTENT_TYPE, crawl_registry, metrics_text
from trawl.api.scope import ScopeRequest, scope_router, seed_scope_of, share_or_503
from trawl.errors import DataError, InvalidUrl, StoreUnavailable
from trawl.loop.operator_changes import AddedSeeds, add_operator_seeds
from trawl.politeness.site_limits import checked_limits
from trawl.politeness.site_state import SiteState
from trawl.urls.normalise import normalise_url, url_hash
from trawl.urls.registered_domain import site_of_normalised

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable

    from trawl.api.crawl_view import CrawlView
    from trawl.frontier.scope import SeedScope
    from trawl.loop.context import CrawlContext
    from trawl.model import PageRecord
    from trawl.politeness.site_limits import SiteLimits


_EVENT_POLL_S = 0.2
MAX_OFFSET = 2**63 - 1  # SQLite's largest integer


class SeedRequest(BaseModel):
    urls: list[str] = Field(min_length=1, max_length=10_000)
    priority: Literal["high", "normal", "low"] = "normal"
    scope: ScopeRequest | None = Field(
        None, description="the seeds' scope; without it they take the crawl's [scope] defaults"
    )


class Rejected(BaseModel):
    url: str
    reason: str


class SeedResponse(BaseModel):
    queued: int = Field(description="new URLs queued")
    known: int = Field(
        0,
        description="URLs already crawled or queued: not queued again (the recrawl schedule "
        "refreshes crawled ones)",
    )
    rejected: list[Rejected]


class LimitsRequest(BaseModel):
    """The override replaces any earlier one; a field left out is not overridden."""

    model_config = ConfigDict(extra="forbid", strict=True)
    crawlDelay: float | None = Field(None, description="seconds between requests (>= 1)")
    maxPagesPerDay: int | None = Field(None, description="pages per UTC day (>= 0)")
    paused: bool | None = Field(None, description="hand the site to no one")


def site_of_host(host: str) -> str:
    """The registered domain a hostname (or domain) belongs to; 422 when it is none."""
    name = host.strip().lower().rstrip(".")
    try:  # through the crawl's own normaliser: IDNA, IP literals and junk as for URLs
        if not name or any(c in name for c in "/?#@:[]\\"):
            raise InvalidUrl("a hostname has no '/', '?', '#', '@', ':' or brackets")
        return site_of_normalised(normalise_url(f"http://{name}/"))
    except (InvalidUrl, ValueError) as exc:
        raise HTTPException(422, f"not a hostname: {str(exc)[:300]}") from None


def limits_answer(ctx: CrawlContext, state: SiteState) -> dict[str, Any]:
    """The override and the limits now in force (the override merged with the rest)."""
    return {
        "host": state.site,
        "override": state.limits.to_json() if state.limits else None,
        "inForce": {
            "crawlDelay": state.clock.gap_s(ctx.policy.clock),
            "maxPagesPerDay": state.daily_cap(ctx.policy.traps),
            "paused": state.paused,
            "nextAllowedAt": state.clock.next_allowed_at,
        },
    }


def build_app(view: CrawlView, token: str | None = None) -> FastAPI:
    """The API over a running crawl; `token` guards the write endpoints (None: refused)."""
    app = FastAPI(
        title="trawl",
        version=__version__,
        description="Control and read-back API of a running trawl crawl.",
        # /docs is the dashboard router's, with Swagger UI served from static/; ReDoc's
        # page would load its script and fonts from CDNs, so there is none.
        docs_url=None,
        redoc_url=None,
    )
    app.add_exception_handler(StoreUnavailable, _store_unavailable)
    _add_page_routes(app, view)
    _add_host_routes(app, view, _token_check(token))
    _add_feed_routes(app, view)
    _add_seed_routes(app, view, _token_check(token))
    app.include_router(scope_router(view, _token_check(token)))
    app.include_router(dashboard_router(view))
    return app


async def _store_unavailable(request: Request, exc: Exception) -> JSONResponse:
    """503 for a read or write that met a cluster's shared store out of reach: the crawl
    pauses and resumes by itself, and the same call succeeds once the store is back. Not a
    500 with a traceback in the node's log: nothing here is broken."""
    return JSONResponse(
        {"detail": f"a shared store is unreachable, ask again later: {exc}"},
        status_code=503,
        headers={"Retry-After": str(STORE_RETRY_AFTER_S)},
    )


def _token_check(token: str | None) -> Callable[..., None]:
    def require_token(authorization: Annotated[str | None, Header()] = None) -> None:
        if token is None:
            raise HTTPException(
                403, "write endpoints are off: start with --token-file or TRAWL_API_TOKEN"
            )
        if not authorization or not authorization.startswith("Bearer "):
            raise HTTPException(
                401, "missing operator token", headers={"WWW-Authenticate": "Bearer"}
            )
        if not secrets.compare_digest(authorization[len("Bearer ") :].encode(), token.encode()):
            raise HTTPException(403, "wrong operator token")

    return require_token


def _add_page_routes(app: FastAPI, view: CrawlView) -> None:
    def page_or_404(key: str) -> PageRecord:
        record = view.records().get_page(key.lower())
        if record is None:
            raise HTTPException(404, f"no page record with urlHash {key!r}")
        return record

    @app.get("/v1/pages/{url_hash}", summary="The latest page record")
    async def get_page(url_hash: str) -> dict[str, Any]:
        return page_or_404(url_hash).to_json()

    @app.get(
        "/v1/pages/{url_hash}/body",
        summary="The stored HTML, decompressed; copy=rendered: a browser's DOM of the page",
    )
    async def get_body(
        url_hash: str, copy: Annotated[Literal["plain", "rendered"], Query()] = "plain"
    ) -> Response:
        record = page_or_404(url_hash)
        key = record.rendered_key if copy == "rendered" else record.storage_key
        if not key:
            what = "rendered copy" if copy == "rendered" else "body"
            raise HTTPException(404, f"{record.url}: no {what} stored")
        try:
            stored = view.read_body(key)
        except StoreUnavailable:
            raise  # 503, not a damaged body (_store_unavailable)
        except DataError as exc:
            raise HTTPException(500, f"stored body unreadable: {exc}") from None
        media_type = stored.header("Content-Type") or "text/html"
        return Response(stored.payload, media_type=media_type)

    @app.get("/v1/pages", summary="A page record by URL (normalised as the crawl does)")
    async def find_page(url: Annotated[str, Query(min_length=1)]) -> dict[str, Any]:
        try:
            key = url_hash(normalise_url(url, None, view.ctx.rules))
        except InvalidUrl as exc:
            raise HTTPException(422, f"not a crawlable URL: {exc}") from None
        return page_or_404(key).to_json()


def _add_host_routes(app: FastAPI, view: CrawlView, require_token: Callable[..., None]) -> None:
    ctx = view.ctx

    def live_record(site: str) -> dict[str, object] | None:  # CrawlView.read_live
        state = ctx.sites.loaded(site)
        return None if state is None else state.to_host_record(ctx.placement.owner)

    @app.get("/v1/hosts/{host}", summary="Politeness state of a site (host or domain)")
    async def get_host(host: str) -> dict[str, Any]:
        site = site_of_host(host)
        record = await view.read_live(lambda: live_record(site))
        if record is None:  # not loaded in this run: as last written
            record = view.records().get_host(site)
        if record is None:
            raise HTTPException(404, f"no host record for {site!r}")
        return {**record, "queueLength": ctx.frontier.queued_for(site)}

    @app.put(
        "/v1/hosts/{host}/limits",
        summary="Override a site's limits from its very next request on (kept across restarts)",
        dependencies=[Depends(require_token)],
    )
    async def put_limits(host: str, request: LimitsRequest) -> dict[str, Any]:
        site = site_of_host(host)
        fields = (request.crawlDelay, request.maxPagesPerDay, request.paused)
        if all(f is None for f in fields):
            raise HTTPException(
                422, "name crawlDelay, maxPagesPerDay or paused; DELETE removes the override"
            )
        try:
            limits = checked_limits(
                *fields[:2], bool(request.paused),
                now=ctx.clock.now(), min_delay_s=ctx.policy.clock.min_delay_s,
            )  # fmt: skip
        except ValueError as exc:
            raise HTTPException(422, str(exc)) from None
        return await apply_limits(site, limits)

    @app.delete(
        "/v1/hosts/{host}/limits",
        summary="Remove a site's override",
        dependencies=[Depends(require_token)],
    )
    async def delete_limits(host: str) -> dict[str, Any]:
        site = site_of_host(host)
        return await apply_limits(site, None)

    async def apply_limits(site: str, limits: SiteLimits | None) -> dict[str, Any]:
        if view.shared is None:
            return await view.change(lambda: limits_answer(ctx, ctx.set_site_limits(site, limits)))
        override = None if limits is None else limits.to_json()
        record = await view.limits_via_owner(site, override)
        if record is None:
            raise HTTPException(
                504, f"sent to {site}'s owner, not applied within {LIMITS_WAIT_S:g} s yet"
            )
        return limits_answer(ctx, SiteState.from_host_record(record, ctx.policy.traps))


def _add_feed_routes(app: FastAPI, view: CrawlView) -> None:
    clock = view.ctx.clock

    @app.get("/v1/events", summary="page.fetched events from an offset (long-poll with wait)")
    async def get_events(
        from_offset: Annotated[int, Query(alias="from", ge=0, le=MAX_OFFSET)] = 0,
        limit: Annotated[int, Query(ge=1, le=1000)] = 100,
        wait: Annotated[float, Query(ge=0, le=60)] = 0.0,
    ) -> dict[str, Any]:
        deadline = clock.now() + wait
        while True:
            events = view.records().read_events(from_offset, limit)
            if events or clock.now() >= deadline:
                break
            await asyncio.sleep(_EVENT_POLL_S)
        items = [event.to_json() for event in events]
        next_offset = events[-1].offset + 1 if events else from_offset
        return {"events": items, "next": next_offset}

    @app.get("/v1/stats", summary="The crawl at a glance (its counters of the last second)")
    async def get_stats() -> dict[str, Any]:
        return view.snapshot.stats

    registry = crawl_registry(view)

    @app.get("/metrics", summary="Prometheus text format", response_class=Response)
    async def get_metrics() -> Response:
        return Response(metrics_text(registry), media_type=CONTENT_TYPE)


# Seeds one call on the crawl loop adds: 10,000 (a request's most) in one call held the loop
# for ~0.6 s, 500 for ~30 ms; between two calls the loop runs its own steps.
SEED_CHUNK = 500


async def add_in_chunks(
    on_crawl: Callable[[Callable[[], AddedSeeds]], Awaitable[AddedSeeds]],
    add: Callable[[list[str]], AddedSeeds],
    urls: list[str],
) -> AddedSeeds:
    """`add(urls)` a `SEED_CHUNK` at a time, each its own call on the crawl loop (and its
    own row in the operator log: a crash between two keeps the chunks before it, and the
    request repeated queues only what is still new)."""
    parts = []
    for start in range(0, len(urls), SEED_CHUNK):
        parts.append(await on_crawl(functools.partial(add, urls[start : start + SEED_CHUNK])))
    return AddedSeeds.merged(parts)


def _add_seed_routes(app: FastAPI, view: CrawlView, require_token: Callable[..., None]) -> None:
    ctx = view.ctx

    def add_durably(urls: list[str], priority: str, scope: SeedScope | None) -> AddedSeeds:
        return add_operator_seeds(ctx, urls, priority, scope)  # on the crawl loop

    @app.post(
        "/v1/seeds",
        summary="Add seeds; high priority lands in the fast line at once",
        dependencies=[Depends(require_token)],
    )
    async def post_seeds(request: SeedRequest) -> SeedResponse:
        # Checked here, off the crawl loop: a bad scope is a 422 before the crawl is asked.
        scope = None if request.scope is None else seed_scope_of(view, request.scope)
        added = await add_in_chunks(
            view.change, lambda urls: add_durably(urls, request.priority, scope), request.urls
        )
        if added.seeds and view.shares_scope:  # every node must know the seeds' scopes
            scopes = [seed.to_json() for seed in added.seeds]
            await share_or_503(view, {"op": "seeds", "scopes": scopes})
        return SeedResponse(
            queued=added.queued,
            known=added.known,
            rejected=[Rejected(url=u, reason=r) for u, r in added.rejected],
        )

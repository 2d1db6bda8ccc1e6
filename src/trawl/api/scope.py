"""The scope routes (issue 16): the scope in force, a URL's check, run-time excludes, skips.

The routes read or change the crawl's `ScopeBook` on the crawl loop (`CrawlView.on_crawl`):
the book and its skip tally are the crawl's live objects. A URL's check alone runs on the
API's thread (`CrawlView.read_live`): it reads only the compiled scope in force, which is
never changed in place (a change builds a new one and swaps the reference). Reads need no
token; adding or lifting an exclude does. A change is applied and made durable on this node
first (`CrawlContext.add_exclusion`), then, in cluster mode, handed to the other nodes.

`DELETE /v1/scope/exclusions` takes the pattern as `?pattern=`, not as a body: a DELETE body
has no defined meaning (RFC 9110 section 9.3.5) and some clients and proxies drop it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any

from fastapi import APIRouter, Depends, HTTPException, Query, Response
from pydantic import BaseModel, ConfigDict, Field

from trawl.api.crawl_view import STORE_RETRY_AFTER_S
from trawl.errors import ConfigError, InvalidUrl, TrawlError
from trawl.frontier.scope import MAX_DEPTH_LIMIT, MAX_EXTRA_HOPS, ScopeType, SeedScope
from trawl.frontier.skips import DEFAULT_SAMPLE_SIZE
from trawl.urls.normalise import normalise_url

if TYPE_CHECKING:
    from collections.abc import Callable

    from trawl.api.crawl_view import CrawlView

MAX_PATTERN_CHARS = 4096  # a longer regex is a mistake, and each link would pay for it
MAX_SEED_PATTERNS = 1000  # include or exclude patterns in one seed's scope
DEFAULT_SKIPS = 100
DEFAULT_SEEDS_SHOWN = 1_000  # GET /v1/scope lists the first seeds only (seedsTotal: all)
MAX_SEEDS_SHOWN = 100_000


class ScopeRequest(BaseModel):
    """A seed's scope for `POST /v1/seeds`: a key left out takes the crawl's `[scope]`
    default (as a `[[seeds]]` table does)."""

    model_config = ConfigDict(extra="forbid", strict=True)
    # Not strict: a JSON string is the enum's value (strict wants a ScopeType object).
    type: ScopeType | None = Field(None, strict=False, description="the scope type")
    include: list[Annotated[str, Field(max_length=MAX_PATTERN_CHARS)]] | None = Field(
        None, max_length=MAX_SEED_PATTERNS, description="RE2 patterns over the normalised URL"
    )
    exclude: list[Annotated[str, Field(max_length=MAX_PATTERN_CHARS)]] | None = Field(
        None, max_length=MAX_SEED_PATTERNS, description="RE2 patterns; an exclude always wins"
    )
    maxDepth: int | None = Field(None, description=f"hops from the seed, 0..{MAX_DEPTH_LIMIT}")
    extraHops: int | None = Field(None, description=f"off-scope hops, 0..{MAX_EXTRA_HOPS}")
    maxPages: int | None = Field(None, description="URLs queued for the seed; 0 = no limit")


def seed_scope_of(view: CrawlView, request: ScopeRequest) -> SeedScope:
    """The crawl's defaults with the request's keys over them, for a seed URL to fill in
    (`dataclasses.replace`); 422 naming the key for anything SeedScope refuses."""
    given = request.model_dump(exclude_none=True, mode="json")
    # default_seed reads the book's defaults, fixed for the run: safe from the API thread.
    merged = {**view.ctx.scope.default_seed("").to_json(), **given}
    try:
        return SeedScope.from_json(merged, "scope")
    except ConfigError as exc:
        raise HTTPException(422, str(exc)) from None


class CheckRequest(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)
    url: str = Field(min_length=1, max_length=8192)


class CheckAnswer(BaseModel):
    url: str = Field(description="the URL as the crawl normalises it")
    inScope: bool
    rule: str = Field(description="the rule that decided: seed, scope, include, exclude")
    seed: str | None = Field(description="the seed URL it is credited to, if any")


class ExclusionRequest(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)
    pattern: str = Field(min_length=1, max_length=MAX_PATTERN_CHARS)


class ExclusionAnswer(BaseModel):
    pattern: str
    dropped: int = Field(description="queued URLs it took out of the frontier (this node's)")
    already: bool = Field(False, description="it was in force already: nothing changed")


def scope_router(view: CrawlView, require_token: Callable[..., None]) -> APIRouter:
    router = APIRouter()
    _add_read_routes(router, view)
    _add_exclusion_routes(router, view, require_token)
    return router


def _add_read_routes(router: APIRouter, view: CrawlView) -> None:
    ctx = view.ctx

    @router.get("/v1/scope", summary="The scope in force: seeds, their scopes, excludes")
    async def get_scope(
        seeds: Annotated[int, Query(ge=0, le=MAX_SEEDS_SHOWN)] = DEFAULT_SEEDS_SHOWN,
    ) -> dict[str, Any]:
        def read() -> dict[str, Any]:  # on the crawl loop
            return {**ctx.scope.describe(seeds), "summary": ctx.scope.summary()}

        return await view.on_crawl(read)

    @router.post(
        "/v1/scope/check",
        summary="Is a URL in scope, by which rule, credited to which seed (queues nothing)",
    )
    async def check_url(request: CheckRequest) -> CheckAnswer:
        try:
            url = normalise_url(request.url, None, ctx.rules)
        except (InvalidUrl, ValueError) as exc:
            raise HTTPException(422, f"not a crawlable URL: {str(exc)[:300]}") from None
        check = await view.read_live(lambda: ctx.scope.current.check(url))
        return CheckAnswer(url=url, inScope=check.in_scope, rule=check.rule.value, seed=check.seed)

    @router.get("/v1/skipped", summary="What was not queued, and why: counts and the latest")
    async def get_skipped(
        reason: Annotated[str | None, Query(max_length=64)] = None,
        limit: Annotated[int, Query(ge=1, le=DEFAULT_SAMPLE_SIZE)] = DEFAULT_SKIPS,
    ) -> dict[str, Any]:
        def read() -> dict[str, Any]:  # on the crawl loop
            skips = ctx.scope.skips
            return {
                "counts": skips.counts(),
                "skipped": [skip.to_json() for skip in skips.recent(limit, reason)],
            }

        return await view.on_crawl(read)


def _add_exclusion_routes(
    router: APIRouter, view: CrawlView, require_token: Callable[..., None]
) -> None:
    ctx = view.ctx

    @router.post(
        "/v1/scope/exclusions",
        summary="Exclude a pattern crawl-wide from now on (queued URLs it matches are dropped)",
        status_code=201,
        responses={200: {"description": "in force already", "model": ExclusionAnswer}},
        dependencies=[Depends(require_token)],
    )
    async def add_exclusion(request: ExclusionRequest, response: Response) -> ExclusionAnswer:
        pattern = request.pattern
        try:
            dropped = await view.change_async(lambda: ctx.add_exclusion_in_slices(pattern))
        except ConfigError as exc:
            raise HTTPException(422, str(exc)) from None
        if dropped is None:
            response.status_code = 200
            return ExclusionAnswer(pattern=pattern, dropped=0, already=True)
        await share_or_503(view, {"op": "exclude", "pattern": pattern})
        return ExclusionAnswer(pattern=pattern, dropped=dropped, already=False)

    @router.delete(
        "/v1/scope/exclusions",
        summary="Lift a run-time exclude (those of the config stay)",
        dependencies=[Depends(require_token)],
    )
    async def remove_exclusion(
        pattern: Annotated[str, Query(min_length=1, max_length=MAX_PATTERN_CHARS)],
    ) -> dict[str, Any]:
        def remove() -> bool | None:  # on the crawl loop; None: a config exclude
            if pattern in ctx.scope.config_exclusions:
                return None
            return ctx.remove_exclusion(pattern)

        removed = await view.change(remove)
        if removed is None:
            raise HTTPException(
                404, f"{pattern!r} is a [scope] exclude of the config: it stays for the run"
            )
        if not removed:
            raise HTTPException(404, f"no run-time exclude is {pattern!r}")
        await share_or_503(view, {"op": "include_again", "pattern": pattern})
        return {"pattern": pattern, "removed": True}


async def share_or_503(view: CrawlView, change: dict[str, Any]) -> None:
    """Hand a change applied here to the cluster; 503 when the coordinator can't be told
    (the change holds on this node only: sending it again is harmless)."""
    try:
        await view.share_scope_change(change)
    except (TrawlError, OSError) as exc:
        raise HTTPException(
            503,
            f"applied on this node only, the cluster was not told ({exc}): send it again",
            headers={"Retry-After": str(STORE_RETRY_AFTER_S)},
        ) from None

"""What the render step asks of a browser (a port), and the values it passes (issue 18).

A `RenderItem` is a page waiting for a browser, as the render queue holds it and a cluster
node's partition checkpoint carries it. A `Renderer` turns the plain fetch of a page built
by JavaScript (`RenderJob`) into the DOM its scripts build (`RenderResult`). The browser
makes no request of its own: the main document comes from the job's bytes, and every other
request it may make goes through the caller's `SubresourceFetch`, so trawl's rules
(robots.txt, the site clock, the per-IP cap, backoff, the SSRF guard, size caps) apply to
the browser as to any fetch. The caller stores `RenderResult.fetched` as request/response
records and the DOM as a conversion record.

The adapter is render.browser.ChromiumRenderer (headless Chromium through Playwright).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from enum import Enum
from typing import Protocol, TypeAlias

__all__ = [
    "FetchedSubresource",
    "RenderItem",
    "RenderJob",
    "RenderResult",
    "RenderState",
    "Renderer",
    "RendererStats",
    "SubrequestOutcome",
    "SubresourceAnswer",
    "SubresourceFetch",
]


@dataclass(frozen=True, slots=True)
class RenderItem:
    """A page waiting for a browser, and the plain response it is rendered from."""

    url: str
    url_hash: str
    site: str
    reason: str  # parse.render_need.RenderReason's value, or "forced"
    storage_key: str  # the plain response's WARC record
    record_id: str  # its WARC-Record-ID, for the conversion record's WARC-Refers-To
    fetched_at: float
    queued_at: float = 0.0
    attempts: int = 0
    # The page's frontier entry, for the links its render finds (scope, depth, scores).
    depth: int = 0
    standing: int = 0
    score: float = 0.0

    def __post_init__(self) -> None:
        if not self.url or not self.url_hash or not self.site or not self.storage_key:
            raise ValueError(f"a render item needs url, hash, site and storage key: {self!r}")


class SubrequestOutcome(Enum):
    """What became of one request the browser asked trawl to make (loop.render_fetches)."""

    FETCHED = "fetched"  # made, and its answer handed to the browser
    ROBOTS = "robots"  # robots.txt forbids it
    SITE_BUSY = "site-busy"  # the site (its clock, a turn, a pause) could not allow it in time
    NOT_OURS = "not-ours"  # a cluster node's partition of the site is not this node's
    INVALID = "invalid"  # not a URL trawl could request
    FAILED = "failed"  # made, and it failed (no answer)


class RenderState(Enum):
    """How a render ended; each render ends in exactly one."""

    DONE = "done"  # the page loaded and its requests went quiet
    TIMEOUT = "timeout"  # the page never settled: the DOM was taken at `timeout_s`
    CUT = "cut"  # a budget ran out (subrequests, bytes) or trawl refused a script/style
    FAILED = "failed"  # the browser failed (crash, unresponsive page): `message` says how


@dataclass(frozen=True, slots=True)
class RenderJob:
    """One page to render, with the plain fetch's answer and the render's caps.

    `html` and `content_type` are served to the browser as the main document, which is
    never fetched again. `timeout_s` bounds the whole render (load and settling) on the wall
    clock; `max_subrequests` and `max_subresource_bytes` bound what trawl fetches for it.
    """

    url: str
    site: str  # the registered domain of `url`: only its subresources may be fetched
    html: bytes
    content_type: str
    timeout_s: float
    max_subrequests: int
    max_subresource_bytes: int

    def __post_init__(self) -> None:
        if not self.url.startswith(("http://", "https://")):
            raise ValueError(f"RenderJob needs an http(s) URL, got {self.url!r}")
        if not self.site:
            raise ValueError(f"RenderJob for {self.url!r} has no site")
        if not self.timeout_s > 0:
            raise ValueError(f"RenderJob timeout_s must be > 0, got {self.timeout_s!r}")
        if self.max_subrequests < 0:
            raise ValueError(f"RenderJob max_subrequests must be >= 0, got {self.max_subrequests}")
        if self.max_subresource_bytes < 0:
            raise ValueError(
                f"RenderJob max_subresource_bytes must be >= 0, got {self.max_subresource_bytes}"
            )


@dataclass(frozen=True, slots=True)
class SubresourceAnswer:
    """trawl's answer to one of the browser's requests, handed to the browser as is.

    `body` is the decoded body (no content-encoding left); redirects are answers too (a 3xx
    with its Location), and the browser's follow-up request is checked like any other.
    """

    status: int
    headers: tuple[tuple[str, str], ...]
    body: bytes

    def __post_init__(self) -> None:
        if not 100 <= self.status <= 599:
            raise ValueError(f"SubresourceAnswer status must be 100-599, got {self.status}")


# trawl fetches `url` for the browser, which asked for it as `resource_type` (Playwright's
# names: "script", "stylesheet", "xhr", "fetch", "document"). None: trawl refused it
# (robots.txt, the site's budget, a size cap) and the browser's request fails.
SubresourceFetch: TypeAlias = Callable[[str, str], Awaitable[SubresourceAnswer | None]]


@dataclass(frozen=True, slots=True)
class FetchedSubresource:
    """A subresource trawl fetched for a render: stored as request/response records."""

    url: str
    resource_type: str
    answer: SubresourceAnswer


@dataclass(frozen=True, slots=True)
class RenderResult:
    """What one render produced.

    `html` is the serialised DOM after rendering ("" when `FAILED` before there was one).
    The counts cover the browser's requests besides the main document: `requests_fetched`
    went through `SubresourceFetch` (`bytes_fetched` are their bodies, `fetched` the answers,
    in the order they came), `requests_cached` were served from the per-site cache without a
    request, `requests_blocked` failed in the browser (blocked by rule, refused by trawl, or
    past a budget; the answer that passed the byte cap was fetched and is in `fetched`, but
    the browser never got it, so it counts in both). `navigations` are the URLs the page
    tried to load in its place (a script setting `location`, a meta refresh, a popup), held
    back: like a redirect's Location, the crawl may queue them. `message` says what ran out
    (`CUT`), what failed (`FAILED`), why the page did not settle (`TIMEOUT`), or is "".
    """

    html: str
    state: RenderState
    wall_s: float
    requests_fetched: int
    requests_blocked: int
    requests_cached: int
    bytes_fetched: int
    fetched: tuple[FetchedSubresource, ...]
    navigations: tuple[str, ...] = ()
    message: str = ""
    # CPU-seconds the browser's process tree used while the render ran (with renders at
    # once, each counts the others' too): what render.cpu_budget charges it.
    cpu_s: float = 0.0

    def __post_init__(self) -> None:
        if self.state is RenderState.FAILED and not self.message:
            raise ValueError("a failed RenderResult needs a message")
        if self.requests_fetched != len(self.fetched):
            raise ValueError(
                f"requests_fetched={self.requests_fetched} but {len(self.fetched)} fetched"
            )


@dataclass(frozen=True, slots=True)
class RendererStats:
    """A renderer's counters since it was made."""

    renders: int  # finished renders, one state each:
    done: int
    timed_out: int
    cut: int
    failed: int
    active: int  # renders in progress now
    launches: int  # browsers started (the first, recycled ones and ones after a crash)
    crashes: int  # browsers that died under a render
    requests_fetched: int
    requests_blocked: int
    requests_cached: int
    bytes_fetched: int
    rss_bytes: int  # the browser's process tree, summed VmRSS at the last check (0: none)
    cache_entries: int  # the per-site script and style cache
    cache_bytes: int


class Renderer(Protocol):
    async def render(self, job: RenderJob, fetch: SubresourceFetch) -> RenderResult:
        """Render `job` in a fresh browser context, fetching what it needs through `fetch`.

        A browser failure is a `FAILED` result, not an exception; safe to call concurrently
        (the caller bounds how many at once). Raises what `fetch` raises.
        """

    async def close(self) -> None:
        """Stop the browser and what drives it; idempotent. Renders after it raise."""

    def stats(self) -> RendererStats: ...

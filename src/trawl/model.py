"""Frozen values passed between the loop's stages.

Stages meet only through these types and the ports. Times are epoch seconds (`..._at`),
durations are seconds (`..._s`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import IntEnum


def first_header(headers: tuple[tuple[str, str], ...], name: str) -> str | None:
    """The first value of HTTP header `name` (case-insensitive), or None."""
    lname = name.lower()
    for key, value in headers:
        if key.lower() == lname:
            return value
    return None


class Line(IntEnum):
    """Lines of the frontier's front layer.

    FAST and SLOW hold discovery work (new URLs, by score); REFRESH holds known pages whose
    nextFetchAt has come. Fetch slots are shared between refresh and discovery by
    `recrawl.refresh_share`, and between fast and slow by `frontier.fast_share`.
    """

    FAST = 0
    SLOW = 1
    REFRESH = 2


class UrlKind(IntEnum):
    """What a queued URL is expected to be, which decides how its answer is handled."""

    PAGE = 0
    SITEMAP = 1


@dataclass(frozen=True, slots=True)
class CrawlUrl:
    """A normalised URL waiting in (or leased from) the frontier."""

    url: str
    url_hash: str
    site: str  # registered domain
    depth: int
    line: Line
    discovered_at: float
    kind: UrlKind = UrlKind.PAGE
    score: float = 0.0
    score_parts: str = ""  # JSON of the score's parts, kept on the frontier entry
    redirects: int = 0  # redirect hops that led here (0: found as a link, seed or due page)
    standing: int = 0  # frontier.scope.Standing, packed: its seed, hops, off-scope hops

    def __post_init__(self) -> None:
        if not self.url.startswith(("http://", "https://")):
            raise ValueError(f"CrawlUrl needs a normalised http(s) URL, got {self.url!r}")
        if len(self.url_hash) != 32:
            raise ValueError(f"urlHash must be 32 hex digits, got {self.url_hash!r}")
        if self.depth < 0:
            raise ValueError(f"depth must be >= 0, got {self.depth}")
        if self.redirects < 0:
            raise ValueError(f"redirects must be >= 0, got {self.redirects}")


@dataclass(frozen=True, slots=True)
class Lease:
    """A URL handed to a fetcher; it must be marked done before `expires_at`."""

    lease_id: int
    item: CrawlUrl
    expires_at: float


@dataclass(frozen=True, slots=True)
class FetchResult:
    """What one HTTP exchange produced. `body` is the decoded body, or None when not read."""

    url: str
    status: int  # 0 when no HTTP response arrived (see error_kind)
    headers: tuple[tuple[str, str], ...]
    body: bytes | None
    started_at: float
    elapsed_s: float
    ip: str | None = None
    truncated: bool = False  # body cut at the byte cap (WARC-Truncated: length)
    error_kind: str | None = None  # e.g. "timeout", "dns", "connect", "reset", "too_big"
    error: str | None = None
    raw_headers_block: bytes = b""  # HTTP status line + headers as received, for WARC
    # The request line and headers as sent (Host, User-Agent, conditional headers...), for
    # the WARC request record; b"" when no request went out.
    request_head: bytes = b""

    def header(self, name: str) -> str | None:
        return first_header(self.headers, name)

    @classmethod
    def failed(
        cls,
        url: str,
        started_at: float,
        ended_at: float,
        kind: str,
        message: str,
        *,
        ip: str | None = None,
        request_head: bytes = b"",
    ) -> FetchResult:
        """An exchange that got no HTTP answer (`kind`: "dns", "connect", "timeout"...)."""
        return cls(
            url=url,
            status=0,
            headers=(),
            body=None,
            started_at=started_at,
            elapsed_s=ended_at - started_at,
            ip=ip,
            error_kind=kind,
            error=message,
            request_head=request_head,
        )


@dataclass(frozen=True, slots=True)
class ParsedPage:
    """Links and robots directives extracted from one HTML page."""

    hrefs: tuple[str, ...]  # as written in the page; resolve against base_url
    base_url: str  # the page URL, or its <base href> resolved against it
    noindex: bool = False
    nofollow: bool = False
    canonical: str = ""  # the first <link rel="canonical"> href, as written
    links_dropped: int = 0  # distinct hrefs past the first `max_links` (parse.links)


@dataclass(slots=True)
class PageRecord:
    """The page record; field names follow the design (camelCase via `to_json`)."""

    url_hash: str
    url: str
    last_fetched_at: float
    http_status: int
    content_hash: str = ""
    simhash: str = ""
    etag: str = ""
    last_modified: str = ""
    change_rate: float = 0.0
    next_fetch_at: float = 0.0
    storage_key: str = ""
    site: str = ""
    depth: int = 0
    content_type: str = ""
    redirect_to: str = ""
    error: str = ""
    # Recrawl and duplicates (issue 5). `http_status` is the status of the content the record
    # describes; `last_status` is the latest answer (304 when a conditional GET revalidated).
    last_status: int = 0
    visits: list[list[float]] = field(default_factory=list)  # [interval_s, changed 0/1]
    importance: float = 1.0
    body_bytes: int = 0  # decoded body size of the stored content
    warc_record_id: str = ""  # WARC record (response or revisit) written for the last fetch
    duplicate_of: str = ""  # URL whose identical body this page shares (exact copy)
    near_duplicate_of: str = ""  # URL of the main copy this page nearly duplicates
    kind: UrlKind = UrlKind.PAGE
    # Issue 18: the last render of a page built by JavaScript (state, reason, renderedAt,
    # renderMs, linksGained, textGained, storageKey of its conversion record); empty when
    # the page was never rendered.
    render: dict[str, object] = field(default_factory=dict)
    extra: dict[str, str] = field(default_factory=dict)

    @property
    def rendered_key(self) -> str:
        """Storage key of the page's last rendered copy, "" if none is stored."""
        key = self.render.get("storageKey")
        return key if isinstance(key, str) else ""

    def to_json(self) -> dict[str, object]:
        out: dict[str, object] = {
            "urlHash": self.url_hash,
            "url": self.url,
            "lastFetchedAt": self.last_fetched_at,
            "httpStatus": self.http_status,
            "contentHash": self.content_hash,
            "simhash": self.simhash,
            "etag": self.etag,
            "lastModified": self.last_modified,
            "changeRate": self.change_rate,
            "nextFetchAt": self.next_fetch_at,
            "storageKey": self.storage_key,
            "site": self.site,
            "depth": self.depth,
            "contentType": self.content_type,
            "redirectTo": self.redirect_to,
            "error": self.error,
            "lastStatus": self.last_status,
            "visits": self.visits,
            "importance": self.importance,
            "bodyBytes": self.body_bytes,
            "warcRecordId": self.warc_record_id,
            "duplicateOf": self.duplicate_of,
            "nearDuplicateOf": self.near_duplicate_of,
            "kind": self.kind.name.lower(),
            "render": dict(self.render) or None,
        }
        out.update(self.extra)
        return out


PAGE_FETCHED = "page.fetched"
PAGE_RENDERED = "page.rendered"


@dataclass(frozen=True, slots=True)
class PageFetchedEvent:
    """A hand-off event; `offset` is assigned by the outbox.

    `page.fetched`: new content at a URL, its response record at `storage_key`.
    `page.rendered` (issue 18): a browser's DOM of a page built by JavaScript, new for that
    URL; `storage_key` names its conversion record (or, for a DOM identical to one stored
    before at another URL, that copy's record), `content_hash` is the DOM's, `fetched_at`
    the plain fetch it was rendered from, and `rendered_at` / `render_state` say when and
    how the render ended (`done`, or `timeout`: the DOM as it was at the page's cap).
    """

    url: str
    url_hash: str
    storage_key: str
    content_hash: str
    http_status: int
    fetched_at: float
    offset: int = -1
    kind: str = PAGE_FETCHED
    rendered_at: float = 0.0
    render_state: str = ""

    def to_json(self) -> dict[str, object]:
        out: dict[str, object] = {
            "offset": self.offset,
            "type": self.kind,
            "url": self.url,
            "urlHash": self.url_hash,
            "storageKey": self.storage_key,
            "contentHash": self.content_hash,
            "httpStatus": self.http_status,
            "fetchedAt": self.fetched_at,
        }
        if self.kind == PAGE_RENDERED:
            out["renderedAt"] = self.rendered_at
            out["renderState"] = self.render_state
        return out

"""The CPU-heavy part of handling one fetched page, as one pure function.

`process_page` hashes, WARC-encodes (gzip) and parses a body and normalises its links. It
runs in a worker process (see loop/crawler.py) so the event loop that holds thousands of
connections never stalls on it; everything it takes and returns is picklable.
"""

from __future__ import annotations

import functools
import hashlib
from typing import TYPE_CHECKING, Any, NamedTuple

from trawl.errors import InvalidUrl
from trawl.parse.fingerprint import MIN_PROSE_TOKENS, MainText, main_text, shape_of_tree
from trawl.parse.links import decode_html, links_of_tree, parse_decoded, parse_html
from trawl.parse.meta_robots import parse_x_robots_tag
from trawl.parse.render_need import RenderReason, render_reason, visible_text_chars
from trawl.parse.sitemap import SitemapKind, parse_sitemap
from trawl.store.capture import encode_exchange
from trawl.store.warc_record import EncodedRecord, warc_level
from trawl.urls.link_memo import LinkMemo
from trawl.urls.normalise import DEFAULT_RULES, NormaliseRules, normalise_url, url_hash
from trawl.urls.registered_domain import site_of_normalised

if TYPE_CHECKING:
    from selectolax.lexbor import LexborHTMLParser

_rules: NormaliseRules = DEFAULT_RULES


def init_worker(rules: NormaliseRules) -> None:
    """Process-pool initializer: the normalisation rules, sent once per worker."""
    global _rules
    _rules = rules


# NamedTuples, not dataclasses: these cross the process boundary for every page, and
# pickling a slotted dataclass calls dataclasses.fields() per object (measured: ~6 % of the
# crawl's CPU with 50 links a page).
class PageInput(NamedTuple):
    url: str
    fetched_at: float
    ip: str | None
    http_head: bytes
    body: bytes
    truncated: bool
    x_robots_tag: tuple[str, ...]
    agent_token: str
    store_body: bool
    warc_level: int = -1  # -1: the encoder's measured default
    # The content hash of the page's stored copy (on a refetch): an unchanged body is not
    # WARC-encoded again, since it will be written as a revisit record.
    known_content_hash: str = ""
    request_head: bytes = b""  # the request as sent, for the WARC request record
    max_links: int = 0  # hrefs kept from the page (parse.links); 0: all
    # The main-text window (bytes from <body>) that held the prose of the site's last page,
    # 0 when none is known: this page's first try (parse.fingerprint.main_text). The crawl
    # loop keeps it with the site, so a site's pages share it whichever worker gets them.
    window_hint: int = 0


class FoundLink(NamedTuple):
    url: str
    url_hash: str
    site: str


# FoundLink from a plain tuple in C: `FoundLink._make` is a Python call a link (~0.3 µs; a
# page's 48 links took 23 against 10 µs), run on the crawl process as results arrive.
_found_link = functools.partial(tuple.__new__, FoundLink)


class PageOutput(NamedTuple):
    content_hash: str
    warc_record: EncodedRecord | None  # the gzip member to append, None when not stored
    links: tuple[FoundLink, ...]
    noindex: bool
    nofollow: bool
    bad_links: int  # hrefs that could not be normalised (mailto:, javascript:, junk)
    # 64-bit simhash of the main text, boilerplate removed (parse.fingerprint): near-copies,
    # the record's `simhash`, and the trap alarm's similarity window.
    simhash: int
    text_tokens: int  # prose tokens the simhash saw; too few and it is not matched
    canonical: str  # normalised <link rel="canonical"> target, "" when absent or invalid
    # What the trap alarm's similarity window compares (frontier.traps, frontier.containment):
    # `simhash` for a page with prose, else the shape of its visible text (a calendar month,
    # a facet page: parse.fingerprint.shape_of_tree), which thin pages' simhashes miss.
    trap_fingerprint: int = 0
    # The request record concurrent with `warc_record` (None when that is None or no
    # request head was kept).
    request_record: EncodedRecord | None = None
    # Why the page looks built by JavaScript (parse.render_need), None for a page that
    # shows its content without scripts: nearly every page.
    render_reason: RenderReason | None = None
    links_dropped: int = 0  # distinct hrefs past PageInput.max_links, not followed
    window_hint: int = 0  # the window that held this page's prose: the next page's first try

    def __reduce__(self) -> tuple[object, tuple[object, ...]]:
        # The links cross as plain tuples: a FoundLink pickles with a Python call each way
        # (__getnewargs__, __new__), 63 + 27 µs for a page's 40 links, plain tuples in C
        # (issue 17). `_page_output` makes them FoundLinks again.
        return (_page_output, (*self[:2], tuple(map(tuple, self.links)), *self[3:]))


def _page_output(*fields: Any) -> PageOutput:
    links = tuple(map(_found_link, fields[2]))
    return PageOutput._make((*fields[:2], links, *fields[3:]))


def content_hash(body: bytes) -> str:
    """Exact-content fingerprint: first 32 hex digits of SHA-256 of the body."""
    return body_sha256(body)[:_CONTENT_HASH_DIGITS]


def body_sha256(body: bytes) -> str:
    """The body's sha256 (hex): a page's content hash and its WARC payload digest, taken
    once for both."""
    return hashlib.sha256(body).hexdigest()


_CONTENT_HASH_DIGITS = 32


def process_page(page: PageInput) -> PageOutput:
    decoded = decode_html(page.body)  # once, for the links and the main text
    tree = parse_decoded(decoded)
    parsed = links_of_tree(
        tree, page.url, agent_token=page.agent_token, max_links=page.max_links or None
    )
    header = parse_x_robots_tag(page.x_robots_tag, page.agent_token)
    noindex = parsed.noindex or header.noindex
    nofollow = parsed.nofollow or header.nofollow
    record = request = None
    sha256 = body_sha256(page.body)
    digest = sha256[:_CONTENT_HASH_DIGITS]
    if page.store_body and not noindex and digest != page.known_content_hash:
        record, request = _encode_capture(page, sha256)
    links, bad = ((), 0) if nofollow else normalise_links(parsed.hrefs, parsed.base_url)
    simhash, tokens, window_hint = _main_text(page.body, decoded, page.window_hint)
    needs_render = render_reason(tree, tokens)  # before shape_of_tree strips the tree
    return PageOutput(
        digest,
        record,
        links,
        noindex,
        nofollow,
        bad,
        simhash,
        tokens,
        _canonical(parsed.canonical, parsed.base_url),
        # Last: shape_of_tree strips page chrome from the tree.
        simhash if tokens >= MIN_PROSE_TOKENS else shape_of_tree(tree),
        request,
        needs_render,
        0 if nofollow else parsed.links_dropped,
        window_hint,
    )


def _main_text(body: bytes, decoded: str | bytes, first_try: int) -> MainText:
    """`main_text` with a first try where the site's last page held its prose: pages of
    one site share a template (the answer is the same either way; only the cost differs).
    A stage of its own for the probes (bench.profile_crawl, bench.worker_stages)."""
    return main_text(body, decoded, first_try=first_try)


def _encode_capture(page: PageInput, sha256: str) -> tuple[EncodedRecord, EncodedRecord | None]:
    """The response record and the request record that name each other (store/capture.py)."""
    return encode_exchange(
        url=page.url,
        fetched_at=page.fetched_at,
        ip=page.ip,
        http_head=page.http_head,
        payload=page.body,
        truncated=page.truncated,
        request_head=page.request_head,
        level=warc_level(page.warc_level),
        payload_sha256=sha256,
    )


def _canonical(href: str, base_url: str) -> str:
    if not href:
        return ""
    try:
        return normalise_url(href, base_url, _rules)
    except InvalidUrl:
        return ""


def normalise_links(hrefs: tuple[str, ...], base_url: str) -> tuple[tuple[FoundLink, ...], int]:
    """Normalise hrefs against the base; duplicates within the page are folded.

    Answers come from this worker's memo when an href was seen before (~10x cheaper),
    while its hits pay for its misses (urls.link_memo)."""
    global _link_memo
    if _link_memo.rules is not _rules:  # init_worker changed them: old answers may differ
        _link_memo = LinkMemo(FoundLink, _rules)
    links, bad = _link_memo.links(hrefs, base_url)
    return tuple(links), bad


# One per worker process, written and read by normalise_links only; bounded (see LinkMemo).
_link_memo: LinkMemo[FoundLink] = LinkMemo(FoundLink, _rules)


def process_pages(pages: list[PageInput]) -> list[PageOutput | BaseException]:
    """`process_page` for a batch (see cpu_batches); a page's failure is returned in its
    place, to be raised in the task that waits for that page."""
    out: list[PageOutput | BaseException] = []
    for page in pages:
        try:
            out.append(process_page(page))
        except Exception as exc:
            out.append(exc)
    return out


class RenderedOutput(NamedTuple):
    """What a browser's DOM of a page holds, against the plain fetch of it (issue 18)."""

    links: tuple[FoundLink, ...]  # every link of the rendered DOM, normalised
    bad_links: int
    links_gained: int  # of `links`, those the plain page did not have
    content_hash: str  # of the DOM's bytes, as PageOutput.content_hash
    noindex: bool  # the DOM's own meta robots (a script may add it): not to be stored
    simhash: int  # of the rendered main text, as PageOutput.simhash
    text_tokens: int
    text_chars: int  # visible text of the rendered DOM (parse.render_need's count)
    plain_text_chars: int  # and of the plain page
    links_dropped: int = 0  # distinct hrefs of the DOM past `max_links`, not followed


_MAX_COUNTED_CHARS = 1 << 20


def process_rendered(
    url: str, rendered: bytes, plain: bytes, agent_token: str, max_links: int = 0
) -> RenderedOutput:
    """Links, main text and text gained of a rendered DOM (UTF-8), given the plain page's
    bytes: what rendering added is what the render policy learns from. The DOM's own meta
    robots count (a script may add noindex or nofollow): nofollow leaves its links out,
    noindex its copy unstored. `max_links` caps each page's hrefs as `process_page` does."""
    cap = max_links or None
    tree = parse_html(rendered)
    parsed = links_of_tree(tree, url, agent_token=agent_token, max_links=cap)
    links, bad = ((), 0) if parsed.nofollow else normalise_links(parsed.hrefs, parsed.base_url)
    plain_tree = parse_html(plain)
    plain_parsed = links_of_tree(plain_tree, url, agent_token=agent_token, max_links=cap)
    plain_links, _ = normalise_links(plain_parsed.hrefs, plain_parsed.base_url)
    known = {link.url_hash for link in plain_links}
    simhash, tokens, _ = main_text(rendered)
    return RenderedOutput(
        links,
        bad,
        sum(link.url_hash not in known for link in links),
        content_hash(rendered),
        parsed.noindex,
        simhash,
        tokens,
        _text_chars(tree),
        _text_chars(plain_tree),
        0 if parsed.nofollow else parsed.links_dropped,
    )


def _text_chars(tree: LexborHTMLParser) -> int:
    body = tree.body
    return 0 if body is None else visible_text_chars(body, _MAX_COUNTED_CHARS)


class SitemapLink(NamedTuple):
    url: str
    url_hash: str
    site: str
    lastmod_at: float | None


class SitemapOutput(NamedTuple):
    content_hash: str
    is_index: bool
    links: tuple[SitemapLink, ...]  # normalised; children of an index, or pages
    skipped: int  # entries dropped by the parser or the normaliser
    truncated: bool
    error: str


def process_sitemap(body: bytes, max_urls: int, max_bytes: int) -> SitemapOutput:
    """Parse a sitemap (XML, gzipped or plain text) and normalise its entries.

    Runs in a worker process: a 50,000-URL sitemap costs ~half a second of normalising.
    Whether an entry belongs to the sitemap's site is the caller's check.
    """
    parsed = parse_sitemap(body, max_urls=max_urls, max_bytes=max_bytes)
    links: list[SitemapLink] = []
    skipped = parsed.skipped
    for entry in parsed.entries:
        try:
            url = normalise_url(entry.loc, None, _rules)
            site = site_of_normalised(url)
        except (InvalidUrl, ValueError):
            skipped += 1
            continue
        links.append(SitemapLink(url, url_hash(url), site, entry.lastmod_at))
    return SitemapOutput(
        content_hash(body),
        parsed.kind is SitemapKind.INDEX,
        tuple(links),
        skipped,
        parsed.truncated,
        parsed.error,
    )

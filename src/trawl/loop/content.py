"""Step 3 for a fetched body: store it once, or point at the copy already stored.

A body whose content hash is already in the fingerprint index — the same page unchanged,
or the same page at another URL — is written as a WARC revisit record (WARC-Refers-To the
first copy) and its page record points at that copy's storageKey; an exact copy at another
URL also names it (`duplicateOf`). A new body is stored as a response record and becomes
the main copy. Near-copies (simhash of the main text within a few bits of a stored main
copy) are stored — the text differs — but name their main copy (`nearDuplicateOf`); both
kinds count against their site's recrawl rate (politeness.site_state.recrawl_slowdown).
The main copy is the first one stored, unless a later copy is named canonical by it or
sits closer to the seeds (store.main_copy): that one is more likely the original source.

page.fetched goes out for new content only: a new URL, or a page whose content changed.
An unchanged refetch has nothing new for a consumer. A browser's DOM of a page built by
JavaScript (issue 18) goes through the same exact and near checks, as a conversion record,
and goes out as page.rendered.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, NamedTuple

from trawl.model import PAGE_RENDERED, PageFetchedEvent, PageRecord
from trawl.parse.fingerprint import format_simhash
from trawl.store.capture import encode_answer, request_record_of
from trawl.store.fingerprints import Original
from trawl.store.main_copy import PageCopy, takes_over
from trawl.store.warc_record import (
    encode_conversion_record,
    encode_revisit_record,
    new_record_id,
    rewrite_head_for_decoded,
    warc_level,
)

if TYPE_CHECKING:
    from trawl.loop.context import CrawlContext
    from trawl.model import CrawlUrl, FetchResult
    from trawl.parse.page_work import PageOutput, RenderedOutput
    from trawl.render.ports import RenderItem


class StoredContent:
    def __init__(self, ctx: CrawlContext) -> None:
        self.ctx = ctx
        self._level = warc_level(ctx.policy.store.warc_compress_level)

    def archive_answer(self, url: str, result: FetchResult) -> str:
        """Write an answer kept for replay only (robots.txt, a redirect, a final 4xx/5xx) and
        its request to the WARC; not content: no storage key, no event. Its record id."""
        response, request = encode_answer(url, result, self._level)
        self.ctx.warc.append(response, request)
        return response.record_id

    def store(
        self,
        item: CrawlUrl,
        result: FetchResult,
        record: PageRecord,
        out: PageOutput,
        previous: PageRecord | None,
    ) -> PageFetchedEvent | None:
        """Fill `record` from the worker's output and write what must be written."""
        assert result.body is not None
        record.content_hash = out.content_hash
        record.simhash = format_simhash(out.simhash)
        record.body_bytes = len(result.body)
        record.extra.update(_flags(out))
        if out.canonical and out.canonical != item.url:
            record.extra["canonical"] = out.canonical
        if out.noindex:
            return None  # fetched and parsed for links, never stored
        ctx = self.ctx
        original = ctx.fingerprints.original_of(out.content_hash)
        if original is None:
            return self._store_new(item, result, record, out)
        self._write_revisit(item, result, record, out, original)
        if original.url_hash != item.url_hash:
            record.duplicate_of = original.url
            ctx.stats.duplicates += 1
            ctx.sites.state(item.site).note_content(is_copy=True)
            return page_event(record)
        if previous is not None and previous.content_hash == out.content_hash:
            record.near_duplicate_of = previous.near_duplicate_of  # unchanged: still a copy
            return None
        return page_event(record)

    def _store_new(
        self,
        item: CrawlUrl,
        result: FetchResult,
        record: PageRecord,
        out: PageOutput,
    ) -> PageFetchedEvent:
        ctx = self.ctx
        encoded, request = out.warc_record, out.request_record
        if encoded is None:
            # The worker skipped encoding because the body matched the previous fetch's,
            # but no copy of it is stored (that version was noindex): encode it here.
            encoded, request = encode_answer(item.url, result, self._level)
        record.storage_key = ctx.warc.append(encoded, request)
        record.warc_record_id = encoded.record_id
        ctx.stats.pages_stored += 1
        ctx.fingerprints.add_original(
            out.content_hash,
            Original(
                item.url_hash,
                item.url,
                record.storage_key,
                encoded.record_id,
                result.started_at,
                encoded.payload_digest,
            ),
        )
        near = self._match_near_copy(
            item.url_hash, item.site, PageCopy(item.url, item.depth, out.canonical),
            out.simhash, out.text_tokens,
        )  # fmt: skip
        if near:
            record.near_duplicate_of = near
        return page_event(record)

    def store_rendered(
        self, item: RenderItem, record: PageRecord, html: bytes, out: RenderedOutput,
        render_state: str, refers_to_id: str,
    ) -> RenderedCopy:  # fmt: skip
        """A browser's DOM of a page (issue 18), through the checks a fetched body goes
        through. A DOM stored before — this page's last render unchanged, or another page's
        — is not stored again but named (`duplicateOf` for another page's); a new one is a
        conversion record referring to the capture rendered, and its main text is matched
        against the near-copy index like any page's. A DOM whose own meta robots say noindex
        is not stored. page.rendered goes out for a DOM new at this URL."""
        ctx = self.ctx
        if out.noindex:
            return RenderedCopy("", "", None)
        now = ctx.clock.now()
        original = ctx.fingerprints.original_of(out.content_hash)
        if original is not None and original.url_hash == item.url_hash:
            return RenderedCopy(original.storage_key, "", None)  # as last rendered
        duplicate_of = ""
        if original is not None:
            key, duplicate_of = original.storage_key, original.url
            ctx.sites.state(item.site).note_content(is_copy=True)
        else:
            conversion = encode_conversion_record(
                url=item.url, rendered_at=now, html=html,
                refers_to_id=refers_to_id, level=self._level,
            )  # fmt: skip
            key = ctx.warc.append(conversion)
            ctx.fingerprints.add_original(
                out.content_hash,
                Original(item.url_hash, item.url, key, conversion.record_id, now,
                         conversion.payload_digest),
            )  # fmt: skip
            canonical = record.extra.get("canonical", "")
            near = self._match_near_copy(
                item.url_hash, item.site, PageCopy(item.url, item.depth, canonical),
                out.simhash, out.text_tokens,
            )  # fmt: skip
            if near is not None:
                record.near_duplicate_of = near  # the page's text is its rendered text
        event = PageFetchedEvent(
            url=item.url, url_hash=item.url_hash, storage_key=key,
            content_hash=out.content_hash, http_status=record.http_status,
            fetched_at=record.last_fetched_at, kind=PAGE_RENDERED, rendered_at=now,
            render_state=render_state,
        )  # fmt: skip
        return RenderedCopy(key, duplicate_of, event)

    def _write_revisit(
        self,
        item: CrawlUrl,
        result: FetchResult,
        record: PageRecord,
        out: PageOutput,
        original: Original,
    ) -> None:
        assert result.body is not None
        level = self._level
        request_id = new_record_id() if result.request_head else ""
        revisit = encode_revisit_record(
            url=item.url,
            fetched_at=result.started_at,
            ip=result.ip,
            http_head=rewrite_head_for_decoded(result.raw_headers_block, len(result.body)),
            payload_digest=original.payload_digest,
            refers_to_id=original.record_id,
            refers_to_url=original.url,
            refers_to_at=original.fetched_at,
            level=level,
            concurrent_to=request_id,
        )
        request = request_record_of(item.url, result, revisit.record_id, level, request_id or None)
        self.ctx.warc.append(revisit, request)
        self.ctx.stats.revisits += 1
        record.storage_key = original.storage_key
        record.warc_record_id = revisit.record_id

    def _match_near_copy(
        self, url_hash: str, site: str, page: PageCopy, simhash: int, text_tokens: int
    ) -> str | None:
        """Index the page as a main copy and return "", or return the URL of the main copy
        it nearly duplicates; None when its text is too short to tell."""
        ctx = self.ctx
        d = ctx.policy.store
        if not simhash or text_tokens < d.near_min_tokens:
            return None
        match = ctx.fingerprints.near_copy_of(
            simhash, max_distance=d.near_max_distance, exclude_url_hash=url_hash
        )
        state = ctx.sites.state(site)
        if match is None:
            ctx.fingerprints.put_simhash(url_hash, page.url, site, simhash)
            state.note_content(is_copy=False)
            return ""
        main = ctx.records.get_page(match.url_hash)
        if main is not None and takes_over(
            page, PageCopy(main.url, main.depth, main.extra.get("canonical", ""))
        ):
            ctx.fingerprints.drop_simhash(match.url_hash)
            ctx.fingerprints.put_simhash(url_hash, page.url, site, simhash)
            for moved in ctx.fingerprints.move_near_copies(match.url_hash, url_hash):
                ctx.records.set_near_duplicate_of(moved, page.url)
            ctx.stats.near_duplicates += 1
            state.note_content(is_copy=False)
            return ""
        ctx.fingerprints.note_near_copy(url_hash, match.url_hash)
        ctx.fingerprints.drop_simhash(url_hash)
        ctx.stats.near_duplicates += 1
        state.note_content(is_copy=True)
        return match.url


class RenderedCopy(NamedTuple):
    """Where a render's DOM is, and what it is a copy of."""

    storage_key: str  # "" when the DOM was not stored (noindex)
    duplicate_of: str  # URL of the page whose identical DOM (or body) was stored first
    event: PageFetchedEvent | None  # page.rendered, for a DOM new at this URL


def page_event(record: PageRecord) -> PageFetchedEvent:
    return PageFetchedEvent(
        url=record.url,
        url_hash=record.url_hash,
        storage_key=record.storage_key,
        content_hash=record.content_hash,
        http_status=record.http_status,
        fetched_at=record.last_fetched_at,
    )


def _flags(out: PageOutput) -> dict[str, str]:
    flags = {}
    if out.noindex:
        flags["noindex"] = "true"
    if out.nofollow:
        flags["nofollow"] = "true"
    return flags

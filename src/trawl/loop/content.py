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
An unchanged refetch has nothing new for a consumer.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from trawl.model import PageFetchedEvent, PageRecord
from trawl.parse.fingerprint import format_simhash
from trawl.store.capture import encode_answer, request_record_of
from trawl.store.fingerprints_sqlite import Original
from trawl.store.main_copy import PageCopy, takes_over
from trawl.store.warc_record import (
    encode_revisit_record,
    new_record_id,
    rewrite_head_for_decoded,
    warc_level,
)

if TYPE_CHECKING:
    from trawl.loop.context import CrawlContext
    from trawl.model import CrawlUrl, FetchResult
    from trawl.parse.page_work import PageOutput


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
        self._match_near_copy(item, record, out)
        return page_event(record)

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

    def _match_near_copy(self, item: CrawlUrl, record: PageRecord, out: PageOutput) -> None:
        """Name the main copy this page nearly duplicates, or index it as a main copy."""
        ctx = self.ctx
        d = ctx.policy.store
        if not out.simhash or out.text_tokens < d.near_min_tokens:
            return
        match = ctx.fingerprints.near_copy_of(
            out.simhash, max_distance=d.near_max_distance, exclude_url_hash=item.url_hash
        )
        state = ctx.sites.state(item.site)
        if match is None:
            ctx.fingerprints.put_simhash(item.url_hash, item.url, item.site, out.simhash)
            state.note_content(is_copy=False)
            return
        main = ctx.records.get_page(match.url_hash)
        if main is not None and takes_over(
            PageCopy(item.url, item.depth, out.canonical),
            PageCopy(main.url, main.depth, main.extra.get("canonical", "")),
        ):
            ctx.fingerprints.drop_simhash(match.url_hash)
            ctx.fingerprints.put_simhash(item.url_hash, item.url, item.site, out.simhash)
            for url_hash in ctx.fingerprints.move_near_copies(match.url_hash, item.url_hash):
                ctx.records.set_near_duplicate_of(url_hash, item.url)
            ctx.stats.near_duplicates += 1
            state.note_content(is_copy=False)
            return
        record.near_duplicate_of = match.url
        ctx.fingerprints.note_near_copy(item.url_hash, match.url_hash)
        ctx.fingerprints.drop_simhash(item.url_hash)
        ctx.stats.near_duplicates += 1
        state.note_content(is_copy=True)


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

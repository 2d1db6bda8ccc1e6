"""The WARC records of one HTTP exchange: the response as received and the request as sent.

Web archives keep both halves of a capture (WARC/1.1 §6.4, §6.5): the request record holds
the head the crawler sent (method, target, Host, User-Agent, Accept, Accept-Encoding,
conditional headers), and the two name each other with WARC-Concurrent-To (§5.7). The
request record id is drawn first so the response can name it too.

Pages' response records are built in the worker process (page_work.py); this module builds
the records written from the event loop: the request half of a page or revisit, and whole
captures of answers trawl keeps for replay only (robots.txt, redirects, 404s and other
final errors), which are small.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from trawl.store.warc_record import (
    EncodedRecord,
    encode_request_record,
    encode_response_record,
    new_record_id,
    rewrite_head_for_decoded,
)

if TYPE_CHECKING:
    from trawl.model import FetchResult


def request_record_of(
    url: str, result: FetchResult, concurrent_to: str, level: int, record_id: str | None = None
) -> EncodedRecord | None:
    """The request record of `result`'s exchange, or None when no request head was kept."""
    if not result.request_head:
        return None
    return encode_request_record(
        url=url,
        fetched_at=result.started_at,
        ip=result.ip,
        request_head=result.request_head,
        concurrent_to=concurrent_to,
        record_id=record_id,
        level=level,
    )


def encode_answer(
    url: str, result: FetchResult, level: int
) -> tuple[EncodedRecord, EncodedRecord | None]:
    """The response record of an answer kept for replay (robots.txt, a redirect, a 404) and
    its request record. A body the fetcher did not read (not a stored type) is stored empty
    and marked `WARC-Truncated: length`, so the record never claims a body it lacks."""
    body = result.body if result.body is not None else b""
    request_id = new_record_id() if result.request_head else ""
    response = encode_response_record(
        url=url,
        fetched_at=result.started_at,
        ip=result.ip,
        http_head=rewrite_head_for_decoded(result.raw_headers_block, len(body)),
        payload=body,
        truncated=result.truncated or result.body is None,
        level=level,
        concurrent_to=request_id,
    )
    request = request_record_of(url, result, response.record_id, level, request_id or None)
    return response, request

"""The WARC records of one HTTP exchange: the response as received and the request as sent.

Web archives keep both halves of a capture (WARC/1.1 §6.4, §6.5): the request record holds
the head the crawler sent (method, target, Host, User-Agent, Accept, Accept-Encoding,
conditional headers), and the two name each other with WARC-Concurrent-To (§5.7). The
request record id is drawn first so the response can name it too.

Pages' records are built here in the worker process (page_work.py, `encode_exchange`); the
event loop builds the request half of a revisit and whole captures of answers trawl keeps
for replay only (robots.txt, redirects, 404s and other final errors), which are small.
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


def encode_exchange(
    *,
    url: str,
    fetched_at: float,
    ip: str | None,
    http_head: bytes,
    payload: bytes,
    truncated: bool,
    request_head: bytes,
    level: int,
    payload_sha256: str = "",
) -> tuple[EncodedRecord, EncodedRecord | None]:
    """The response record of one exchange and its request record (None without a request
    head), naming each other; `http_head` as received, rewritten for the decoded payload.
    `payload_sha256`: the payload's sha256 (hex) when the caller has it already."""
    request_id = new_record_id() if request_head else ""
    response = encode_response_record(
        url=url,
        fetched_at=fetched_at,
        ip=ip,
        http_head=rewrite_head_for_decoded(http_head, len(payload)),
        payload=payload,
        truncated=truncated,
        level=level,
        concurrent_to=request_id,
        payload_sha256=payload_sha256,
    )
    request = _request_record(
        url, fetched_at, ip, request_head, response.record_id, request_id or None, level
    )
    return response, request


def request_record_of(
    url: str, result: FetchResult, concurrent_to: str, level: int, record_id: str | None = None
) -> EncodedRecord | None:
    """The request record of `result`'s exchange, or None when no request head was kept."""
    return _request_record(
        url, result.started_at, result.ip, result.request_head, concurrent_to, record_id, level
    )


def encode_answer(
    url: str, result: FetchResult, level: int
) -> tuple[EncodedRecord, EncodedRecord | None]:
    """The response record of an answer kept for replay (robots.txt, a redirect, a 404) and
    its request record. A body the fetcher did not read (not a stored type) is stored empty
    and marked `WARC-Truncated: length`, so the record never claims a body it lacks."""
    return encode_exchange(
        url=url,
        fetched_at=result.started_at,
        ip=result.ip,
        http_head=result.raw_headers_block,
        payload=result.body if result.body is not None else b"",
        truncated=result.truncated or result.body is None,
        request_head=result.request_head,
        level=level,
    )


def _request_record(
    url: str,
    fetched_at: float,
    ip: str | None,
    request_head: bytes,
    concurrent_to: str,
    record_id: str | None,
    level: int,
) -> EncodedRecord | None:
    if not request_head:
        return None
    return encode_request_record(
        url=url,
        fetched_at=fetched_at,
        ip=ip,
        request_head=request_head,
        concurrent_to=concurrent_to,
        record_id=record_id,
        level=level,
    )

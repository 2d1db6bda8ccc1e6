"""Pure WARC record encoding: bytes in, bytes out, digests checked by recomputing them."""

from __future__ import annotations

import gzip
import hashlib
import io
import struct
import uuid
from datetime import UTC, datetime

import pytest
from hypothesis import given
from hypothesis import strategies as st
from warcio.archiveiterator import ArchiveIterator

from trawl.errors import DataError
from trawl.store.warc_record import (
    Codec,
    encode_request_record,
    encode_response_record,
    encode_warcinfo_record,
    gunzip_member,
    gzip_member,
    member_length_from_head,
    new_record_id,
    parse_http_head,
    parse_record,
    parse_response,
    rewrite_head_for_decoded,
    sha256_digest,
    warc_date,
)

HEAD = b"HTTP/1.1 200 OK\r\nContent-Type: text/html; charset=utf-8\r\nContent-Length: 26\r\n\r\n"
BODY = b"<html><p>hello</p></html>\n"


def encode(**overrides: object):
    args: dict[str, object] = {
        "url": "https://example.test/a?b=1",
        "fetched_at": 1_796_000_000.25,
        "ip": "127.0.0.9",
        "http_head": HEAD,
        "payload": BODY,
        "truncated": False,
    }
    args.update(overrides)
    return encode_response_record(**args)  # type: ignore[arg-type]


def hexsha256(data: bytes) -> str:
    return "sha256:" + hashlib.sha256(data).hexdigest()


def test_record_is_one_gzip_member_with_the_required_headers():
    rec = encode()
    raw = gzip.decompress(rec.data)
    headers, block = parse_record(raw)
    assert raw.startswith(b"WARC/1.1\r\n")
    assert headers["WARC-Type"] == "response"
    assert headers["WARC-Record-ID"] == rec.record_id
    assert rec.record_id.startswith("<urn:uuid:")
    assert rec.record_id.endswith(">")
    assert headers["WARC-Date"] == "2026-11-30T00:53:20Z"
    assert headers["WARC-Target-URI"] == "https://example.test/a?b=1"
    assert headers["WARC-IP-Address"] == "127.0.0.9"
    assert headers["Content-Type"] == "application/http; msgtype=response"
    assert headers["Content-Length"] == str(len(HEAD) + len(BODY))
    assert "WARC-Truncated" not in headers
    assert block == HEAD + BODY


def test_digests_are_sha256_hex_of_block_and_payload():
    rec = encode()
    headers, _ = parse_record(gunzip_member(rec.data))
    assert headers["WARC-Block-Digest"] == hexsha256(HEAD + BODY)
    assert headers["WARC-Payload-Digest"] == hexsha256(BODY) == rec.payload_digest
    assert sha256_digest(HEAD, BODY) == hexsha256(HEAD + BODY)


def test_a_payload_sha256_the_caller_has_is_the_payload_digest():
    """page_work hashes a body once, for its content hash and this digest; the block digest
    is still computed here. A wrong one given would be written (it is the caller's word), so
    this only checks it is used, and that the record still verifies when it is right."""
    given = hashlib.sha256(BODY).hexdigest()
    rec = encode(payload_sha256=given)
    assert rec.payload_digest == f"sha256:{given}"
    records = list(ArchiveIterator(io.BytesIO(rec.data), check_digests="raise"))
    assert [r.rec_type for r in records] == ["response"]
    trusted = encode(payload_sha256="ab" * 32)
    assert trusted.payload_digest == "sha256:" + "ab" * 32


def test_truncated_body_is_marked_and_ip_is_optional():
    rec = encode(truncated=True, ip=None)
    body = parse_response(gunzip_member(rec.data))
    assert body.truncated
    assert body.warc_headers["WARC-Truncated"] == "length"
    assert "WARC-IP-Address" not in body.warc_headers


def test_parse_response_gives_status_headers_and_payload():
    body = parse_response(gunzip_member(encode(record_id="<urn:uuid:x>").data))
    assert body.http_status == 200
    assert body.http_headers == (
        ("Content-Type", "text/html; charset=utf-8"),
        ("Content-Length", "26"),
    )
    assert body.header("content-type") == "text/html; charset=utf-8"
    assert body.payload == BODY
    assert body.target_uri == "https://example.test/a?b=1"
    assert body.record_id == "<urn:uuid:x>"


def test_empty_payload_and_binary_payload_round_trip():
    for payload in (b"", bytes(range(256)) * 3 + b"\r\n\r\n"):
        body = parse_response(gunzip_member(encode(payload=payload).data))
        assert body.payload == payload


@pytest.mark.parametrize(("codec", "level"), [(Codec.ISAL, 0), (Codec.ISAL, 3), (Codec.ZLIB, 9)])
def test_every_codec_writes_standard_gzip(codec: Codec, level: int):
    payload = b"<p>some text</p>" * 500
    rec = encode(payload=payload, codec=codec, level=level)
    assert parse_response(gzip.decompress(rec.data)).payload == payload


def test_gzip_member_carries_sl_length_field():
    raw = b"WARC/1.1\r\n" + b"x" * 1000
    member = gzip_member(raw)
    assert member[:4] == b"\x1f\x8b\x08\x04"  # FEXTRA set
    assert member[12:14] == b"sl"
    assert member_length_from_head(member) == len(member)
    assert struct.unpack_from("<I", member, 20)[0] == len(raw)
    assert gunzip_member(member) == raw


def test_member_length_is_none_for_plain_gzip():
    assert member_length_from_head(gzip.compress(b"x" * 100, mtime=0)) is None
    assert member_length_from_head(b"\x1f\x8b") is None


def test_gunzip_member_rejects_damage():
    member = encode().data
    with pytest.raises(DataError, match="cut short"):
        gunzip_member(member[:-9])
    with pytest.raises(DataError, match="stray bytes"):
        gunzip_member(member + b"junk")
    damaged = member[:-8] + bytes(8)  # wrong CRC and length
    with pytest.raises(DataError, match="damaged"):
        gunzip_member(damaged)


def test_parse_record_rejects_wrong_length():
    raw = gunzip_member(encode().data)
    with pytest.raises(DataError, match="Content-Length"):
        parse_record(raw[:-5] + b"\r\n\r\n")
    with pytest.raises(DataError, match="not a WARC record"):
        parse_record(b"HTTP/1.1 200 OK\r\n\r\n")


def test_parse_response_rejects_warcinfo():
    info = encode_warcinfo_record(filename="f.warc.gz", created_at=0.0, software="trawl/9")
    raw = gunzip_member(info.data)
    headers, block = parse_record(raw)
    assert headers["WARC-Type"] == "warcinfo"
    assert b"software: trawl/9\r\n" in block
    assert b"format: WARC File Format 1.1\r\n" in block
    assert headers["WARC-Block-Digest"] == hexsha256(block)
    with pytest.raises(DataError, match="expected a response"):
        parse_response(raw)


def test_bad_head_or_url_is_a_caller_bug():
    with pytest.raises(ValueError, match="CRLF CRLF"):
        encode(http_head=b"HTTP/1.1 200 OK\r\n")
    with pytest.raises(ValueError, match="line break"):
        encode(url="https://example.test/\r\nWARC-Type: x")


def test_warc_date_is_utc_whole_seconds():
    assert warc_date(0.999) == "1970-01-01T00:00:00Z"
    assert warc_date(1_796_000_000) == "2026-11-30T00:53:20Z"


@given(st.floats(min_value=0, max_value=253_402_300_799.0))  # up to 9999-12-31T23:59:59
def test_warc_date_is_the_datetime_iso_form(at: float):
    expected = datetime.fromtimestamp(int(at), UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    assert warc_date(at) == expected


@given(st.lists(st.binary(max_size=300), max_size=3))
def test_sha256_digest_is_the_stdlib_hex_of_sha256(parts: list[bytes]):
    expected = hashlib.sha256(b"".join(parts)).hexdigest()
    assert sha256_digest(*parts) == f"sha256:{expected}"


def test_record_ids_are_random_version_4_uuid_urns():
    ids = {new_record_id() for _ in range(2000)}
    assert len(ids) == 2000
    for rid in ids:
        assert rid.startswith("<urn:uuid:")
        assert rid.endswith(">")
        value = uuid.UUID(rid[len("<urn:uuid:") : -1])
        assert value.version == 4
        assert value.variant == uuid.RFC_4122
        assert f"<urn:uuid:{value}>" == rid  # canonical spelling: lowercase, hyphenated


def test_rewrite_head_for_decoded_drops_encodings_and_sets_length():
    head = (
        b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\ncontent-encoding: br\r\n"
        b"Transfer-Encoding: chunked\r\nX-Other: 1\r\n\r\n"
    )
    out = rewrite_head_for_decoded(head, 1234)
    assert out == (
        b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nX-Other: 1\r\n"
        b"X-Trawl-Original-Content-Encoding: br\r\n"
        b"X-Trawl-Original-Transfer-Encoding: chunked\r\n"
        b"Content-Length: 1234\r\n\r\n"
    )
    assert rewrite_head_for_decoded(out, 1234) == out


def test_rewrite_head_keeps_original_length_only_when_different():
    head = b"HTTP/1.1 200 OK\r\nContent-Length: 300\r\nContent-Encoding: gzip\r\n\r\n"
    out = rewrite_head_for_decoded(head, 1000)
    status, headers = parse_http_head(out)
    assert status == 200
    assert headers == (
        ("X-Trawl-Original-Content-Length", "300"),
        ("X-Trawl-Original-Content-Encoding", "gzip"),
        ("Content-Length", "1000"),
    )
    plain = b"HTTP/1.1 404 Not Found\r\nContent-Length: 5\r\n\r\n"
    assert rewrite_head_for_decoded(plain, 5) == plain


def test_parse_http_head_handles_folding_and_rejects_garbage():
    status, headers = parse_http_head(b"HTTP/1.0 301 Moved\r\nX-A: one\r\n  two\r\n\r\n")
    assert status == 301
    assert headers == (("X-A", "one two"),)
    with pytest.raises(DataError, match="status line"):
        parse_http_head(b"garbage\r\n\r\n")


def test_revisit_record_refers_to_the_original_and_reads_in_warcio() -> None:
    import io

    from warcio.archiveiterator import ArchiveIterator

    from trawl.store.warc_record import REVISIT_PROFILE, encode_revisit_record

    original = encode()
    revisit = encode_revisit_record(
        url="https://example.test/copy",
        fetched_at=1_796_000_100.0,
        ip="127.0.0.9",
        http_head=HEAD,
        payload_digest=original.payload_digest,
        refers_to_id=original.record_id,
        refers_to_url="https://example.test/a?b=1",
        refers_to_at=1_796_000_000.25,
    )
    records = list(ArchiveIterator(io.BytesIO(original.data + revisit.data), check_digests="raise"))
    assert [r.rec_type for r in records] == ["response", "revisit"]
    head = records[1].rec_headers
    assert head.get_header("WARC-Refers-To") == original.record_id
    assert head.get_header("WARC-Refers-To-Target-URI") == "https://example.test/a?b=1"
    assert head.get_header("WARC-Profile") == REVISIT_PROFILE
    assert head.get_header("WARC-Payload-Digest") == sha256_digest(BODY)
    assert records[1].http_headers.get_statuscode() == "200"
    warc_headers, block = parse_record(gunzip_member(revisit.data))
    assert block == HEAD  # no payload: it lives in the original
    assert warc_headers["WARC-Type"] == "revisit"


T0 = 1_796_000_000.0


def test_issue_14_request_record_names_its_response_and_reads_in_warcio() -> None:
    request_head = (
        b"GET /a?b=1 HTTP/1.1\r\nHost: 127.0.0.1:8080\r\nUser-Agent: trawl/0 (+x)\r\n"
        b'If-None-Match: "e1"\r\n\r\n'
    )
    request_id = new_record_id()
    response = encode_response_record(
        url="http://127.0.0.1:8080/a?b=1", fetched_at=T0, ip="127.0.0.1",
        http_head=HEAD, payload=b"<p>x</p>", truncated=False, concurrent_to=request_id,
    )  # fmt: skip
    request = encode_request_record(
        url="http://127.0.0.1:8080/a?b=1", fetched_at=T0, ip="127.0.0.1",
        request_head=request_head, concurrent_to=response.record_id, record_id=request_id,
    )  # fmt: skip
    assert request.cdx is None
    assert response.cdx is not None
    records = list(ArchiveIterator(io.BytesIO(response.data + request.data)))
    assert [r.rec_type for r in records] == ["response", "request"]
    resp_h, req_h = records[0].rec_headers, records[1].rec_headers
    assert resp_h.get_header("WARC-Concurrent-To") == request_id
    assert req_h.get_header("WARC-Concurrent-To") == response.record_id
    assert req_h.get_header("Content-Type") == "application/http; msgtype=request"
    assert records[1].http_headers.protocol == "GET"
    assert records[1].http_headers.get_header("If-None-Match") == '"e1"'
    with pytest.raises(ValueError, match="request head"):
        encode_request_record(
            url="http://x/", fetched_at=T0, ip=None, request_head=b"GET /\r\n\r\n",
            concurrent_to=request_id,
        )  # fmt: skip


def test_a_conversion_record_holds_the_rendered_dom_and_refers_to_its_response() -> None:
    from fastwarc.warc import ArchiveIterator as FastIterator
    from fastwarc.warc import WarcRecordType

    from trawl.store.warc_record import encode_conversion_record

    original = encode()
    dom = '<html><body><div id="root"><p>Built by a script — héllo</p></div></body></html>'
    conversion = encode_conversion_record(
        url="https://example.test/a?b=1",
        rendered_at=T0 + 5,
        html=dom.encode(),
        refers_to_id=original.record_id,
    )
    data = original.data + conversion.data
    records, blocks = [], []
    for record in ArchiveIterator(io.BytesIO(data), check_digests="raise"):
        records.append(record)
        blocks.append(record.content_stream().read())
    assert [r.rec_type for r in records] == ["response", "conversion"]
    head = records[1].rec_headers
    assert head.get_header("WARC-Refers-To") == original.record_id
    assert head.get_header("WARC-Target-URI") == "https://example.test/a?b=1"
    assert head.get_header("Content-Type") == "text/html; charset=utf-8"
    assert blocks[1].decode() == dom
    fast = [
        (record.verify_block_digest(), record.headers["WARC-Refers-To"])
        for record in FastIterator(io.BytesIO(data), record_types=WarcRecordType.conversion)
    ]
    assert fast == [(True, original.record_id)]
    with pytest.raises(ValueError, match="name the record"):
        encode_conversion_record(
            url="https://example.test/", rendered_at=T0, html=b"", refers_to_id=""
        )

"""WARC/1.1 records as bytes: encode one response into a gzip member, and parse it back.

How this works (pure: no files, no clock; run it in a worker thread or process):

- A record is `WARC header block CRLF | block | CRLF CRLF` (WARC/1.1 §4), and each record
  is its own gzip member (WARC/1.1 annex D.2), so one record can be read alone from its
  offset and length.
- For a response the block is the HTTP head exactly as the caller gives it (status line and
  headers ending in CRLF CRLF) followed by the payload, the HTTP body. WARC-Block-Digest is the
  sha256 of the block, WARC-Payload-Digest the sha256 of the payload, both "sha256:" + hex
  (§5.8, §5.9; the labelled form Webrecorder's tools write, which warcio, FastWARC and pywb
  read and verify). The payload's sha256 is also the page's content hash (parse/page_work.py),
  so a page's body is hashed twice (block, payload), not three times as with sha1 digests
  beside a sha256 content hash. Records written before (sha1, base32) stay valid, and a
  revisit of such an original repeats its sha1 digest.
- Each gzip member carries the "sl" (skip length) extra field that WARC 0.9 recommended and
  wget still writes: member length and record length, 4 bytes little-endian each. Readers
  ignore it (RFC 1952 §2.3.1.1: FEXTRA is optional data), and `recover_tail` uses it to hop
  from member to member without inflating them.
- Compression is raw deflate from ISA-L (`isal_zlib`) at a fast level, framed by hand; zlib
  stays available for comparison (see bench/warc_bench.py for the figures behind the default).
"""

from __future__ import annotations

import hashlib
import os
import struct
import time
import zlib
from dataclasses import dataclass
from enum import Enum
from functools import lru_cache
from typing import TYPE_CHECKING, NamedTuple

from isal import isal_zlib

from trawl.errors import DataError
from trawl.model import first_header
from trawl.store.cdxj import CdxEntry, cdx_entry

if TYPE_CHECKING:
    from collections.abc import Callable

WARC_VERSION = b"WARC/1.1"
_VERSION_LINE = WARC_VERSION.decode("ascii") + "\r\n"
RESPONSE_CONTENT_TYPE = "application/http; msgtype=response"
REQUEST_CONTENT_TYPE = "application/http; msgtype=request"
ORIGINAL_HEADER_PREFIX = "X-Trawl-Original-"
_CRLF = b"\r\n"
_END = b"\r\n\r\n"
_GZIP_MAGIC = b"\x1f\x8b\x08"
_FEXTRA = 0x04
_OS_UNIX = 3
# ID1 ID2 CM FLG MTIME(4) XFL OS | XLEN | SI1 SI2 LEN | member length, record length
_MEMBER_HEAD = struct.Struct("<3sBIBBH2sHII")
MEMBER_HEAD_BYTES = _MEMBER_HEAD.size  # 24
_TRAILER = struct.Struct("<II")  # CRC32, ISIZE (RFC 1952 §2.3.1)
_U32_MAX = 0xFFFFFFFF
# isal_zlib.error is typed as an instance in its stub; it is the class IsalError.
INFLATE_ERROR: type[Exception] = isal_zlib.error  # type: ignore[assignment]


class Codec(Enum):
    """Deflate implementation; both write standard gzip members."""

    ISAL = "isal"  # levels 0-3
    ZLIB = "zlib"  # levels 1-9


DEFAULT_CODEC = Codec.ISAL
# bench/warc_bench.py, 100 KB HTML: isal 2 ~310 us/record at ratio 3.40 (two sha1 digests
# alone are ~110 us); zlib 6 ~3200 us at 4.02, zlib 1 ~780 us at 3.28, warcio ~4250 us.
DEFAULT_LEVEL = 2


def warc_level(configured: int) -> int:
    """The gzip level for `storage.warc_compress_level` (-1: the measured default)."""
    return DEFAULT_LEVEL if configured < 0 else configured


class EncodedRecord(NamedTuple):  # a NamedTuple: cheap to pickle back from a worker process
    """One complete gzip member holding one WARC record, ready to append to a file."""

    data: bytes
    payload_digest: str  # "sha256:HEX" of the HTTP body ("sha1:BASE32" before)
    record_id: str  # "<urn:uuid:...>"
    cdx: CdxEntry | None = None  # its index entry; None for records not indexed (request)


@dataclass(frozen=True, slots=True)
class StoredBody:
    """A response record read back from a WARC file."""

    warc_headers: dict[str, str]
    target_uri: str
    http_status: int
    http_headers: tuple[tuple[str, str], ...]
    payload: bytes
    truncated: bool
    record_id: str

    def header(self, name: str) -> str | None:
        """First HTTP header called `name` (case-insensitive), or None."""
        return first_header(self.http_headers, name)


def sha256_digest(*parts: bytes) -> str:
    """WARC digest value: "sha256:" + hex of the sha256 of the concatenated parts."""
    h = hashlib.sha256()
    for part in parts:
        h.update(part)
    return labelled_sha256(h.hexdigest())


def labelled_sha256(hex_digest: str) -> str:
    """The WARC digest value of a sha256 the caller already has (hex)."""
    return "sha256:" + hex_digest


@lru_cache(maxsize=16)  # a response and its request record share their capture's date
def warc_date(at: float) -> str:
    """Epoch seconds as a WARC-Date: UTC, ISO 8601, whole seconds (WARC/1.1 §5.4)."""
    # time.strftime on a struct_time: under half of datetime's cost, the same text
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(at))


def new_record_id() -> str:
    """A random (version 4) UUID URN, as uuid.uuid4() spells it but without the UUID object."""
    raw = bytearray(os.urandom(16))
    raw[6] = raw[6] & 0x0F | 0x40  # version 4
    raw[8] = raw[8] & 0x3F | 0x80  # RFC 4122 variant
    h = raw.hex()
    return f"<urn:uuid:{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}>"


def encode_response_record(
    *,
    url: str,
    fetched_at: float,
    ip: str | None,
    http_head: bytes,
    payload: bytes,
    truncated: bool,
    level: int = DEFAULT_LEVEL,
    codec: Codec = DEFAULT_CODEC,
    record_id: str | None = None,
    concurrent_to: str = "",
    payload_sha256: str = "",
) -> EncodedRecord:
    """Build the gzip member of one response record.

    `http_head` is the status line and headers ending in CRLF CRLF; if the body was decoded,
    pass it through `rewrite_head_for_decoded` first. `truncated` adds `WARC-Truncated: length`.
    `concurrent_to` is the record id of the request record that asked for it (§5.7).
    `payload_sha256`: the payload's sha256 (hex) if the caller has it, to save a pass.
    Raises ValueError when `http_head` is not a complete head or `url` holds a line break.
    """
    if not http_head.startswith(b"HTTP/") or not http_head.endswith(_END):
        raise ValueError(
            f"http_head must be a status line and headers ending in CRLF CRLF, "
            f"got {http_head[:40]!r}..."
        )
    if "\r" in url or "\n" in url:
        raise ValueError(f"WARC-Target-URI cannot hold a line break: {url!r}")
    rid = record_id or new_record_id()
    payload_digest = labelled_sha256(payload_sha256) if payload_sha256 else sha256_digest(payload)
    fields = _capture_fields("response", rid, fetched_at, url, ip, concurrent_to)
    fields += [
        ("WARC-Block-Digest", sha256_digest(http_head, payload)),
        ("WARC-Payload-Digest", payload_digest),
    ]
    if truncated:
        fields.append(("WARC-Truncated", "length"))
    fields += [
        ("Content-Type", RESPONSE_CONTENT_TYPE),
        ("Content-Length", str(len(http_head) + len(payload))),
    ]
    raw = b"".join((_header_block(fields), http_head, payload, _END))
    cdx = cdx_entry(
        url=url, warc_date=fields[2][1], http_head=http_head, digest=payload_digest, revisit=False
    )
    return EncodedRecord(gzip_member(raw, level, codec), payload_digest, rid, cdx)


def encode_request_record(
    *,
    url: str,
    fetched_at: float,
    ip: str | None,
    request_head: bytes,
    concurrent_to: str,
    record_id: str | None = None,
    level: int = DEFAULT_LEVEL,
    codec: Codec = DEFAULT_CODEC,
) -> EncodedRecord:
    """The request record of a capture (WARC/1.1 §6.4): the HTTP request head as sent (a GET
    has no body), WARC-Concurrent-To the response or revisit record it produced (§5.7).

    Raises ValueError when `request_head` is not a request line and headers ending in CRLF CRLF.
    """
    if not request_head.endswith(_END) or b" HTTP/" not in request_head.split(_CRLF, 1)[0]:
        raise ValueError(
            f"request_head must be a complete HTTP request head, got {request_head[:40]!r}..."
        )
    rid = record_id or new_record_id()
    fields = _capture_fields("request", rid, fetched_at, url, ip, concurrent_to)
    fields += [
        ("WARC-Block-Digest", sha256_digest(request_head)),
        ("Content-Type", REQUEST_CONTENT_TYPE),
        ("Content-Length", str(len(request_head))),
    ]
    raw = b"".join((_header_block(fields), request_head, _END))
    return EncodedRecord(gzip_member(raw, level, codec), "", rid)


def _capture_fields(
    kind: str, rid: str, fetched_at: float, url: str, ip: str | None, concurrent_to: str = ""
) -> list[tuple[str, str]]:
    """The headers every record of one capture starts with (WARC-Date third)."""
    fields = [
        ("WARC-Type", kind),
        ("WARC-Record-ID", rid),
        ("WARC-Date", warc_date(fetched_at)),
        ("WARC-Target-URI", url),
    ]
    if ip:
        fields.append(("WARC-IP-Address", ip))
    if concurrent_to:
        fields.append(("WARC-Concurrent-To", concurrent_to))
    return fields


REVISIT_PROFILE = "http://netpreserve.org/warc/1.1/revisit/identical-payload-digest"


def encode_revisit_record(
    *,
    url: str,
    fetched_at: float,
    ip: str | None,
    http_head: bytes,
    payload_digest: str,
    refers_to_id: str,
    refers_to_url: str,
    refers_to_at: float,
    level: int = DEFAULT_LEVEL,
    codec: Codec = DEFAULT_CODEC,
    record_id: str | None = None,
    concurrent_to: str = "",
) -> EncodedRecord:
    """A revisit record (WARC 1.1 §6.7.2, identical payload digest): this response carried
    the same body as the record `refers_to_id`, so only its HTTP head is stored."""
    if not http_head.startswith(b"HTTP/") or not http_head.endswith(_END):
        raise ValueError(f"http_head must be a complete HTTP head, got {http_head[:40]!r}...")
    for value in (url, refers_to_url, refers_to_id):
        if "\r" in value or "\n" in value:
            raise ValueError(f"WARC header value cannot hold a line break: {value!r}")
    rid = record_id or new_record_id()
    fields = _capture_fields("revisit", rid, fetched_at, url, ip, concurrent_to)
    fields += [
        ("WARC-Profile", REVISIT_PROFILE),
        ("WARC-Refers-To", refers_to_id),
        ("WARC-Refers-To-Target-URI", refers_to_url),
        ("WARC-Refers-To-Date", warc_date(refers_to_at)),
        ("WARC-Block-Digest", sha256_digest(http_head)),
        ("WARC-Payload-Digest", payload_digest),
        ("Content-Type", RESPONSE_CONTENT_TYPE),
        ("Content-Length", str(len(http_head))),
    ]
    raw = b"".join((_header_block(fields), http_head, _END))
    cdx = cdx_entry(
        url=url, warc_date=fields[2][1], http_head=http_head, digest=payload_digest, revisit=True
    )
    return EncodedRecord(gzip_member(raw, level, codec), payload_digest, rid, cdx)


def encode_conversion_record(
    *,
    url: str,
    rendered_at: float,
    html: bytes,
    refers_to_id: str,
    level: int = DEFAULT_LEVEL,
    codec: Codec = DEFAULT_CODEC,
) -> EncodedRecord:
    """A conversion record (WARC 1.1 §6.8): the DOM a browser built from the response record
    `refers_to_id` (issue 18: the rendered copy of a page built by JavaScript). Its block is
    the serialised HTML, no HTTP head: the browser made no request for the page itself."""
    for value in (url, refers_to_id):
        if "\r" in value or "\n" in value:
            raise ValueError(f"WARC header value cannot hold a line break: {value!r}")
    if not refers_to_id:
        raise ValueError("a conversion record must name the record it was made from")
    rid = new_record_id()
    digest = sha256_digest(html)
    fields = [
        ("WARC-Type", "conversion"),
        ("WARC-Record-ID", rid),
        ("WARC-Date", warc_date(rendered_at)),
        ("WARC-Target-URI", url),
        ("WARC-Refers-To", refers_to_id),
        ("WARC-Block-Digest", digest),
        ("WARC-Payload-Digest", digest),
        ("Content-Type", CONVERSION_CONTENT_TYPE),
        ("Content-Length", str(len(html))),
    ]
    raw = b"".join((_header_block(fields), html, _END))
    return EncodedRecord(gzip_member(raw, level, codec), digest, rid)


CONVERSION_CONTENT_TYPE = "text/html; charset=utf-8"


def encode_warcinfo_record(
    *, filename: str, created_at: float, software: str, extra: tuple[tuple[str, str], ...] = ()
) -> EncodedRecord:
    """Build the warcinfo record that opens each file (WARC/1.1 §6.2)."""
    body_fields = [
        ("software", software),
        ("format", "WARC File Format 1.1"),
        (
            "conformsTo",
            "https://iipc.github.io/warc-specifications/specifications/warc-format/warc-1.1/",
        ),
        *extra,
    ]
    body = b"".join(f"{k}: {v}\r\n".encode() for k, v in body_fields)
    rid = new_record_id()
    fields = [
        ("WARC-Type", "warcinfo"),
        ("WARC-Record-ID", rid),
        ("WARC-Date", warc_date(created_at)),
        ("WARC-Filename", filename),
        ("WARC-Block-Digest", sha256_digest(body)),
        ("Content-Type", "application/warc-fields"),
        ("Content-Length", str(len(body))),
    ]
    raw = b"".join((_header_block(fields), body, _END))
    return EncodedRecord(gzip_member(raw, DEFAULT_LEVEL, DEFAULT_CODEC), "", rid)


def _header_block(fields: list[tuple[str, str]]) -> bytes:
    # One string, encoded once: a bytes object per line cost ~2x as much.
    lines = "".join([f"{name}: {value}\r\n" for name, value in fields])
    return f"{_VERSION_LINE}{lines}\r\n".encode()


_DEFLATERS: dict[Codec, Callable[[bytes, int], bytes]] = {
    Codec.ISAL: lambda data, level: isal_zlib.compress(data, level, -15),
    Codec.ZLIB: lambda data, level: zlib.compress(data, level, -15),
}


def gzip_member(raw: bytes, level: int = DEFAULT_LEVEL, codec: Codec = DEFAULT_CODEC) -> bytes:
    """One gzip member of `raw` with the "sl" extra field (see the module docstring)."""
    deflated = _DEFLATERS[codec](raw, level)
    trailer = _TRAILER.pack(isal_zlib.crc32(raw), len(raw) & _U32_MAX)
    member_len = MEMBER_HEAD_BYTES + len(deflated) + _TRAILER.size
    if member_len > _U32_MAX or len(raw) > _U32_MAX:
        # Lengths do not fit the field; a plain 10-byte header keeps the member valid.
        head = struct.pack("<3sBIBB", _GZIP_MAGIC, 0, 0, 0, _OS_UNIX)
    else:
        head = _MEMBER_HEAD.pack(
            _GZIP_MAGIC, _FEXTRA, 0, 0, _OS_UNIX, 12, b"sl", 8, member_len, len(raw)
        )
    return b"".join((head, deflated, trailer))


def member_length_from_head(head: bytes) -> int | None:
    """The member length in an "sl" gzip header, or None when `head` has no such field."""
    if len(head) < MEMBER_HEAD_BYTES:
        return None
    magic, flags, _mtime, _xfl, _os, xlen, si, sublen, member_len, _raw_len = (
        _MEMBER_HEAD.unpack_from(head)
    )
    if magic != _GZIP_MAGIC or not flags & _FEXTRA or xlen < 12 or si != b"sl" or sublen != 8:
        return None
    return int(member_len)


def gunzip_member(data: bytes) -> bytes:
    """Inflate exactly one gzip member; raises DataError if it is damaged or has extra bytes."""
    d = isal_zlib.decompressobj(wbits=31)
    try:
        raw: bytes = d.decompress(data)
    except INFLATE_ERROR as exc:
        raise DataError(f"damaged gzip member: {exc}") from exc
    if not d.eof:
        raise DataError("gzip member is cut short")
    if d.unused_data:
        raise DataError(f"{len(d.unused_data)} stray bytes after the gzip member")
    return raw


def parse_record(raw: bytes) -> tuple[dict[str, str], bytes]:
    """Split an uncompressed WARC record into its header fields and block.

    Raises DataError when the version line, Content-Length or the closing CRLF CRLF is wrong.
    """
    head_end = raw.find(_END)
    if not raw.startswith(b"WARC/") or head_end < 0:
        raise DataError(f"not a WARC record: starts {raw[:20]!r}")
    lines = raw[:head_end].decode("utf-8", "replace").split("\r\n")
    headers: dict[str, str] = {}
    for line in lines[1:]:
        name, sep, value = line.partition(":")
        if not sep:
            raise DataError(f"bad WARC header line {line[:60]!r}")
        headers[name.strip()] = value.strip()
    try:
        length = int(headers.get("Content-Length", ""))
    except ValueError:
        raise DataError(f"bad WARC Content-Length {headers.get('Content-Length')!r}") from None
    block_start = head_end + len(_END)
    if len(raw) != block_start + length + len(_END) or not raw.endswith(_END):
        raise DataError(
            f"WARC Content-Length {length} does not match the record's {len(raw)} bytes"
        )
    return headers, raw[block_start : block_start + length]


def parse_response(raw: bytes) -> StoredBody:
    """Parse an uncompressed WARC response record; raises DataError for any other kind."""
    warc_headers, block = parse_record(raw)
    kind = warc_headers.get("WARC-Type")
    if kind != "response":
        raise DataError(f"expected a response record, found {kind!r}")
    return _response_of(warc_headers, block)


def parse_stored(raw: bytes) -> StoredBody:
    """Parse what a storage key can name: a response record, or a conversion record (issue
    18: a browser's DOM of a page). A conversion has no HTTP exchange: its `http_status` is
    0 and its one header is its Content-Type. DataError for any other kind."""
    warc_headers, block = parse_record(raw)
    kind = warc_headers.get("WARC-Type")
    if kind == "response":
        return _response_of(warc_headers, block)
    if kind != "conversion":
        raise DataError(f"expected a response or conversion record, found {kind!r}")
    return StoredBody(
        warc_headers=warc_headers,
        target_uri=warc_headers.get("WARC-Target-URI", ""),
        http_status=0,
        http_headers=(("Content-Type", warc_headers.get("Content-Type", "text/html")),),
        payload=block,
        truncated="WARC-Truncated" in warc_headers,
        record_id=warc_headers.get("WARC-Record-ID", ""),
    )


def _response_of(warc_headers: dict[str, str], block: bytes) -> StoredBody:
    head_end = block.find(_END)
    if head_end < 0:
        raise DataError("response block has no complete HTTP head")
    status, http_headers = parse_http_head(block[: head_end + len(_END)])
    return StoredBody(
        warc_headers=warc_headers,
        target_uri=warc_headers.get("WARC-Target-URI", ""),
        http_status=status,
        http_headers=http_headers,
        payload=block[head_end + len(_END) :],
        truncated="WARC-Truncated" in warc_headers,
        record_id=warc_headers.get("WARC-Record-ID", ""),
    )


def parse_http_head(head: bytes) -> tuple[int, tuple[tuple[str, str], ...]]:
    """Status code and header pairs of an HTTP/1.x response head (latin-1, RFC 9110 §5.5)."""
    lines = head.decode("latin-1").split("\r\n")
    parts = lines[0].split(" ", 2)
    if len(parts) < 2 or not parts[0].startswith("HTTP/") or not parts[1].isdigit():
        raise DataError(f"bad HTTP status line {lines[0][:60]!r}")
    pairs: list[tuple[str, str]] = []
    for line in lines[1:]:
        if not line:
            continue
        if line[0] in " \t" and pairs:  # obsolete line folding (RFC 9112 §5.2)
            name, value = pairs[-1]
            pairs[-1] = (name, f"{value} {line.strip()}")
            continue
        name, _, value = line.partition(":")
        pairs.append((name.strip(), value.strip()))
    return int(parts[1]), tuple(pairs)


# Why rewrite: WARC tools that hold the bytes as received (wget, Heritrix, warcio's
# capture_http) store them with Content-Encoding and chunking intact, and warcio/pywb decode
# on read. Our fetcher only keeps the decoded body, so storing it under the original head would
# make the record lie (a "gzip" body that is not gzip, a Content-Length that does not match).
# The self-consistent alternative, also used by browser-based capture that sees decoded bodies,
# is to drop the encoding headers, set Content-Length to what is stored, and keep the original
# values under prefixed names, in the spirit of pywb's `X-Archive-Orig-*` replay headers.
_DECODED_AWAY = ("content-encoding", "transfer-encoding", "content-length")


def rewrite_head_for_decoded(http_head: bytes, payload_len: int) -> bytes:
    """The head to store with a decoded (unchunked, uncompressed) body of `payload_len` bytes.

    Drops Content-Encoding and Transfer-Encoding, sets Content-Length, and keeps the dropped
    values as `X-Trawl-Original-<Name>`. Idempotent; other lines are kept byte for byte.
    """
    lines = http_head[: -len(_END)].split(_CRLF) if http_head.endswith(_END) else None
    if lines is None:
        raise ValueError(f"http_head must end in CRLF CRLF, got ...{http_head[-20:]!r}")
    kept: list[bytes] = [lines[0]]
    originals: list[bytes] = []
    new_length = str(payload_len).encode()
    for line in lines[1:]:
        name, _, value = line.partition(b":")
        lname = name.strip().lower().decode("latin-1")
        if lname not in _DECODED_AWAY:
            kept.append(line)
        elif lname != "content-length" or value.strip() != new_length:
            canonical = "-".join(p.capitalize() for p in lname.split("-"))
            originals.append(f"{ORIGINAL_HEADER_PREFIX}{canonical}:".encode() + value)
    kept += originals
    kept.append(b"Content-Length: " + new_length)
    return _CRLF.join(kept) + _END

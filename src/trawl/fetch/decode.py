"""Incremental Content-Encoding decoding with a cap on decoded bytes (sans-I/O).

How this works: the fetcher feeds raw body chunks as they arrive; the decoder inflates them
in steps of at most `_STEP_BYTES` of output, so a compression bomb (a few KB that inflate to
10 GB) never holds more than `max_decoded_bytes + _STEP_BYTES` in memory. When the cap is
crossed, `too_big` is set and the caller stops reading. A corrupt stream sets `error` and
further input is ignored. Neither condition raises: a bad body is the web's fault (STYLE §5).

Supported codings (RFC 9110 §8.4.1): identity, gzip / x-gzip, deflate (RFC 1950 zlib-wrapped,
and the raw RFC 1951 stream some servers send instead) and br (RFC 7932).
"""

from __future__ import annotations

import zlib
from typing import Protocol, cast

import brotli
from isal import isal_zlib

# What a corrupt stream raises. isal's stubs declare its error an instance, not a class.
_CORRUPT: tuple[type[Exception], ...] = (cast("type[Exception]", isal_zlib.error), brotli.error)

# Output produced per decompression call; bounds the memory a single feed() can allocate.
_STEP_BYTES = 64 * 1024


class _Inflater(Protocol):
    def feed(self, data: bytes, limit: int) -> bytes: ...

    def more(self, limit: int) -> bytes: ...

    def is_finished(self) -> bool: ...


class _ZlibInflater:
    """gzip or zlib/raw deflate through ISA-L's `decompressobj` (zlib's interface), with
    bounded output per call. Most of the web's HTML comes gzipped, and this runs on the
    crawl loop: ISA-L inflates a ~84 KB page in ~72 us against zlib's ~195 (the bench web
    is served uncompressed, so `bench.speed` does not show it)."""

    def __init__(self, wbits: int) -> None:
        self._obj = isal_zlib.decompressobj(wbits)
        self._tail = b""

    def feed(self, data: bytes, limit: int) -> bytes:
        if self._obj.eof:
            return b""  # trailing bytes after the stream end are ignored, as browsers do
        out = self._obj.decompress(self._tail + data, limit)
        self._tail = self._obj.unconsumed_tail
        return out

    def more(self, limit: int) -> bytes:
        # Called until it returns b"": input may be left over, or output pending in zlib's
        # state even with no input left (a long back-reference cut by the output limit).
        if self._obj.eof:
            return b""
        out = self._obj.decompress(self._tail, limit)
        self._tail = self._obj.unconsumed_tail
        return out

    def is_finished(self) -> bool:
        return self._obj.eof


class _BrotliInflater:
    """br through brotli's streaming Decompressor and its `output_buffer_limit`."""

    def __init__(self) -> None:
        self._obj = brotli.Decompressor()

    def feed(self, data: bytes, limit: int) -> bytes:
        if self._obj.is_finished():
            return b""
        out: bytes = self._obj.process(data, output_buffer_limit=limit)
        return out

    def more(self, limit: int) -> bytes:
        # brotli's rule: after a limited call, only empty input until it can accept more.
        if self._obj.is_finished() or self._obj.can_accept_more_data():
            return b""
        out: bytes = self._obj.process(b"", output_buffer_limit=limit)
        return out

    def is_finished(self) -> bool:
        return bool(self._obj.is_finished())


def _deflate_wbits(head: bytes) -> int:
    """RFC 1950 header check (CM=8, FCHECK); anything else is taken as raw deflate."""
    cmf, flg = head[0], head[1]
    if cmf & 0x0F == 8 and (cmf << 8 | flg) % 31 == 0:
        return zlib.MAX_WBITS
    return -zlib.MAX_WBITS


def _coding_of(encoding: str | None) -> str:
    """The one non-identity coding named by a Content-Encoding value, or "identity"."""
    if encoding is None:
        return "identity"
    codings = [c.strip().lower() for c in encoding.split(",")]
    codings = [c for c in codings if c and c != "identity"]
    if not codings:
        return "identity"
    if len(codings) > 1:
        return ",".join(codings)  # stacked codings: not supported, reported as unknown
    return codings[0]


class BodyDecoder:
    """Decode one response body incrementally, stopping after `max_decoded_bytes`.

    `feed()` after `too_big` or `error` is a no-op. `finish()` returns the decoded bytes
    (at most `max_decoded_bytes`); with `expect_end=True` it also flags a stream that stopped
    before its end marker (a body cut short by the peer), which callers that truncated the
    body themselves pass as False.
    """

    def __init__(self, encoding: str | None, max_decoded_bytes: int) -> None:
        if max_decoded_bytes < 0:
            raise ValueError(f"max_decoded_bytes must be >= 0, got {max_decoded_bytes}")
        self.encoding = _coding_of(encoding)
        self.max_decoded_bytes = max_decoded_bytes
        self.too_big = False
        self.error: str | None = None
        self.decoded_bytes = 0
        self.fed_bytes = 0
        self._parts: list[bytes] = []
        self._pending = b""  # deflate: bytes held until the 2-byte header can be sniffed
        self._inflater: _Inflater | None = None
        if self.encoding in ("gzip", "x-gzip"):
            self._inflater = _ZlibInflater(16 + zlib.MAX_WBITS)
        elif self.encoding == "br":
            self._inflater = _BrotliInflater()
        elif self.encoding not in ("identity", "deflate"):
            self.error = f"unsupported Content-Encoding {encoding!r}"

    def __repr__(self) -> str:
        return (
            f"<BodyDecoder {self.encoding} decoded={self.decoded_bytes}"
            f"/{self.max_decoded_bytes} too_big={self.too_big} error={self.error!r}>"
        )

    @property
    def is_stopped(self) -> bool:
        """True once more input would be ignored (cap hit or corrupt stream)."""
        return self.too_big or self.error is not None

    def feed(self, chunk: bytes) -> None:
        """Decode one raw chunk."""
        if self.is_stopped or not chunk:
            return
        self.fed_bytes += len(chunk)
        if self.encoding == "identity":
            self._emit(chunk)
            return
        if self._inflater is None:  # deflate, flavour not known yet
            self._pending += chunk
            if len(self._pending) < 2:
                return
            self._inflater = _ZlibInflater(_deflate_wbits(self._pending))
            chunk, self._pending = self._pending, b""
        self._inflate(self._inflater, chunk)

    def finish(self, *, expect_end: bool = True) -> bytes:
        """Return the decoded body; flag a compressed stream that ended early."""
        if expect_end and self._inflater is None and self._pending:
            self.error = "deflate stream shorter than its header"
        inflater = self._inflater
        if (
            expect_end
            and not self.is_stopped
            and inflater is not None
            and self.fed_bytes > 0
            and not inflater.is_finished()
        ):
            self.error = f"{self.encoding} stream ended before its end marker"
        return b"".join(self._parts)

    def _inflate(self, inflater: _Inflater, chunk: bytes) -> None:
        try:
            out = inflater.feed(chunk, _STEP_BYTES)
            while self._emit(out):
                out = inflater.more(_STEP_BYTES)
        except _CORRUPT as exc:
            self.error = f"corrupt {self.encoding} stream: {exc}"

    def _emit(self, out: bytes) -> bool:
        """Keep `out` within the cap; True if the caller should ask for more output."""
        if not out:
            return False
        room = self.max_decoded_bytes - self.decoded_bytes
        if len(out) > room:
            out = out[:room]
            self.too_big = True
        self._parts.append(out)
        self.decoded_bytes += len(out)
        return not self.too_big

"""BodyDecoder: each coding, the decoded-bytes cap against bombs, and corrupt streams."""

from __future__ import annotations

import gzip
import hashlib
import zlib

import brotli
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from trawl.fetch.decode import BodyDecoder

PAGE = b"<html><body>" + b"<p>hello trawl</p>" * 2000 + b"</body></html>"
MIB = 1024 * 1024


def _chunks(data: bytes, size: int = 4096) -> list[bytes]:
    return [data[i : i + size] for i in range(0, len(data), size)]


def _decode(encoding: str | None, data: bytes, cap: int = 10 * MIB) -> BodyDecoder:
    decoder = BodyDecoder(encoding, cap)
    for chunk in _chunks(data):
        decoder.feed(chunk)
    return decoder


def _raw_deflate(data: bytes) -> bytes:
    obj = zlib.compressobj(wbits=-zlib.MAX_WBITS)
    return obj.compress(data) + obj.flush()


@pytest.mark.parametrize(
    ("encoding", "encoded"),
    [
        (None, PAGE),
        ("identity", PAGE),
        ("gzip", gzip.compress(PAGE)),
        ("x-gzip", gzip.compress(PAGE)),
        ("GZIP", gzip.compress(PAGE)),
        ("deflate", zlib.compress(PAGE)),
        ("deflate", _raw_deflate(PAGE)),
        ("br", brotli.compress(PAGE)),
        (" br ", brotli.compress(PAGE)),
        ("identity, gzip", gzip.compress(PAGE)),
    ],
)
def test_decodes_each_coding(encoding: str | None, encoded: bytes) -> None:
    decoder = _decode(encoding, encoded)
    assert decoder.finish() == PAGE
    assert (decoder.too_big, decoder.error) == (False, None)
    assert decoder.decoded_bytes == len(PAGE)


@pytest.mark.parametrize("size", [1, 7, 65536])
def test_chunk_size_does_not_matter(size: int) -> None:
    for encoding, data in [("gzip", gzip.compress(PAGE)), ("br", brotli.compress(PAGE))]:
        decoder = BodyDecoder(encoding, 10 * MIB)
        for chunk in _chunks(data, size):
            decoder.feed(chunk)
        assert decoder.finish() == PAGE


_CODINGS = {
    "gzip": lambda data, level: gzip.compress(data, level),
    "deflate": lambda data, level: zlib.compress(data, level),
    "raw deflate": lambda data, level: _raw_deflate_at(data, level),
}


def _raw_deflate_at(data: bytes, level: int) -> bytes:
    obj = zlib.compressobj(level, zlib.DEFLATED, -zlib.MAX_WBITS)
    return obj.compress(data) + obj.flush()


@settings(max_examples=300, deadline=None)
@given(
    coding=st.sampled_from(sorted(_CODINGS)),
    data=st.binary(max_size=3000) | st.text(alphabet="ab <>/p", max_size=200_000).map(str.encode),
    level=st.integers(0, 9),
    size=st.integers(1, 70_000),
    cut=st.integers(1, 40),
)
def test_any_body_at_any_level_and_chunking_decodes_or_reports_a_cut(
    coding: str, data: bytes, level: int, size: int, cut: int
) -> None:
    # The inflater is ISA-L's, the stream zlib's (gzip.compress): what servers send.
    encoded = _CODINGS[coding](data, level)
    decoder = BodyDecoder(coding.removeprefix("raw "), 10 * MIB)
    for chunk in _chunks(encoded, size):
        decoder.feed(chunk)
    assert (decoder.finish(), decoder.error) == (data, None)
    short = BodyDecoder(coding.removeprefix("raw "), 10 * MIB)
    cut = 1 + cut % (len(encoded) - 1)  # some bytes fed, some missing (even the trailer's)
    for chunk in _chunks(encoded[:-cut], size):
        short.feed(chunk)
    body = short.finish()
    assert short.error is not None
    assert data.startswith(body)


def _gzip_bomb(decoded_gib: int) -> bytes:
    """A gzip stream that inflates to `decoded_gib` GiB of zeros, built in milliseconds.

    After a full flush the deflate state is reset, so every MiB of zeros compresses to the
    same bytes: repeat them. The trailer (CRC, size) is left off; a decoder that obeys its
    cap stops long before it would look for one.
    """
    obj = zlib.compressobj(9, zlib.DEFLATED, -zlib.MAX_WBITS)
    segment = obj.compress(bytes(MIB)) + obj.flush(zlib.Z_FULL_FLUSH)
    header = b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\xff"
    return header + segment * (decoded_gib * 1024)


def test_gzip_bomb_stops_at_the_cap() -> None:
    bomb = _gzip_bomb(10)  # 10 GiB of zeros in about 10 MB
    assert len(bomb) < 12 * MIB
    decoder = BodyDecoder("gzip", 5 * MIB)
    fed = 0
    for chunk in _chunks(bomb, 65536):
        decoder.feed(chunk)
        fed += len(chunk)
        if decoder.too_big:
            break
    assert decoder.too_big
    assert decoder.decoded_bytes == 5 * MIB
    assert len(decoder.finish()) == 5 * MIB
    assert fed <= 65536  # stopped within the first chunk: no more input was wanted


def test_gzip_bomb_in_one_chunk_is_cut_with_bounded_output() -> None:
    # A single feed holding the whole bomb must still stop at the cap, not inflate it all.
    decoder = BodyDecoder("gzip", MIB)
    decoder.feed(_gzip_bomb(1))
    assert decoder.too_big
    assert decoder.decoded_bytes == MIB


def test_brotli_bomb_stops_at_the_cap() -> None:
    bomb = brotli.compress(bytes(64 * MIB), quality=5)
    assert len(bomb) < 1024
    decoder = BodyDecoder("br", 2 * MIB)
    decoder.feed(bomb)
    assert decoder.too_big
    assert decoder.decoded_bytes == 2 * MIB
    decoder.feed(b"ignored once stopped")
    assert decoder.decoded_bytes == 2 * MIB


def test_identity_cap() -> None:
    decoder = _decode(None, PAGE, cap=1000)
    assert decoder.too_big
    assert decoder.finish() == PAGE[:1000]


def test_exact_cap_is_not_too_big() -> None:
    decoder = _decode("gzip", gzip.compress(PAGE), cap=len(PAGE))
    assert decoder.finish() == PAGE
    assert not decoder.too_big


@pytest.mark.parametrize("encoding", ["gzip", "deflate", "br"])
def test_corrupt_stream_sets_error(encoding: str) -> None:
    garbage = b"\x1f\x8b\x08\x00" + bytes(range(256)) * 4
    if encoding == "br":
        garbage = b"\xff" * 64
    decoder = _decode(encoding, garbage)
    decoder.finish()
    assert decoder.error is not None
    assert not decoder.too_big


def test_corrupt_tail_after_good_prefix() -> None:
    text = b"".join(hashlib.sha256(b"%d" % i).hexdigest().encode() for i in range(500))
    good = gzip.compress(text)
    damaged = good[:200] + bytes(b ^ 0x55 for b in good[200:400]) + good[400:]
    decoder = _decode("gzip", damaged)
    decoder.finish()
    assert decoder.error is not None
    assert "corrupt gzip" in decoder.error


@pytest.mark.parametrize("encoding", ["gzip", "deflate", "br"])
def test_stream_cut_short_is_an_error_unless_we_cut_it(encoding: str) -> None:
    encoded = {"gzip": gzip.compress, "deflate": zlib.compress, "br": brotli.compress}[encoding](
        PAGE
    )
    cut = encoded[: len(encoded) // 2]
    ended_early = _decode(encoding, cut)
    partial = ended_early.finish()
    assert ended_early.error is not None
    assert "end marker" in ended_early.error
    assert PAGE.startswith(partial)

    truncated_by_us = _decode(encoding, cut)
    prefix = truncated_by_us.finish(expect_end=False)
    assert truncated_by_us.error is None
    assert PAGE.startswith(prefix)


def test_unknown_and_stacked_encodings_are_errors() -> None:
    for encoding in ["compress", "zstd", "gzip, br"]:
        decoder = BodyDecoder(encoding, MIB)
        decoder.feed(b"data")
        assert decoder.error is not None
        assert decoder.finish() == b""


def test_empty_compressed_body_is_fine() -> None:
    # A 304 or 204 may carry Content-Encoding with no body at all.
    for encoding in ["gzip", "deflate", "br"]:
        decoder = BodyDecoder(encoding, MIB)
        assert decoder.finish() == b""
        assert decoder.error is None


def test_trailing_bytes_after_gzip_end_are_ignored() -> None:
    decoder = _decode("gzip", gzip.compress(PAGE) + b"\n\n")
    assert decoder.finish() == PAGE
    assert decoder.error is None


def test_repr_shows_state() -> None:
    decoder = _decode("gzip", gzip.compress(b"abc"))
    decoder.finish()
    assert repr(decoder) == f"<BodyDecoder gzip decoded=3/{10 * MIB} too_big=False error=None>"

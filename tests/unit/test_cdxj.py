"""CDXJ index lines (store/cdxj.py): SURT keys as pywb spells them, pywb's field rules."""

from __future__ import annotations

import json
import random
from typing import TYPE_CHECKING

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from trawl.store.cdxj import _surt_key_any, cdx_entry, cdx_line, surt_key, write_index

if TYPE_CHECKING:
    from pathlib import Path

# Expected keys are what surt 0.3.1 (`surt.surt`, pywb 2.10's canonicaliser) prints for
# each URL; tests/e2e/test_warc_replay.py checks a whole crawl against pywb's indexer.
SURT_CASES = [
    ("http://example.com/a/", "com,example)/a"),
    ("https://www3.Example.com:443/X?b=2&a=1&A=0#f", "com,example)/x?a=0&a=1&b=2"),
    ("http://ex.com/?", "com,ex)/"),
    ("http://ex.com/p;jsessionid=ABC?x=1", "com,ex)/p;jsessionid=abc?x=1"),
    ("http://ex.com/%7Efoo/%41", "com,ex)/~foo/a"),
    ("http://user:pw@ex.com/", "com,ex)/"),
    ("http://ex.com/a?sid=12345678901234567890123456789012&b=1", "com,ex)/a?b=1"),
    ("http://127.0.0.5:80/x", "5,0,0,127)/x"),
    ("https://127.0.0.2:5000/", "2,0,0,127:5000)/"),
    ("http://ex.com/a%20b?q=%2F", "com,ex)/a%20b?q=/"),
    ("http://ex.com", "com,ex)/"),
]


@pytest.mark.parametrize(("url", "key"), SURT_CASES)
def test_issue_14_surt_key_matches_pywb(url: str, key: str) -> None:
    assert surt_key(url) == key


def test_issue_14_response_line_carries_pywb_fields() -> None:
    head = b"HTTP/1.1 404 Not Found\r\nContent-Type: text/html; charset=utf-8\r\n\r\n"
    entry = cdx_entry(
        url="http://www.ex.com/Missing",
        warc_date="2026-12-01T10:11:12Z",
        http_head=head,
        digest="sha1:ABCD",
        revisit=False,
    )
    line = cdx_line(entry, offset=120, length=345, filename="f.warc.gz")
    key, stamp, fields = line.split(" ", 2)
    assert (key, stamp) == ("com,ex)/missing", "20261201101112")
    assert json.loads(fields) == {
        "url": "http://www.ex.com/Missing",
        "mime": "text/html",
        "status": "404",
        "digest": "ABCD",
        "length": "345",
        "offset": "120",
        "filename": "f.warc.gz",
    }


def test_issue_14_revisit_line_has_no_status_and_no_type_is_unk() -> None:
    date = "2026-12-01T10:11:12Z"
    ok, moved = b"HTTP/1.1 200 OK\r\n\r\n", b"HTTP/1.1 301 Moved\r\n\r\n"
    revisit = cdx_entry(
        url="http://ex.com/", warc_date=date, http_head=ok, digest="X", revisit=True
    )
    fields = json.loads(cdx_line(revisit, offset=0, length=1, filename="f").split(" ", 2)[2])
    assert fields["mime"] == "warc/revisit"
    assert "status" not in fields
    bare = cdx_entry(
        url="http://ex.com/", warc_date=date, http_head=moved, digest="X", revisit=False
    )
    assert (bare.mime, bare.status) == ("unk", "301")


@pytest.mark.parametrize("n", [0, 1, 999, 1000, 1001, 2500])
def test_issue_17_index_written_in_parts_is_every_line_sorted(tmp_path: Path, n: int) -> None:
    """The index is written a part at a time (the GIL held in short stretches); the file
    is still each line once, in sorted order, across the parts' seams."""
    rng = random.Random(n)
    lines = [f"com,site{rng.randrange(50)})/p{rng.randrange(10**6)} 2026 {{}}" for _ in range(n)]
    path = tmp_path / "x.cdxj"
    write_index(path, lines)
    assert path.read_bytes() == "".join(f"{line}\n" for line in sorted(lines)).encode()
    assert not list(tmp_path.glob("*.tmp"))


_LABEL = st.text("abz09-", min_size=1, max_size=8)


@settings(max_examples=500)
@given(
    st.sampled_from(["http", "https"]),
    st.sampled_from(["", "www.", "www2."]),
    st.lists(_LABEL, min_size=1, max_size=4),
    st.text("aZ09-._~/", max_size=40),
)
def test_plain_urls_take_a_short_way_to_the_same_key(
    scheme: str, www: str, labels: list[str], path: str
) -> None:
    # surt_key's fast path (normalised URLs: no port, no query, unreserved path) against
    # the full rules for the same URL.
    url = f"{scheme}://{www}{'.'.join(labels)}/{path}"
    assert surt_key(url) == _surt_key_any(url)


_FIELD = st.one_of(st.just(""), st.just("-"), st.text(max_size=20))


@settings(max_examples=300)
@given(_FIELD, _FIELD, _FIELD, _FIELD, _FIELD, st.integers(0, 1 << 40), st.integers(0, 1 << 32))
def test_a_line_is_json_dumps_of_the_kept_fields(
    url: str, mime: str, status: str, digest: str, filename: str, offset: int, length: int
) -> None:
    # The line is put together by hand on the crawl loop: it must be byte for byte what
    # json.dumps writes for the same fields (quotes, backslashes, controls, non-ASCII).
    entry = cdx_entry(
        url="http://ex.com/",
        warc_date="2026-12-06T00:00:00Z",
        http_head=b"HTTP/1.1 200 OK\r\n\r\n",
        digest="sha256:ab",
        revisit=False,
    )
    entry = entry._replace(url=url, mime=mime, status=status, digest=digest)
    fields = {
        "url": url,
        "mime": mime,
        "status": status,
        "digest": digest,
        "length": str(length),
        "offset": str(offset),
        "filename": filename,
    }
    kept = {k: v for k, v in fields.items() if v and v != "-"}
    expected = f"{entry.key} {entry.timestamp} {json.dumps(kept)}"
    assert cdx_line(entry, offset=offset, length=length, filename=filename) == expected

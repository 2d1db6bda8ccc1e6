"""Sitemap parsing: URL sets, indexes, text and gzip files, limits and hostile XML."""

from __future__ import annotations

import gzip
import tracemalloc
from datetime import UTC, date, datetime, timedelta, timezone
from xml.sax.saxutils import escape

import pytest
from hypothesis import given
from hypothesis import strategies as st
from isal import isal_zlib

from trawl.parse.sitemap import (
    MAX_UNCOMPRESSED_BYTES,
    MAX_URLS,
    SitemapEntry,
    SitemapKind,
    SitemapParse,
    parse_lastmod,
    parse_sitemap,
)

NS = "http://www.sitemaps.org/schemas/sitemap/0.9"
DAY_AT = datetime(2024, 5, 1, tzinfo=UTC).timestamp()


def urlset(*urls: str, ns: str = f' xmlns="{NS}"') -> bytes:
    body = "".join(f"<url><loc>{url}</loc></url>" for url in urls)
    return f'<?xml version="1.0" encoding="UTF-8"?><urlset{ns}>{body}</urlset>'.encode()


def locs(result: SitemapParse) -> list[str]:
    return [entry.loc for entry in result.entries]


def test_limits_are_the_sitemaps_org_ones() -> None:
    assert (MAX_URLS, MAX_UNCOMPRESSED_BYTES) == (50_000, 52_428_800)


def test_urlset_with_lastmod_entities_whitespace_and_extensions() -> None:
    body = f"""<?xml version="1.0" encoding="UTF-8"?>
<urlset xmlns="{NS}" xmlns:image="http://www.google.com/schemas/sitemap-image/1.1"
        xmlns:xhtml="http://www.w3.org/1999/xhtml">
  <url>
    <loc>
      https://shop.example/search?q=a&amp;page=2
    </loc>
    <lastmod>2024-05-01</lastmod>
    <changefreq>daily</changefreq>
    <xhtml:link rel="alternate" hreflang="de" href="https://shop.example/de/"/>
    <image:image><image:loc>https://img.example/1.jpg</image:loc></image:image>
  </url>
  <url><loc>https://shop.example/b</loc><lastmod>2024-05-01T12:30:00+02:00</lastmod></url>
</urlset>""".encode()
    assert parse_sitemap(body) == SitemapParse(
        SitemapKind.URLSET,
        (
            SitemapEntry("https://shop.example/search?q=a&page=2", DAY_AT),
            SitemapEntry("https://shop.example/b", DAY_AT + 10.5 * 3600),
        ),
        skipped=0,
        truncated=False,
        error="",
    )


@pytest.mark.parametrize(
    "ns",
    [
        "",
        f' xmlns="{NS}"',
        ' xmlns="http://www.google.com/schemas/sitemap/0.84"',
        f' xmlns:sm="{NS}"',  # declared but unused: root and children have no namespace
    ],
)
def test_namespace_of_the_root_is_the_sitemap_namespace(ns: str) -> None:
    result = parse_sitemap(urlset("http://a.example/", "http://a.example/2", ns=ns))
    assert result.kind is SitemapKind.URLSET
    assert result.error == ""
    assert locs(result) == ["http://a.example/", "http://a.example/2"]


def test_children_outside_the_root_namespace_are_not_sitemap_elements() -> None:
    body = f'<urlset xmlns="{NS}"><url xmlns=""><loc>http://a/</loc></url></urlset>'
    assert parse_sitemap(body.encode()).entries == ()


def test_prefixed_sitemap_namespace() -> None:
    body = f'<sm:urlset xmlns:sm="{NS}"><sm:url><sm:loc>http://a/</sm:loc></sm:url></sm:urlset>'
    assert locs(parse_sitemap(body.encode())) == ["http://a/"]


def test_image_loc_never_stands_in_for_a_missing_loc() -> None:
    body = f"""<urlset xmlns="{NS}" xmlns:image="http://www.google.com/schemas/sitemap-image/1.1">
    <url><image:image><image:loc>https://img.example/1.jpg</image:loc></image:image></url>
    <url><image:loc>https://img.example/2.jpg</image:loc><loc>https://a.example/</loc></url>
    </urlset>""".encode()
    result = parse_sitemap(body)
    assert locs(result) == ["https://a.example/"]
    assert result.skipped == 1


def test_only_loc_in_its_place_counts() -> None:
    body = f"""<urlset xmlns="{NS}"><loc>http://stray.example/</loc>
    <url><data><loc>http://nested.example/</loc></data></url>
    <url><loc>http://first.example/</loc><loc>http://second.example/</loc></url></urlset>"""
    result = parse_sitemap(body.encode())
    assert locs(result) == ["http://first.example/"]
    assert result.skipped == 1  # the <url> whose only <loc> is nested too deep


def test_sitemap_index_lists_child_sitemaps() -> None:
    body = f"""<?xml version="1.0" encoding="UTF-8"?>
<sitemapindex xmlns="{NS}">
  <sitemap><loc>https://a.example/sitemap1.xml.gz</loc><lastmod>2024-05-01</lastmod></sitemap>
  <sitemap><loc>https://a.example/sitemap2.xml</loc></sitemap>
  <url><loc>https://a.example/not-a-sitemap</loc></url>
</sitemapindex>""".encode()
    assert parse_sitemap(body) == SitemapParse(
        SitemapKind.INDEX,
        (
            SitemapEntry("https://a.example/sitemap1.xml.gz", DAY_AT),
            SitemapEntry("https://a.example/sitemap2.xml", None),
        ),
        skipped=0,
        truncated=False,
        error="",
    )


def test_text_sitemap() -> None:
    body = (
        b"\xef\xbb\xbfhttps://a.example/\r\n\r\n  http://a.example/caf\xc3\xa9  \n"
        b"mailto:x@a.example\n/relative\nhttps://a.example/last"
    )
    result = parse_sitemap(body)
    assert result.kind is SitemapKind.TEXT
    assert locs(result) == ["https://a.example/", "http://a.example/café", "https://a.example/last"]
    assert all(entry.lastmod_at is None for entry in result.entries)
    assert (result.skipped, result.truncated, result.error) == (2, False, "")


def test_gzip_sitemap_is_sniffed_by_magic() -> None:
    plain = urlset("http://a.example/1", "http://a.example/2")
    assert parse_sitemap(gzip.compress(plain)) == parse_sitemap(plain)
    assert locs(parse_sitemap(gzip.compress(b"http://a.example/\n"))) == ["http://a.example/"]


def test_gzip_with_several_members_and_trailing_garbage() -> None:
    body = gzip.compress(b"http://a.example/1\n") + gzip.compress(b"http://a.example/2\n")
    result = parse_sitemap(body + b"\0\0junk")
    assert locs(result) == ["http://a.example/1", "http://a.example/2"]
    assert result.error == ""


def test_corrupt_gzip() -> None:
    result = parse_sitemap(b"\x1f\x8b" + b"\x08\x00not deflate data at all" * 3)
    assert result.kind is SitemapKind.INVALID
    assert result.entries == ()
    assert result.error.startswith("bad gzip data")


def test_gzip_cut_short_keeps_the_complete_entries() -> None:
    urls = [f"http://a.example/{i}" for i in range(2000)]
    packed = gzip.compress(urlset(*urls))
    result = parse_sitemap(packed[: len(packed) // 2])
    assert result.kind is SitemapKind.URLSET
    assert 0 < len(result.entries) < len(urls)
    assert locs(result) == urls[: len(result.entries)]
    assert result.error == "gzip stream ends early"


def test_leading_blank_lines_and_bom_before_the_xml_declaration() -> None:
    assert locs(parse_sitemap(b"\xef\xbb\xbf\n\n  " + urlset("http://a/"))) == ["http://a/"]


def test_utf16_and_latin1_sitemaps() -> None:
    text = urlset("http://a.example/é").decode().replace("UTF-8", "UTF-16")
    assert locs(parse_sitemap(text.encode("utf-16"))) == ["http://a.example/é"]
    text = urlset("http://a.example/é").decode().replace("UTF-8", "ISO-8859-1")
    assert locs(parse_sitemap(text.encode("latin-1"))) == ["http://a.example/é"]


@pytest.mark.parametrize("encoding", ["utf-7", "no-such-codec", "rot13", "idna", "undefined"])
def test_encodings_expat_cannot_read_are_an_error_not_an_exception(encoding: str) -> None:
    body = urlset("http://a/").replace(b'encoding="UTF-8"', f'encoding="{encoding}"'.encode())
    result = parse_sitemap(body)
    assert (result.kind, result.entries) == (SitemapKind.INVALID, ())
    assert result.error.startswith("unsupported XML encoding")


@pytest.mark.parametrize(
    "loc",
    [
        "ftp://a.example/",
        "mailto:a@a.example",
        "javascript:alert(1)",
        "/relative/path",
        "a.example/no-scheme",
        "http://",
        "https:///no-host",
        "http:\\\\a.example\\",
        "",
        "   ",
    ],
)
def test_locs_that_are_not_http_urls_are_skipped(loc: str) -> None:
    result = parse_sitemap(urlset(escape(loc), "HTTPS://A.example/Kept?As=Written"))
    assert locs(result) == ["HTTPS://A.example/Kept?As=Written"]
    assert result.skipped == 1


def test_url_without_loc_is_skipped_and_bad_lastmod_kept_as_none() -> None:
    body = f"""<urlset xmlns="{NS}"><url><lastmod>2024-05-01</lastmod></url>
    <url><loc>http://a/</loc><lastmod>last tuesday</lastmod></url></urlset>"""
    result = parse_sitemap(body.encode())
    assert result.entries == (SitemapEntry("http://a/", None),)
    assert result.skipped == 1


@pytest.mark.parametrize("as_text", [False, True])
def test_max_urls_truncates(as_text: bool) -> None:
    urls = [f"http://a.example/{i}" for i in range(10)]
    body = "\n".join(["ftp://skipped/", *urls]).encode() if as_text else urlset("x:", *urls)
    result = parse_sitemap(body, max_urls=4)
    assert locs(result) == urls[:4]
    assert result.truncated
    assert result.skipped == 2  # the bad one, then the first one over the limit, then stop
    assert result.error == ""
    exact = parse_sitemap(body, max_urls=10)
    assert (len(exact.entries), exact.truncated, exact.skipped) == (10, False, 1)


def test_body_over_max_bytes_is_cut_and_read_up_to_the_cut() -> None:
    urls = [f"http://a.example/{i:04d}" for i in range(1000)]
    body = urlset(*urls)
    result = parse_sitemap(body, max_bytes=len(body) // 2)
    assert result.kind is SitemapKind.URLSET
    assert result.truncated
    assert 400 < len(result.entries) < 500
    assert locs(result) == urls[: len(result.entries)]
    cut = len(body) // 2
    assert result.error == f"sitemap is over {cut} bytes decoded; read only the first {cut}"


def test_text_body_cut_drops_the_partial_last_line() -> None:
    body = b"http://a.example/1\nhttp://a.example/22\n"
    result = parse_sitemap(body, max_bytes=len(body) - 2)
    assert locs(result) == ["http://a.example/1"]
    assert result.truncated


def test_gzip_bomb_is_never_inflated_past_the_cap() -> None:
    max_bytes = 1 << 20
    # 256 MiB of blanks after one entry, deflated to ~2.5 MB (isal level 0 is quick to make).
    packer = isal_zlib.compressobj(0, wbits=31)
    blanks = b" " * (1 << 20)
    pieces = [packer.compress(urlset("http://a.example/").removesuffix(b"</urlset>"))]
    pieces += [packer.compress(blanks) for _ in range(256)]
    bomb = b"".join(pieces) + packer.compress(b"</urlset>") + packer.flush()
    tracemalloc.start()
    try:
        result = parse_sitemap(bomb, max_bytes=max_bytes)
        _, peak_bytes = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert locs(result) == ["http://a.example/"]
    assert result.truncated
    assert "over 1048576 bytes decoded" in result.error
    # The capped output, its cut copy and expat's buffer: a few times the cap, not 256 times.
    assert peak_bytes < 8 * max_bytes


BILLION_LAUGHS = b"""<?xml version="1.0"?>
<!DOCTYPE urlset [
 <!ENTITY lol "lol">
 <!ENTITY lol1 "&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;">
 <!ENTITY lol2 "&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;">
 <!ENTITY lol3 "&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;">
 <!ENTITY lol4 "&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;">
 <!ENTITY lol5 "&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;">
 <!ENTITY lol6 "&lol5;&lol5;&lol5;&lol5;&lol5;&lol5;&lol5;&lol5;&lol5;&lol5;">
 <!ENTITY lol7 "&lol6;&lol6;&lol6;&lol6;&lol6;&lol6;&lol6;&lol6;&lol6;&lol6;">
 <!ENTITY lol8 "&lol7;&lol7;&lol7;&lol7;&lol7;&lol7;&lol7;&lol7;&lol7;&lol7;">
 <!ENTITY lol9 "&lol8;&lol8;&lol8;&lol8;&lol8;&lol8;&lol8;&lol8;&lol8;&lol8;">
]>
<urlset><url><loc>http://a.example/&lol9;</loc></url></urlset>"""


def test_billion_laughs_is_refused() -> None:
    result = parse_sitemap(BILLION_LAUGHS)
    assert (result.kind, result.entries) == (SitemapKind.INVALID, ())
    assert result.error == "entity declarations are not allowed in a sitemap"


@pytest.mark.parametrize(
    "doctype",
    [
        '<!DOCTYPE urlset [<!ENTITY xxe SYSTEM "file:///etc/passwd">]>',
        '<!DOCTYPE urlset [<!ENTITY % xxe SYSTEM "file:///etc/passwd"> %xxe;]>',
        '<!DOCTYPE urlset SYSTEM "file:///etc/passwd">',
    ],
)
def test_external_entities_are_never_read(doctype: str) -> None:
    body = f'<?xml version="1.0"?>{doctype}<urlset><url><loc>http://a/&xxe;</loc></url>'
    result = parse_sitemap((body + "<url><loc>http://b/</loc></url></urlset>").encode())
    assert not any("root:" in loc for loc in locs(result))
    assert "root:" not in result.error
    if "[" in doctype:
        assert result.error.startswith("entity declarations are not allowed")
    else:  # the external subset is not loaded; expat skips the entity it might have declared
        assert locs(result) == ["http://a/", "http://b/"]


def test_malformed_xml_keeps_the_entries_before_the_error() -> None:
    body = urlset("http://a/1", "http://a/2").replace(
        b"</urlset>", b"<url><loc>http://a/3</loc></url><url><loc>http://a/4</lo></url></urlset>"
    )
    result = parse_sitemap(body)
    assert result.kind is SitemapKind.URLSET
    assert locs(result) == ["http://a/1", "http://a/2", "http://a/3"]
    assert result.error.startswith("malformed XML: mismatched tag")


@pytest.mark.parametrize(
    ("body", "error"),
    [
        (b"<!DOCTYPE html><html><body>Not found</body></html>", "root element <html>"),
        (b'<rss version="2.0"><channel></channel></rss>', "root element <rss>"),
        (b"", "empty body"),
        (b" \r\n\t", "empty body"),
        (b"<?xml version='1.0'?>", "malformed XML"),
    ],
)
def test_not_a_sitemap(body: bytes, error: str) -> None:
    result = parse_sitemap(body)
    assert (result.kind, result.entries) == (SitemapKind.INVALID, ())
    assert result.error.startswith(error)


def _check_invariants(result: SitemapParse, max_urls: int) -> None:
    assert isinstance(result, SitemapParse)
    assert len(result.entries) <= max_urls
    assert result.skipped >= 0
    assert all(entry.loc.lower().startswith(("http://", "https://")) for entry in result.entries)
    assert "\n" not in result.error


@given(st.binary(max_size=2000), st.integers(min_value=0, max_value=5))
def test_arbitrary_bytes_never_raise(body: bytes, max_urls: int) -> None:
    _check_invariants(parse_sitemap(body, max_urls=max_urls, max_bytes=1000), max_urls)
    _check_invariants(parse_sitemap(gzip.compress(body), max_urls=max_urls), max_urls)


XML_PIECES = st.sampled_from(
    [
        "<urlset>", "</urlset>", f'<urlset xmlns="{NS}">', "<sitemapindex>", "</sitemapindex>",
        "<url>", "</url>", "<sitemap>", "</sitemap>", "<loc>", "</loc>", "<lastmod>",
        "</lastmod>", "http://a/", "https://b/x?y=1&amp;z", "ftp://c/", "2024-05-01", "&lol;",
        "<!DOCTYPE urlset>", '<?xml version="1.0"?>', "<![CDATA[http://d/]]>", "<!-- c -->",
        "<image:loc>", "</image:loc>", " ", "\n", "<", "&", "\x00", "é",
    ]
)  # fmt: skip


@given(st.lists(XML_PIECES, max_size=40), st.integers(min_value=0, max_value=5))
def test_arbitrary_xml_fragments_never_raise(pieces: list[str], max_urls: int) -> None:
    _check_invariants(parse_sitemap("".join(pieces).encode(), max_urls=max_urls), max_urls)


DATETIMES = st.datetimes(
    min_value=datetime(1, 1, 2),
    max_value=datetime(9999, 12, 30),
    timezones=st.builds(
        timezone,
        st.integers(min_value=-(24 * 60 - 1), max_value=24 * 60 - 1).map(
            lambda minutes: timedelta(minutes=minutes)
        ),
    ),
)
WEB_URLS = st.builds(
    "{}://{}.example/{}".format,
    st.sampled_from(["http", "https"]),
    st.from_regex(r"[a-z0-9-]{1,20}", fullmatch=True),
    st.text(st.characters(exclude_categories=("Cs", "Cc", "Zs", "Zl", "Zp")), max_size=30),
)


@given(st.lists(st.tuples(WEB_URLS, st.none() | DATETIMES), max_size=20), st.booleans())
def test_generated_sitemaps_round_trip(
    urls: list[tuple[str, datetime | None]], index: bool
) -> None:
    root, item = ("sitemapindex", "sitemap") if index else ("urlset", "url")
    body = "".join(
        f"<{item}><loc> {escape(loc)}\n</loc>"
        + ("" if at is None else f"<lastmod>{at.isoformat()}</lastmod>")
        + f"</{item}>"
        for loc, at in urls
    )
    result = parse_sitemap(f'<{root} xmlns="{NS}">{body}</{root}>'.encode())
    assert result.kind is (SitemapKind.INDEX if index else SitemapKind.URLSET)
    assert result.entries == tuple(
        SitemapEntry(loc, None if at is None else at.timestamp()) for loc, at in urls
    )
    assert (result.skipped, result.truncated, result.error) == (0, False, "")


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("2024", datetime(2024, 1, 1, tzinfo=UTC)),
        ("2024-05", datetime(2024, 5, 1, tzinfo=UTC)),
        ("2024-05-01", datetime(2024, 5, 1, tzinfo=UTC)),
        ("2024-05-01T10:20Z", datetime(2024, 5, 1, 10, 20, tzinfo=UTC)),
        ("2024-05-01T10:20:30Z", datetime(2024, 5, 1, 10, 20, 30, tzinfo=UTC)),
        ("2024-05-01T10:20:30.5+01:00", datetime(2024, 5, 1, 9, 20, 30, 500_000, tzinfo=UTC)),
        ("2024-05-01T10:20:30.123456789Z", datetime(2024, 5, 1, 10, 20, 30, 123456, tzinfo=UTC)),
        ("2024-05-01T10:20:30-05:30", datetime(2024, 5, 1, 15, 50, 30, tzinfo=UTC)),
        # lenient forms seen in the wild
        ("  2024-05-01T10:20:30  ", datetime(2024, 5, 1, 10, 20, 30, tzinfo=UTC)),
        ("2024-05-01 10:20:30 +0200", datetime(2024, 5, 1, 8, 20, 30, tzinfo=UTC)),
        ("2024-05-01T10:20:30+02", datetime(2024, 5, 1, 8, 20, 30, tzinfo=UTC)),
        ("2024-05-01t10:20:30,25z", datetime(2024, 5, 1, 10, 20, 30, 250_000, tzinfo=UTC)),
    ],
)
def test_parse_lastmod_forms(text: str, expected: datetime) -> None:
    assert parse_lastmod(text) == expected.timestamp()


@pytest.mark.parametrize(
    "text",
    [
        "",
        "yesterday",
        "24-05-01",
        "2024-5-1",
        "2024-13-01",
        "2024-02-30",
        "0000-01-01",
        "2024-05-01T24:00Z",
        "2024-05-01T10:60Z",
        "2024-05-01T10:20:60Z",
        "2024-05-01T10Z",
        "2024-05-01T10:20+24:00",
        "2024-05-01T10:20+01:60",
        "2024-05-01T10:20:30Z junk",
        "Wed, 01 May 2024 10:20:30 GMT",
        "\uff12\uff10\uff12\uff14-05-01",  # full-width digits
    ],
)
def test_parse_lastmod_rejects(text: str) -> None:
    assert parse_lastmod(text) is None


@given(DATETIMES)
def test_parse_lastmod_round_trips_isoformat(moment: datetime) -> None:
    assert parse_lastmod(moment.isoformat()) == moment.timestamp()
    utc = moment.astimezone(UTC).replace(microsecond=0)
    assert parse_lastmod(utc.isoformat().replace("+00:00", "Z")) == utc.timestamp()


@given(st.dates(min_value=date(1, 1, 1)))
def test_date_only_is_midnight_utc(day: date) -> None:
    midnight_at = datetime(day.year, day.month, day.day, tzinfo=UTC).timestamp()
    assert parse_lastmod(day.isoformat()) == midnight_at
    assert (
        parse_lastmod(day.isoformat()[:7])
        == datetime(day.year, day.month, 1, tzinfo=UTC).timestamp()
    )

"""Test-web sitemaps render to well-formed sitemaps.org XML, gzipped when named .gz."""

from __future__ import annotations

import gzip
from xml.etree import ElementTree

from hypothesis import given
from hypothesis import strategies as st

from trawl.testweb.sitemaps import Sitemap, SitemapEntry, render_sitemap

NS = "{http://www.sitemaps.org/schemas/sitemap/0.9}"
# Path characters that need escaping in XML, among ordinary ones.
paths = st.text(st.sampled_from("abc/&<>'\"%-_.~0123456789"), max_size=20).map(lambda p: "/" + p)
lastmods = st.none() | st.dates().map(str)


def parse(body: bytes) -> ElementTree.Element:
    return ElementTree.fromstring(body)


@given(entries=st.lists(st.tuples(paths, lastmods), max_size=8), is_index=st.booleans())
def test_entries_round_trip_through_an_xml_parser(
    entries: list[tuple[str, str | None]], is_index: bool
) -> None:
    sitemap = Sitemap(
        "site0001.test",
        "/sitemap.xml",
        tuple(SitemapEntry("site0001.test", path, lastmod) for path, lastmod in entries),
        is_index=is_index,
    )
    root = parse(render_sitemap(sitemap, 8123))
    item = "sitemap" if is_index else "url"
    assert root.tag == NS + ("sitemapindex" if is_index else "urlset")
    got = [(el.findtext(NS + "loc"), el.findtext(NS + "lastmod")) for el in root]
    assert all(el.tag == NS + item for el in root)
    assert got == [(f"http://site0001.test:8123{path}", lastmod) for path, lastmod in entries]


def test_gz_sitemap_is_a_stable_gzip_file() -> None:
    entries = (SitemapEntry("site0001.test", "/hidden/1.html", "2024-02-01", "monthly"),)
    sitemap = Sitemap("site0001.test", "/sitemaps/pages-2.xml.gz", entries)
    body = render_sitemap(sitemap, 8123)
    assert sitemap.content_type == "application/gzip"
    assert body == render_sitemap(sitemap, 8123)  # mtime 0: same bytes every time
    (url,) = parse(gzip.decompress(body))
    assert url.findtext(NS + "changefreq") == "monthly"
    plain = Sitemap("site0001.test", "/sitemap.xml", entries)
    assert plain.content_type == "application/xml"
    assert parse(render_sitemap(plain, 8123)).tag == NS + "urlset"

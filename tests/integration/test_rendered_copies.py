"""A browser's DOM of a page goes through the checks a fetched body goes through (issue 18,
loop/content.py `store_rendered`): real SQLite, real WARC files read back with warcio.

The DOMs here are what a browser would hand back; the worker's reading of them is the real
`process_rendered`.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING

import pytest
from warcio.archiveiterator import ArchiveIterator

from trawl.config import Settings, with_overrides
from trawl.loop.content import StoredContent
from trawl.model import PAGE_RENDERED, PageRecord
from trawl.parse.page_work import process_rendered
from trawl.render.ports import RenderItem
from trawl.store.layout import WARC_DIR
from trawl.store.warc import read_record
from trawl.urls.normalise import url_hash
from trawl.wiring.embedded import build_context

if TYPE_CHECKING:
    from collections.abc import Iterator
    from pathlib import Path

    from trawl.loop.content import RenderedCopy
    from trawl.loop.context import CrawlContext

SITE = "app.test"
SHELL = b'<!doctype html><html><body><div id="root"></div><script src="/a.js"></script></body>'
NOUNS = (
    "harbour",
    "lantern",
    "meadow",
    "orchard",
    "quarry",
    "ribbon",
    "saddle",
    "thistle",
    "willow",
    "anchor",
    "bramble",
    "cinder",
    "ember",
    "fennel",
    "garnet",
    "hollow",
    "juniper",
    "kestrel",
    "lichen",
    "marble",
    "nettle",
)


SENTENCES = (
    "The {} was left near the {} for most of the day.",
    "Nobody could say why a {} would ever be traded for a {} in winter.",
)


def _dom(title: str, seed: int, *, extra: str = "", robots: str = "") -> bytes:
    """A rendered page of prose: ten sentences a paragraph, its words drawn by `seed`."""
    sentence = SENTENCES[seed % len(SENTENCES)]
    paragraphs = "".join(
        "<p>"
        + " ".join(
            sentence.format(
                NOUNS[(seed * 7 + p * 3 + i) % len(NOUNS)],
                NOUNS[(seed * 5 + p + i * 2) % len(NOUNS)],
            )
            for i in range(10)
        )
        + "</p>"
        for p in range(8)
    )
    meta = f'<meta name="robots" content="{robots}">' if robots else ""
    return (
        f'<html><head>{meta}</head><body><div id="root"><h1>{title}</h1>{paragraphs}{extra}'
        f'<a href="/next">next</a></div><script src="/a.js"></script></body></html>'
    ).encode()


@pytest.fixture
def ctx(tmp_path: Path) -> Iterator[CrawlContext]:
    settings = with_overrides(Settings(), crawl={"contact_url": "https://trawl.invalid/t"})
    context = build_context(settings, tmp_path)
    try:
        yield context
    finally:
        asyncio.run(context.durability.close())


def _page(ctx: CrawlContext, path: str) -> tuple[RenderItem, PageRecord]:
    url = f"http://{SITE}{path}"
    key = url_hash(url)
    record = PageRecord(key, url, 1000.0, 200, site=SITE, warc_record_id=f"<urn:plain:{path}>")
    ctx.records.put_page(record, None)
    item = RenderItem(
        url, key, SITE, "empty-mount", "plain.warc.gz:0:1", record.warc_record_id, 1000.0
    )
    return item, record


def _store(ctx: CrawlContext, path: str, dom: bytes) -> tuple[RenderedCopy, PageRecord]:
    item, record = _page(ctx, path)
    out = process_rendered(item.url, dom, SHELL, "trawl")
    copy = StoredContent(ctx).store_rendered(item, record, dom, out, "done", item.record_id)
    return copy, record


def _conversions(data: Path) -> list[tuple[str, str, bytes]]:
    found = []
    for path in sorted((data / WARC_DIR).glob("*.warc.gz")):
        with path.open("rb") as fh:
            for rec in ArchiveIterator(fh, check_digests="raise"):
                if rec.rec_type == "conversion":
                    head = rec.rec_headers
                    uri, refers = (
                        head.get_header("WARC-Target-URI"),
                        head.get_header("WARC-Refers-To"),
                    )
                    found.append((uri, refers, rec.content_stream().read()))
    return found


def test_a_new_dom_is_a_conversion_record_and_a_page_rendered_event(
    ctx: CrawlContext, tmp_path: Path
) -> None:
    dom = _dom("Orders", 1)
    copy, _ = _store(ctx, "/orders", dom)
    assert copy.duplicate_of == ""
    assert copy.event is not None
    assert copy.event.kind == PAGE_RENDERED
    assert copy.event.storage_key == copy.storage_key
    assert copy.event.to_json()["type"] == "page.rendered"
    ctx.warc.sync()
    stored = read_record(tmp_path / WARC_DIR, copy.storage_key)
    assert stored.payload == dom
    assert stored.http_status == 0
    assert stored.header("Content-Type") == "text/html; charset=utf-8"
    assert _conversions(tmp_path) == [(f"http://{SITE}/orders", "<urn:plain:/orders>", dom)]


def test_the_same_dom_again_at_the_same_url_is_neither_stored_nor_announced(
    ctx: CrawlContext, tmp_path: Path
) -> None:
    dom = _dom("Orders", 1)
    first, _ = _store(ctx, "/orders", dom)
    again, _ = _store(ctx, "/orders", dom)
    assert again.storage_key == first.storage_key
    assert again.event is None
    ctx.warc.sync()
    assert len(_conversions(tmp_path)) == 1


def test_an_identical_dom_at_another_url_names_the_first_and_is_not_stored_twice(
    ctx: CrawlContext, tmp_path: Path
) -> None:
    dom = _dom("Orders", 1)
    first, _ = _store(ctx, "/orders", dom)
    copy, _ = _store(ctx, "/orders?tab=1", dom)
    assert copy.duplicate_of == f"http://{SITE}/orders"
    assert copy.storage_key == first.storage_key
    assert copy.event is not None
    assert copy.event.storage_key == first.storage_key
    ctx.warc.sync()
    assert len(_conversions(tmp_path)) == 1


def test_a_nearly_identical_dom_is_stored_and_names_its_main_copy(ctx: CrawlContext) -> None:
    _, main = _store(ctx, "/orders", _dom("Orders", 1))
    _, near = _store(ctx, "/orders/print", _dom("Orders", 1, extra="<p>printed</p>"))
    _, other = _store(ctx, "/garden", _dom("Garden", 4))
    assert main.near_duplicate_of == ""
    assert near.near_duplicate_of == f"http://{SITE}/orders"
    assert other.near_duplicate_of == ""
    assert ctx.stats.near_duplicates == 1


def test_a_dom_its_script_marked_noindex_is_not_stored(ctx: CrawlContext, tmp_path: Path) -> None:
    copy, _ = _store(ctx, "/secret", _dom("Secret", 2, robots="noindex"))
    assert copy.storage_key == ""
    assert copy.event is None
    ctx.warc.sync()
    assert _conversions(tmp_path) == []

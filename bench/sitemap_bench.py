"""Microseconds per URL for sitemap parsing: expat handlers vs ElementTree vs lxml iterparse.

Run: `python bench/sitemap_bench.py [--repeat N]`. No network. Sitemaps are generated: a
big one (50,000 URLs, the sitemaps.org maximum, ~5 MB) and a small one (200 URLs), each
URL with a `<lastmod>` in one of the W3C forms, some with `<changefreq>`, `<priority>` and
an `<image:image>` extension that must be ignored.

Every candidate does the same work as `trawl.parse.sitemap.parse_sitemap`: parse, find the
root's namespace, take each `<url>`'s first `<loc>` and `<lastmod>`, check the scheme and
read the date, with the same hostile-XML guards:
- expat: the shipped function (pyexpat handlers, no tree; refuses entity declarations);
- etree: defusedxml.ElementTree.iterparse (stdlib tree builder, entity declarations refused);
- lxml: lxml.etree.iterparse with resolve_entities=False, no_network=True, huge_tree=False,
  in its fastest form (end events filtered to <url> in C).
It also times inflating the gzipped big sitemap with zlib and with isal.
Figures are medians of `--repeat` runs (the machine is shared), candidates interleaved in each.
"""

from __future__ import annotations

import argparse
import functools
import gzip
import io
import random
import statistics
import sys
import timeit
import zlib
from pathlib import Path
from typing import TYPE_CHECKING

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import defusedxml.ElementTree as defused_et  # type: ignore[import-untyped]  # no stubs
import lxml.etree  # type: ignore[import-untyped]  # no stubs installed
from isal import isal_zlib

from bench.runinfo import describe_run
from trawl.parse.sitemap import _WEB_URL, SitemapEntry, parse_lastmod, parse_sitemap

if TYPE_CHECKING:
    from collections.abc import Callable, Mapping

NS = "http://www.sitemaps.org/schemas/sitemap/0.9"
IMAGE_NS = "http://www.google.com/schemas/sitemap-image/1.1"
SECTIONS = ("world", "politics", "business", "tech", "sport", "culture")


def _lastmod(rng: random.Random) -> str:
    day = f"2025-{rng.randrange(1, 13):02d}-{rng.randrange(1, 29):02d}"
    form = rng.random()
    if form < 0.3:
        return day
    if form < 0.8:
        return f"{day}T{rng.randrange(24):02d}:{rng.randrange(60):02d}:00+00:00"
    return f"{day}T{rng.randrange(24):02d}:{rng.randrange(60):02d}:{rng.randrange(60):02d}Z"


def make_sitemap(rng: random.Random, urls: int) -> bytes:
    lines = [
        '<?xml version="1.0" encoding="UTF-8"?>',
        f'<urlset xmlns="{NS}" xmlns:image="{IMAGE_NS}">',
    ]
    for i in range(urls):
        section = rng.choice(SECTIONS)
        extra = ""
        if rng.random() < 0.2:
            extra += "<changefreq>daily</changefreq><priority>0.6</priority>"
        if rng.random() < 0.1:
            extra += (
                f"<image:image><image:loc>https://img.example/{i}.jpg</image:loc></image:image>"
            )
        lines.append(
            f"<url><loc>https://www.example.com/{section}/{i}-story-{rng.randrange(10**6)}"
            f"</loc><lastmod>{_lastmod(rng)}</lastmod>{extra}</url>"
        )
    lines.append("</urlset>")
    return "\n".join(lines).encode("utf-8")


class _Collector:
    """The shared tail of the tree candidates: check and keep one entry."""

    def __init__(self) -> None:
        self.entries: list[SitemapEntry] = []
        self.skipped = 0

    def add(self, loc: str | None, lastmod: str | None) -> None:
        if loc is None or not _WEB_URL.match(loc := loc.strip()):
            self.skipped += 1
            return
        self.entries.append(SitemapEntry(loc, parse_lastmod(lastmod) if lastmod else None))


def etree_parse(body: bytes) -> int:
    out = _Collector()
    events = defused_et.iterparse(io.BytesIO(body), events=("start", "end"), forbid_dtd=False)
    _, root = next(events)
    ns = root.tag[: root.tag.index("}") + 1] if root.tag.startswith("{") else ""
    item, loc, lastmod = ns + "url", ns + "loc", ns + "lastmod"
    for event, element in events:
        if event == "end" and element.tag == item:
            out.add(element.findtext(loc), element.findtext(lastmod))
            root.clear()  # keep memory flat: drop the finished entries
    return len(out.entries)


def lxml_parse(body: bytes) -> int:
    # lxml's fastest form: only "end" events, filtered in C to <url> in any namespace; the
    # root's namespace is then read from the first one (the others must match it).
    out = _Collector()
    events = lxml.etree.iterparse(
        io.BytesIO(body),
        events=("end",),
        tag="{*}url",
        resolve_entities=False,
        no_network=True,
        huge_tree=False,
        load_dtd=False,
    )
    item = ns = ""
    for _, element in events:
        if not item:
            item = element.tag
            ns = item[: item.index("}") + 1] if item.startswith("{") else ""
        if element.tag == item:
            out.add(element.findtext(ns + "loc"), element.findtext(ns + "lastmod"))
        element.clear()
        while element.getprevious() is not None:  # drop finished siblings: flat memory
            del element.getparent()[0]
    return len(out.entries)


def expat_parse(body: bytes) -> int:
    return len(parse_sitemap(body).entries)


def zlib_gunzip(body: bytes) -> int:
    return len(zlib.decompressobj(wbits=31).decompress(body))


def isal_gunzip(body: bytes) -> int:
    return len(isal_zlib.decompressobj(wbits=31).decompress(body))


def _medians_s(
    candidates: Mapping[str, Callable[[bytes], object]], body: bytes, number: int, repeat: int
) -> dict[str, float]:
    """Median seconds per call of each candidate, rounds interleaved so drift hits all alike."""
    runs: dict[str, list[float]] = {name: [] for name in candidates}
    for _ in range(repeat):
        for name, fn in candidates.items():
            runs[name].append(timeit.timeit(functools.partial(fn, body), number=number) / number)
    return {name: statistics.median(times) for name, times in runs.items()}


def main() -> None:
    args = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    args.add_argument("--repeat", type=int, default=9)
    repeat = args.parse_args().repeat
    rng = random.Random(5)
    big, small = make_sitemap(rng, 50_000), make_sitemap(rng, 200)
    for key, value in describe_run().items():
        print(f"{key}: {value}")
    print(f"median of {repeat} runs; big: 50000 URLs {len(big) / 1e6:.1f} MB, small: 200 URLs")
    candidates = {"expat": expat_parse, "etree": etree_parse, "lxml": lxml_parse}
    for fn in candidates.values():  # all must agree before any is timed
        assert fn(big) == 50_000, fn
    big_s = _medians_s(candidates, big, 1, repeat)
    small_s = _medians_s(candidates, small, 50, repeat)
    print(f"{'parser':8} {'big us/URL':>11} {'vs expat':>9} {'small us/URL':>13} {'vs expat':>9}")
    for name in candidates:
        big_ratio, small_ratio = big_s[name] / big_s["expat"], small_s[name] / small_s["expat"]
        print(
            f"{name:8} {big_s[name] / 50_000 * 1e6:11.2f} {big_ratio:8.2f}x"
            f" {small_s[name] / 200 * 1e6:13.2f} {small_ratio:8.2f}x"
        )
    packed = gzip.compress(big)
    gunzip_s = _medians_s({"zlib": zlib_gunzip, "isal": isal_gunzip}, packed, 1, repeat)
    zlib_ms, isal_ms = gunzip_s["zlib"] * 1e3, gunzip_s["isal"] * 1e3
    print(f"gunzip of the big sitemap ({len(packed) / 1e6:.2f} MB compressed):")
    print(f"  zlib {zlib_ms:6.1f} ms   isal {isal_ms:6.1f} ms  ({zlib_ms / isal_ms:.2f}x faster)")


if __name__ == "__main__":
    main()

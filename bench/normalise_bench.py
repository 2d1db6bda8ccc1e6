"""Microseconds per `normalise_url` call on a realistic mix of links.

Run: `python bench/normalise_bench.py`. The mix is what a news page's links look like:
mostly relative paths, some absolute same-site and off-site links, a few with tracking
parameters, escapes or dot segments, and a few invalid ones (mailto:, javascript:).
The baseline is `urllib.parse.urljoin` alone, which does a small part of the work.

`python -m bench.normalise_bench --pages [--baseline-src /tmp/base17u/src]` also times
`normalise_links` (normalise + urlHash + site, with the worker's link memo) page by page
over the real links of the quick bench web (800 sites x 12 pages, generated into
/tmp/trawl-bench-web-quick or reused), in crawl order (round robin over sites, every
second page, as one of two workers sees them) and in site order, plus the synthetic mix
cut into 48-link pages. Baseline and candidate run interleaved in one process, the best of
`--rounds` each, the candidate with a cold memo each time (as a new worker). The baseline is
normalise_links before the memo, on the normaliser of another checkout's src
(`git worktree add --detach /tmp/base17u d985f65`).
"""

from __future__ import annotations

import argparse
import contextlib
import importlib.util
import itertools
import pickle
import platform
import random
import subprocess
import sys
import time
import timeit
import tracemalloc
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import urljoin

from trawl.errors import InvalidUrl
from trawl.parse.page_work import FoundLink
from trawl.urls.link_memo import DEFAULT_MAX_BYTES, LinkMemo
from trawl.urls.normalise import normalise_url, url_hash
from trawl.urls.registered_domain import site_of_normalised

if TYPE_CHECKING:
    from collections.abc import Callable

BASES = [f"https://news{i}.example.com/section/{i}/article-{i * 7}.html" for i in range(20)]
SECTIONS = ["world", "politics", "business", "tech", "sport", "culture", "opinion", "video"]


def _links(rng: random.Random, n: int) -> list[str]:
    links: list[str] = []
    for _ in range(n):
        section = rng.choice(SECTIONS)
        slug = f"{section}-story-{rng.randrange(100000)}"
        kind = rng.random()
        if kind < 0.45:
            links.append(f"/{section}/2026/11/{slug}")
        elif kind < 0.60:
            links.append(f"{slug}.html")
        elif kind < 0.75:
            links.append(f"https://news{rng.randrange(20)}.example.com/{section}/{slug}")
        elif kind < 0.83:
            links.append(f"/{section}/{slug}?utm_source=home&utm_medium=web&page={kind:.2f}")
        elif kind < 0.88:
            links.append(f"https://www.Other{rng.randrange(500)}.org:443/a/../{slug}#top")
        elif kind < 0.92:
            links.append(f"../tags/caf%c3%a9 {section}/?b=2&a=1")
        elif kind < 0.95:
            links.append(f"//cdn.example.net/{section}/{slug}?fbclid=xyz")
        elif kind < 0.98:
            links.append(f"mailto:editor@news{rng.randrange(20)}.example.com")
        else:
            links.append("javascript:void(0)")
    return links


def _run(links: list[tuple[str, str]]) -> None:
    for href, base in links:
        with contextlib.suppress(InvalidUrl):
            normalise_url(href, base)


def _baseline(links: list[tuple[str, str]]) -> None:
    for href, base in links:
        urljoin(base, href)


def _per_call_us(
    fn: Callable[[list[tuple[str, str]]], None], links: list[tuple[str, str]]
) -> float:
    timer = timeit.Timer(lambda: fn(links))
    best = min(timer.repeat(repeat=5, number=1))
    return best / len(links) * 1e6


def main() -> None:
    rng = random.Random(7)
    mix = [(href, rng.choice(BASES)) for href in _links(rng, 50_000)]
    relative = [(f"/world/2026/11/story-{i}", BASES[i % 20]) for i in range(50_000)]
    hashes = [normalise_url(href, base) for href, base in relative[:10_000]]
    commit = subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, check=False
    ).stdout.strip()
    print(f"command: {' '.join(sys.argv)}  commit: {commit or '?'}  machine: {platform.machine()}")
    print(f"python {platform.python_version()} on {platform.platform()}")
    base_us = _per_call_us(_baseline, mix)
    mix_us = _per_call_us(_run, mix)
    rel_us = _per_call_us(_run, relative)
    hash_s = min(timeit.repeat(lambda: [url_hash(u) for u in hashes], number=1, repeat=5))
    print(f"urljoin only (baseline), mix : {base_us:6.2f} us/call")
    print(
        f"normalise_url, realistic mix : {mix_us:6.2f} us/call  ({mix_us / base_us:.2f}x urljoin)"
    )
    print(f"normalise_url, relative path : {rel_us:6.2f} us/call")
    print(f"url_hash                     : {hash_s / len(hashes) * 1e6:6.2f} us/call")


PAGES_FILE = Path("/tmp/trawl-bench-normalise-pages.pkl")
Page = tuple[tuple[str, ...], str]


def bench_web_pages(
    root: Path = Path("/tmp/trawl-bench-web-quick"),
    n_sites: int = 800,
    pages_per_site: int = 12,
    paths_per_site: int | None = None,
) -> list[Page]:
    """(hrefs, base) of the pages of a bench web (the quick one by default; generated into
    `root` or reused) under every host name, in crawl order: round robin over sites (a
    polite crawl spreads a site's pages out in time). `paths_per_site` keeps only each
    site's first paths."""
    from bench.webfarm.generate import file_for, generate_web
    from trawl.parse.links import extract_links

    spec = generate_web(root, n_sites=n_sites, pages_per_site=pages_per_site)
    paths = spec.page_paths[:paths_per_site]
    per_site: list[list[Page]] = []
    for site in spec.sites:
        pages: list[Page] = []
        for host in site.hosts:
            for path in paths:
                file = file_for(spec.root / "www" / site.host, path)
                parsed = extract_links(file.read_bytes(), f"http://{host}{path}")
                pages.append((parsed.hrefs, parsed.base_url))
        per_site.append(pages)
    return [p for round_ in itertools.zip_longest(*per_site) for p in round_ if p is not None]


def _baseline_links(src: str) -> Callable[[tuple[str, ...], str], object]:
    """normalise_links as at commit d985f65 (no memo), on the normaliser found under `src`."""
    path = Path(src) / "trawl" / "urls" / "normalise.py"
    spec = importlib.util.spec_from_file_location("baseline_normalise", path)
    assert spec is not None
    assert spec.loader is not None
    old = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = old  # dataclasses look their module up while building
    spec.loader.exec_module(old)

    def links(hrefs: tuple[str, ...], base: str) -> object:
        seen: set[str] = set()
        out: list[FoundLink] = []
        bad = 0
        for href in hrefs:
            try:
                url = old.normalise_url(href, base, old.DEFAULT_RULES)
                site = site_of_normalised(url)
            except (InvalidUrl, ValueError):
                bad += 1
                continue
            if url in seen:
                continue
            seen.add(url)
            out.append(FoundLink(url, old.url_hash(url), site))
        return tuple(out), bad

    return links


def _synthetic_pages() -> list[Page]:
    rng = random.Random(7)
    links = _links(rng, 48 * 2000)
    return [(tuple(links[i : i + 48]), rng.choice(BASES)) for i in range(0, len(links), 48)]


def pages_main(baseline_src: str, rounds: int) -> None:
    if not PAGES_FILE.exists():
        PAGES_FILE.write_bytes(pickle.dumps(bench_web_pages()))
    web: list[Page] = pickle.loads(PAGES_FILE.read_bytes())
    baseline = _baseline_links(baseline_src)
    print(f"baseline: normalise_links of d985f65 with {baseline_src}/trawl/urls/normalise.py")
    orders = {
        "crawl": web[::2],  # one of two workers, round robin over sites
        "by-site": sorted(web, key=lambda page: page[1]),
        "synthetic": _synthetic_pages(),
    }
    for kind, pages in orders.items():
        n_links = sum(len(hrefs) for hrefs, _ in pages)
        best = {"baseline": float("inf"), "candidate": float("inf")}
        for _ in range(rounds):  # interleaved: the machine's noise hits both alike
            start = time.perf_counter()
            for hrefs, base in pages:
                baseline(hrefs, base)
            best["baseline"] = min(best["baseline"], time.perf_counter() - start)
            memo = LinkMemo(FoundLink)  # cold, as in a new worker process
            start = time.perf_counter()
            for hrefs, base in pages:
                memo.links(hrefs, base)
            best["candidate"] = min(best["candidate"], time.perf_counter() - start)
        stats = memo.stats()
        for name, seconds in best.items():
            print(
                f"{kind:9} {name:9}: {seconds / n_links * 1e6:5.2f} us/link "
                f"{seconds / len(pages) * 1e3:6.3f} ms/page "
                f"({len(pages)} pages, {n_links / len(pages):.1f} links/page)"
            )
        print(
            f"{kind:9} candidate is {best['baseline'] / best['candidate']:.2f}x as fast "
            f"(best of {rounds}); memo hits {1 - stats.misses / stats.lookups:.1%}"
        )
    _memory(web)


def _memory(pages: list[Page]) -> None:
    """Heap taken by a memo that never empties, against the bytes it counts."""
    blobs = [pickle.dumps(page) for page in pages]
    memo = LinkMemo(FoundLink, max_bytes=1 << 62)
    memo.links(*pages[0])  # warm the imports and the normaliser's small caches
    tracemalloc.start()
    for blob in blobs:
        hrefs, base = pickle.loads(blob)  # fresh strings, as a worker unpickles each page
        memo.links(hrefs, base)
    del hrefs, base
    traced = tracemalloc.get_traced_memory()[0]
    tracemalloc.stop()
    stats = memo.stats()
    print(
        f"memory: {stats.entries} entries, {traced / 1e6:.1f} MB traced, "
        f"{stats.bytes / 1e6:.1f} MB counted ({traced / stats.entries:.0f} B an entry; "
        f"the memo empties itself past {DEFAULT_MAX_BYTES / 1e6:.0f} MB counted)"
    )


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--pages", action="store_true", help="also time normalise_links")
    parser.add_argument("--baseline-src", default="/tmp/base17u/src")
    parser.add_argument("--rounds", type=int, default=5)
    cli = parser.parse_args()
    main()
    if cli.pages:
        pages_main(cli.baseline_src, cli.rounds)

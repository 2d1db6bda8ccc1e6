"""Seen-checks per second: the raw Bloom check, and the whole per-link path.

    python -m bench.seen_rate [--hashes 1000000] [--pages 4000] [--repeat 3]

(a) `SeenSet.add_if_new(url_hash)` on precomputed hashes, all new and then all seen again;
    baseline: the same check-and-add on a Python `set` (exact, ~100 B per URL).
(b) What the crawl loop does for every extracted link: `normalise_url(href, base)`,
    `url_hash`, `site_of` and `SeenSet.add_if_new`, over pages of 50 hrefs each in a realistic
    mix: site navigation repeated on every page (so mostly "seen"), absolute-path and
    document-relative article links, `../` paths, fragments, utm-tagged links, absolute and
    protocol-relative cross-site links and the odd mailto:/javascript: (rejected as InvalidUrl).
    Each stage is timed cumulatively too (normalise; + hash; + site), so the cost of each shows.

Single-threaded, so every rate is per core. The design needs 20,000 seen-checks/s; ratios
are printed against that. Each repeat starts with a fresh SeenSet; the normaliser's host cache
and the registered-domain cache stay warm after the first repeat, as in a running crawl.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import random
import tempfile
import time
from pathlib import Path
from typing import TYPE_CHECKING

from bench.runinfo import describe_run
from trawl.errors import InvalidUrl
from trawl.seen.seen_set import SeenSet
from trawl.store.sqlite_db import open_database
from trawl.urls.normalise import normalise_url, url_hash
from trawl.urls.registered_domain import site_of

if TYPE_CHECKING:
    import sqlite3
    from collections.abc import Callable

RESULTS = Path(__file__).parent / "results" / "seen_rate.json"
NEEDED_PER_S = 20_000
LINKS_PER_PAGE = 50
SEEN_CAPACITY = 10_000_000
SECTIONS = ("world", "politics", "business", "tech", "sport", "culture", "opinion", "video")
NAV = ("/", "/about/", "/contact", "/privacy", *(f"/{s}/" for s in SECTIONS))  # 12 nav links

Page = tuple[str, list[str]]  # (base URL, hrefs)


# -- the link mix ----------------------------------------------------------------------------
def _href(rng: random.Random) -> str:
    section = rng.choice(SECTIONS)
    slug = f"{section}-story-{rng.randrange(1_000_000)}"
    kind = rng.random()
    if kind < 0.40:
        return f"/{section}/2026/11/{slug}"
    if kind < 0.52:
        return f"{slug}.html"
    if kind < 0.62:
        return f"../{section}/{slug}.html"
    if kind < 0.70:
        return rng.choice(("#comments", "#top", f"/{section}/{slug}#share"))
    if kind < 0.80:
        return f"/{section}/{slug}?utm_source=home&utm_medium=web&utm_campaign=c{rng.randrange(9)}"
    if kind < 0.92:
        host = f"{rng.choice(('www', 'blog', 'news', 'shop'))}.other{rng.randrange(20_000)}.org"
        return f"https://{host}/{section}/{slug}"
    if kind < 0.97:
        return f"//cdn{rng.randrange(50)}.example.net/{section}/{slug}?fbclid=x{rng.randrange(99)}"
    return rng.choice(("mailto:desk@example.com", "javascript:void(0)", "tel:+15550100"))


def make_pages(n_pages: int, seed: int) -> list[Page]:
    rng = random.Random(seed)
    pages: list[Page] = []
    for _ in range(n_pages):
        site = rng.randrange(500)
        base = f"https://www.site{site}.example.com/{rng.choice(SECTIONS)}/2026/p{rng.randrange(10**6)}.html"
        hrefs = list(NAV) + [_href(rng) for _ in range(LINKS_PER_PAGE - len(NAV))]
        rng.shuffle(hrefs)
        pages.append((base, hrefs))
    return pages


# -- the paths being timed --------------------------------------------------------------------
def full_path(pages: list[Page], seen: SeenSet) -> int:
    """The crawl loop's per-link work; returns how many links were new."""
    new = 0
    for base, hrefs in pages:
        for href in hrefs:
            try:
                url = normalise_url(href, base)
                site = site_of(url)
            except InvalidUrl:
                continue
            if seen.add_if_new(url_hash(url)) and site:
                new += 1
    return new


def normalise_only(pages: list[Page], seen: SeenSet) -> int:
    for base, hrefs in pages:
        for href in hrefs:
            with contextlib.suppress(InvalidUrl):
                normalise_url(href, base)
    return 0


def normalise_and_hash(pages: list[Page], seen: SeenSet) -> int:
    for base, hrefs in pages:
        for href in hrefs:
            with contextlib.suppress(InvalidUrl):
                url_hash(normalise_url(href, base))
    return 0


def normalise_hash_site(pages: list[Page], seen: SeenSet) -> int:
    for base, hrefs in pages:
        for href in hrefs:
            with contextlib.suppress(InvalidUrl):
                url = normalise_url(href, base)
                url_hash(url)
                site_of(url)
    return 0


# -- timing -----------------------------------------------------------------------------------
def fresh_seen(conn: sqlite3.Connection, workdir: Path) -> SeenSet:
    return SeenSet(conn, workdir / "seen.bloom", capacity=SEEN_CAPACITY, fp_rate=0.01)


def best_rate(n: int, repeat: int, run: Callable[[], object]) -> float:
    """Operations per second of the fastest of `repeat` runs of `n` operations each."""
    best = float("inf")
    for _ in range(repeat):
        t0 = time.perf_counter()
        run()
        best = min(best, time.perf_counter() - t0)
    return n / best


def raw_rates(hashes: list[str], repeat: int, make: Callable[[], SeenSet]) -> dict[str, float]:
    def bloom_new() -> None:
        add = make().add_if_new
        for h in hashes:
            add(h)

    warm = make()
    for h in hashes:
        warm.add_if_new(h)

    def bloom_seen() -> None:
        add = warm.add_if_new
        for h in hashes:
            add(h)

    def python_set() -> None:
        exact: set[str] = set()
        for h in hashes:
            if h not in exact:
                exact.add(h)

    n = len(hashes)
    return {
        "bloom_add_if_new_new_per_s": best_rate(n, repeat, bloom_new),
        "bloom_add_if_new_seen_per_s": best_rate(n, repeat, bloom_seen),
        "python_set_baseline_per_s": best_rate(n, repeat, python_set),
    }


def _bound(
    stage: Callable[[list[Page], SeenSet], int], pages: list[Page], make: Callable[[], SeenSet]
) -> Callable[[], int]:
    return lambda: stage(pages, make())


def path_rates(pages: list[Page], repeat: int, make: Callable[[], SeenSet]) -> dict[str, float]:
    n = sum(len(hrefs) for _, hrefs in pages)
    stages: dict[str, Callable[[list[Page], SeenSet], int]] = {
        "normalise_per_s": normalise_only,
        "normalise_hash_per_s": normalise_and_hash,
        "normalise_hash_site_per_s": normalise_hash_site,
        "full_path_per_s": full_path,
    }
    out: dict[str, float] = {}
    for name, stage in stages.items():
        out[name] = best_rate(n, repeat, _bound(stage, pages, make))
    out["links"] = float(n)
    out["new_links_share"] = full_path(pages, make()) / n
    return out


# -- report -----------------------------------------------------------------------------------
def describe() -> dict[str, str]:
    return describe_run()


def print_report(about: dict[str, str], raw: dict[str, float], path: dict[str, float]) -> None:
    print(f"command: {about['command']}  commit: {about['commit']}")
    print(f"machine: {about['machine']}  (single thread: every rate is per core)")
    title = f"(a) raw seen check, {SEEN_CAPACITY:,}-URL Bloom at 1 % fp"
    print(f"\n{title:<54} {'checks/s':>10} {'us/check':>9}")
    for label, key in (
        ("SeenSet.add_if_new, new hashes", "bloom_add_if_new_new_per_s"),
        ("SeenSet.add_if_new, seen hashes", "bloom_add_if_new_seen_per_s"),
        ("baseline: Python set, new hashes", "python_set_baseline_per_s"),
    ):
        print(f"  {label:<52} {raw[key]:>10,.0f} {1e6 / raw[key]:>9.2f}")
    title = f"(b) per-link path, {path['links']:,.0f} links, {LINKS_PER_PAGE} per page"
    print(f"\n{title:<54} {'links/s':>10} {'us/link':>9}")
    for label, key in (
        ("normalise_url", "normalise_per_s"),
        ("+ url_hash", "normalise_hash_per_s"),
        ("+ site_of", "normalise_hash_site_per_s"),
        ("+ SeenSet.add_if_new (full path)", "full_path_per_s"),
    ):
        print(f"  {label:<52} {path[key]:>10,.0f} {1e6 / path[key]:>9.2f}")
    print(f"  new links in the mix: {path['new_links_share']:.0%}")
    full, bloom = path["full_path_per_s"], raw["bloom_add_if_new_new_per_s"]
    print(f"\nneed: {NEEDED_PER_S:,} seen-checks/s")
    print(f"  full per-link path: {full / NEEDED_PER_S:.1f}x the need on one core")
    print(f"  raw Bloom check   : {bloom / NEEDED_PER_S:.0f}x the need on one core")
    print(
        f"  Bloom vs Python set: {bloom / raw['python_set_baseline_per_s']:.2f}x the speed, for"
        f" ~1.2 B/URL instead of ~100+ B/URL (see bench/frontier_memory.py)"
    )


def parse_args() -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--hashes", type=int, default=1_000_000, help="hashes for (a) (default 1 M)")
    p.add_argument("--pages", type=int, default=4_000, help="pages of 50 links for (b)")
    p.add_argument("--repeat", type=int, default=3, help="runs per figure; the best counts")
    return p.parse_args()


def main() -> None:
    args = parse_args()
    about = describe()
    hashes = [url_hash(f"https://www.site{i % 997}.example.com/p/{i}") for i in range(args.hashes)]
    pages = make_pages(args.pages, seed=7)
    with tempfile.TemporaryDirectory(prefix="trawl-seen-bench-") as tmp:
        workdir = Path(tmp)
        conn = open_database(workdir / "trawl.db")
        raw = raw_rates(hashes, args.repeat, lambda: fresh_seen(conn, workdir))
        path = path_rates(pages, args.repeat, lambda: fresh_seen(conn, workdir))
        conn.close()
    print_report(about, raw, path)
    summary = {
        "needed_per_s": NEEDED_PER_S,
        "full_path_over_need": path["full_path_per_s"] / NEEDED_PER_S,
        "raw_bloom_over_need": raw["bloom_add_if_new_new_per_s"] / NEEDED_PER_S,
    }
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    result = {"about": about, "raw": raw, "per_link_path": path, "summary": summary}
    RESULTS.write_text(json.dumps(result, indent=2) + "\n")
    print(f"\nwrote {RESULTS}")


if __name__ == "__main__":
    main()

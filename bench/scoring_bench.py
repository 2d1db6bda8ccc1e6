"""In-link counting cost per link, and the counter's memory.

    python -m bench.scoring_bench [--pages 4000] [--repeat 5] [--width 1048576]

Every link on every fetched page goes through `InLinkCounter.add_page_links`, so the budget is
2 us a link (600 pages/s x ~50 links in one event loop). Pages of 50 links in a realistic mix:
12 navigation links of the page's own site (the same on each of its pages), 30 links to the
site's articles (popular ones more often) and 8 links to other sites, half to their home pages.

Baseline: exact counting with a dict of pages and a set of (target, site) pairs (unbounded
memory, ~200 B per URL and per pair). Candidate: the bounded `InLinkCounter`. If `madoka` (a
C++ count-min sketch) is importable, it is timed doing the same work for comparison; it is not
a dependency. Also printed: the default counter's memory, one `halve()` and one checkpoint.
Each repeat starts from an empty counter; medians are reported.
"""

from __future__ import annotations

import argparse
import importlib
import json
import random
import statistics
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from rbloom import Bloom

from bench.runinfo import describe_run
from trawl.frontier.inlinks import InLinkCounter
from trawl.urls.normalise import url_hash

RESULTS = Path(__file__).parent / "results" / "scoring.json"
BUDGET_US_PER_LINK = 2.0
SITES = 2000
ARTICLES_PER_SITE = 2000
NAV_LINKS = 12
ARTICLE_LINKS = 30
CROSS_LINKS = 8

Page = tuple[str, list[str], list[str]]  # (source site, target hashes, target sites)
AddPage = Callable[[str, Sequence[str], Sequence[str]], object]


def make_pages(count: int, seed: int) -> list[Page]:
    rng = random.Random(seed)
    cache: dict[tuple[int, int], str] = {}

    def target(site: int, article: int) -> tuple[str, str]:
        key = (site, article)
        if key not in cache:
            cache[key] = url_hash(f"https://site{site}.example/a/{article}")
        return cache[key], f"site{site}.example"

    def popular(n: int) -> int:
        return min(int(rng.paretovariate(1.0)) - 1, n - 1)

    pages = []
    for _ in range(count):
        site = popular(SITES)
        links = [target(site, -1 - i) for i in range(NAV_LINKS)]
        links += [target(site, popular(ARTICLES_PER_SITE)) for _ in range(ARTICLE_LINKS)]
        for i in range(CROSS_LINKS):
            other = rng.randrange(SITES)
            links.append(target(other, -1 if i % 2 else rng.randrange(ARTICLES_PER_SITE)))
        pages.append((f"site{site}.example", [h for h, _ in links], [s for _, s in links]))
    return pages


class ExactCounter:
    """The baseline: exact counts in unbounded memory."""

    def __init__(self) -> None:
        self.pages: dict[str, int] = {}
        self.sites: dict[str, int] = {}
        self.pairs: set[tuple[str, str]] = set()

    def add_page_links(
        self, source_site: str, target_hashes: Sequence[str], target_sites: Sequence[str]
    ) -> list[tuple[int, int]]:
        out = []
        counted = set()
        for h, site in zip(target_hashes, target_sites, strict=True):
            if h not in counted:
                counted.add(h)
                self.pages[h] = self.pages.get(h, 0) + 1
            if site != source_site and (h, source_site) not in self.pairs:
                self.pairs.add((h, source_site))
                self.sites[h] = self.sites.get(h, 0) + 1
            out.append((self.pages[h], self.sites.get(h, 0)))
        return out


def madoka_adder(width: int) -> Callable[[], AddPage] | None:
    """The same work on madoka sketches (pages, sites) and an rbloom pair filter, if installed."""
    try:
        madoka = importlib.import_module("madoka")  # optional: only for this comparison
    except ImportError:
        return None

    def make() -> AddPage:
        pages, sites = madoka.Sketch(width=width), madoka.Sketch(width=width)
        pairs = Bloom(10_000_000, 0.01, int)

        def add(source: str, hashes: Sequence[str], targets: Sequence[str]) -> object:
            out = []
            counted = set()
            key = hash(source)
            for h, site in zip(hashes, targets, strict=True):
                if h not in counted:
                    counted.add(h)
                    pages.inc(h)
                if site != source:
                    pair = (int(h, 16) ^ key) & ((1 << 126) - 1)
                    if pair not in pairs:
                        pairs.add(pair)
                        sites.inc(h)
                out.append((pages.get(h), sites.get(h)))
            return out

        return add

    return make


def us_per_link(pages: list[Page], make: Callable[[], AddPage], repeat: int) -> list[float]:
    links = sum(len(hashes) for _, hashes, _ in pages)
    runs = []
    for _ in range(repeat):
        add = make()
        started = time.perf_counter()
        for source, hashes, sites in pages:
            add(source, hashes, sites)
        runs.append((time.perf_counter() - started) / links * 1e6)
    return runs


def time_ms(action: Callable[[], object], repeat: int) -> float:
    runs = []
    for _ in range(repeat):
        started = time.perf_counter()
        action()
        runs.append((time.perf_counter() - started) * 1e3)
    return statistics.median(runs)


def measure(args: argparse.Namespace) -> dict[str, Any]:
    pages = make_pages(args.pages, seed=7)
    lanes: dict[str, Callable[[], AddPage]] = {
        "exact_dict_baseline": lambda: ExactCounter().add_page_links,
        "inlink_counter": lambda: InLinkCounter(width=args.width).add_page_links,
    }
    optional = madoka_adder(args.width)
    if optional is not None:
        lanes["madoka_for_comparison"] = optional
    timings = {name: us_per_link(pages, make, args.repeat) for name, make in lanes.items()}
    counter = InLinkCounter(width=args.width)
    for source, hashes, sites in pages:
        counter.add_page_links(source, hashes, sites)
    checkpoint = counter.to_bytes()
    return {
        "links_per_repeat": sum(len(h) for _, h, _ in pages),
        "us_per_link_median": {k: statistics.median(v) for k, v in timings.items()},
        "us_per_link_runs": timings,
        "size_bytes": counter.size_bytes,
        "halve_ms_median": time_ms(counter.halve, args.repeat),
        "to_bytes_ms_median": time_ms(counter.to_bytes, args.repeat),
        "from_bytes_ms_median": time_ms(lambda: InLinkCounter.from_bytes(checkpoint), 3),
        "checkpoint_bytes": len(checkpoint),
    }


def print_report(about: dict[str, str], result: dict[str, Any]) -> None:
    for key, value in about.items():
        print(f"{key}: {value}")
    print(f"links per repeat: {result['links_per_repeat']} (pages of 50)")
    medians = result["us_per_link_median"]
    base = medians["exact_dict_baseline"]
    for name, median in medians.items():
        runs = " ".join(f"{r:.2f}" for r in result["us_per_link_runs"][name])
        print(
            f"  {name:24s} {median:5.2f} us/link  (x{median / base:.2f} of exact,"
            f" x{median / BUDGET_US_PER_LINK:.2f} of budget)  runs: {runs}"
        )
    mib = 1 << 20
    print(f"counter memory: {result['size_bytes'] / mib:.1f} MiB (sketch + pair filter)")
    print(f"halve(): {result['halve_ms_median']:.0f} ms")
    print(
        f"checkpoint: {result['checkpoint_bytes'] / mib:.1f} MiB,"
        f" to_bytes {result['to_bytes_ms_median']:.0f} ms,"
        f" from_bytes {result['from_bytes_ms_median']:.0f} ms"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--pages", type=int, default=4000)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--width", type=int, default=1 << 20)
    args = parser.parse_args()
    about = describe_run()
    result = measure(args)
    print_report(about, result)
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps({"about": about, **result}, indent=2) + "\n")
    print(f"\nwrote {RESULTS}")


if __name__ == "__main__":
    main()

"""The main-text window hint (parse/fingerprint.py) at several step sizes, one run.

    python -m bench.main_text_hints [--steps 4096 2048 1024] [--rounds 2]

A site's next page is tried with the window its last page needed (`main_text`'s
`first_try`, which the crawl loop keeps with the site), rounded up to whole `_HINT_STEP`s.
This replays pages a site at a time, in order: the quick bench web's (200 sites x 12
pages, generated into /tmp/trawl-bench-web-quick as bench/page_work_bench.py does) and
bench/news_pages.py's (6 templates x 40 articles). For each step it prints the CPU ms a
page of `main_text`, how many first tries fell short (each costs a second, full pass) and
the windows tried. The steps alternate over `--rounds`, so a noisy machine slows each
alike; the answers do not depend on the step (tests/unit/test_fingerprint.py), only the
cost does.
"""

from __future__ import annotations

import argparse
import collections
import os
import time
from pathlib import Path

from bench.news_pages import make_article, make_chrome, news_page
from bench.webfarm.generate import file_for, generate_web
from trawl.parse import fingerprint
from trawl.parse.links import decode_html

WEB_ROOT = Path("/tmp/trawl-bench-web-quick")

Site = list[tuple[bytes, str | bytes]]


def bench_web_sites(n_sites: int = 200) -> list[Site]:
    spec = generate_web(WEB_ROOT, n_sites=800, pages_per_site=12)
    www = WEB_ROOT / "www"
    sites = []
    for site in sorted(os.listdir(www))[:n_sites]:
        pages = []
        for path in spec.page_paths:
            file = file_for(www / site, path)
            if file.is_file():
                body = file.read_bytes()
                pages.append((body, decode_html(body)))
        sites.append(pages)
    return sites


def news_sites() -> list[Site]:
    sites = []
    for c in range(6):
        chrome = make_chrome(c)
        bodies = [news_page(make_article(a * 7 + c), chrome) for a in range(40)]
        sites.append([(body, decode_html(body)) for body in bodies])
    return sites


def replay(sites: list[Site], step: int) -> tuple[float, int, dict[int, int]]:
    """(ms a page, first tries that fell short, {window tried: pages})."""
    fingerprint._HINT_STEP = step
    spent, short, tried = 0.0, 0, collections.Counter[int]()
    for pages in sites:
        hint = 0
        for body, decoded in pages:
            start = time.process_time()
            found = fingerprint.main_text(body, decoded, first_try=hint)
            spent += time.process_time() - start
            short += bool(hint) and found.window_hint != hint
            tried[hint] += 1
            hint = found.window_hint
    return spent / sum(map(len, sites)) * 1000, short, dict(sorted(tried.items()))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, nargs="+", default=[4096, 2048, 1024])
    parser.add_argument("--rounds", type=int, default=2)
    args = parser.parse_args()
    webs = {"quick bench web": bench_web_sites(), "news_pages": news_sites()}
    for name, sites in webs.items():
        print(f"{name}: {sum(map(len, sites))} pages in {len(sites)} sites")
        results: dict[int, list[float]] = collections.defaultdict(list)
        for _ in range(args.rounds):
            for step in args.steps:
                ms, short, tried = replay(sites, step)
                results[step].append(ms)
                top = ", ".join(f"{w}: {n}" for w, n in list(tried.items())[:5])
                print(f"  step {step:5d}: {ms:.3f} ms a page, {short} short first tries ({top})")
        for step in args.steps:
            print(f"  step {step:5d}: best {min(results[step]):.3f} ms a page")


if __name__ == "__main__":
    main()

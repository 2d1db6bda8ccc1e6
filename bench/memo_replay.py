"""The worker's link memo on a bench web: misses, skipped pages and ms a page.

    python -m bench.memo_replay [--web full|quick] [--sizes 16 64] [--paths-per-site 24]
                                [--rounds 3]

Replays the pages of the bench.speed web (`full`: 2,000 sites x 50 pages, the first
`--paths-per-site` of each site, generated into /tmp/trawl-bench-web or reused; `quick`:
800 sites x 12 pages, in /tmp/trawl-bench-web-quick), under every host name, in crawl
order: round robin over the sites, every second page, as one of two workers sees them
(normalise_bench.bench_web_pages). Each page is parsed once up front; then, for each memo
bound (MB), `--rounds` fresh LinkMemos (a new worker's) normalise every page's hrefs
against its base, timed with `time.process_time()`, with the collector tuned as in the
crawl's workers. To compare two trees, run it under each one's PYTHONPATH in turn.
"""

from __future__ import annotations

import argparse
import statistics
import time
from pathlib import Path

from bench.normalise_bench import bench_web_pages
from trawl.loop.gc_tuning import tune_gc
from trawl.parse.page_work import FoundLink
from trawl.urls.link_memo import LinkMemo


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--web", choices=["full", "quick"], default="full")
    parser.add_argument("--sizes", type=int, nargs="+", default=[16, 64], help="bounds, MB")
    parser.add_argument("--paths-per-site", type=int, default=24)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    if args.web == "full":
        web = bench_web_pages(Path("/tmp/trawl-bench-web"), 2000, 50, args.paths_per_site)
    else:
        web = bench_web_pages()
    pages = web[::2]  # one of two workers
    links = sum(len(hrefs) for hrefs, _ in pages) / len(pages)
    print(f"{args.web} web: {len(pages)} pages, {links:.1f} hrefs a page")
    tune_gc()
    for mb in args.sizes:
        times = []
        for _ in range(args.rounds):
            memo: LinkMemo[FoundLink] = LinkMemo(FoundLink, max_bytes=mb * 1_000_000)
            started = time.process_time()
            for hrefs, base in pages:
                memo.links(hrefs, base)
            times.append((time.process_time() - started) / len(pages) * 1e3)
        stats = memo.stats()
        looked_up = stats.lookups + getattr(stats, "bypassed", 0)
        print(
            f"{mb} MB: {statistics.median(times):.3f} ms a page (median of"
            f" {' '.join(f'{t:.3f}' for t in times)}), {stats.misses / stats.lookups:.1%} of"
            f" hrefs looked up missed, {1 - stats.lookups / looked_up:.1%} of hrefs past the"
            f" memo, {stats.entries} entries at the end"
        )


if __name__ == "__main__":
    main()

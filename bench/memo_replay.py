"""The worker's link memo on the full bench web: misses and ms a page at several bounds.

    python -m bench.memo_replay [--sizes 16 64] [--paths-per-site 24]

Replays the first `--paths-per-site` pages of each site of the bench.speed web (2,000 sites
x 50 pages, generated into /tmp/trawl-bench-web or reused), under every host name, in crawl
order: round robin over the sites, every second page, as one of two workers sees them
(normalise_bench.bench_web_pages). Each page is parsed once up front; then, for each memo
bound (MB), a fresh LinkMemo normalises every page's hrefs against its base, timed with
`time.process_time()`.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from bench.normalise_bench import bench_web_pages
from trawl.parse.page_work import FoundLink
from trawl.urls.link_memo import LinkMemo


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[16, 64], help="bounds, MB")
    parser.add_argument("--paths-per-site", type=int, default=24)
    args = parser.parse_args()
    web = bench_web_pages(Path("/tmp/trawl-bench-web"), 2000, 50, args.paths_per_site)
    pages = web[::2]  # one of two workers
    links = sum(len(hrefs) for hrefs, _ in pages) / len(pages)
    print(f"{len(pages)} pages, {links:.1f} hrefs a page")
    for mb in args.sizes:
        memo: LinkMemo[FoundLink] = LinkMemo(FoundLink, max_bytes=mb * 1_000_000)
        started = time.process_time()
        for hrefs, base in pages:
            memo.links(hrefs, base)
        ms = (time.process_time() - started) / len(pages) * 1e3
        stats = memo.stats()
        print(
            f"{mb} MB: {ms:.3f} ms a page, {stats.misses / stats.lookups:.1%} of hrefs missed,"
            f" {stats.entries} entries at the end"
        )


if __name__ == "__main__":
    main()

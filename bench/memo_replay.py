"""The worker's link memo on the full bench web: misses and ms a page at several bounds.

    python -m bench.memo_replay [--sizes 16 64] [--pages-per-site 12]

Replays the bench.speed web's pages (2,000 sites x 50 pages, generated into
/tmp/trawl-bench-web or reused) in crawl order: round robin over the sites, every second
page, as one of two workers sees them. Each page is parsed once up front; then, for each
memo bound (MB), a fresh LinkMemo normalises every page's hrefs against its base, timed
with `time.process_time()`.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from bench.webfarm.generate import generate_web
from trawl.parse.links import decode_html, links_of_tree, parse_decoded
from trawl.parse.page_work import FoundLink
from trawl.urls.link_memo import LinkMemo

WEB = Path("/tmp/trawl-bench-web")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[16, 64], help="bounds, MB")
    parser.add_argument("--pages-per-site", type=int, default=12)
    args = parser.parse_args()
    generate_web(WEB, n_sites=2000, pages_per_site=50)
    www = WEB / "www"
    sites = sorted(d.name for d in www.iterdir() if not d.name.startswith("www."))
    files = {site: sorted((www / site).rglob("*.html")) for site in sites}
    order = [
        (site, files[site][k])
        for k in range(0, 2 * args.pages_per_site, 2)
        for site in sites
        if k < len(files[site])
    ]
    pages = []
    for _site, path in order:
        url = "http://" + str(path.relative_to(www))
        parsed = links_of_tree(parse_decoded(decode_html(path.read_bytes())), url, agent_token="t")
        pages.append((parsed.hrefs, parsed.base_url))
    links = sum(len(hrefs) for hrefs, _ in pages) / len(pages)
    print(f"{len(pages)} pages of {len(sites)} sites, {links:.1f} hrefs a page")
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

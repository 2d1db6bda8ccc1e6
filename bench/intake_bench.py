"""Event-loop CPU per page of taking a fetched page's links in (`Intake.add_page_links`).

    python -m bench.intake_bench [--base <checkout>/src] [--pages 6000] [--rounds 3]

Every link found on every page passes intake: in-link counts, scope, referrers, the seen
check, and for new URLs a score and a queue row; known ones are re-scored when their
counts cross a power of two. On the full bench web that was ~40 % of the event loop's CPU
(issue 17). This runs the crawl's real context (`build_context`: SQLite, seen set, scores)
in a child process over pages shaped like the full bench web's: 2,000 `any`-scope seed
sites, each page linking 20 pages of its own site (navigation, the same on every page), 5
deeper ones (most of them new) and 15 popular pages of other sites, visited round-robin
over the sites (~12 new URLs a page, twice the full bench web's); the crawl's commit every
185 pages (0.5 s at 370 pages/s) is made too. It prints the thread CPU µs a page of the
links' intake (commits included). With `--base`, another checkout's sources run the same
pages in a child of their own, alternating round by round, and the ratio of medians is
printed.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench.runinfo import compared_trees

ROOT = Path(__file__).resolve().parent.parent
SITES = 2000
NAV_LINKS = 20  # the same on every page of a site
DEEP_LINKS = 5  # to pages of its own site, from a large space: most are new
OTHER_LINKS = 15  # to other sites' popular pages
COMMIT_EVERY = 185


def _child(n_pages: int) -> None:
    import asyncio
    import random

    from trawl.config import Settings, with_overrides
    from trawl.frontier.scope import Standing, seed_id_of
    from trawl.model import CrawlUrl, Line
    from trawl.parse.page_work import FoundLink
    from trawl.urls.normalise import url_hash
    from trawl.wiring.embedded import build_context, normalise_rules
    from trawl.wiring.seeds import add_seeds, normalise_seeds, seed_scopes

    rng = random.Random(17)
    sites = [f"s{i:05d}.bench" for i in range(SITES)]

    def link(site: str, page: int) -> FoundLink:
        url = f"http://{site}/section-{page % 5}/page-{page}.html"
        return FoundLink(url, url_hash(url), site)

    pages = []
    for n in range(n_pages):
        site = sites[n % SITES]
        own = [link(site, page) for page in range(NAV_LINKS)]
        own += [link(site, NAV_LINKS + rng.randrange(10_000)) for _ in range(DEEP_LINKS)]
        popular = [int(rng.paretovariate(1.2)) % NAV_LINKS for _ in range(OTHER_LINKS)]
        other = [link(rng.choice(sites), page) for page in popular]
        url = f"http://{site}/section-0/page-{n // SITES}.html"
        pages.append((url, site, list({x.url: x for x in own + other}.values())))

    settings = with_overrides(Settings(), crawl={"contact_url": "https://trawl.invalid/t"})
    rules = normalise_rules(settings)

    async def run(data_dir: Path) -> tuple[float, float]:
        ctx = build_context(settings, data_dir)
        try:
            seeds = [(f"http://{site}/", "bench") for site in sites]
            add_seeds(ctx, seed_scopes(settings, normalise_seeds(seeds, rules), rules))
            ctx.durability.commit()
            spent = 0.0
            for n, (url, site, links) in enumerate(pages):
                source = CrawlUrl(
                    url, url_hash(url), site, 1, Line.FAST, 0.0, score=4.0,
                    standing=Standing(seed_id_of(f"http://{site}/"), 1).pack(),
                )  # fmt: skip
                start = time.thread_time()
                ctx.intake.add_page_links(source, links)
                if n % COMMIT_EVERY == COMMIT_EVERY - 1:
                    ctx.durability.commit()
                spent += time.thread_time() - start
            return spent, ctx.stats.links_new / len(pages)
        finally:
            await ctx.durability.close()

    for line in sys.stdin:
        if not line.strip():
            break
        with tempfile.TemporaryDirectory() as tmp:
            spent, new = asyncio.run(run(Path(tmp)))
        print(json.dumps({"us_per_page": spent / len(pages) * 1e6, "new": new}), flush=True)


def _start(src: Path, n_pages: int) -> subprocess.Popen[str]:
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(src), str(ROOT)]))
    cmd = [sys.executable, "-m", "bench.intake_bench", "--child", str(n_pages)]
    return subprocess.Popen(
        cmd, env=env, cwd=ROOT, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )


def _round(child: subprocess.Popen[str]) -> tuple[float, float]:
    assert child.stdin is not None
    assert child.stdout is not None
    child.stdin.write("go\n")
    child.stdin.flush()
    answer = json.loads(child.stdout.readline())
    return float(answer["us_per_page"]), float(answer["new"])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--base", type=Path, help="another checkout's src/ to compare with")
    parser.add_argument("--pages", type=int, default=6000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--child", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        _child(args.child)
        return
    trees = compared_trees(args.base)
    children = {name: _start(src, args.pages) for name, src in trees.items()}
    times: dict[str, list[float]] = {name: [] for name in trees}
    new = 0.0
    for _ in range(args.rounds):
        for name, child in children.items():
            spent, new = _round(child)
            times[name].append(spent)
    for child in children.values():
        assert child.stdin is not None
        child.stdin.close()
        child.wait()
    print(f"$ python -m bench.intake_bench --pages {args.pages} --rounds {args.rounds}")
    print(f"{new:.1f} new URLs queued a page")
    for name, values in times.items():
        shown = " ".join(f"{v:.0f}" for v in values)
        print(f"{name:5s} {statistics.median(values):8.1f} µs a page (median; {shown})")
    if args.base:
        ratio = statistics.median(times["new"]) / statistics.median(times["base"])
        print(f"new / base: {ratio:.2f}")


if __name__ == "__main__":
    main()

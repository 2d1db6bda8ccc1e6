"""Nanoseconds per link of the scope decision: `any` (the baseline) vs 20 includes + 20 excludes.

Run: `python -m bench.scope_bench`. The decision runs for every discovered link (~50 a page,
20,000 a second at the design's load), so it must stay cheap. Links are a mix of the seed's
site, other sites and excluded paths, found on a page at depth 2. Also timed: the same 40
patterns searched with Python's `re` as one alternation per list, the engine RE2 replaced;
and a crawl of 800 `domain` seeds sharing 20 includes (the `[scope]` defaults) under 20
crawl-wide excludes, as `python -m bench.speed --scope-variants` runs it: the includes are
searched once per link, not once per seed (issue 16: before that index, 3.4x CPU a page).
"""

from __future__ import annotations

import random
import re
import sys
import timeit
from typing import TYPE_CHECKING

from bench.runinfo import describe_run
from trawl.frontier.scope import CrawlScope, ScopeType, SeedScope, Standing

if TYPE_CHECKING:
    from collections.abc import Callable

SEED = "https://www.example.org/news/index.html"
INCLUDES = tuple(rf"^https?://([a-z]+\.)?partner{i}\.example/(news|docs)/" for i in range(20))
EXCLUDES = tuple(
    rf"/(tag|category|author)/{word}|[?&]{word}=" for word in ("replytocom", "share", "print")
) + tuple(rf"/archive/{1990 + i}/|/calendar/{i:02d}/" for i in range(17))


def _links(rng: random.Random, count: int) -> list[str]:
    hosts = ["www.example.org", "example.org", "cdn.example.org", "partner3.example", "x.test"]
    paths = ["/news/2024/05/a-long-article-title", "/tag/replytocom", "/archive/1995/",
             "/docs/guide/setup.html", "/?share=1&id=42", "/calendar/07/12"]  # fmt: skip
    return [
        f"https://{rng.choice(hosts)}{rng.choice(paths)}?p={rng.randrange(1000)}"
        for _ in range(count)
    ]


def _per_link_ns(decide: Callable[[str], object], links: list[str]) -> float:
    def run() -> None:
        for link in links:
            decide(link)

    return min(timeit.repeat(run, number=5, repeat=5)) / (5 * len(links)) * 1e9


def main() -> int:
    links = _links(random.Random(16), 5000)
    source = Standing(0, 2)
    print(describe_run())
    any_scope = CrawlScope([SeedScope(SEED)])
    patterned = CrawlScope([SeedScope(SEED, ScopeType.HOST, include=INCLUDES)], EXCLUDES)
    include_re = re.compile("|".join(f"(?:{p})" for p in INCLUDES))
    exclude_re = re.compile("|".join(f"(?:{p})" for p in EXCLUDES))

    def re_patterns(link: str) -> bool:
        return exclude_re.search(link) is None and include_re.search(link) is not None

    many = CrawlScope(
        [SeedScope(SEED, ScopeType.DOMAIN, include=INCLUDES)]
        + [
            SeedScope(f"https://site{n}.test/", ScopeType.DOMAIN, include=INCLUDES)
            for n in range(799)
        ],
        EXCLUDES,
    )
    base = _per_link_ns(lambda link: any_scope.decide(link, source), links)
    print(f"any                         {base:8.0f} ns/link")
    for name, decide in (
        ("20 includes + 20 excludes", lambda link: patterned.decide(link, source)),
        ("(re alternations alone)", re_patterns),
        ("800 domain seeds, same", lambda link: many.decide(link, source)),
    ):
        ns = _per_link_ns(decide, links)
        print(f"{name:27} {ns:8.0f} ns/link   x{ns / base:.1f} of any")
    queued = sum(patterned.decide(link, source).queue for link in links)
    print(f"queued with patterns: {queued}/{len(links)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

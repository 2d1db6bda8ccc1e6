"""Issue 16: a site that a scoped crawl's pages link only out of scope costs it nothing.

Found by tests/e2e/test_scope_crawl.py: a `domain` crawl of one site summed up "sites 4",
one loaded site state for every other site its pages linked (a store read each, and
memory for the crawl's life), only to count a referrer for sites it never crawls. The
crawl's real context on SQLite; links handed to intake as a fetched page's would be.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING

import pytest

from trawl.config import Settings, with_overrides
from trawl.frontier.scope import Standing, seed_id_of
from trawl.model import CrawlUrl, Line
from trawl.parse.page_work import FoundLink
from trawl.urls.normalise import url_hash
from trawl.wiring.embedded import build_context, normalise_rules
from trawl.wiring.seeds import add_seeds, normalise_seeds, seed_scopes

if TYPE_CHECKING:
    from pathlib import Path

SEED = "http://a.test/"
LINKS = ("http://a.test/x", "http://blog.a.test/y", "http://b.test/", "http://c.test/z")


def link(url: str) -> FoundLink:
    return FoundLink(url, url_hash(url), url.split("/")[2].removeprefix("blog."))


@pytest.mark.parametrize(("scope", "loaded"), [("domain", set()), ("any", {"b.test", "c.test"})])
def test_only_sites_linked_in_scope_are_loaded_and_credited(
    tmp_path: Path, scope: str, loaded: set[str]
) -> None:
    settings = with_overrides(
        Settings(), crawl={"contact_url": "https://trawl.invalid/t"}, scope={"type": scope}
    )
    rules = normalise_rules(settings)

    async def main() -> None:
        ctx = build_context(settings, tmp_path)
        try:
            seeds = seed_scopes(settings, normalise_seeds([(SEED, "test")], rules), rules)
            add_seeds(ctx, seeds)
            source = CrawlUrl(
                SEED, url_hash(SEED), "a.test", 0, Line.FAST, 0.0,
                standing=Standing(seed_id_of(SEED)).pack(),
            )  # fmt: skip
            ctx.intake.add_page_links(source, [link(url) for url in LINKS])
            assert {s for s in ("b.test", "c.test") if ctx.sites.loaded(s)} == loaded
            assert [ctx.sites.referrers(s) for s in sorted(loaded)] == [1] * len(loaded)
            skipped = {} if scope == "any" else {"scope": 2}
            assert ctx.scope.skips.counts() == skipped
        finally:
            await ctx.durability.close()

    asyncio.run(main())

"""An API seed for a site that has left memory is scored with the referrers its host record
holds, as it would be with the site in memory (issue 17: it was scored with 0).

Why: a seed's score has a site-popularity part from the other sites seen linking to its
site, and `SiteBook.referrers` counts only sites in memory. A broad crawl's sites leave
memory when idle (loop.idle_sites), so an operator seeding a well-linked site that went
idle got its seed ranked as a stranger's. Through the crawl's real context on SQLite.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from typing import TYPE_CHECKING

import pytest
from tests.integration.test_cluster_override_gap import StoppedClock
from tests.integration.test_operator_changes import SETTINGS

from trawl.loop.operator_changes import add_operator_seeds
from trawl.model import Line
from trawl.store.layout import DB_NAME
from trawl.store.sqlite_db import open_database
from trawl.wiring.embedded import build_context

if TYPE_CHECKING:
    from collections.abc import Iterator
    from pathlib import Path

    from trawl.loop.context import CrawlContext

POPULAR = "popular.test"
REFERRERS = 5
IDLE_S = 600.0


@contextlib.contextmanager
def crawl_context(data: Path) -> Iterator[CrawlContext]:
    ctx = build_context(SETTINGS, data, StoppedClock(1000.0))
    try:
        yield ctx
    finally:
        asyncio.run(ctx.durability.close())


def _well_linked(ctx: CrawlContext, *, forget: bool) -> None:
    """`POPULAR` linked from REFERRERS other sites; with `forget`, then idle and out of
    memory (its host record written), as loop.idle_sites leaves it."""
    for n in range(REFERRERS):
        ctx.sites.note_referrer(POPULAR, f"r{n}.test")
    assert ctx.sites.referrers(POPULAR) == REFERRERS
    if forget:
        now = ctx.clock.now() + IDLE_S
        assert ctx.sites.forget_idle([POPULAR], now, IDLE_S, lambda _: False) == 1
        ctx.durability.commit()
        assert ctx.sites.loaded(POPULAR) is None


def _seed_score(ctx: CrawlContext, site: str, priority: str = "normal") -> tuple[float, dict]:
    added = add_operator_seeds(ctx, [f"http://{site}/a"], priority)
    assert added.queued == 1, added
    line = Line.SLOW if priority == "low" else Line.FAST
    queued = ctx.frontier.head(site, line, ctx.clock.now())
    assert queued is not None
    return queued.item.score, json.loads(queued.item.score_parts)


@pytest.mark.parametrize("forget", [False, True], ids=["in memory", "left memory"])
def test_an_api_seed_counts_its_sites_referrers_in_or_out_of_memory(
    tmp_path: Path, forget: bool
) -> None:
    with crawl_context(tmp_path) as ctx:
        _well_linked(ctx, forget=forget)
        score, parts = _seed_score(ctx, POPULAR)
        stranger, stranger_parts = _seed_score(ctx, "stranger.test")
        assert stranger_parts["sitePopularity"] == 0
        assert parts["sitePopularity"] > 0
        assert score > stranger
        assert ctx.sites.referrers(POPULAR) == REFERRERS  # read back with the site
        assert ctx.sites.loaded("stranger.test") is None  # no record: nothing to load


def test_the_score_is_the_same_either_way(tmp_path: Path) -> None:
    scores = []
    for n, forget in enumerate((False, True)):
        with crawl_context(tmp_path / str(n)) as ctx:
            _well_linked(ctx, forget=forget)
            scores.append(_seed_score(ctx, POPULAR))
    assert scores[0] == scores[1]


def test_a_low_priority_seed_reads_no_host_record(tmp_path: Path) -> None:
    with crawl_context(tmp_path) as ctx:
        _well_linked(ctx, forget=True)
        score, _ = _seed_score(ctx, POPULAR, "low")
        assert score == 0.0  # waits unscored in the slow line, as before
        assert ctx.sites.loaded(POPULAR) is None


def test_a_damaged_host_record_scores_0_and_the_seed_is_queued(tmp_path: Path) -> None:
    with crawl_context(tmp_path) as ctx:
        _well_linked(ctx, forget=True)
        conn = open_database(tmp_path / DB_NAME)
        try:
            with conn:
                conn.execute("UPDATE hosts SET record = '{not json' WHERE site = ?", (POPULAR,))
        finally:
            conn.close()
        _, parts = _seed_score(ctx, POPULAR)
        assert parts["sitePopularity"] == 0
        assert ctx.sites.loaded(POPULAR) is None  # the site's turn reports the damage

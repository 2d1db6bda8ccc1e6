"""An API call's commit leaves the WAL's restart to the crawl's own commit (issue 17).

Why: a restart copies a commit's worth of WAL and fsyncs twice (22-49 ms on the bench
machine); an operator's `PUT /v1/hosts/{host}/limits` answers only after its commit, so it
should not pay for that. The crawl's next commit, within `commit_interval_s`, does it.
Through the crawl's real context on a real SQLite database in WAL mode.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING

from tests.integration.test_cluster_override_gap import StoppedClock

from trawl.config import Settings, with_overrides
from trawl.politeness.site_limits import SiteLimits
from trawl.wiring.embedded import build_context

if TYPE_CHECKING:
    from pathlib import Path


def test_an_api_commit_leaves_the_wal_restart_to_the_crawls_commit(tmp_path: Path) -> None:
    settings = with_overrides(Settings(), crawl={"contact_url": "https://trawl.invalid/t"})
    ctx = build_context(settings, tmp_path, StoppedClock(1000.0))
    wal = ctx.durability._wal  # white box: the restart is not visible from outside
    assert wal is not None
    try:
        wal.frames = 1 << 40  # as if the background checkpoint found a WAL past the bound
        ctx.set_site_limits("a.test", SiteLimits(crawl_delay_s=5.0))
        assert ctx.records.get_host("a.test") is not None, "the override is committed"
        assert wal.restarts == 0, "the API call did not restart the WAL"
        ctx.durability.commit()
        assert wal.restarts == 1, "the crawl's commit did"
    finally:
        asyncio.run(ctx.durability.close())

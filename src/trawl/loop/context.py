"""The parts of one crawl, bundled: built once by the wiring (wiring.embedded.build_context)
and handed to the loop's shells. The bundle holds no state of its own: each part owns its
state (SiteBook the sites, RunState the turns and the stop, Durability the commit timing,
CrawlStats the tallies, the frontier the queue) and the shells call the parts.

Who writes what: everything is used from the event loop thread only (other threads hand
their calls to `inbox`). A SiteState is written
only by the task holding that site (RunState makes that one task); counters by any task
between awaits. Worker processes get values, never state.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from trawl.loop.inbox import CrawlInbox

if TYPE_CHECKING:
    from pathlib import Path

    from trawl.clock import Clock
    from trawl.fetch.ports import Fetcher
    from trawl.frontier.intake import Intake
    from trawl.frontier.link_scores import LinkScores
    from trawl.frontier.ports import Frontier
    from trawl.frontier.scope_book import ScopeBook
    from trawl.frontier.traps import TrapCounters
    from trawl.loop.cpu_batches import BatchedWorkers
    from trawl.loop.durability import Durability
    from trawl.loop.placement import Placement
    from trawl.loop.policy import LoopPolicy
    from trawl.loop.renders import Rendering
    from trawl.loop.run_state import RunState
    from trawl.loop.stats import CrawlStats
    from trawl.loop.workers import WorkerPool
    from trawl.parse.page_work import PageInput, PageOutput
    from trawl.politeness.ip_gate import IpGate
    from trawl.politeness.site_book import SiteBook
    from trawl.politeness.site_limits import SiteLimits
    from trawl.politeness.site_state import SiteState
    from trawl.seen.ports import SeenUrls
    from trawl.store.ports import Fingerprints, Records, WarcSink
    from trawl.urls.normalise import NormaliseRules

AGENT_TOKEN = "trawl"  # the product token robots.txt groups are matched against

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True, eq=False)
class CrawlContext:
    clock: Clock
    policy: LoopPolicy
    placement: Placement
    rules: NormaliseRules
    data_dir: Path
    # Adapters
    frontier: Frontier
    seen: SeenUrls
    records: Records
    warc: WarcSink
    fingerprints: Fingerprints
    fetcher: Fetcher
    ip_gate: IpGate
    cpu_pool: WorkerPool
    page_workers: BatchedWorkers[PageInput, PageOutput]
    scores: LinkScores
    # The parts that own the crawl's state
    sites: SiteBook
    run: RunState
    intake: Intake
    scope: ScopeBook
    durability: Durability
    stats: CrawlStats
    traps: TrapCounters
    # Calls from the API's thread, run between the crawl's steps (loop.inbox).
    inbox: CrawlInbox = field(default_factory=CrawlInbox)
    # Pages built by JavaScript (issue 18): None when rendering is off or has no browser.
    render: Rendering | None = None
    # Exclusions' drops running on tasks of their own (`add_exclusion_dropping_later`).
    _dropping: set[asyncio.Task[int]] = field(default_factory=set, init=False, repr=False)

    @property
    def agent_token(self) -> str:
        return AGENT_TOKEN

    def set_site_limits(self, site: str, limits: SiteLimits | None) -> SiteState:
        """Put an operator's override (None: remove it) in force for the very next request
        to `site`, and make it durable at once: it must survive a crash or restart."""
        state = self.sites.set_limits(site, limits)
        self.run.reschedule(state)
        override = None if limits is None else limits.to_json()
        self.durability.keep({"op": "limits", "site": site, "override": override})
        return state

    def add_exclusion(self, pattern: str) -> int | None:
        """Exclude `pattern` crawl-wide from now on (ConfigError for a pattern RE2 refuses):
        the waiting URLs it matches leave the queue (noted as skipped), none is requested
        from now on, and the change is durable at once. The URLs taken out of the queue, or
        None when the pattern was already in force."""
        if not self._put_exclusion(pattern):
            return None
        return self.intake.drop_excluded(self.scope.matches(pattern))

    async def add_exclusion_in_slices(self, pattern: str) -> int | None:
        """`add_exclusion` for a running crawl (the API's): the exclude is in force and
        durable at once, and the waiting URLs it matches leave the queue a slice at a time,
        the loop turning between two (one call over a queue of 1,000,000 URLs had held it
        for 3.5 s). None of them is requested meanwhile: a turn drops an excluded head."""
        if not self._put_exclusion(pattern):
            return None
        return await self._drop_excluded_in_slices(pattern)

    def add_exclusion_dropping_later(self, pattern: str) -> bool:
        """`add_exclusion` from a step that must not wait on the queue (a cluster peer's
        change, read in order with the links of a stream): in force and durable now, the
        waiting URLs it matches leave the queue in slices on a task of their own. False
        when the pattern was in force already."""
        if not self._put_exclusion(pattern):
            return False
        task = asyncio.get_running_loop().create_task(self._drop_excluded_in_slices(pattern))
        self._dropping.add(task)  # the loop keeps only a weak reference
        task.add_done_callback(self._dropped_later)
        return True

    def _dropped_later(self, task: asyncio.Task[int]) -> None:
        self._dropping.discard(task)
        if task.cancelled():
            return  # the crawl ended first: turns drop what is left when its sites come up
        if (exc := task.exception()) is not None:
            log.warning("dropping a new exclusion's queued URLs failed: %s; its sites' turns "
                        "drop them", exc)  # fmt: skip
            return
        log.info("scope: %d queued URLs dropped by a new exclusion", task.result())

    async def _drop_excluded_in_slices(self, pattern: str) -> int:
        matches = self.scope.matches(pattern)
        dropped, after = self.intake.drop_excluded_after(matches, 0)
        while after is not None:
            await asyncio.sleep(0)
            n, after = self.intake.drop_excluded_after(matches, after)
            dropped += n
        return dropped

    def _put_exclusion(self, pattern: str) -> bool:
        """The exclude in force and durable; False when it was in force already."""
        if not self.scope.add_exclusion(pattern, self.clock.now()):
            return False
        self.durability.keep({"op": "exclude", "pattern": pattern})
        return True

    def remove_exclusion(self, pattern: str) -> bool:
        """Lift a run-time exclude (durable at once); False when none is `pattern`. URLs it
        kept out come back only when found again."""
        removed = self.scope.remove_exclusion(pattern)
        if removed:
            self.durability.keep({"op": "lift", "pattern": pattern})
        return removed

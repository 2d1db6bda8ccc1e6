"""The operator's changes to a running crawl, and their replay after a crash (issue 17).

A change (a site's limits, a run-time exclude or its lifting, seeds) is applied on the crawl
loop, then made durable by `Durability.keep`: in the embedded default, a row of its own in
the operator log (store.operator_log), not a commit of the crawl's batch. When the crawl
stopped before its next commit, the database lacks the change; `replay` applies, at start-up,
every logged change past the database's last, the way the API applied it. Each is
idempotent (limits and excludes set a value, seeds already seen are not queued again), so a
change replayed twice does no harm. A row that cannot be read is skipped with a warning:
the rest of the log still counts.
"""

from __future__ import annotations

import dataclasses
import logging
from dataclasses import dataclass
from typing import TYPE_CHECKING

from trawl.errors import ConfigError, DataError, InvalidUrl
from trawl.frontier.scope import SeedScope
from trawl.politeness.site_limits import SiteLimits, delay_floor_s
from trawl.store.operator_log import applied_seq
from trawl.urls.normalise import normalise_url, url_hash
from trawl.urls.registered_domain import origin_of, site_of_normalised

if TYPE_CHECKING:
    import sqlite3

    from trawl.loop.context import CrawlContext
    from trawl.store.operator_log import OperatorLog

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class AddedSeeds:
    queued: int  # new URLs
    known: int  # already crawled (a refetch now would repeat what is stored) or queued
    rejected: list[tuple[str, str]]  # (raw URL, reason)
    seeds: list[SeedScope]  # the accepted seeds' scopes, in force now

    @staticmethod
    def merged(parts: list[AddedSeeds]) -> AddedSeeds:
        """The parts of one request added a chunk at a time, as one answer."""
        return AddedSeeds(
            sum(part.queued for part in parts),
            sum(part.known for part in parts),
            [rejected for part in parts for rejected in part.rejected],
            [seed for part in parts for seed in part.seeds],
        )


def add_operator_seeds(
    ctx: CrawlContext, urls: list[str], priority: str, scope: SeedScope | None = None
) -> AddedSeeds:
    """Add seeds and make them durable (`Durability.keep`)."""
    added = add_api_seeds(ctx, urls, priority, scope)
    if added.seeds:
        ctx.durability.keep(
            {
                "op": "seeds",
                "urls": [seed.url for seed in added.seeds],
                "priority": priority,
                "scope": None if scope is None else scope.to_json(),
            }
        )
    return added


def add_api_seeds(
    ctx: CrawlContext, urls: list[str], priority: str, scope: SeedScope | None = None
) -> AddedSeeds:
    """Queue seeds through the exact seed table, each with `scope` (its URL filled in) or
    else the crawl's `[scope]` defaults. A URL with a page record is not queued again: its
    refetch would come outside the refresh line, with no record to compare with, and emit
    page.fetched for unchanged content; the recrawl schedule keeps it fresh (issue 14).
    Its scope is put in force all the same."""
    rejected: list[tuple[str, str]] = []
    accepted: list[tuple[str, str]] = []  # (url, site)
    for raw in urls:
        try:
            url = normalise_url(raw, None, ctx.rules)
            site = site_of_normalised(url)
        except (InvalidUrl, ValueError) as exc:
            rejected.append((raw, f"not a crawlable URL: {exc}"))
            continue
        state = ctx.sites.loaded(site)
        rules = state.robots.get(origin_of(url)) if state is not None else None
        fresh = rules is not None and rules.is_fresh(ctx.clock.now())
        if fresh and rules is not None and not rules.is_allowed(url, ctx.agent_token):
            rejected.append((raw, "disallowed by the site's robots.txt"))
            continue
        accepted.append((url, site))
    # One call: each call copies the scope's indexes, so seed by seed would be quadratic.
    seeds = [
        ctx.scope.default_seed(url) if scope is None else dataclasses.replace(scope, url=url)
        for url, _ in accepted
    ]
    ids = ctx.scope.add_seeds(seeds)
    queued = known = 0
    low = priority == "low"
    for (url, site), seed_id in zip(accepted, ids, strict=True):
        hashed = url_hash(url)
        crawled = ctx.records.get_page(hashed) is not None
        if not crawled and ctx.intake.add_seed(
            url, hashed, site, seed_id=seed_id, low_priority=low, read_referrers=True
        ):
            queued += 1
        else:
            known += 1
    return AddedSeeds(queued, known, rejected, seeds)


def replay(ctx: CrawlContext, conn: sqlite3.Connection, operator_log: OperatorLog) -> int:
    """Apply the logged changes the database's last commit does not hold; how many."""
    pending = operator_log.after(applied_seq(conn))
    if not pending:
        return 0
    with ctx.durability.replaying():
        for seq, change in pending:
            try:
                _apply(ctx, change)
            except (DataError, ConfigError, KeyError, TypeError, ValueError) as exc:
                log.warning("%s: change %d skipped: %s", operator_log.path, seq, exc)
    return len(pending)


def _apply(ctx: CrawlContext, change: object) -> None:
    if not isinstance(change, dict):
        raise DataError(f"not a change: {change!r:.80}")
    op = change.get("op")
    if op == "limits":
        site = change["site"]
        override = change["override"]
        floor = delay_floor_s(ctx.policy.clock.min_delay_s)
        limits = None if override is None else SiteLimits.from_json(override, floor)
        ctx.set_site_limits(str(site), limits)
    elif op == "exclude":
        ctx.add_exclusion(str(change["pattern"]))
    elif op == "lift":
        ctx.remove_exclusion(str(change["pattern"]))
    elif op == "seeds":
        raw_scope = change.get("scope")
        scope = None if raw_scope is None else SeedScope.from_json(raw_scope, "logged seeds")
        urls = change["urls"]
        if not isinstance(urls, list):
            raise DataError(f"seeds: urls is not a list: {urls!r:.80}")
        add_api_seeds(ctx, [str(u) for u in urls], str(change.get("priority", "normal")), scope)
    else:
        raise DataError(f"unknown change {op!r}")

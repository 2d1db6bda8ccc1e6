"""What a robots.txt answer does to its site: the rules of `fetch_robots`, without its I/O.

How this works: the shell (loop.requests) fetches an origin's robots.txt, following its
redirects (`robots.robots_hop`), and turns the final answer into rules
(`robots.robots_from_response`).
It parses them off the event loop (`RobotsRules.prepare`), stores them on the site
(`SiteState.set_robots`, which takes the largest Crawl-delay of the site's origins), and
asks `robots_read` what follows; it applies the returned `RobotsRead` as it stands, writes
the host record, and commits it at once when told to. Nothing here reads a clock: `now`
comes in.

Rules (section numbers are RFC 9309's):
- The site clock finished the robots.txt request before its Crawl-delay was known: the
  next request waits one gap, Crawl-delay included, from `now` (never sooner than the
  clock already said).
- An answer with rules or without a file (2.3.1.1-2.3.1.3) unblocks the site: a one-shot
  crawl waits for its URLs again.
- An unreachable robots.txt (2.3.1.4: crawl nothing) on the site's only live origin holds
  the whole site until its retry, and blocks it: a one-shot crawl does not wait for the
  retry. With another origin of the site answering, only this origin's URLs wait (the
  turn checks `retry_at` per origin; issue 13): the site clock and blocking stay as they
  were.
- The origin's sitemaps (2.2.4) are read on its first answer that is not unreachable: the
  first fetch, or the first after unreachable ones; a refresh reads none again.
- Committed at once (not with the crawl's next commit, within `commit_interval_s`): what a
  crash must not lose, a Crawl-delay that came, went or changed (a restart's gap depends on
  it) and the hold on an unreachable robots.txt. After a crash that loses another answer,
  robots.txt is asked again after the restart gap, as for a new site. A commit for every
  robots.txt was 40 % of the crawl loop's commit time in a 60 s bench crawl, where most
  robots.txt files are read (issue 17).
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum

from trawl.politeness.robots import RobotsRules, RobotsStatus


class Blocking(Enum):
    """What a robots.txt answer does to the site's place in the blocked set (see
    loop.run_state: blocked sites' URLs do not keep a one-shot crawl open)."""

    BLOCK = "block"
    UNBLOCK = "unblock"
    UNCHANGED = "unchanged"


@dataclass(frozen=True, slots=True)
class RobotsRead:
    """The decisions on one robots.txt answer, for the shell to apply."""

    hold_until: float  # the site clock's next request no sooner (SiteClock.hold_until)
    blocking: Blocking
    reads_sitemaps: bool  # queue the sitemaps the rules list (or the site's default one)
    status_label: str  # counted in the crawl's statuses, e.g. "robots:unreachable"
    commit_now: bool  # commit the host record at once, not with the crawl's next commit


def robots_read(
    rules: RobotsRules,
    previous: RobotsRules | None,
    *,
    others_answer: bool,
    now: float,
    gap_s: float,
    delay_before: float | None,
    delay_after: float | None,
) -> RobotsRead:
    """What the origin's new `rules` (replacing `previous`, None on the first fetch) do to
    its site.

    `others_answer`: another origin of the site answered its last exchange
    (OriginHealth.others_answer). `gap_s`: the site's normal gap with `rules` stored, so
    their Crawl-delay counts (SiteClock.gap_s after SiteState.set_robots). `delay_before`
    and `delay_after`: the site's Crawl-delay (SiteClock.crawl_delay_s, the largest of its
    origins') before and after `rules` were stored, None for none; required, because a
    caller that left them out would never commit a new Crawl-delay at once.
    """
    hold_until = now + gap_s
    if rules.retry_at is None:
        blocking = Blocking.UNBLOCK
    elif others_answer:
        blocking = Blocking.UNCHANGED
    else:
        hold_until = max(hold_until, rules.retry_at)
        blocking = Blocking.BLOCK
    first_read = previous is None or previous.status is RobotsStatus.UNREACHABLE
    return RobotsRead(
        hold_until=hold_until,
        blocking=blocking,
        reads_sitemaps=first_read and rules.status is not RobotsStatus.UNREACHABLE,
        status_label=f"robots:{rules.status.value}",
        commit_now=delay_after != delay_before or rules.retry_at is not None,
    )

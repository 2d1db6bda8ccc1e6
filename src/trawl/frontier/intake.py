"""The one door into the frontier: every URL the crawl queues comes through here.

Seeds, links found on a page, redirect targets, sitemap entries, due pages and URLs routed
here by another machine each pass the crawl's scope first (frontier.scope: a link out of
scope is noted as skipped, with its reason, and never claimed in the seen set, so another
path may still bring it in), get their line, score and Standing here, pass the seen check
(known URLs are re-scored instead when their in-link counts doubled) and the trap rules, and
join the queue ready when their site's clock allows. A contained trap site
(frontier.containment) resting until its next trickle is woken when work it may serve now
arrives. In cluster mode (`router` set) discovered URLs go to their partition's owner
instead, which makes the seen check and queues them through `add_routed`; the queue of a
partition taken over comes back through `add_restored`.
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING, Protocol

from trawl.frontier.scope import MAX_DEPTH_LIMIT, ScopeDecision, ScopeRule, Standing, seed_of
from trawl.frontier.traps import check_url
from trawl.model import CrawlUrl, Line, UrlKind
from trawl.recrawl.schedule import refresh_priority

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence

    from trawl.clock import Clock
    from trawl.frontier.link_scores import LinkScores
    from trawl.frontier.ports import Frontier, LinkRouter
    from trawl.frontier.scope_book import ScopeBook
    from trawl.frontier.traps import TrapCounters, TrapPolicy
    from trawl.parse.page_work import FoundLink
    from trawl.politeness.site_book import SiteBook
    from trawl.politeness.site_state import SiteState
    from trawl.seen.ports import SeenUrls
    from trawl.store.records_sqlite import DuePage


_EXCLUDED = ScopeDecision(False, ScopeRule.EXCLUDE, 0)
# Known URLs to re-score wait for the crawl's next commit, or until this many (~0.1 s of a
# full-speed crawl): one batch costs a statement where each page's cost one, and a URL
# noted twice meanwhile is re-scored once (issue 17). Not more: a batch costs ~40 us a URL
# (random rows of a big queue table), and 512 held the crawl loop for 21 ms at p50.
RESCORE_BATCH = 128
DROP_SCAN_ROWS = 2_000  # queue rows one slice of an exclude's drop reads (5,000 took 26-41 ms)


class IntakeTally(Protocol):
    """The counters intake adds to (loop.stats.CrawlStats)."""

    links_new: int
    rescored: int
    refresh_queued: int
    skipped: dict[str, int]

    def count(self, table: dict[str, int], key: str, n: int = 1) -> None: ...


class Intake:
    def __init__(
        self,
        *,
        frontier: Frontier,
        seen: SeenUrls,
        scores: LinkScores,
        sites: SiteBook,
        scope: ScopeBook,
        trap_policy: TrapPolicy,
        traps: TrapCounters,
        tally: IntakeTally,
        clock: Clock,
        router: LinkRouter | None,
        take_due: Callable[[float, int], Sequence[DuePage]],
        wake: Callable[[SiteState, CrawlUrl], None],
    ) -> None:
        self._frontier = frontier
        self._seen = seen
        self._scores = scores
        self._sites = sites
        self._scope = scope
        self._trap_policy = trap_policy
        self._traps = traps
        self._tally = tally
        self._clock = clock
        self._router = router
        self._take_due = take_due
        self._wake = wake
        self._rescore_pending: dict[str, None] = {}  # an ordered set of urlHashes

    # -- what comes in ------------------------------------------------------------------
    def add_seed(
        self,
        url: str,
        url_hash: str,
        site: str,
        *,
        seed_id: int,
        low_priority: bool = False,
        read_referrers: bool = False,
    ) -> bool:
        """Queue a normalised seed (its scope already in the ScopeBook) through the exact
        seed table; True when it was new.

        Seeds go to the fast line with the seed boost; low-priority ones (API) wait in the
        slow line, unscored. With `read_referrers` (the API's seeds: few, and their site may
        have left memory) a site not in memory is scored with the referrers its host record
        holds, not 0; a cluster's seeds are scored by their partition's owner
        (`add_routed`), and a start-up's million would cost a read each."""
        if read_referrers and not low_priority and self._router is None:
            referrers = self._sites.recorded_referrers(site)
        else:
            referrers = self._sites.referrers(site)
        score, parts, _ = self._scores.seed(url, referrers)
        line = Line.FAST
        if low_priority:
            score, line = 0.0, Line.SLOW
        item = self._item(
            url, url_hash, site, 0, line, score=score, score_parts=parts,
            standing=Standing(seed_id).pack(),
        )  # fmt: skip
        return self._discover(item, must_crawl=True)

    def add_redirect_target(self, source: CrawlUrl, target: str, url_hash: str, site: str) -> bool:
        """Queue where `source` redirected to, in its line and depth, one hop further along
        the chain, if scope lets it (an off-scope target may be captured as a leaf); True
        when it was new."""
        decision = self._scope.current.decide_redirect(target, Standing.unpack(source.standing))
        if decision.standing is None:
            self._note(target, url_hash, decision, source.url)
            return False
        item = self._item(
            target, url_hash, site, source.depth, source.line, redirects=source.redirects + 1,
            standing=decision.standing.pack(),
        )  # fmt: skip
        return self._discover(item, must_crawl=False)

    def add_page_links(self, source: CrawlUrl, links: Sequence[FoundLink]) -> None:
        """The links found on `source`'s page: every one counts as an in-link; new ones are
        scored and queued (most links on a page are already known), known ones re-scored
        when their counts double (in batches: `flush_rescores`)."""
        router = self._router
        scores = self._scores
        counts = scores.count_page_links(source.site, links)
        scope = self._scope.current
        standing = Standing.unpack(source.standing)
        rescore = self._rescore_pending
        uniform = scope.uniform_link_decision(standing)
        for link, (pages, sites) in zip(links, counts, strict=True):
            if uniform is None or scope.is_seed_url(link.url):
                decision = scope.decide(link.url, standing, link.site)
            else:
                decision = uniform
            if decision.standing is None:
                self._note(link.url, link.url_hash, decision, source.url)
                continue
            # Only links in scope credit their site: one linked only out of scope is never
            # crawled, and would cost a loaded state for the crawl's life. In cluster mode
            # the referrer travels with the link.
            if router is None and link.site != source.site:
                self._sites.note_referrer(link.site, source.site)
            if router is None and not self._seen.add_if_new(link.url_hash):
                if scores.worth_rescoring(link, source.site, pages, sites):
                    rescore[link.url_hash] = None
                continue
            referrers = self._sites.referrers(link.site)
            score, parts, line = scores.score_new(link, pages, sites, source.score, referrers)
            item = self._item(
                link.url, link.url_hash, link.site, source.depth + 1, line,
                score=score, score_parts=parts, standing=decision.standing.pack(),
            )  # fmt: skip
            if router is not None:
                referrer = source.site if link.site != source.site else ""
                weight = scores.route_weight(pages)
                router.route(item, must_crawl=False, referrer=referrer, pages=weight)
            elif self._queue_new(item, must_crawl=False):
                self._tally.links_new += 1
        if len(rescore) >= RESCORE_BATCH:
            self.flush_rescores()

    def note_rescore(self, url_hash: str) -> None:
        """Re-score a URL with the next batch if it still waits in the queue (cluster mode:
        its in-link counts grew with links that arrived through its partition's stream)."""
        self._rescore_pending[url_hash] = None
        if len(self._rescore_pending) >= RESCORE_BATCH:
            self.flush_rescores()

    def flush_rescores(self) -> None:
        """Re-score the known URLs noted since the last flush that still wait in the queue
        (the crawl's commits call this first: a re-score is a ranking hint, and waiting
        up to a commit interval for it changes no crawl's outcome)."""
        if self._rescore_pending:
            url_hashes = list(self._rescore_pending)
            self._rescore_pending.clear()
            self._tally.rescored += self.rescore(url_hashes)

    def add_sitemap_entry(self, url: str, url_hash: str, site: str) -> bool:
        """Queue a URL a sitemap of its own site listed (depth 1: one step from the home)
        if it is in some seed's scope; a trusted site's entries get the sitemap boost."""
        decision = self._scope.current.decide_listed(url, 1)
        if decision.standing is None:
            self._note(url, url_hash, decision, "")
            return False
        if self._router is None and not self._seen.add_if_new(url_hash):
            return False
        score, parts, line = self._scores.sitemap_entry(url, self._sites.referrers(site))
        item = self._item(
            url, url_hash, site, 1, line, score=score, score_parts=parts,
            standing=decision.standing.pack(),
        )  # fmt: skip
        if self._router is not None:
            self._router.route(item, must_crawl=False)
            return True
        return self._queue_new(item, must_crawl=False)

    def add_sitemap_file(self, url: str, url_hash: str, site: str, depth: int) -> bool:
        """Queue a sitemap file of `site` (named in its robots.txt, or by a sitemap index)
        in the fast line; True when it was new."""
        item = self._item(url, url_hash, site, depth, Line.FAST, kind=UrlKind.SITEMAP)
        return self._discover(item, must_crawl=False)

    def add_due_pages(self, batch: int) -> int:
        """Move up to `batch` pages whose nextFetchAt has come to the REFRESH line.

        They bypass the seen set (they are known) and leave the due index in the same
        transaction, so a crash neither loses nor doubles a refetch.
        """
        now = self._clock.now()
        due = self._take_due(now, batch)
        for page in due:
            standing = self._known_standing(page.url, page.url_hash, page.depth)
            if standing is None:
                continue
            priority = refresh_priority(
                page.change_rate,
                now - page.last_fetched_at,
                visits=page.visits,
                importance=page.importance,
            )
            parts = f'{{"changeRate":{page.change_rate:.6g},"importance":{page.importance:.3g}}}'
            item = self._item(
                page.url, page.url_hash, page.site, page.depth, Line.REFRESH,
                kind=page.kind, score=priority, score_parts=parts, standing=standing,
            )  # fmt: skip
            self._enqueue(item)
            self._tally.refresh_queued += 1
        return len(due)

    def add_routed(self, item: CrawlUrl, *, must_crawl: bool) -> bool:
        """Cluster mode: queue a URL another machine (or this one) routed to this partition,
        already claimed in the partition's seen slice; a routed seed gets the seed boost
        here, where its site's referrers are known. True when queued; a URL a run-time
        exclude (perhaps newer than the finder's) matches is skipped."""
        if self._scope.current.is_excluded(item.url):
            self.note_excluded(item.url, item.url_hash, "")
            return False
        if must_crawl:
            score, parts, line = self._scores.seed(item.url, self._sites.referrers(item.site))
            item = dataclasses.replace(
                item,
                depth=0,
                line=line,
                kind=UrlKind.PAGE,
                score=score,
                score_parts=parts,
                redirects=0,
            )
        if self._queue_new(item, must_crawl=must_crawl):
            self._tally.links_new += 1
            return True
        return False

    def add_restored(self, item: CrawlUrl, *, attempts: int) -> None:
        """Cluster mode: a queued URL from the checkpoint of a partition taken over, back
        in line as its last owner left it (its seen slice came with the checkpoint)."""
        self._frontier.enqueue(item, attempts=attempts)

    def drop_excluded(self, matches: Callable[[str], bool]) -> int:
        """Take the waiting URLs `matches` selects out of the queue (a new run-time
        exclude), noted as skipped; how many."""
        dropped = 0
        after: int | None = 0
        while after is not None:
            n, after = self.drop_excluded_after(matches, after)
            dropped += n
        return dropped

    def drop_excluded_after(
        self, matches: Callable[[str], bool], after_id: int
    ) -> tuple[int, int | None]:
        """`drop_excluded` over one slice of the queue (Frontier.drop_matching_after): how
        many were dropped, and the cursor to go on from (None: done)."""
        dropped, after = self._frontier.drop_matching_after(matches, after_id, DROP_SCAN_ROWS)
        for item in dropped:
            self.note_excluded(item.url, item.url_hash, "")
        return len(dropped), after

    def rescore(self, url_hashes: Sequence[str]) -> int:
        """Update the scores of those of `url_hashes` still waiting in the queue from
        today's in-link counts; how many changed."""
        return self._frontier.rescore(url_hashes, self._scores.rescored)

    # -- the door -----------------------------------------------------------------------
    def _item(
        self,
        url: str,
        url_hash: str,
        site: str,
        depth: int,
        line: Line,
        *,
        kind: UrlKind = UrlKind.PAGE,
        score: float = 0.0,
        score_parts: str = "",
        redirects: int = 0,
        standing: int = 0,
    ) -> CrawlUrl:
        return CrawlUrl(
            url, url_hash, site, depth, line, self._clock.now(), kind, score, score_parts,
            redirects, standing,
        )  # fmt: skip

    def _known_standing(self, url: str, url_hash: str, depth: int) -> int | None:
        """The Standing of a page fetched before (a due page, whose queue row is gone):
        credited to a seed whose scope it is in, else a leaf (it came on an off-scope hop
        or redirect: refreshed, its links not followed again). None when a crawl-wide
        exclude now matches it (noted as skipped)."""
        scope = self._scope.current
        if scope.is_open:
            return Standing(0, min(depth, MAX_DEPTH_LIMIT)).pack()
        decision = scope.decide_listed(url, depth)
        if decision.standing is not None:
            return decision.standing.pack()
        if decision.rule is ScopeRule.EXCLUDE and scope.is_excluded(url):
            self._note(url, url_hash, decision, "")
            return None
        return Standing(decision.seed, min(depth, MAX_DEPTH_LIMIT), leaf=True).pack()

    def _note(self, url: str, url_hash: str, decision: ScopeDecision, referrer: str) -> None:
        if self._scope.note_decision(url, url_hash, decision, referrer, self._clock.now()):
            self._tally.count(self._tally.skipped, decision.rule.value)

    def note_excluded(self, url: str, url_hash: str, referrer: str = "") -> None:
        """Note a URL a crawl-wide exclude took out of the queue as skipped."""
        self._note(url, url_hash, _EXCLUDED, referrer)

    def _discover(self, item: CrawlUrl, *, must_crawl: bool) -> bool:
        """Queue a URL unless seen; True when it was new (in cluster mode: True when sent
        to its partition's owner, which makes the seen check)."""
        if self._router is not None:
            self._router.route(item, must_crawl=must_crawl)
            return True
        if must_crawl:
            new = self._seen.add_must_crawl_if_new(item.url_hash)
        else:
            new = self._seen.add_if_new(item.url_hash)
        return new and self._queue_new(item, must_crawl=must_crawl)

    def _queue_new(self, item: CrawlUrl, *, must_crawl: bool) -> bool:
        """Queue a claimed URL unless a trap rule refuses it or its seed's page budget is
        spent (`max_pages`: seeds are always queued, and counted); True when queued."""
        trap = None if must_crawl else check_url(item.url, item.depth, self._trap_policy)
        if trap is not None:
            self._traps.count(trap)
            self._tally.count(self._tally.skipped, str(trap))
            rule = f"trap rule {trap}"
            self._scope.note(item.url, item.url_hash, str(trap), rule, "", self._clock.now())
            return False
        if item.kind is UrlKind.PAGE:
            seed = seed_of(item.standing)
            if not self._scope.take_page(seed) and not must_crawl:
                spent = ScopeDecision(False, ScopeRule.MAX_PAGES, seed)
                self._note(item.url, item.url_hash, spent, "")
                return False
        state = self._sites.loaded(item.site)
        if state is not None and state.traps.is_flagged and item.line is Line.FAST:
            # The similarity alarm: a copy-heavy site's links wait.
            item = dataclasses.replace(item, line=Line.SLOW)
        self._enqueue(item)
        return True

    def _enqueue(self, item: CrawlUrl) -> None:
        """Into the frontier, ready when the site's clock allows (if the site is loaded)."""
        state = self._sites.loaded(item.site)
        ready_at = 0.0 if state is None else state.clock.next_allowed_at
        self._frontier.enqueue(item, ready_at=ready_at)
        if state is not None and state.containment.is_contained:
            self._wake(state, item)

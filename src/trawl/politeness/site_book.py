"""Every site this process crawls, as one `SiteState` each, and which of them changed since
their host records were last written.

A site is loaded from its host record on first use. When another process may have just
fetched it (an earlier run on this data directory, a partition's previous owner), its next
request waits a full gap after `restarted_at(site)`: that request may have followed the
last host record. Host records of changed sites are written when the loop commits
(`write_changed`), or at once where a crash must not lose the change (`write`).

A site idle for a while leaves memory (`forget_idle`), its host record written first, and is
read back from it when next needed: a broad crawl meets new sites all day (every site a
page links to is loaded, to count its referrers), and keeping each one's few kilobytes for
the crawl's life grew without bound.

Written from the event loop thread only; a SiteState only by the task holding its site.
"""

from __future__ import annotations

import itertools
import logging
from typing import TYPE_CHECKING, Protocol

from trawl.errors import DataError
from trawl.frontier.containment import SiteContainment
from trawl.frontier.traps import SiteTrapState
from trawl.politeness.site_state import SiteState

if TYPE_CHECKING:
    from collections.abc import Callable, Iterable, Iterator

    from trawl.frontier.traps import TrapPolicy
    from trawl.politeness.site_clock import ClockPolicy
    from trawl.politeness.site_limits import SiteLimits
    from trawl.store.ports import HostRecords

log = logging.getLogger(__name__)


class HostRecordPart(Protocol):
    """Per-site state another part of the crawl keeps in the host record under a field of its
    own (issue 18: the render policy's learning), so that it survives a restart as the
    site's politeness state does."""

    field: str

    def part_of(self, site: str) -> object | None:
        """The site's state as JSON, None when there is none to keep."""
        ...

    def restore_part(self, site: str, data: object) -> None:
        """Put back what `part_of` gave; ValueError when `data` is damaged."""
        ...


class SiteBook:
    def __init__(
        self,
        hosts: HostRecords,
        *,
        clock_policy: ClockPolicy,
        trap_policy: TrapPolicy,
        restarted_at: Callable[[str], float | None],
        owner: str,
        now: Callable[[], float],
    ) -> None:
        self._hosts = hosts
        self._now = now
        self.clock_policy = clock_policy
        self.trap_policy = trap_policy
        self._restarted_at = restarted_at
        self._owner = owner
        self._sites: dict[str, SiteState] = {}
        self._changed: dict[str, None] = {}  # in the order of their first change since written
        self._parts: list[HostRecordPart] = []

    def keep_part(self, part: HostRecordPart) -> None:
        """Keep `part`'s state of each site in its host record from now on (before any site
        is loaded: a site loaded earlier has had its part's state ignored)."""
        self._parts.append(part)

    def __contains__(self, site: str) -> bool:
        return site in self._sites

    def __iter__(self) -> Iterator[str]:
        return iter(self._sites)

    def __len__(self) -> int:
        return len(self._sites)

    def states(self) -> Iterable[SiteState]:
        return self._sites.values()

    def state(self, site: str) -> SiteState:
        """The site's state, loaded on first use (with its restart gap)."""
        state = self._sites.get(site)
        return self._load(site, self._hosts.get_host(site)) if state is None else state

    def _load(self, site: str, record: dict[str, object] | None) -> SiteState:
        if record is None:
            state = SiteState(
                site,
                traps=SiteTrapState(self.trap_policy),
                containment=SiteContainment(self.trap_policy),
            )
        else:
            state = SiteState.from_host_record(record, self.trap_policy)
            self._restore_parts(site, record)
        restarted_at = self._restarted_at(site)
        if restarted_at is not None:
            # Even the site's first request, before any host record, may have been made.
            state.clock.hold_until(restarted_at + state.clock.gap_s(self.clock_policy))
        state.loaded_at = self._now()
        self._sites[site] = state
        return state

    def _restore_parts(self, site: str, record: dict[str, object]) -> None:
        for part in self._parts:
            data = record.get(part.field)
            if data is None:
                continue
            try:
                part.restore_part(site, data)
            except ValueError as exc:
                # Soft state, learnt again: the rest of the record (the site's politeness)
                # is what must not be lost.
                log.warning("%s; its %s state starts afresh", exc, part.field)

    def loaded(self, site: str) -> SiteState | None:
        """The site's state if this process has loaded it (no host record read)."""
        return self._sites.get(site)

    def set_limits(self, site: str, limits: SiteLimits | None) -> SiteState:
        """Put an operator's override (None: remove it) in force for the very next request,
        and write it at once: it must survive a crash. A shorter gap still leaves a full gap
        after the site's restart (`restarted_at`: for a cluster node, its take-over of the
        site's partition, not its own start)."""
        state = self.state(site)
        state.set_limits(limits, self.clock_policy, self._restarted_at(site))
        self.write(site)
        return state

    def mark_changed(self, site: str) -> None:
        self._changed[site] = None

    def note_referrer(self, site: str, referrer: str) -> None:
        """`referrer` links to `site`: it raises the site's importance (its daily cap).

        This writes another site's state from the task holding `referrer`; safe on one event
        loop with no await in between. Not marked changed: referrers are a soft signal,
        saved with the site's next write.
        """
        self.state(site).traps.note_referrer(referrer)

    def referrers(self, site: str) -> int:
        """Other sites seen linking to `site` (0 for a site not in memory: not loaded in this
        run, or idle and forgotten)."""
        state = self._sites.get(site)
        return 0 if state is None else state.traps.referring_sites()

    def recorded_referrers(self, site: str) -> int:
        """`referrers`, with a site not in memory loaded from its host record first (a new
        site, without one, is not loaded: it has none). For the API's seeds: their site's
        turn would load it soon anyway, and a call's other seeds of the site then find it in
        memory. A damaged record counts 0 here; the site's turn reports it."""
        state = self._sites.get(site)
        if state is None:
            try:
                record = self._hosts.get_host(site)
                if record is None:
                    return 0
                state = self._load(site, record)
            except DataError:
                return 0
        return state.traps.referring_sites()

    def write(self, site: str) -> None:
        """The site's host record, now (the caller commits)."""
        state = self._sites.get(site)
        if state is None:
            return
        record = state.to_host_record(self._owner)
        for part in self._parts:
            data = part.part_of(site)
            if data is not None:
                record[part.field] = data
        self._hosts.put_host(site, record)

    def write_changed(self, limit: int | None = None) -> None:
        """Write changed sites' host records, the longest-waiting first; at most `limit`."""
        if limit is None or limit >= len(self._changed):
            for site in self._changed:
                self.write(site)
            self._changed.clear()
            return
        for site in list(itertools.islice(self._changed, limit)):
            self.write(site)
            del self._changed[site]

    @property
    def changed(self) -> int:
        """Sites whose host record waits to be written."""
        return len(self._changed)

    def forget_idle(
        self, sites: Iterable[str], now: float, idle_s: float, busy: Callable[[str], bool]
    ) -> int:
        """Of `sites`, drop those idle for `idle_s` (`SiteState.is_idle`) and not `busy` from
        memory, each host record written first (the caller commits): what changed without
        marking the site changed (referrers, copies counted) is kept too. Returns how many
        were dropped."""
        forgotten = 0
        for site in sites:
            state = self._sites.get(site)
            if state is None or busy(site) or not state.is_idle(now, idle_s):
                continue
            self.write(site)
            self._changed.pop(site, None)
            del self._sites[site]
            forgotten += 1
        return forgotten

    def forget(self, sites: Iterable[str]) -> None:
        """Drop sites this process no longer crawls (a partition handed over)."""
        for site in sites:
            self._sites.pop(site, None)
            self._changed.pop(site, None)

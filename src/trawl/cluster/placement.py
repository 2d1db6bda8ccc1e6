"""Cluster mode's `Placement` (loop/placement.py): one node among the machines crawling.

- `may_fetch(site)`: the site's partition is loaded here (`PartitionTable`) and its lease
  is fetchable (confirmed, before its local deadline: `OwnershipShell.may_fetch`).
- The IP slot: the per-IP cap across machines (sites sharing a server may sit in partitions
  owned by different machines), held in the coordinator; polled, since the slot frees on
  another machine. The coordinator being unreachable means "no request now": the turn ends
  in a retry, the URL unsent. The send is told to the coordinator as it happens
  (`note_ip_sent`, in a task of its own: the fetch does not wait for it), since the gap
  to the next start on the IP runs from there.
- `router`: every discovered URL goes to its partition's link stream (`LinkBuffers`), this
  node's own partitions included; `publish` sends them with the commit (`CommitPublisher`).
- `restarted_at(site)`: never None, since another machine may have fetched any site just
  now; the later of the node's start and the partition's take-over.
- `cut(site)`: a request ends at the partition lease's local deadline unless a renewal
  moves it (`LeaseCuts`).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from typing import TYPE_CHECKING, Protocol

from trawl.cluster.redis_coord import CoordinatorUnavailable
from trawl.cluster.store_outages import StoreOutages

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable
    from contextlib import AbstractAsyncContextManager

    from trawl.cluster.lease_cuts import LeaseCuts
    from trawl.cluster.partition_table import PartitionTable
    from trawl.frontier.ports import LinkRouter

log = logging.getLogger(__name__)

MIN_POLL_S = 0.01  # the shortest wait between two asks for a busy IP slot


class LeaseView(Protocol):
    """Whether this node's lease on a partition lets it fetch now (`OwnershipShell`)."""

    def may_fetch(self, partition: int) -> bool: ...


class IpSlotStore(Protocol):
    """The coordinator's per-IP slots (`RedisIpGate`); raise CoordinatorUnavailable."""

    async def try_acquire(self, ip: str) -> float | None:
        """None: the slot is ours; else seconds to wait before asking again."""

    def note_sent(self, ip: str) -> Awaitable[None]:
        """The request holding the newest slot on `ip` has been sent: which slot that is
        is settled when called, before the awaitable runs."""

    async def release(self, ip: str) -> None: ...


class Publisher(Protocol):
    async def publish(self) -> bool: ...


class NodePlacement:
    """The `Placement` of a cluster node (see the module docstring)."""

    def __init__(
        self,
        *,
        owner: str,
        table: PartitionTable,
        leases: LeaseView,
        router: LinkRouter,
        publisher: Publisher,
        ip_slots: IpSlotStore,
        cuts: LeaseCuts,
        outages: StoreOutages | None = None,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
    ) -> None:
        self._owner = owner
        self._outages = outages or StoreOutages()
        self._cuts = cuts
        self._table = table
        self._leases = leases
        self._router = router
        self._publisher = publisher
        self._ip_slots = ip_slots
        self._sleep = sleep
        # note_ip_sent tasks under way, by IP: a slot is given back only after its send
        # was noted (see give_ip_slot).
        self._sends: dict[str, set[asyncio.Task[None]]] = {}

    def __repr__(self) -> str:
        return f"<NodePlacement {self._owner} {self._table!r}>"

    @property
    def owner(self) -> str:
        return self._owner

    @property
    def router(self) -> LinkRouter:
        return self._router

    def may_fetch(self, site: str) -> bool:
        """Whether the site's partition is ours and loaded, and no store outage or backlog
        pauses new fetches (issue 19: a turn refused here waits in line, unchanged)."""
        if self._outages.is_paused():
            return False
        partition = self._table.partition_of(site)
        return self._table.is_loaded(partition) and self._leases.may_fetch(partition)

    def owned(self) -> set[int]:
        """Partitions loaded here and fetchable now (whose due pages this node takes)."""
        return {p for p in self._table.loaded() if self._leases.may_fetch(p)}

    async def take_ip_slot(self, ip: str, stop: asyncio.Event | None = None) -> bool:
        try:
            while (wait_s := await self._ip_slots.try_acquire(ip)) is not None:
                if stop is not None and stop.is_set():
                    return False  # a stopping node sends nothing new: hand-overs wait for it
                await self._sleep(max(wait_s, MIN_POLL_S))  # the slot is in Redis: poll it
        except CoordinatorUnavailable as exc:
            log.warning("per-IP slot on %s: %s", ip, exc)
            return False
        return True

    def note_ip_sent(self, ip: str) -> None:
        task = asyncio.get_running_loop().create_task(self._note_sent(self._ip_slots.note_sent(ip)))
        pending = self._sends.setdefault(ip, set())
        pending.add(task)

        def done(task: asyncio.Task[None]) -> None:
            pending.discard(task)
            if not pending and self._sends.get(ip) is pending:
                del self._sends[ip]

        task.add_done_callback(done)

    @staticmethod
    async def _note_sent(note: Awaitable[None]) -> None:
        # Unreachable: the slot's unsent mark holds the IP until the slot is given back or
        # expires, which is never too early.
        with contextlib.suppress(CoordinatorUnavailable):
            await note

    async def give_ip_slot(self, ip: str) -> None:
        # The note of the send must reach Redis first: a release that overtakes it (a fast
        # answer) clears the unsent mark while the last start is still the admission's,
        # and another node's request could then reach the IP before the gap from the send
        # (CI: 0.233 s under 0.30). `wait`, not `gather`: cancelling this must not cancel
        # the notes.
        pending = self._sends.get(ip)
        if pending:
            await asyncio.wait(set(pending))
        with contextlib.suppress(CoordinatorUnavailable):  # a lost slot expires on its own
            await self._ip_slots.release(ip)

    async def publish(self) -> None:
        await self._publisher.publish()

    def restarted_at(self, site: str) -> float:
        return self._table.restarted_at(site)

    def cut(self, site: str) -> AbstractAsyncContextManager[None]:
        return self._cuts.cut(self._table.partition_of(site))

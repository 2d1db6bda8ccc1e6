"""Stand-ins for a cluster node's coordinator in tests that run one node's parts alone."""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any

from trawl.cluster.lease_cuts import LeaseCuts
from trawl.cluster.redis_links import LinkBatch

if TYPE_CHECKING:
    from collections.abc import Awaitable, Iterable, Mapping

    from trawl.cluster.redis_links import RoutedLink


class FreeIpSlots:
    """The per-IP slots (`placement.IpSlotStore`) of a coordinator that always has room."""

    async def try_acquire(self, ip: str) -> float | None:
        return None

    def note_sent(self, ip: str) -> Awaitable[None]:
        return asyncio.sleep(0)

    async def release(self, ip: str) -> None:
        return None


def _seq(entry_id: str) -> int:
    return int(entry_id.split("-")[1])


class MemoryStreams:
    """The partitions' link streams (`RedisLinks`) in memory; entry ids `1-<n>`, n counting
    up from 1 in each stream."""

    def __init__(self) -> None:
        self.entries: dict[int, list[LinkBatch]] = {}
        self._last: dict[int, int] = {}

    def append(
        self, partition: int, *links: RoutedLink, control: dict[str, Any] | None = None
    ) -> str:
        n = self._last[partition] = self._last.get(partition, 0) + 1
        entry = LinkBatch(f"1-{n}", links, control)
        self.entries.setdefault(partition, []).append(entry)
        return entry.entry_id

    async def send_control_all(self, partitions: Iterable[int], control: dict[str, Any]) -> int:
        n = 0
        for partition in partitions:
            self.append(partition, control=dict(control))
            n += 1
        return n

    async def read_many(self, after: Mapping[int, str], count: int) -> dict[int, list[LinkBatch]]:
        return {
            p: [e for e in self.entries.get(p, []) if _seq(e.entry_id) > _seq(pos)][:count]
            for p, pos in after.items()
        }

    async def trim_through(self, partition: int, entry_id: str) -> int:
        stream = self.entries.get(partition, [])
        keep = [e for e in stream if _seq(e.entry_id) > _seq(entry_id)]
        self.entries[partition] = keep
        return len(stream) - len(keep)


def never_cut(partitions: int) -> LeaseCuts:
    """Lease deadlines for a node whose leases never end: requests run to their own end."""
    cuts = LeaseCuts()
    for partition in range(partitions):
        cuts.deadline(partition, float("inf"))
    return cuts

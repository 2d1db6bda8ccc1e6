"""What the crawl loop asks of cluster mode: whose sites it may fetch, where new URLs go.

Both are None in embedded mode (`CrawlContext.gate`, `CrawlContext.router`); a node's
`NodePlacement` (cluster/placement.py) provides them, until the loop takes a
`loop.placement.Placement` in their place.
"""

from __future__ import annotations

from typing import Protocol


class PartitionGate(Protocol):
    def may_fetch(self, site: str) -> bool:
        """True while this machine holds, and has loaded, the lease of the site's partition."""


class SharedIpGate(Protocol):
    """The per-IP cap across machines (sites sharing a server may sit in partitions owned
    by different machines); taken after the machine's own `IpGate`."""

    async def acquire(self, ip: str) -> bool:
        """Wait for a slot on `ip`; False when the coordinator can't be asked (no request)."""

    async def release(self, ip: str) -> None:
        """Give the slot back (never raises: a lost slot expires on its own)."""

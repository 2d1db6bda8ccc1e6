"""Where one crawl process sits among the machines crawling: the loop's one port to cluster
mode, passed in when the loop is built (never patched in afterwards).

The embedded default (`EmbeddedPlacement`) is one machine that owns every site; cluster
mode's (`trawl.cluster.placement.NodePlacement`) owns the sites of the partitions it holds a
lease on, shares the per-IP cap through the coordinator and sends every URL it discovers to
its partition's owner. The loop asks the same questions of both:

- `may_fetch(site)`: is the site ours to fetch right now (checked when a turn starts and
  again after the IP slot was won, since a hand-over may begin during that wait);
- `take_ip_slot(ip)` / `note_ip_sent(ip)` / `give_ip_slot(ip)`: the cross-machine part of
  the per-IP cap, taken after the machine's own `IpGate`; like it, the next start on the IP
  counts its gap from the send;
- `router`: None when discovered URLs are claimed and queued here; otherwise where they go;
- `publish()`: the async second half of every commit (cluster: links, then WARC chunks,
  then records);
- `restarted_at(site)`: since when a site's politeness gap must run afresh because another
  process (an earlier run, a partition's previous owner) may have just made a request;
  None when nobody can have (a fresh data directory).
- `cut(site)`: the block a request to the site runs in; cluster mode ends it with
  TimeoutError at the site's partition lease's local deadline (cluster/lease_cuts.py), so
  no request of ours is on the wire once another machine may own the site.
"""

from __future__ import annotations

import contextlib
import socket
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    import asyncio
    from contextlib import AbstractAsyncContextManager

    from trawl.frontier.ports import LinkRouter


class Placement(Protocol):
    @property
    def owner(self) -> str:
        """Names this machine in the host records it writes."""

    @property
    def router(self) -> LinkRouter | None:
        """Where discovered URLs go; None: claimed in the seen set and queued here."""

    def may_fetch(self, site: str) -> bool:
        """True while this process may send requests to `site`."""

    async def take_ip_slot(self, ip: str, stop: asyncio.Event | None = None) -> bool:
        """Wait for the cross-machine slot on `ip`; False: no request now (the coordinator
        can't be asked, or `stop` was set meanwhile); the URL goes back in line, unsent."""

    def note_ip_sent(self, ip: str) -> None:
        """The request holding the slot on `ip` has just been sent (never raises, never
        waits: it is called from the fetch as the request head goes out)."""

    async def give_ip_slot(self, ip: str) -> None:
        """Give the slot back (never raises)."""

    async def publish(self) -> None:
        """Make what the last commit holds visible to the other machines."""

    def restarted_at(self, site: str) -> float | None:
        """When another process may last have fetched `site` (see the module docstring)."""

    def cut(self, site: str) -> AbstractAsyncContextManager[None]:
        """The block a request to `site` runs in (TimeoutError: cut at a lease deadline)."""


class EmbeddedPlacement:
    """One machine, every site: the default. `resumed_at` is the start of a crawl on a data
    directory that held a crawl before (None for a fresh one)."""

    def __init__(self, resumed_at: float | None, owner: str | None = None) -> None:
        self._resumed_at = resumed_at
        self._owner = owner or socket.gethostname()

    @property
    def owner(self) -> str:
        return self._owner

    @property
    def router(self) -> LinkRouter | None:
        return None

    def may_fetch(self, site: str) -> bool:
        return True

    async def take_ip_slot(self, ip: str, stop: asyncio.Event | None = None) -> bool:
        return True

    def note_ip_sent(self, ip: str) -> None:
        return None

    async def give_ip_slot(self, ip: str) -> None:
        return None

    async def publish(self) -> None:
        return None

    def restarted_at(self, site: str) -> float | None:
        return self._resumed_at

    def cut(self, site: str) -> AbstractAsyncContextManager[None]:
        return _NO_CUT  # one machine owns every site for good


_NO_CUT: AbstractAsyncContextManager[None] = contextlib.nullcontext()

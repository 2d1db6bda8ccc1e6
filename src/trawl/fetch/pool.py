"""The keep-alive pool of Http1Fetcher: which connection a request reuses, which to close.

Sans-I/O (STYLE §2, httpcore's pool): nothing here reads a clock or touches a socket. The
shell (fetch/http1.py) passes `now`, connects when `reserve()` says it may, and closes the
connections these methods hand it.

Rules:
- A connection serves one key, (scheme, host, port, ip): the origin and the checked address
  it was opened to (the SSRF guard ran on that address), and nothing else.
- At most `max_connections` count at once (0: no cap, as aiohttp's `limit=0`). A connection
  counts from `reserve()`, before it connects, until `release_slot()`, which the shell calls
  once its transport is gone (or its connect failed): so the cap holds for sockets, not
  just for the connections we still use.
- Idle connections of a key are kept oldest first. `take` reuses the newest (the one its
  server is likeliest to keep open); `expired` hands back those idle for `idle_s` or longer;
  `oldest` hands back the least recently used of all, for the shell to close when a request
  needs room under the cap. Whatever these return has left the pool.
"""

from __future__ import annotations

from collections import OrderedDict
from typing import TYPE_CHECKING, Generic, Protocol, TypeVar

if TYPE_CHECKING:
    from collections.abc import Hashable


class Pooled(Protocol):
    """What the pool reads of a connection."""

    @property
    def key(self) -> Hashable: ...

    idle_since: float  # written by `put`


C = TypeVar("C", bound=Pooled)


class ConnectionPool(Generic[C]):
    """Idle connections by key, and the count of open ones against the cap."""

    def __init__(self, max_connections: int, idle_s: float) -> None:
        self.max_connections = max_connections
        self.idle_s = idle_s
        self.open = 0  # reserved, connecting, busy or idle: every socket we hold
        self.idle = 0
        self._idle: dict[Hashable, list[C]] = {}  # per key, oldest first; never holds []
        # Every idle connection, oldest first (`put` order, so `idle_since` order: the shell
        # passes a monotonic clock). `oldest`, `expired` and `next_expiry` read its front
        # instead of every key's list: at the cap (then 2,000 sockets, on a web of more
        # hosts) that scan ran for every connection opened, 4 % of the crawl loop's CPU.
        self._order: OrderedDict[C, None] = OrderedDict()

    def __repr__(self) -> str:
        return f"<ConnectionPool open={self.open}/{self.max_connections} idle={self.idle}>"

    def take(self, key: Hashable) -> C | None:
        """The newest idle connection of `key`, out of the pool; None if there is none."""
        conns = self._idle.get(key)
        if conns is None:
            return None
        conn = conns.pop()
        if not conns:
            del self._idle[key]
        del self._order[conn]
        self.idle -= 1
        return conn

    def reserve(self) -> bool:
        """Count one more connection if the cap allows; False if it does not."""
        if 0 < self.max_connections <= self.open:
            return False
        self.open += 1
        return True

    def release_slot(self) -> None:
        """A counted connection is gone (its transport was lost, or it never connected)."""
        self.open -= 1

    def put(self, conn: C, now: float) -> None:
        """Keep `conn` idle for reuse, from `now`."""
        conn.idle_since = now
        conns = self._idle.get(conn.key)
        if conns is None:
            self._idle[conn.key] = [conn]
        else:
            conns.append(conn)
        self._order[conn] = None
        self.idle += 1

    def discard(self, conn: C) -> None:
        """Take `conn` out of the idle lists if it is there (it closed while idle)."""
        if conn in self._order:
            self._leave(conn)

    def oldest(self) -> C | None:
        """The least recently used idle connection, out of the pool; None if none idles."""
        if not self._order:
            return None
        conn = next(iter(self._order))
        self._leave(conn)
        return conn

    def expired(self, now: float) -> list[C]:
        """Connections idle for `idle_s` or longer at `now`, out of the pool."""
        deadline = now - self.idle_s
        gone: list[C] = []
        for conn in self._order:
            if conn.idle_since > deadline:
                break
            gone.append(conn)
        for conn in gone:
            self._leave(conn)
        return gone

    def next_expiry(self) -> float | None:
        """When the longest idle connection expires; None when nothing idles."""
        for conn in self._order:
            return conn.idle_since + self.idle_s
        return None

    def drain(self) -> list[C]:
        """Every idle connection, out of the pool (the fetcher is closing)."""
        gone = list(self._order)
        self._idle.clear()
        self._order.clear()
        self.idle = 0
        return gone

    def _leave(self, conn: C) -> None:
        """Take an idle `conn` out of both orders."""
        del self._order[conn]
        conns = self._idle[conn.key]
        conns.remove(conn)  # found at once for `oldest` and `expired`: the key's oldest
        if not conns:
            del self._idle[conn.key]  # sites come and go: keys without connections don't stay
        self.idle -= 1

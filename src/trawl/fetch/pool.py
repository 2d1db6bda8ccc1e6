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
        self._idle: dict[Hashable, list[C]] = {}  # per key, oldest first; may hold []

    def __repr__(self) -> str:
        return f"<ConnectionPool open={self.open}/{self.max_connections} idle={self.idle}>"

    def take(self, key: Hashable) -> C | None:
        """The newest idle connection of `key`, out of the pool; None if there is none."""
        conns = self._idle.get(key)
        if not conns:
            return None
        self.idle -= 1
        return conns.pop()

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
        self.idle += 1

    def discard(self, conn: C) -> None:
        """Take `conn` out of the idle lists if it is there (it closed while idle)."""
        conns = self._idle.get(conn.key)
        if conns and conn in conns:
            conns.remove(conn)
            self.idle -= 1

    def oldest(self) -> C | None:
        """The least recently used idle connection, out of the pool; None if none idles."""
        oldest_key = None
        since = float("inf")
        for key, conns in self._idle.items():
            if conns and conns[0].idle_since < since:
                oldest_key, since = key, conns[0].idle_since
        if oldest_key is None:
            return None
        self.idle -= 1
        return self._idle[oldest_key].pop(0)

    def expired(self, now: float) -> list[C]:
        """Connections idle for `idle_s` or longer at `now`, out of the pool."""
        deadline = now - self.idle_s
        gone: list[C] = []
        for key, conns in list(self._idle.items()):
            n = 0
            while n < len(conns) and conns[n].idle_since <= deadline:
                n += 1
            if n:
                gone += conns[:n]
                del conns[:n]
            if not conns:
                del self._idle[key]  # sites come and go: keys without connections don't stay
        self.idle -= len(gone)
        return gone

    def next_expiry(self) -> float | None:
        """When the longest idle connection expires; None when nothing idles."""
        fronts = [conns[0].idle_since for conns in self._idle.values() if conns]
        return min(fronts) + self.idle_s if fronts else None

    def drain(self) -> list[C]:
        """Every idle connection, out of the pool (the fetcher is closing)."""
        gone = [conn for conns in self._idle.values() for conn in conns]
        self._idle.clear()
        self.idle = 0
        return gone

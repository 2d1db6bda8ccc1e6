"""Per-IP cap across sites: many small sites can share one server.

How this works: after DNS and before sending, the shell calls `try_acquire(ip, now)`;
None means the slot is taken and the request may start, a float is the earliest time
worth asking again. `note_sent(ip, now)` when the request's head has gone out (the start
a server sees), `release(ip, now, sent=…)` when the exchange ends. Per IP address at most
`max_in_flight` requests run at once and starts are at least `min_gap_s` apart.

Starts are what the server sees, so they are counted from the send, and an admitted request
not yet sent holds the next admission back: it will go out at some moment from now on, so
the next start can be no earlier than a gap from now. Without that hold a request delayed
between admission and send (connection set-up, a loaded loop, the cluster's wait for its
coordinator's slot) could reach the server less than a gap before the next one.

Restarts: a crawl resumed from a data directory cannot know when the previous process last
sent to an IP (it may have been killed a moment ago), so `restarted_at` counts as a start on
every IP: the first request to each waits `min_gap_s` from the restart (issue 14).

Memory: an IP's entry is needed only while it has requests in flight or its last start
is younger than `min_gap_s`. `release` drops entries that are past both; `forget_idle`
sweeps the few left (IPs released within `min_gap_s` of their last start).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from trawl.errors import ConfigError


@dataclass(slots=True)
class _IpState:
    in_flight: int = 0
    last_start_at: float = -math.inf
    unsent: bool = False  # a request is admitted and its head has not gone out yet


@dataclass(frozen=True, slots=True)
class IpGateStats:
    ips_tracked: int
    in_flight: int


# Mutable: one IpGate per crawler process, written and read only by the fetch shell's
# event loop thread (no awaits inside its methods).
class IpGate:
    """Admission control per IP address: a cap on concurrency and on start rate."""

    __slots__ = ("_ips", "_restarted_at", "max_in_flight", "min_gap_s")

    def __init__(
        self, max_in_flight: int = 2, min_gap_s: float = 0.25, restarted_at: float | None = None
    ) -> None:
        if max_in_flight < 1:
            raise ConfigError(f"per-IP max_in_flight = {max_in_flight!r} must be >= 1")
        if not (math.isfinite(min_gap_s) and min_gap_s >= 0.0):
            raise ConfigError(f"per-IP min_gap_s = {min_gap_s!r} must be >= 0")
        self.max_in_flight = max_in_flight
        self.min_gap_s = min_gap_s
        # An IP seen for the first time (or again after being forgotten) last started then.
        self._restarted_at = -math.inf if restarted_at is None else restarted_at
        self._ips: dict[str, _IpState] = {}

    def try_acquire(self, ip: str, now: float) -> float | None:
        """Take a slot on `ip` at `now` (None), or return the earliest time worth retrying.

        When all slots are busy the answer is only a polling hint (now + min_gap_s):
        a slot frees on `release`, which the gate cannot foresee.
        """
        state = self._ips.get(ip)
        if state is None:
            state = self._ips[ip] = _IpState(last_start_at=self._restarted_at)
        earliest = state.last_start_at + self.min_gap_s
        if state.in_flight >= self.max_in_flight or state.unsent:
            return max(earliest, now + self.min_gap_s)
        if now < earliest:
            return earliest
        state.in_flight += 1
        state.last_start_at = now
        state.unsent = self.min_gap_s > 0
        return None

    def note_sent(self, ip: str, now: float) -> None:
        """The request admitted on `ip` was really sent at `now`: later starts count from
        then. Between admission and the first byte lie connection set-up and event-loop lag,
        which a loaded machine stretches by tens of milliseconds; a server measures starts
        by what it receives, so the gap must run from the send (issue 13)."""
        state = self._ips.get(ip)
        if state is not None and state.in_flight:
            state.last_start_at = max(state.last_start_at, now)
            state.unsent = False

    def release(self, ip: str, now: float, *, sent: bool) -> None:
        """Give back a slot taken by `try_acquire`; `sent`: whether `note_sent` was called
        for it. Raises RuntimeError if no slot was taken."""
        state = self._ips.get(ip)
        if state is None or state.in_flight == 0:
            raise RuntimeError(f"IpGate.release({ip!r}) without a matching acquire")
        state.in_flight -= 1
        if not sent:
            state.unsent = False  # only one request per IP can be unsent: this one
        if self._is_forgettable(state, now):
            del self._ips[ip]

    def in_flight(self, ip: str) -> int:
        state = self._ips.get(ip)
        return 0 if state is None else state.in_flight

    def forget_idle(self, now: float) -> int:
        """Drop IPs that no longer constrain anything; returns how many were dropped."""
        idle = [ip for ip, state in self._ips.items() if self._is_forgettable(state, now)]
        for ip in idle:
            del self._ips[ip]
        return len(idle)

    def _is_forgettable(self, state: _IpState, now: float) -> bool:
        return state.in_flight == 0 and now >= state.last_start_at + self.min_gap_s

    def stats(self) -> IpGateStats:
        return IpGateStats(
            ips_tracked=len(self._ips),
            in_flight=sum(state.in_flight for state in self._ips.values()),
        )

    def __repr__(self) -> str:
        stats = self.stats()
        return (
            f"<IpGate max_in_flight={self.max_in_flight} min_gap_s={self.min_gap_s}"
            f" ips_tracked={stats.ips_tracked} in_flight={stats.in_flight}>"
        )

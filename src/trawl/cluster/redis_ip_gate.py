"""The per-IP cap of `politeness.ip_gate`, held across the cluster on Redis.

Why: partitions split the web by site, but many small sites share one server (shared
hosting, one CDN edge), so sites owned by different members can resolve to the same IP.
Each member's own `IpGate` would let N members send N times the cap to that server; this
gate makes the cap hold for the whole cluster.

How this works:
- Per IP three keys share the hash tag `{<cluster>:ip:<ip>}`, so one script touches one
  slot of a Redis Cluster: `…:holds`, a sorted set of hold id → expiry (server ms), `…:last`,
  the server time in ms of the last start, and `…:unsent`, the id of the hold admitted and
  not sent yet, if any.
- `try_acquire` is one script on the server's clock: drop expired holds; if fewer than
  `max_in_flight` remain, no admitted request is still unsent and the last start is at
  least `min_gap_s` old, add a hold that expires `hold_ttl_s` from now, record the start
  and mark the hold unsent. Otherwise it answers how many seconds to wait: the rest of the
  gap, or `min_gap_s` when every slot is busy or a request is unsent (a polling hint: a slot
  frees on `release`, an unsent request goes out at some moment from now on; no one can
  foresee either). The reply is a duration, not a time, since this machine's clock is not
  the server's.
- `note_sent(ip)`, when the request's head has gone out, records the server's now as the
  last start and clears the unsent mark: the gap runs from the send, as the server sees
  it, not from the admission, which the reply's trip back, the event loop and connection
  set-up delay by tens of milliseconds (with the admission as the start, two members' requests
  reached one IP 0.235 s apart under a 0.25 s gap). The script runs after the send, so
  its now is never earlier than the start the server saw.
- Holds expire, so a member that crashes mid-request blocks the IP for at most
  `hold_ttl_s`; make it longer than the longest request (the fetch timeout). The holds key
  expires with its last hold and `…:last` once the gap has passed, so idle IPs vanish.
- Failover (issue 19): a hold or a send note the primary answered but no replica has
  would vanish when the replica takes over, letting another member's request reach the IP
  at once. So both count only once a replica confirms them (`redis_replication`): an
  unconfirmed `try_acquire` raises CoordinatorUnavailable (no slot; the hold, if it
  survived, expires after `hold_ttl_s`), and the slot of an unconfirmed `note_sent` is
  not given back by `release`, so its unsent mark keeps the IP closed until it expires.
- `release(ip)` deletes one of this gate's holds on `ip` (the oldest: requests mostly end in
  the order they started), and its unsent mark if the request never went out. A hold that
  already expired is simply gone.
"""

from __future__ import annotations

import itertools
import math
import secrets
from dataclasses import dataclass
from typing import TYPE_CHECKING

from trawl.cluster.redis_coord import (
    LUA_NOW_MS,
    CoordinatorUnavailable,
    LuaScript,
    unavailable_as_trawl_error,
)
from trawl.cluster.redis_replication import UNCONFIRMED, ReplicatedWrites
from trawl.errors import ConfigError

if TYPE_CHECKING:
    from collections.abc import Awaitable

    from trawl.cluster.redis_coord import ClusterKeys, RedisClient

# KEYS: holds, last start, unsent. ARGV: hold id, max in flight, min gap ms, hold ttl ms.
# Reply: -1 when the hold was added, else the milliseconds to wait before asking again.
_TRY_ACQUIRE = LuaScript(
    LUA_NOW_MS
    + """
local gap_ms = tonumber(ARGV[3])
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', string.format('%d', now_ms))
if redis.call('ZCARD', KEYS[1]) >= tonumber(ARGV[2]) then return gap_ms end
if redis.call('EXISTS', KEYS[3]) == 1 then return gap_ms end
local last = redis.call('GET', KEYS[2])
if last then
  local wait_ms = tonumber(last) + gap_ms - now_ms
  if wait_ms > 0 then return wait_ms end
end
redis.call('ZADD', KEYS[1], string.format('%d', now_ms + tonumber(ARGV[4])), ARGV[1])
local newest = redis.call('ZRANGE', KEYS[1], -1, -1, 'WITHSCORES')
redis.call('PEXPIREAT', KEYS[1], string.format('%d', tonumber(newest[2])))
if gap_ms > 0 then
  redis.call('SET', KEYS[2], string.format('%d', now_ms), 'PX', gap_ms)
  redis.call('SET', KEYS[3], ARGV[1], 'PX', ARGV[4])
end
return -1
"""
)

# KEYS: holds, last start, unsent. ARGV: hold id, min gap ms. The request went out now.
_NOTE_SENT = LuaScript(
    LUA_NOW_MS
    + """
if redis.call('GET', KEYS[3]) == ARGV[1] then redis.call('DEL', KEYS[3]) end
local gap_ms = tonumber(ARGV[2])
if gap_ms > 0 then
  local last = redis.call('GET', KEYS[2])
  if not last or tonumber(last) < now_ms then
    redis.call('SET', KEYS[2], string.format('%d', now_ms), 'PX', gap_ms)
  end
end
return 1
"""
)

# KEYS: holds, last start, unsent. ARGV: hold id.
_RELEASE = LuaScript(
    """
redis.call('ZREM', KEYS[1], ARGV[1])
if redis.call('GET', KEYS[3]) == ARGV[1] then redis.call('DEL', KEYS[3]) end
return 1
"""
)


def ip_keys(cluster: str, ip: str) -> list[str]:
    """The holds, last-start and unsent keys of `ip` in `cluster` (the scripts' KEYS)."""
    tag = f"trawl:{{{cluster}:ip:{ip}}}"
    return [f"{tag}:holds", f"{tag}:last", f"{tag}:unsent"]


# Hold ids are `<member>/<process>/<n>`: the random process part keeps a restarted member
# from reusing the ids of holds its previous run left behind.
_PROCESS = secrets.token_hex(4)
_HOLD_NUMBERS = itertools.count(1)


@dataclass(frozen=True, slots=True)
class RedisIpGateStats:
    acquires: int  # holds taken since start
    refusals: int  # try_acquire answers that said "wait"
    held: int  # holds this gate took and has not released yet


# Mutable: one RedisIpGate per crawler process, written and read only by the fetch shell's
# event loop thread. `_holds` is updated only after the script answered, so a try_acquire
# cancelled while waiting for Redis may leave a hold there that expires after hold_ttl_s.
class RedisIpGate:
    """Admission control per IP address for the whole cluster: concurrency and start rate."""

    __slots__ = (
        "_acquires",
        "_client",
        "_holds",
        "_keys",
        "_refusals",
        "_unnoted",
        "_writes",
        "hold_ttl_s",
        "max_in_flight",
        "member",
        "min_gap_s",
    )

    def __init__(
        self,
        client: RedisClient,
        keys: ClusterKeys,
        member: str,
        *,
        max_in_flight: int,
        min_gap_s: float,
        hold_ttl_s: float,
    ) -> None:
        if max_in_flight < 1:
            raise ConfigError(f"per-IP max_in_flight = {max_in_flight!r} must be >= 1")
        if not (math.isfinite(min_gap_s) and min_gap_s >= 0.0):
            raise ConfigError(f"per-IP min_gap_s = {min_gap_s!r} must be >= 0")
        if not (math.isfinite(hold_ttl_s) and hold_ttl_s >= 0.001):
            raise ConfigError(f"per-IP hold_ttl_s = {hold_ttl_s!r} must be >= 0.001")
        if not member:
            raise ConfigError("per-IP gate: member must not be empty")
        self._client = client
        self._keys = keys
        self.member = member
        self.max_in_flight = max_in_flight
        self.min_gap_s = min_gap_s
        self.hold_ttl_s = hold_ttl_s
        self._holds: dict[str, list[str]] = {}  # ip → hold ids, oldest first
        self._acquires = 0
        self._refusals = 0
        self._writes = ReplicatedWrites(client)
        # Hold ids whose send note no replica confirmed: `release` leaves them to expire.
        self._unnoted: set[str] = set()

    def _ip_keys(self, ip: str) -> list[str]:
        return ip_keys(self._keys.cluster, ip)

    async def try_acquire(self, ip: str) -> float | None:
        """Take a slot on `ip` (None), or return the seconds to wait before asking again.

        Raises CoordinatorUnavailable when Redis does not answer.
        """
        hold_id = f"{self.member}/{_PROCESS}/{next(_HOLD_NUMBERS)}"
        args = [
            hold_id,
            str(self.max_in_flight),
            str(round(self.min_gap_s * 1000)),
            str(round(self.hold_ttl_s * 1000)),
        ]
        what = f"acquire a slot on IP {ip}"
        [reply] = await self._writes.run(what, [(_TRY_ACQUIRE.source, self._ip_keys(ip), args)])
        if reply is UNCONFIRMED:
            raise CoordinatorUnavailable(f"redis: {what}: no replica confirmed it in time")
        wait_ms = int(str(reply))
        if wait_ms >= 0:
            self._refusals += 1
            return wait_ms / 1000
        self._holds.setdefault(ip, []).append(hold_id)
        self._acquires += 1
        return None

    def note_sent(self, ip: str) -> Awaitable[None]:
        """The newest hold on `ip` has been sent (while a hold is unsent no other is
        admitted, so the newest is the one). The hold is picked now, not when the returned
        awaitable runs: by then it may have been released and a newer one taken. Awaiting
        raises CoordinatorUnavailable."""
        held = self._holds.get(ip)
        return self._note_sent(ip, held[-1] if held else None)

    async def _note_sent(self, ip: str, hold_id: str | None) -> None:
        if hold_id is None:
            return  # released already: its unsent mark went with it
        args = [hold_id, str(round(self.min_gap_s * 1000))]
        what = f"note a request sent to IP {ip}"
        try:
            [reply] = await self._writes.run(what, [(_NOTE_SENT.source, self._ip_keys(ip), args)])
        except CoordinatorUnavailable:
            self._unnoted.add(hold_id)
            raise
        if reply is UNCONFIRMED:
            self._unnoted.add(hold_id)
            raise CoordinatorUnavailable(f"redis: {what}: no replica confirmed it in time")

    async def release(self, ip: str) -> None:
        """Give back a slot taken by `try_acquire`; raises RuntimeError if none was taken.

        The hold is forgotten here before Redis is asked, so if Redis is unavailable
        (CoordinatorUnavailable) it still ends, by expiring after hold_ttl_s.
        """
        held = self._holds.get(ip)
        if not held:
            raise RuntimeError(f"RedisIpGate.release({ip!r}) without a matching acquire")
        hold_id = held.pop(0)
        if not held:
            del self._holds[ip]
        if hold_id in self._unnoted:
            # The server may have only the admission as the last start: keep the unsent
            # mark, which closes the IP until the hold expires, rather than open it early.
            self._unnoted.discard(hold_id)
            return
        with unavailable_as_trawl_error(f"release a slot on IP {ip}"):
            await _RELEASE.run(self._client, self._ip_keys(ip), [hold_id])

    def stats(self) -> RedisIpGateStats:
        return RedisIpGateStats(
            acquires=self._acquires,
            refusals=self._refusals,
            held=sum(len(held) for held in self._holds.values()),
        )

    def __repr__(self) -> str:
        stats = self.stats()
        return (
            f"<RedisIpGate cluster={self._keys.cluster!r} member={self.member!r}"
            f" max_in_flight={self.max_in_flight} min_gap_s={self.min_gap_s}"
            f" hold_ttl_s={self.hold_ttl_s} acquires={stats.acquires}"
            f" refusals={stats.refusals} held={stats.held}>"
        )

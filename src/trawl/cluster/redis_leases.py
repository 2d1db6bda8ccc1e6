"""Partition leases with fencing tokens on Redis: the store `ownership.Ownership` talks to.

How this works:
- A lease is a hash `trawl:{<cluster>:p<N>}:lease` (member, token, since_ms, renewed_ms,
  ttl_ms) that expires by `PEXPIRE`, measured on the server from when it ran the command.
  Acquiring, renewing and releasing are Lua scripts, so each check-and-act is atomic.
- acquire: only if no lease exists (`SET NX` semantics). The fencing token comes from the
  per-partition counter `…:token` (INCR, never deleted), raised to the server's time in ms
  when lower, so tokens keep increasing even if a failover or restart loses the counter.
- renew and release: only if the lease still carries the caller's token (compare-and-PEXPIRE,
  compare-and-DEL). Tokens are never reused, so a match proves the caller held the lease
  without a break, and a member that lost its lease can never touch its successor's.
- Replication (issue 19): acquires and renewals count only once a replica has them
  (`redis_replication`), so a confirmed lease and its token survive a primary's death. An
  unconfirmed acquire answers None (the lease, if it survives, expires after `ttl_s`); an
  unconfirmed renew batch raises CoordinatorUnavailable, so the shell keeps each lease's
  old deadline, which the promoted replica honours. Releases need no confirmation: a lost
  release only leaves a lease to expire.
- Lease ages for `trawl cluster status` come from the server's own numbers (`ttl_ms` minus
  `PTTL` is the time since the last renewal), so no two clocks are compared.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from trawl.cluster.redis_coord import (
    LUA_NOW_MS,
    CoordinatorUnavailable,
    LuaScript,
    unavailable_as_trawl_error,
)
from trawl.cluster.redis_replication import UNCONFIRMED, ReplicatedWrites

if TYPE_CHECKING:
    from collections.abc import Sequence

    from trawl.cluster.redis_coord import ClusterKeys, RedisClient

# KEYS: lease, token counter. ARGV: member, ttl ms. Reply: the token, or nil when held.
_ACQUIRE = LuaScript(
    LUA_NOW_MS
    + """
if redis.call('EXISTS', KEYS[1]) == 1 then return false end
local token = redis.call('INCR', KEYS[2])
if token < now_ms then
  token = now_ms
  redis.call('SET', KEYS[2], string.format('%d', token))
end
redis.call('HSET', KEYS[1], 'member', ARGV[1], 'token', string.format('%d', token),
  'since_ms', string.format('%d', now_ms), 'renewed_ms', string.format('%d', now_ms),
  'ttl_ms', ARGV[2])
redis.call('PEXPIRE', KEYS[1], ARGV[2])
return token
"""
)
# KEYS: lease. ARGV: token, ttl ms. Reply: 1 renewed, 0 not ours (expired or another's).
_RENEW = LuaScript(
    LUA_NOW_MS
    + """
if redis.call('HGET', KEYS[1], 'token') ~= ARGV[1] then return 0 end
redis.call('HSET', KEYS[1], 'renewed_ms', string.format('%d', now_ms), 'ttl_ms', ARGV[2])
redis.call('PEXPIRE', KEYS[1], ARGV[2])
return 1
"""
)
# KEYS: lease. ARGV: token. Reply: 1 deleted, 0 not ours.
_RELEASE = LuaScript("""
if redis.call('HGET', KEYS[1], 'token') ~= ARGV[1] then return 0 end
redis.call('DEL', KEYS[1])
return 1
""")
_FIELDS = ("member", "token", "since_ms", "renewed_ms", "ttl_ms")


# A write's reply meaning its node was failing or is no longer the slot's primary: the write
# may or may not have happened, and nothing confirms it.
@dataclass(frozen=True, slots=True)
class Holder:
    """Who holds a partition's lease, as the server sees it now."""

    partition: int
    member: str
    token: int
    remaining_s: float  # until the server expires it, unless renewed
    renewed_age_s: float  # since the last acquire or renew
    age_s: float  # since it was acquired


def _ms(ttl_s: float) -> str:
    ttl_ms = round(ttl_s * 1000)
    if ttl_ms < 1:
        raise ValueError(f"a lease needs ttl_s >= 0.001, got {ttl_s}")
    return str(ttl_ms)


def _holder(partition: int, fields: Sequence[str | None], pttl_ms: int) -> Holder | None:
    """A Holder from HMGET of `_FIELDS` and PTTL; None when there is no live lease."""
    member, token, since_ms, renewed_ms, ttl_ms = fields
    if member is None or token is None or since_ms is None or renewed_ms is None or pttl_ms < 0:
        return None  # no lease, or it expired between the two reads
    renewed_age_ms = max(0, int(ttl_ms or 0) - pttl_ms)
    return Holder(
        partition=partition,
        member=member,
        token=int(token),
        remaining_s=pttl_ms / 1000,
        renewed_age_s=renewed_age_ms / 1000,
        age_s=(int(renewed_ms) - int(since_ms) + renewed_age_ms) / 1000,
    )


class RedisLeases:
    """Acquire, renew and release partition leases; read who holds them.

    `replica_wait_s` bounds how long a node waits for a replica to confirm a batch of
    acquires or renewals (`ReplicatedWrites`); keep it well under the shell's request timeout.
    """

    def __init__(self, client: RedisClient, keys: ClusterKeys, replica_wait_s: float = 0.25):
        self._client = client
        self._keys = keys
        self._writes = ReplicatedWrites(client, replica_wait_s)

    async def acquire(self, partition: int, member: str, ttl_s: float) -> int | None:
        """A fencing token if the lease was free and is now `member`'s for `ttl_s`; else None."""
        return (await self.acquire_many([partition], member, ttl_s))[0]

    async def acquire_many(
        self, partitions: Sequence[int], member: str, ttl_s: float
    ) -> list[int | None]:
        """`acquire` for many partitions in one pipeline: a member taking a thousand
        partitions (its start, a crashed member's share) asks in one round trip. A lease
        no replica confirmed answers None, like a refused one."""
        calls = [
            (_ACQUIRE.source, [self._keys.lease(p), self._keys.token(p)], [member, _ms(ttl_s)])
            for p in partitions
        ]
        replies = await self._writes.run(f"acquire {len(partitions)} partitions", calls)
        return [None if reply in (None, UNCONFIRMED) else int(str(reply)) for reply in replies]

    async def renew(self, partition: int, token: int, ttl_s: float) -> bool:
        """Extend the lease to `ttl_s` from now if it still carries `token`.

        Raises CoordinatorUnavailable when no replica confirmed it."""
        ok = (await self.renew_many([(partition, token)], ttl_s))[0]
        if ok is None:
            raise CoordinatorUnavailable(f"redis: renew partition {partition}: not confirmed")
        return ok

    async def renew_many(
        self, leases: Sequence[tuple[int, int]], ttl_s: float
    ) -> list[bool | None]:
        """`renew` for many (partition, token) pairs in one pipeline per Redis node: a member
        holding a thousand partitions renews them in one round trip, not a thousand.

        None for a renewal no replica confirmed (its node failed or did not confirm in
        time): the caller keeps that lease's old deadline, which a promoted replica would
        honour. Raises CoordinatorUnavailable when no node answered at all."""
        calls = [
            (_RENEW.source, [self._keys.lease(partition)], [str(token), _ms(ttl_s)])
            for partition, token in leases
        ]
        replies = await self._writes.run(f"renew {len(leases)} partitions", calls)
        return [None if reply is UNCONFIRMED else reply == 1 for reply in replies]

    async def release(self, partition: int, token: int) -> bool:
        """Delete the lease if it still carries `token`; False when it had expired or moved."""
        keys = [self._keys.lease(partition)]
        with unavailable_as_trawl_error(f"release partition {partition}"):
            reply = await _RELEASE.run(self._client, keys, [str(token)])
        return reply == 1

    async def release_many(self, leases: Sequence[tuple[int, int]]) -> list[bool]:
        """`release` for many (partition, token) pairs in one pipeline: a stopping member
        lets a thousand partitions go in one round trip."""
        pipe = self._client.pipeline(transaction=False)
        for partition, token in leases:
            pipe.eval(_RELEASE.source, 1, self._keys.lease(partition), str(token))
        with unavailable_as_trawl_error(f"release {len(leases)} partitions"):
            replies = await pipe.execute()
        return [reply == 1 for reply in replies]

    async def holder(self, partition: int) -> Holder | None:
        return (await self.holders([partition]))[0]

    async def holders(self, partitions: Sequence[int]) -> list[Holder | None]:
        """The holder of each partition, in one pipeline (one round trip per cluster node)."""
        pipe = self._client.pipeline(transaction=False)
        for partition in partitions:
            pipe.hmget(self._keys.lease(partition), list(_FIELDS))
            pipe.pttl(self._keys.lease(partition))
        with unavailable_as_trawl_error(f"lease holders of {len(partitions)} partitions"):
            replies = await pipe.execute()
        return [
            _holder(partition, replies[2 * i], int(replies[2 * i + 1]))
            for i, partition in enumerate(partitions)
        ]

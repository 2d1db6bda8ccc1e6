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
- Replication (issue 19). Redis replicates asynchronously: a primary can answer an acquire
  or renew and die before its replica has it, and the promoted replica then holds no lease
  (another member takes the partition while we still fetch: owned twice) or an older token
  counter (a token handed out again). So a lease counts as acquired or renewed only once
  every node that took the write says a replica has it: acquires and renewals go out as
  one pipeline with, per node and on that node's same connection (WAIT counts the writes of
  its own connection), `WAIT 1 <replica_wait_s>` and `ROLE` behind the scripts. A node
  is confirmed when WAIT counts a replica, or when ROLE lists none (a single Redis, a
  cluster without replicas, a just promoted replica whose primary is dead: no copy exists
  that a failover could promote, so nothing more can be had). Nodes last seen without a
  replica get `WAIT 0 0` (no wait); ROLE in the same batch notices a replica that joined.
  An unconfirmed acquire answers None (the lease, if it survives, expires after `ttl_s`);
  an unconfirmed renew batch raises CoordinatorUnavailable, so the shell keeps each lease's
  old deadline, which the replica honours. Tokens are INCRed in the acquire script, so a
  confirmed token is on the replica too and is never handed out again.
- Cost: no extra round trip from the client (WAIT and ROLE ride in the same pipeline); the
  server answers after one replica acknowledgement (REPLCONF GETACK, sent at once when a
  client blocks in WAIT), about one more loopback round trip per batch, not per lease.
- Limits: a replica that is disconnected when ROLE runs is not waited for; Redis Cluster
  promotes one only if it was cut off less than about `cluster-node-timeout` x
  `cluster-replica-validity-factor`, so run replicas with `min-replicas-to-write 1` where
  that matters. The replica expires leases at the primary's absolute PEXPIREAT, on its own
  wall clock: skew between the two machines must stay well below the lease margin (NTP).
- A cluster pipeline that redis-py retries after a connection error re-routes every
  command by its keys and forgets `target_nodes`, so `ROLE` (no key) can't be placed and
  the retry raises RedisClusterException: counted as no answer, never as a false
  confirmation of a WAIT that ran on another connection.
- Lease ages for `trawl cluster status` come from the server's own numbers (`ttl_ms` minus
  `PTTL` is the time since the last renewal), so no two clocks are compared.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass
from typing import TYPE_CHECKING

from redis import exceptions as redis_errors
from redis.asyncio import RedisCluster
from redis.asyncio.cluster import ClusterPipeline

from trawl.cluster.redis_coord import (
    LUA_NOW_MS,
    CoordinatorUnavailable,
    LuaScript,
    unavailable_as_trawl_error,
)

if TYPE_CHECKING:
    from collections.abc import Iterator, Sequence

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
_NOT_CONFIRMED = (
    redis_errors.ConnectionError,
    redis_errors.TimeoutError,
    redis_errors.ClusterDownError,
    redis_errors.TryAgainError,
    redis_errors.MovedError,  # includes AskError
    redis_errors.ReadOnlyError,
)


_UNCONFIRMED = object()  # a write's reply when no replica confirmed it


def _replica_count(role: object) -> int:
    """Replicas a primary's ROLE reply lists; -1 when the node is not a primary."""
    if isinstance(role, list) and role and role[0] == "master" and isinstance(role[2], list):
        return len(role[2])
    return -1


@contextlib.contextmanager
def _rerouted_as_unavailable(what: str) -> Iterator[None]:
    """redis-py's cluster pipeline, retrying after a connection error, routes each command
    by its keys and forgets `target_nodes`, so it can't place ROLE and raises: the node
    failed mid-batch, which is no answer. So is a slot no node serves during a failover."""
    try:
        yield
    except redis_errors.RedisClusterException as error:
        raise CoordinatorUnavailable(f"redis: {what}: {type(error).__name__}: {error}") from error


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
    acquires or renewals (module docstring); keep it well under the shell's request timeout.
    """

    def __init__(self, client: RedisClient, keys: ClusterKeys, replica_wait_s: float = 0.25):
        self._client = client
        self._keys = keys
        self._wait_ms = str(round(replica_wait_s * 1000))
        # Node name → replicas its last ROLE listed. Written and read by this object's
        # batches only; a stale count costs one WAIT that times out, never safety.
        self._replicas: dict[str, int] = {}
        self.unconfirmed = 0  # writes answered but not confirmed by a replica, for stats

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
        replies = await self._replicated(f"acquire {len(partitions)} partitions", calls)
        return [None if reply in (None, _UNCONFIRMED) else int(str(reply)) for reply in replies]

    async def renew(self, partition: int, token: int, ttl_s: float) -> bool:
        """Extend the lease to `ttl_s` from now if it still carries `token`."""
        return (await self.renew_many([(partition, token)], ttl_s))[0]

    async def renew_many(self, leases: Sequence[tuple[int, int]], ttl_s: float) -> list[bool]:
        """`renew` for many (partition, token) pairs in one pipeline: a member holding a
        thousand partitions renews them in one round trip, not a thousand.

        Raises CoordinatorUnavailable when a renewal no replica confirmed is among them, so
        the caller keeps every old deadline (which a promoted replica would honour)."""
        calls = [
            (_RENEW.source, [self._keys.lease(partition)], [str(token), _ms(ttl_s)])
            for partition, token in leases
        ]
        what = f"renew {len(leases)} partitions"
        replies = await self._replicated(what, calls)
        if any(reply is _UNCONFIRMED for reply in replies):
            raise CoordinatorUnavailable(f"redis: {what}: no replica confirmed them in time")
        return [reply == 1 for reply in replies]

    async def _replicated(
        self, what: str, calls: Sequence[tuple[str, list[str], list[str]]]
    ) -> list[object]:
        """Run scripts (EVAL, since a pipeline can't recover from a node lacking a script)
        and confirm them per node with WAIT and ROLE on the same connection. A write whose
        node did not confirm it answers `_UNCONFIRMED` (None for a refused acquire is a
        real answer, so it can't stand for that)."""
        targets = await self._targets(what, [keys[0] for _, keys, _ in calls])
        pipe = self._client.pipeline(transaction=False)
        for source, keys, args in calls:
            pipe.eval(source, len(keys), *keys, *args)
        for name, target in dict(targets).items():
            wanted = 1 if self._replicas[name] > 0 else 0
            routing = {} if target is None else {"target_nodes": target}
            pipe.execute_command("WAIT", str(wanted), self._wait_ms if wanted else "0", **routing)
            pipe.execute_command("ROLE", **routing)
        with unavailable_as_trawl_error(what), _rerouted_as_unavailable(what):
            if isinstance(pipe, ClusterPipeline):
                # No redirections: a write redis-py re-sent to another node after MOVED would
                # not be covered by the WAIT behind it on this connection.
                replies = await pipe.execute(raise_on_error=False, allow_redirections=False)
            else:
                replies = await pipe.execute(raise_on_error=False)
        writes, checks = replies[: len(calls)], replies[len(calls) :]
        confirmed = self._confirmed_nodes(list(dict(targets)), checks)
        if any(isinstance(reply, redis_errors.MovedError) for reply in writes):
            await self._refresh_slots(what)
        out: list[object] = []
        for (name, _), reply in zip(targets, writes, strict=True):
            if isinstance(reply, _NOT_CONFIRMED) or not confirmed[name]:
                self.unconfirmed += 1
                out.append(_UNCONFIRMED)
            elif isinstance(reply, Exception):
                raise reply  # we sent something wrong: not Redis being down
            else:
                out.append(reply)
        return out

    async def _targets(self, what: str, keys: Sequence[str]) -> list[tuple[str, object]]:
        """(node name, target for `target_nodes` or None) of each key's primary; asks ROLE
        of a node not seen before, so a node without replicas is never made to WAIT."""
        client = self._client
        if isinstance(client, RedisCluster):
            with unavailable_as_trawl_error(what), _rerouted_as_unavailable(what):
                # After a connection error redis-py only marks the map stale; learn the new
                # one before reading it (the pipeline would, but only after we picked nodes).
                if client._initialize:
                    await client.initialize()
            found: list[tuple[str, object]] = []
            for key in keys:
                node = client.get_node_from_key(key)
                if node is None:
                    raise CoordinatorUnavailable(f"redis: {what}: no node serves {key!r}")
                found.append((node.name, node))
        else:
            found = [("", None) for _ in keys]
        for name, target in dict(found).items():
            if name not in self._replicas:
                routing = {} if target is None else {"target_nodes": target}
                with unavailable_as_trawl_error(f"{what}: ROLE"):
                    role = await client.execute_command("ROLE", **routing)
                self._replicas[name] = _replica_count(role)
        return found

    def _confirmed_nodes(self, names: list[str], checks: list[object]) -> dict[str, bool]:
        confirmed: dict[str, bool] = {}
        for i, name in enumerate(names):
            acks, role = checks[2 * i], checks[2 * i + 1]
            if isinstance(role, Exception) or isinstance(acks, Exception):
                confirmed[name] = False
                continue
            replicas = _replica_count(role)
            is_primary = isinstance(role, list) and role[0] == "master"
            if replicas >= 0:
                self._replicas[name] = replicas
            confirmed[name] = is_primary and (int(str(acks)) >= 1 or replicas == 0)
        return confirmed

    async def _refresh_slots(self, what: str) -> None:
        """After MOVED: learn the new slot map now (redis-py does it itself only for
        redirections it follows, and this pipeline follows none)."""
        if isinstance(self._client, RedisCluster):
            with unavailable_as_trawl_error(f"{what}: slot map"), _rerouted_as_unavailable(what):
                await self._client.nodes_manager.initialize()

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

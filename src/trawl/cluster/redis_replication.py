"""Writes to Redis that count only once a replica has them (issue 19).

Why: Redis replicates asynchronously. A primary can answer a lease acquire, a renewal, a
fencing-token INCR or a per-IP hold and die before its replica has it; the promoted replica
then has no lease (another member takes the partition while we still fetch: owned twice),
an older token counter (a token handed out again) or no hold (two requests to one IP).

How this works:
- A batch of scripts goes out as one pipeline per node, all nodes at once; behind each
  node's scripts, on the same connection (WAIT counts the writes of its own connection),
  `WAIT 1 <wait ms>` and `ROLE`. A node's writes are confirmed when WAIT counts a
  replica, or when ROLE lists none (a single Redis, a cluster without replicas, a
  promoted replica whose primary is dead: no copy exists that a failover could promote,
  so there is nothing more to have).
  A node last seen without a replica gets `WAIT 0 0` (no wait); ROLE in the same batch
  notices a replica that joined, and the next batch waits for it.
- One node failing costs its own writes only. The batch went out as one cluster pipeline
  before: a dead primary made redis-py retry it, closing every node's connections first,
  so a node's renewals on its live primaries went unanswered too, and those partitions
  lapsed during a failover longer than their margin (seen in the e2e failover test).
- A write whose node failed, moved its slot or did not confirm answers `UNCONFIRMED`; the
  caller decides what that means (a lease not taken, renewals without an answer, an IP
  slot not taken). A MOVED reply makes us learn the new slot map at once.
- Cost: no extra round trip from the client (WAIT and ROLE ride in the same pipeline); the
  server answers after one replica acknowledgement (REPLCONF GETACK, sent at once when a
  client blocks in WAIT), so per batch, not per lease. Measured on loopback (2 shared
  cores, 900 batches each, old pipeline and this one interleaved in one run): renewing
  64 leases 1.88 → 2.47 ms a batch on 3 primaries with replicas (x1.31), 1.50 → 1.52 ms
  on a single Redis (x1.02); one lease 0.19 → 0.34 ms (x1.74) and 0.10 → 0.17 ms. A node
  sends one renew batch every `renew_after_s` (1.5 s), so this is well under 0.1% of time.
  One pipeline per node instead of one cluster pipeline: 64 renewals 1.91 → 1.72 ms a
  batch (median of 6 interleaved rounds of 300 batches on the same 3 + 3 cluster).
  The cost of an unconfirmed lease is a partition idle for one `ttl_s`, during failovers.
- Limits: a replica that is disconnected when ROLE runs is not waited for; Redis Cluster
  promotes one only if it was cut off less than about `cluster-node-timeout` x
  `cluster-replica-validity-factor`, so run replicas with `min-replicas-to-write 1` where
  that matters. The replica expires leases at the primary's absolute PEXPIREAT, on its own
  wall clock: skew between the two machines must stay well below the lease margin (NTP).
- Each node's pipeline is sent on that node's own connections, with no retry and no
  redirection: a write re-sent to another connection or node would not be covered by the
  WAIT behind it, so a failure or a MOVED is no answer, never a false confirmation.
"""

from __future__ import annotations

import asyncio
import contextlib
from typing import TYPE_CHECKING

from redis import exceptions as redis_errors
from redis.asyncio import RedisCluster
from redis.asyncio.cluster import ClusterNode, PipelineCommand

from trawl.cluster.redis_coord import CoordinatorUnavailable, unavailable_as_trawl_error

if TYPE_CHECKING:
    from collections.abc import Iterator, Sequence

    from trawl.cluster.redis_coord import RedisClient

_NOT_CONFIRMED = (
    redis_errors.ConnectionError,
    redis_errors.TimeoutError,
    redis_errors.ClusterDownError,
    redis_errors.TryAgainError,
    redis_errors.MovedError,  # includes AskError
    redis_errors.ReadOnlyError,
)


_CONNECTION_LOST = (redis_errors.ConnectionError, redis_errors.TimeoutError)

UNCONFIRMED = object()  # a write's reply when no replica confirmed it


def _replica_count(role: object) -> int:
    """Replicas a primary's ROLE reply lists; -1 when the node is not a primary."""
    if isinstance(role, list) and role and role[0] == "master" and isinstance(role[2], list):
        return len(role[2])
    return -1


@contextlib.contextmanager
def _rerouted_as_unavailable(what: str) -> Iterator[None]:
    """redis-py's cluster client failing to learn the slot map, or finding a slot no node
    serves, during a failover: no answer."""
    try:
        yield
    except redis_errors.RedisClusterException as error:
        raise CoordinatorUnavailable(f"redis: {what}: {type(error).__name__}: {error}") from error


async def _relearn_slot_map(client: RedisCluster) -> None:
    """`client.initialize()` without its second step once that has run: the step asks
    COMMAND of the map's first primary, which may be the primary that just died, and its
    failure throws away the map just learned (redis-py 6.4). Every batch then failed until
    the failover ended, the renewals of partitions on live primaries with it (a third of
    the runs of tests/integration/test_redis_failover.py's dead-primary test)."""
    if not client.commands_parser.commands:  # never initialised: the parser needs COMMAND
        await client.initialize()
        return
    if client._lock is None:
        client._lock = asyncio.Lock()
    async with client._lock:  # the one redis-py's initialize() takes
        if client._initialize:
            await client.nodes_manager.initialize()
            client._initialize = False


class ReplicatedWrites:
    """Runs scripts and says which of them a replica confirmed.

    `replica_wait_s` bounds how long a node waits for a replica's acknowledgement; keep it
    well under the caller's own request timeout.
    """

    def __init__(self, client: RedisClient, replica_wait_s: float = 0.25) -> None:
        self._client = client
        self._wait_ms = str(round(replica_wait_s * 1000))
        # Node name → replicas its last ROLE listed. Written and read by this object's
        # batches only; a stale count costs one WAIT that times out, never safety.
        self._replicas: dict[str, int] = {}
        self.unconfirmed = 0  # writes answered but not confirmed by a replica

    def __repr__(self) -> str:
        return f"<ReplicatedWrites replicas={self._replicas} unconfirmed={self.unconfirmed}>"

    async def run(
        self, what: str, calls: Sequence[tuple[str, list[str], list[str]]]
    ) -> list[object]:
        """Run scripts (source, keys, args) by EVAL (a pipeline can't recover from a node
        lacking a script), one pipeline per node, all nodes at once, and confirm each node's
        scripts with WAIT and ROLE on that pipeline's connection. Each script's reply, or
        `UNCONFIRMED` when its node failed or did not confirm it (a script's nil is a real
        answer, so None can't stand for that).

        One node failing leaves the other nodes' replies answered: a primary dying must not
        take every renewal of a batch with it, or partitions on live primaries lapse during
        its failover. Raises CoordinatorUnavailable when no node answered at all; any other
        error a script raised propagates (we sent something wrong)."""
        targets = await self._targets(what, [keys[0] for _, keys, _ in calls])
        by_node: dict[str, list[int]] = {}
        for i, (name, _) in enumerate(targets):
            by_node.setdefault(name, []).append(i)
        nodes = dict(targets)
        answers = await asyncio.gather(
            *(
                self._run_on(what, name, nodes[name], [calls[i] for i in indexes])
                for name, indexes in by_node.items()
            )
        )
        failed = [answer for answer in answers if isinstance(answer, CoordinatorUnavailable)]
        if failed and isinstance(self._client, RedisCluster):
            # What redis-py does after a failed command: drop every connection and learn the
            # slot map again on the next call; here only once every node has answered.
            await self._client.aclose()
        if failed and len(failed) == len(answers):
            raise failed[0]
        out: list[object] = [UNCONFIRMED] * len(calls)
        moved = False
        for (name, indexes), answer in zip(by_node.items(), answers, strict=True):
            if isinstance(answer, CoordinatorUnavailable):
                self.unconfirmed += len(indexes)
                continue
            writes, checks = answer[: len(indexes)], answer[len(indexes) :]
            confirmed = self._confirmed(name, checks)
            for i, reply in zip(indexes, writes, strict=True):
                moved = moved or isinstance(reply, redis_errors.MovedError)
                if isinstance(reply, _NOT_CONFIRMED) or not confirmed:
                    self.unconfirmed += 1
                elif isinstance(reply, Exception):
                    raise reply  # we sent something wrong: not Redis being down
                else:
                    out[i] = reply
        if moved:
            await self._refresh_slots(what)
        return out

    async def _run_on(
        self,
        what: str,
        name: str,
        target: object,
        calls: Sequence[tuple[str, list[str], list[str]]],
    ) -> list[object] | CoordinatorUnavailable:
        """One node's scripts, then WAIT and ROLE, on one connection: the replies, or the
        node's failure as a value (the other nodes' pipelines are still being answered)."""
        wanted = 1 if self._replicas[name] > 0 else 0
        commands: list[tuple[str | int, ...]] = [
            ("EVAL", source, len(keys), *keys, *args) for source, keys, args in calls
        ]
        commands += [("WAIT", str(wanted), self._wait_ms if wanted else "0"), ("ROLE",)]
        try:
            with unavailable_as_trawl_error(f"{what} on {name or 'redis'}"):
                if isinstance(target, ClusterNode):
                    # The node's own pipeline, not the client's: redis-py's cluster
                    # pipeline re-sends after a connection error, redirects (a write re-sent
                    # elsewhere is not covered by the WAIT behind it here) and first closes
                    # every node's connections, including those still reading our other
                    # nodes' replies.
                    piped = [PipelineCommand(i, *args) for i, args in enumerate(commands)]
                    await target.execute_pipeline(piped)
                    replies = [command.result for command in piped]
                else:
                    pipe = self._client.pipeline(transaction=False)
                    for args in commands:
                        pipe.execute_command(*args)
                    replies = await pipe.execute(raise_on_error=False)
                broken = [reply for reply in replies if isinstance(reply, _CONNECTION_LOST)]
                if broken:  # the connection broke mid-pipeline: the rest went unanswered
                    raise broken[0]
        except CoordinatorUnavailable as error:
            return error
        return replies

    async def _targets(self, what: str, keys: Sequence[str]) -> list[tuple[str, object]]:
        """(node name, target for `target_nodes` or None) of each key's primary; asks ROLE
        of a node not seen before, so a node without replicas is never made to WAIT."""
        client = self._client
        if isinstance(client, RedisCluster):
            with unavailable_as_trawl_error(what), _rerouted_as_unavailable(what):
                # After a connection error redis-py only marks the map stale; learn the new
                # one before reading it (the pipeline would, but only after we picked nodes).
                if client._initialize:
                    await _relearn_slot_map(client)
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

    def _confirmed(self, name: str, checks: list[object]) -> bool:
        """Whether a node's WAIT counted a replica, or its ROLE lists none to wait for."""
        acks, role = checks
        if isinstance(role, Exception) or isinstance(acks, Exception):
            return False
        replicas = _replica_count(role)
        is_primary = isinstance(role, list) and role[0] == "master"
        if replicas >= 0:
            self._replicas[name] = replicas
        return is_primary and (int(str(acks)) >= 1 or replicas == 0)

    async def _refresh_slots(self, what: str) -> None:
        """After MOVED: learn the new slot map now (redis-py does it itself only for
        redirections it follows, and this pipeline follows none)."""
        if isinstance(self._client, RedisCluster):
            with unavailable_as_trawl_error(f"{what}: slot map"), _rerouted_as_unavailable(what):
                await self._client.nodes_manager.initialize()

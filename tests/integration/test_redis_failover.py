"""Issue 19: a Redis Cluster primary dies and its replica takes over.

Leases and tokens the adapter confirmed must be on the promoted replica (nothing owned
twice, no token handed out again), every call during the failover must fail as
`CoordinatorUnavailable`, and the same client must reach the promoted replica by itself.
"""

from __future__ import annotations

import asyncio
import time
from typing import TYPE_CHECKING

import pytest
from redis.asyncio.cluster import RedisCluster
from redis.asyncio.connection import Connection
from tests.servers.redis import run_with_client

from trawl.cluster.redis_coord import (
    ClusterKeys,
    CoordinatorUnavailable,
    RedisClient,
    unavailable_as_trawl_error,
)
from trawl.cluster.redis_ip_gate import RedisIpGate
from trawl.cluster.redis_leases import RedisLeases
from trawl.cluster.redis_links import RedisLinks
from trawl.cluster.redis_members import RedisMembers

if TYPE_CHECKING:
    from tests.servers.redis import ReplicatedCluster

PARTITIONS = 48  # enough to land on all three primaries


async def _until_answered(call, timeout_s: float = 20.0):
    """Retry `call` while Redis is failing over; only CoordinatorUnavailable may escape it."""
    deadline = time.monotonic() + timeout_s
    failures = 0
    while True:
        try:
            return await call(), failures
        except CoordinatorUnavailable:
            failures += 1
            if time.monotonic() > deadline:
                raise
            await asyncio.sleep(0.1)


async def _confirmed(leases: RedisLeases, tokens: list[int | None]) -> list[int | None]:
    """`tokens` from m1's acquire, each confirmed by a replica: on a loaded machine a replica
    can miss WAIT's 250 ms, and the acquire then answers None for a lease it did write (a
    CI run saw it). Such a lease is m1's; renewing it until a replica confirms gives its
    token the same standing. Fails if one is not m1's or stays unconfirmed for 10 s."""
    deadline = time.monotonic() + 10.0
    while None in tokens:
        missing = [p for p, token in enumerate(tokens) if token is None]
        holders = await leases.holders(missing)
        assert all(h is not None and h.member == "m1" for h in holders)
        held = [(p, h.token) for p, h in zip(missing, holders, strict=True) if h is not None]
        renewed = await leases.renew_many(held, ttl_s=60.0)
        for (p, token), ok in zip(held, renewed, strict=True):
            assert ok is not False  # None: not confirmed yet
            if ok:
                tokens[p] = token
        assert time.monotonic() < deadline, f"leases {missing} never confirmed"
    return tokens


async def _held_then_primary_killed(
    leases: RedisLeases, keys: ClusterKeys, cluster: ReplicatedCluster, victim: int | None = None
) -> tuple[list[int], list[int]]:
    """m1 takes every partition, then the primary on port `victim` (by default, partition
    0's) dies: the tokens, and the partitions that primary served."""
    tokens = await _confirmed(leases, await leases.acquire_many(range(PARTITIONS), "m1", 60.0))
    if victim is None:
        victim = cluster.primary_of(keys.lease(0))
    on_victim = [p for p in range(PARTITIONS) if cluster.primary_of(keys.lease(p)) == victim]
    assert 0 < len(on_victim) < PARTITIONS
    cluster.kill_primary(victim)
    return [t for t in tokens if t is not None], on_victim


def test_issue_19_confirmed_leases_survive_a_primary_killed(redis_replicated: ReplicatedCluster):
    async def body(client: RedisClient, keys: ClusterKeys) -> None:
        leases = RedisLeases(client, keys)
        tokens, on_victim = await _held_then_primary_killed(leases, keys, redis_replicated)
        # Until the replica is promoted, the victim's slots fail as unavailable only.

        async def renew_confirmed() -> list[bool | None]:
            renewals = await leases.renew_many([(p, tokens[p]) for p in on_victim], 60.0)
            if None in renewals:  # answered (CLUSTERDOWN) but not confirmed
                raise CoordinatorUnavailable("not confirmed")
            return renewals

        renewals, failures = await _until_answered(renew_confirmed)
        assert renewals == [True] * len(on_victim), "a confirmed lease was lost"
        assert failures >= 1, "the renewals never saw the failover"
        redis_replicated.wait_promoted()
        # Nobody else can take them, and the owner still holds every one.
        others = await leases.acquire_many(range(PARTITIONS), "m2", ttl_s=60.0)
        assert others == [None] * PARTITIONS
        holders = await leases.holders(range(PARTITIONS))
        assert [(h.member, h.token) for h in holders if h] == [("m1", t) for t in tokens]
        # Tokens keep increasing across the failover.
        assert await leases.release_many([(p, tokens[p]) for p in on_victim])
        again = await leases.acquire_many(on_victim, "m2", ttl_s=60.0)
        assert all(
            new is not None and new > tokens[p] for p, new in zip(on_victim, again, strict=True)
        )

    run_with_client(redis_replicated.server, body, timeout_s=1.0)


@pytest.mark.parametrize("victim", ["partition 0's primary", "the client's default node"])
def test_issue_19_a_dead_primary_costs_only_the_renewals_it_served(
    redis_replicated: ReplicatedCluster, victim: str
):
    # Renewals go out as one pipeline per primary: before, one pipeline spanned all three,
    # and a dead primary left every renewal unanswered, so partitions on the live primaries
    # lapsed during a long enough failover (seen in tests/e2e/test_cluster_redis_failover.py).
    # The client's default node (the first primary of its slot map) is the one redis-py's
    # initialize() asks COMMAND of: that one dying failed every batch until the failover
    # ended (a third of the runs with partition 0's primary as the victim).
    async def body(client: RedisClient, keys: ClusterKeys) -> None:
        leases = RedisLeases(client, keys)
        port = None
        if victim == "the client's default node":
            assert isinstance(client, RedisCluster)
            port = client.get_default_node().port
        tokens, on_victim = await _held_then_primary_killed(leases, keys, redis_replicated, port)
        # Three batches well inside the node timeout (1 s): the cluster has not yet
        # flagged the victim, so its live primaries serve their slots all along.
        for _ in range(3):
            renewals = await leases.renew_many(list(enumerate(tokens)), ttl_s=60.0)
            assert [p for p, ok in enumerate(renewals) if ok is None] == on_victim
            assert all(ok is True for p, ok in enumerate(renewals) if p not in on_victim)
            await asyncio.sleep(0.1)

    run_with_client(redis_replicated.server, body, timeout_s=1.0)


def test_issue_19_every_adapter_recovers_without_a_new_client(
    redis_replicated: ReplicatedCluster,
):
    async def body(client: RedisClient, keys: ClusterKeys) -> None:
        members = RedisMembers(client, keys)
        links = RedisLinks(client, keys)
        await members.heartbeat("m1", {}, ttl_s=30.0)
        redis_replicated.kill_primary(redis_replicated.primary_of(keys.members()))
        _, failures = await _until_answered(lambda: members.heartbeat("m1", {}, ttl_s=30.0))
        assert failures >= 1
        assert await members.live_members() == ["m1"]
        await _until_answered(lambda: links.streams(list(range(8))))
        gate = RedisIpGate(client, keys, "m1", max_in_flight=1, min_gap_s=0.0, hold_ttl_s=5.0)
        assert await _until_answered(lambda: gate.try_acquire("127.0.0.9")) == (None, 0)

    run_with_client(redis_replicated.server, body, timeout_s=1.0)


def test_issue_19_redis_pys_own_failures_are_unavailable_ours_are_not():
    # A connection never connected has no writer: redis-py fails inside its own code, as
    # when a failover closed the connection under it (redis-py #3815).
    async def write_unconnected() -> None:
        await Connection()._send_packed_command([b"PING\r\n"])

    unavailable = pytest.raises(CoordinatorUnavailable, match="AttributeError in redis-py")
    with unavailable, unavailable_as_trawl_error("ping"):
        asyncio.run(write_unconnected())
    with pytest.raises(AttributeError), unavailable_as_trawl_error("ours"):
        None.missing  # type: ignore[attr-defined]  # noqa: B018 - a bug of our own

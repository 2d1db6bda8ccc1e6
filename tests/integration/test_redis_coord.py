"""The Redis adapters of cluster mode (issue 7) against a real single node AND a real 3-node
Redis Cluster: every test taking `redis_server` runs on both. Each test uses its own cluster
name, so tests share the servers without seeing each other's keys. TTLs are a few hundred ms.
"""

from __future__ import annotations

import asyncio
import time
from typing import TYPE_CHECKING

import pytest
from redis.asyncio import RedisCluster
from redis.crc import key_slot
from tests.servers.redis import free_port, run_with_client

from trawl.cluster.redis_coord import (
    ClusterKeys,
    CoordinatorUnavailable,
    connect,
    ensure_layout,
    is_cluster,
)
from trawl.cluster.redis_leases import RedisLeases
from trawl.cluster.redis_links import START, LinkBatch, RedisLinks, RoutedLink, StreamInfo
from trawl.cluster.redis_members import RedisMembers
from trawl.errors import ConfigError, DataError

if TYPE_CHECKING:
    from tests.servers.redis import RedisServer

    from trawl.cluster.redis_coord import RedisClient


run = run_with_client


def link(n: int, site: str = "a.test") -> RoutedLink:
    return RoutedLink(f"http://{site}/page/{n}?q=é", f"{n:032x}", site, n % 5, n / 7)


# -- connecting -------------------------------------------------------------------------------
def test_connect_asks_the_server_whether_it_is_a_cluster(redis_server: RedisServer) -> None:
    async def body(client: RedisClient, keys: ClusterKeys) -> None:
        assert is_cluster(client) == redis_server.is_cluster
        assert await client.ping()

    run(redis_server, body)


def test_an_unreachable_redis_is_coordinator_unavailable() -> None:
    port = free_port(cluster=False)
    with pytest.raises(CoordinatorUnavailable, match="INFO cluster"):
        asyncio.run(connect(f"redis://127.0.0.1:{port}/0", timeout_s=1.0))


def test_a_partitions_keys_share_one_slot_and_partitions_spread(redis_cluster: RedisServer) -> None:
    keys = ClusterKeys("crawl-1")
    for partition in (0, 7, 1023):
        slots = {key_slot(k(partition).encode()) for k in (keys.lease, keys.token, keys.links)}
        assert len(slots) == 1
    assert len({key_slot(k().encode()) for k in (keys.members, keys.member_info, keys.layout)}) == 1

    async def body(client: RedisClient, _: ClusterKeys) -> None:
        assert isinstance(client, RedisCluster)
        nodes = {getattr(client.get_node_from_key(keys.lease(p)), "name", None) for p in range(64)}
        assert len(nodes) == 3  # partitions spread over every node

    run(redis_cluster, body)


def test_cluster_names_are_checked() -> None:
    with pytest.raises(ConfigError, match="cluster name"):
        ClusterKeys("a{b}")


def test_the_partition_count_is_fixed_at_creation(redis_server: RedisServer) -> None:
    async def body(client: RedisClient, keys: ClusterKeys) -> None:
        await ensure_layout(client, keys, 1024)
        await ensure_layout(client, keys, 1024)
        with pytest.raises(ConfigError, match="created with 1024 partitions"):
            await ensure_layout(client, keys, 512)

    run(redis_server, body)


# -- members ------------------------------------------------------------------------------------
def test_heartbeats_keep_members_live_until_they_expire(redis_server: RedisServer) -> None:
    async def body(client: RedisClient, keys: ClusterKeys) -> None:
        members = RedisMembers(client, keys, forget_after_s=0.3)
        await members.heartbeat("node-a", {"host": "a"}, ttl_s=0.3)
        await members.heartbeat("node-b", {"host": "b", "pid": "7"}, ttl_s=10.0)
        assert await members.live_members() == ["node-a", "node-b"]
        await asyncio.sleep(0.4)
        assert await members.live_members() == ["node-b"]
        gone, live = await members.members()  # a recently gone member is still shown
        assert (gone.member_id, gone.is_live) == ("node-a", False)
        assert -1.0 < gone.expires_in_s < 0
        assert (live.info, 9.0 < live.expires_in_s <= 10.0) == ({"host": "b", "pid": "7"}, True)
        await asyncio.sleep(0.3)
        await members.heartbeat("node-b", {"host": "b"}, ttl_s=10.0)  # prunes the forgotten
        assert [m.member_id for m in await members.members()] == ["node-b"]
        await members.leave("node-b")
        assert await members.members() == []

    run(redis_server, body)


# -- leases ------------------------------------------------------------------------------------
def test_two_members_contend_for_a_lease(redis_server: RedisServer) -> None:
    async def body(client: RedisClient, keys: ClusterKeys) -> None:
        leases = RedisLeases(client, keys)
        won = await asyncio.gather(*(leases.acquire(3, m, 0.4) for m in ("a", "b", "c")))
        assert sorted(won, key=lambda t: t is None)[1:] == [None, None]  # exactly one winner
        winner = "abc"[next(i for i, t in enumerate(won) if t is not None)]
        token = next(t for t in won if t is not None)
        holder = await leases.holder(3)
        assert holder is not None
        assert (holder.member, holder.token, holder.partition) == (winner, token, 3)
        assert 0 < holder.remaining_s <= 0.4
        assert not await leases.renew(3, token + 1, 0.4)  # a non-holder's token
        assert not await leases.release(3, token - 1)
        assert await leases.acquire(3, "d", 0.4) is None
        await asyncio.sleep(0.5)  # nobody renews: the server expires it
        assert await leases.holder(3) is None
        assert not await leases.renew(3, token, 0.4)  # too late to renew
        later = await leases.acquire(3, "d", 0.4)
        assert later is not None
        assert later > token

    run(redis_server, body)


def test_many_leases_are_acquired_and_renewed_in_one_pipeline_each(
    redis_server: RedisServer,
) -> None:
    async def body(client: RedisClient, keys: ClusterKeys) -> None:
        leases = RedisLeases(client, keys)
        assert await leases.acquire(5, "b", 5.0) is not None  # held by another member
        partitions = list(range(40))  # spread over the cluster's nodes when it is one
        tokens = await leases.acquire_many(partitions, "a", 5.0)
        assert [p for p, t in zip(partitions, tokens, strict=True) if t is None] == [5]
        holders = await leases.holders(partitions)
        assert [h.member if h else None for h in holders] == [
            "b" if p == 5 else "a" for p in partitions
        ]
        ours = [(p, t) for p, t in zip(partitions, tokens, strict=True) if t is not None]
        stale = (ours[0][0], ours[0][1] + 1)  # a token we never held
        assert await leases.renew_many([*ours[1:], stale], 5.0) == [True] * (len(ours) - 1) + [
            False
        ]
        assert await leases.acquire_many([], "a", 5.0) == []

    run(redis_server, body)


def test_renew_extends_release_frees_and_tokens_keep_increasing(redis_server: RedisServer) -> None:
    async def body(client: RedisClient, keys: ClusterKeys) -> None:
        leases = RedisLeases(client, keys)
        tokens: list[int] = []
        for member in ("a", "b", "a"):
            token = await leases.acquire(9, member, 0.5)
            assert token is not None
            tokens.append(token)
            await asyncio.sleep(0.3)
            assert await leases.renew(9, token, 0.5)  # 0.6 s held on a 0.5 s lease
            await asyncio.sleep(0.3)
            holder = await leases.holder(9)
            assert holder is not None
            assert holder.member == member
            assert holder.age_s >= 0.59
            assert 0.29 <= holder.renewed_age_s < holder.age_s
            assert await leases.release(9, token)
            assert not await leases.release(9, token)  # already gone
        await client.delete(keys.token(9))  # the counter lost, as in a failover or restart
        tokens.append(await leases.acquire(9, "c", 0.5) or 0)
        assert tokens == sorted(set(tokens))

    run(redis_server, body)


def test_holders_of_all_partitions_in_one_pipeline(redis_server: RedisServer) -> None:
    async def body(client: RedisClient, keys: ClusterKeys) -> None:
        leases = RedisLeases(client, keys)
        for partition in (0, 500, 1023):
            await leases.acquire(partition, f"m{partition}", 5.0)
        started = time.monotonic()
        holders = await leases.holders(range(1024))
        elapsed = time.monotonic() - started
        assert [(h.partition, h.member) for h in holders if h] == [
            (0, "m0"),
            (500, "m500"),
            (1023, "m1023"),
        ]
        assert elapsed < 2.0, f"{elapsed:.2f} s for 1,024 partitions"

    run(redis_server, body)


# -- link streams --------------------------------------------------------------------------------
def test_link_batches_round_trip_in_order_and_trim_keeps_later_ones(
    redis_server: RedisServer,
) -> None:
    async def body(client: RedisClient, keys: ClusterKeys) -> None:
        links = RedisLinks(client, keys)
        batches = [[link(n + 100 * b) for n in range(300)] for b in range(3)]
        ids = [await links.send_links(5, batch) for batch in batches]
        assert ids == sorted(ids)
        read = await links.read_links(5, START, count=10)
        assert read == [LinkBatch(i, tuple(b)) for i, b in zip(ids, batches, strict=True)]
        assert [b.entry_id for b in await links.read_links(5, ids[0], count=10)] == ids[1:]
        assert [b.entry_id for b in await links.read_links(5, START, count=1)] == ids[:1]
        assert await links.stream_lag(5, START) == 3
        assert await links.stream_lag(5, ids[0]) == 2
        assert await links.stream_lag(5, ids[2]) == 0
        assert await links.trim_through(5, ids[1]) == 2  # a checkpoint covers the first two
        assert [b.entry_id for b in await links.read_links(5, START, count=10)] == ids[2:]
        assert await links.stream_lag(5, START) == 1
        assert await links.read_links(6, START, count=10) == []

    run(redis_server, body)


def test_sending_to_many_partitions_at_once(redis_server: RedisServer) -> None:
    async def body(client: RedisClient, keys: ClusterKeys) -> None:
        links = RedisLinks(client, keys)
        batches = {
            p: [link(p * 1000 + n, f"s{p}.test") for n in range(p % 4 + 1)] for p in range(200)
        }
        sent = await links.send_many([*batches.items(), (3, [link(7)])])  # 3 twice, in order
        assert [p for p, _ in sent] == [*range(200), 3]
        batches[3].append(link(7))
        read = await links.read_many(dict.fromkeys(range(200), START), count=10)
        assert {p: [link for b in read[p] for link in b.links] for p in read} == batches
        assert [b.entry_id for b in read[3]] == [sent[3][1], sent[-1][1]]
        assert await links.send_many([(7, [])]) == []

    run(redis_server, body)


def test_stream_status_of_many_partitions(redis_server: RedisServer) -> None:
    async def body(client: RedisClient, keys: ClusterKeys) -> None:
        links = RedisLinks(client, keys)
        first = await links.send_links(2, [link(1)])
        last = await links.send_links(2, [link(2)])
        await asyncio.sleep(0.05)
        empty, two = await links.streams([1, 2])
        assert empty == StreamInfo(1, 0, "", "", 0.0)
        assert (two.partition, two.length, two.first_id, two.last_id) == (2, 2, first, last)
        assert 0.04 <= two.oldest_age_s < 5.0

    run(redis_server, body)


def test_an_entry_this_version_did_not_write_is_a_data_error(redis_server: RedisServer) -> None:
    async def body(client: RedisClient, keys: ClusterKeys) -> None:
        entry_id = await client.xadd(keys.links(4), {"v2": "[]"})
        with pytest.raises(DataError, match=f"entry {entry_id}: not a v1 batch"):
            await RedisLinks(client, keys).read_links(4, START, count=10)

    run(redis_server, body)

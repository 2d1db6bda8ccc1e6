"""The cluster-wide per-IP gate against a real single node AND a real 3-node Redis Cluster:
every test taking `redis_server` runs on both. Each test uses its own cluster name, and the
two or three gates in a test stand for members on different machines. Times are ≤ 0.3 s.
"""

from __future__ import annotations

import asyncio
import time
from typing import TYPE_CHECKING

import pytest
from redis.asyncio import Redis
from redis.crc import key_slot
from tests.servers.redis import free_port, run_with_client

from trawl.cluster.redis_coord import ClusterKeys
from trawl.cluster.redis_ip_gate import RedisIpGate, RedisIpGateStats
from trawl.errors import ConfigError

if TYPE_CHECKING:
    from tests.servers.redis import RedisServer

    from trawl.cluster.redis_coord import RedisClient

IP = "203.0.113.7"


run = run_with_client


def gates(
    client: RedisClient, keys: ClusterKeys, *members: str, **limits: float
) -> list[RedisIpGate]:
    settings = {"max_in_flight": 1, "min_gap_s": 0.2, "hold_ttl_s": 5.0, **limits}
    return [
        RedisIpGate(
            client,
            keys,
            member,
            max_in_flight=int(settings["max_in_flight"]),
            min_gap_s=settings["min_gap_s"],
            hold_ttl_s=settings["hold_ttl_s"],
        )
        for member in members
    ]


def ip_keys(keys: ClusterKeys, ip: str) -> list[str]:
    return [f"trawl:{{{keys.cluster}:ip:{ip}}}:{name}" for name in ("holds", "last", "unsent")]


def test_one_slot_and_the_gap_hold_across_members(redis_server: RedisServer) -> None:
    async def body(client: RedisClient, keys: ClusterKeys) -> None:
        a, b = gates(client, keys, "node-a", "node-b")
        assert await a.try_acquire(IP) is None
        assert await b.try_acquire(IP) == 0.2  # every slot busy: a polling hint of min_gap_s
        await a.release(IP)
        wait = await b.try_acquire(IP)  # free, but the last start is younger than the gap
        assert wait is not None
        assert 0 < wait <= 0.2
        await asyncio.sleep(wait + 0.02)
        assert await b.try_acquire(IP) is None
        assert await a.try_acquire(IP) == 0.2
        await b.release(IP)
        assert a.stats() == RedisIpGateStats(acquires=1, refusals=1, held=0)
        assert b.stats() == RedisIpGateStats(acquires=1, refusals=2, held=0)
        assert repr(b) == (
            f"<RedisIpGate cluster={keys.cluster!r} member='node-b' max_in_flight=1"
            " min_gap_s=0.2 hold_ttl_s=5.0 acquires=1 refusals=2 held=0>"
        )

    run(redis_server, body)


def test_an_unsent_request_holds_the_ip_and_the_gap_runs_from_its_send(
    redis_server: RedisServer,
) -> None:
    """Member a's request is admitted but still on its way (the reply's trip back, a busy
    loop, connection set-up) when the gap from its admission has passed: b waits until a
    gap after a's send. Before the unsent mark, b went at the gap from a's admission, and
    two requests reached one IP 0.235 s apart under a 0.25 s gap."""

    async def body(client: RedisClient, keys: ClusterKeys) -> None:
        a, b = gates(client, keys, "a", "b", max_in_flight=2, min_gap_s=0.1)
        assert await a.try_acquire(IP) is None
        await asyncio.sleep(0.15)
        assert await b.try_acquire(IP) == 0.1, "a's request is not out yet"
        note = a.note_sent(IP)
        sent_at = time.monotonic()
        await note
        wait = await b.try_acquire(IP)
        assert wait is not None
        assert 0 < wait <= 0.1
        await asyncio.sleep(sent_at + 0.1 - time.monotonic() + 0.01)
        assert await b.try_acquire(IP) is None
        # b's unsent request held back a's next one; given back unsent, it no longer does.
        await asyncio.sleep(0.11)
        assert await a.try_acquire(IP) == 0.1
        await b.release(IP)
        assert await a.try_acquire(IP) is None
        assert await client.get(ip_keys(keys, IP)[2]) is not None
        await a.release(IP)
        await a.release(IP)
        assert await client.exists(ip_keys(keys, IP)[2]) == 0

    run(redis_server, body)


def test_a_note_picks_its_hold_when_called_not_when_run(redis_server: RedisServer) -> None:
    async def body(client: RedisClient, keys: ClusterKeys) -> None:
        (a,) = gates(client, keys, "a", max_in_flight=2, min_gap_s=0.05)
        assert await a.try_acquire(IP) is None
        late_note = a.note_sent(IP)  # the send, told after the release below
        await a.release(IP)
        await asyncio.sleep(0.06)
        assert await a.try_acquire(IP) is None  # a second request, not sent yet
        await late_note
        assert await client.exists(ip_keys(keys, IP)[2]) == 1, "the new hold is still unsent"
        await a.release(IP)

    run(redis_server, body)


def test_max_in_flight_two_admits_exactly_two(redis_server: RedisServer) -> None:
    async def body(client: RedisClient, keys: ClusterKeys) -> None:
        a, b, c = gates(client, keys, "a", "b", "c", max_in_flight=2, min_gap_s=0.0)
        answers = await asyncio.gather(*(g.try_acquire(IP) for g in (a, b, c, a, b, c)))
        assert sorted(answers, key=lambda wait: wait is not None)[:3] == [None, None, 0.0]
        assert sum(g.stats().held for g in (a, b, c)) == 2
        holder = next(g for g in (a, b, c) if g.stats().held)
        await holder.release(IP)
        assert await c.try_acquire(IP) is None
        assert await a.try_acquire(IP) == 0.0

    run(redis_server, body)


def test_a_crashed_members_hold_expires(redis_server: RedisServer) -> None:
    async def body(client: RedisClient, keys: ClusterKeys) -> None:
        (crashed,) = gates(client, keys, "crashed", hold_ttl_s=0.3, min_gap_s=0.05)
        (alive,) = gates(client, keys, "alive", min_gap_s=0.05)
        assert await crashed.try_acquire(IP) is None  # and it never releases
        await asyncio.sleep(0.1)
        assert await alive.try_acquire(IP) == 0.05
        await asyncio.sleep(0.25)
        assert await alive.try_acquire(IP) is None
        await alive.release(IP)
        await asyncio.sleep(0.1)
        for name in ip_keys(keys, IP):  # an idle IP leaves no keys
            assert await client.exists(name) == 0, name

    run(redis_server, body)


def test_different_ips_are_independent(redis_server: RedisServer) -> None:
    async def body(client: RedisClient, keys: ClusterKeys) -> None:
        a, b = gates(client, keys, "a", "b")
        assert await a.try_acquire(IP) is None
        assert await b.try_acquire("2001:db8::1") is None
        assert await b.try_acquire("203.0.113.8") is None
        assert await b.try_acquire(IP) == 0.2
        other = ClusterKeys(f"{keys.cluster}-other")  # another trawl cluster on the same Redis
        assert await gates(client, other, "a")[0].try_acquire(IP) is None

    run(redis_server, body)


def test_the_keys_of_one_ip_share_a_slot(redis_server: RedisServer) -> None:
    async def body(client: RedisClient, keys: ClusterKeys) -> None:
        (gate,) = gates(client, keys, "a")
        for ip in (IP, "2001:db8::1", "fe80::1%eth0"):
            assert await gate.try_acquire(ip) is None
            names = ip_keys(keys, ip)
            for name in names:  # the names the module docstring promises, both written
                assert await client.exists(name) == 1
            assert len({key_slot(name.encode()) for name in names}) == 1
            ttl_ms = [await client.pttl(name) for name in names]
            assert 0 < ttl_ms[0] <= 5000
            assert 0 < ttl_ms[1] <= 200
            assert 0 < ttl_ms[2] <= 5000  # unsent: a crashed member's mark goes with its hold

    run(redis_server, body)


@pytest.mark.parametrize(
    ("limits", "message"),
    [
        ({"max_in_flight": 0}, "max_in_flight = 0 must be >= 1"),
        ({"min_gap_s": -0.1}, "min_gap_s = -0.1 must be >= 0"),
        ({"min_gap_s": float("nan")}, "min_gap_s = nan must be >= 0"),
        ({"hold_ttl_s": 0.0}, "hold_ttl_s = 0.0 must be >= 0.001"),
        ({"hold_ttl_s": float("inf")}, "hold_ttl_s = inf must be >= 0.001"),
    ],
)
def test_limits_are_checked(limits: dict[str, float], message: str) -> None:
    async def body() -> None:
        client = Redis(host="127.0.0.1", port=free_port(cluster=False))  # never connects
        try:
            with pytest.raises(ConfigError, match=message):
                gates(client, ClusterKeys("checks"), "a", **limits)
            with pytest.raises(RuntimeError, match="without a matching acquire"):
                await gates(client, ClusterKeys("checks"), "a")[0].release(IP)
        finally:
            await client.aclose()

    asyncio.run(body())

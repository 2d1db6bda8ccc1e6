"""Ownership shells (cluster mode, issue 7) on a real Redis: several members in one process,
each with its own connections, share partitions without ever fetching one twice at once.

A sampler reads every shell's `may_fetch` every 20 ms, including a killed shell's (its pure
core still answers from its local deadline), and records any partition two shells may fetch
at the same moment. Callbacks write a journal on the monotonic clock the shells use. TTLs are
short (lease 1.5 s, margin 0.5 s, member 1 s), so the whole file runs in about 15 s.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
import uuid
from collections import defaultdict
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

from trawl.cluster.ownership_shell import ClusterTiming, OwnershipShell
from trawl.cluster.partitions import assign, moved, owned_by
from trawl.cluster.redis_coord import ClusterKeys, connect, ensure_layout
from trawl.cluster.redis_leases import RedisLeases
from trawl.cluster.redis_members import RedisMembers

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable

    from tests.servers.redis import RedisServer

    from trawl.cluster.redis_coord import RedisClient

TIMING = ClusterTiming(
    member_ttl_s=1.0,
    lease_ttl_s=1.5,
    margin_s=0.5,
    renew_after_s=0.3,
    retry_s=0.2,
    request_timeout_s=0.3,
)
CALLBACK_S = 0.01  # what loading or checkpointing a partition takes here
SETTLE_S = 5.0


@dataclass
class Journal:
    """What the callbacks did: (monotonic time, member, event, partition), in order."""

    events: list[tuple[float, str, str, int]] = field(default_factory=list)

    def at(self, member: str, event: str, partition: int) -> float:
        """When `member` last logged `event` for `partition`."""
        times = [t for t, m, e, p in self.events if (m, e, p) == (member, event, partition)]
        assert times, f"{member} never logged {event} for partition {partition}"
        return times[-1]


@dataclass
class MemberJournal:
    """One member's `PartitionHandler`, logging into the shared journal."""

    journal: Journal
    member: str

    async def on_acquired(self, partition: int, token: int) -> None:
        self.journal.events.append((time.monotonic(), self.member, "load", partition))
        await asyncio.sleep(CALLBACK_S)

    async def on_handover(self, partition: int, token: int | None) -> None:
        await asyncio.sleep(CALLBACK_S)
        self.journal.events.append((time.monotonic(), self.member, "checkpointed", partition))


@dataclass
class Node:
    member_id: str
    client: RedisClient
    shell: OwnershipShell
    task: asyncio.Task[None]


@dataclass
class Cluster:
    """Shells of one trawl cluster, and the sampler watching them all."""

    server: RedisServer
    partitions: int
    keys: ClusterKeys = field(default_factory=lambda: ClusterKeys(f"t{uuid.uuid4().hex[:10]}"))
    journal: Journal = field(default_factory=Journal)
    nodes: dict[str, Node] = field(default_factory=dict)  # killed and stopped ones too
    overlaps: list[tuple[int, list[str]]] = field(default_factory=list)
    owners_seen: defaultdict[int, set[str]] = field(default_factory=lambda: defaultdict(set))

    async def start(self, member_id: str) -> Node:
        client = await connect(self.server.url, timeout_s=1.0)
        await ensure_layout(client, self.keys, self.partitions)
        shell = OwnershipShell(
            member_id=member_id,
            partitions=self.partitions,
            members=RedisMembers(client, self.keys),
            leases=RedisLeases(client, self.keys),
            timing=TIMING,
        )
        handler = MemberJournal(self.journal, member_id)
        node = Node(member_id, client, shell, asyncio.create_task(shell.run(handler)))
        self.nodes[member_id] = node
        return node

    async def sample(self) -> None:
        while True:
            for partition in range(self.partitions):
                fetching = [m for m, n in self.nodes.items() if n.shell.may_fetch(partition)]
                self.owners_seen[partition].update(fetching)
                if len(fetching) > 1:
                    self.overlaps.append((partition, fetching))
            await asyncio.sleep(0.02)

    def is_settled(self, members: list[str]) -> bool:
        """Whether `members` own every partition as `assign` says, and no other shell any."""
        expected = assign(self.partitions, members)
        return all(
            node.shell.owned() == (owned_by(expected, m) if m in members else set())
            for m, node in self.nodes.items()
        )

    async def wait_settled(self, members: list[str], timeout_s: float = SETTLE_S) -> float:
        """Seconds until `is_settled(members)`."""
        return await poll_until(
            lambda: self.is_settled(members), f"settled on {members}", timeout_s
        )

    async def kill(self, member_id: str) -> None:
        """A crash: the task is cancelled, nothing is released or deregistered."""
        node = self.nodes[member_id]
        node.task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await node.task

    async def close(self) -> None:
        while self.nodes:
            _, node = self.nodes.popitem()
            node.task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await node.task
            await node.client.aclose()


async def poll_until(check: Callable[[], bool], what: str, timeout_s: float) -> float:
    """Seconds until `check()` is true, polled every 10 ms; fails after `timeout_s`."""
    started = time.monotonic()
    while not check():
        assert time.monotonic() - started < timeout_s, f"{what}: not after {timeout_s} s"
        await asyncio.sleep(0.01)
    return time.monotonic() - started


async def on_the_wire_until_cut(shell: OwnershipShell, partition: int) -> float:
    """A request to a site of `partition` that never ends by itself: when it was cut."""
    with contextlib.suppress(TimeoutError):
        async with shell.cuts.cut(partition):
            await asyncio.sleep(60)
    return time.monotonic()


def run_cluster(
    server: RedisServer, partitions: int, body: Callable[[Cluster], Awaitable[None]]
) -> None:
    async def main() -> None:
        cluster = Cluster(server, partitions)
        sampler = asyncio.create_task(cluster.sample())
        try:
            await body(cluster)
        finally:
            sampler.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await sampler
            await cluster.close()
        assert cluster.overlaps == [], f"fetchable on two members at once: {cluster.overlaps[:5]}"

    asyncio.run(main())


def assert_handed_over_before_taken(journal: Journal, old: list[str], new: list[str]) -> None:
    for move in moved(old, new):
        handed = journal.at(move.from_member, "checkpointed", move.partition)
        assert handed < journal.at(move.to_member, "load", move.partition), move


# -- start-up, graceful leave, crash ------------------------------------------------------------
def test_three_members_share_hand_over_on_stop_and_fail_over_on_crash(
    redis_single: RedisServer,
) -> None:
    async def body(cluster: Cluster) -> None:
        for member in ("m0", "m1", "m2"):
            await cluster.start(member)
        startup_s = await cluster.wait_settled(["m0", "m1", "m2"])
        print(f"start-up: 64 partitions owned by 3 members in {startup_s:.2f} s")
        assert all(n.shell.owned() for n in cluster.nodes.values())

        stopped = time.monotonic()
        await asyncio.wait_for(cluster.nodes["m0"].shell.stop(), TIMING.lease_ttl_s * 2)
        assert cluster.nodes["m0"].task.done()
        assert cluster.nodes["m0"].shell.owned() == set()
        await cluster.wait_settled(["m1", "m2"])
        handover_s = time.monotonic() - stopped
        print(f"graceful stop: m0's partitions owned again after {handover_s:.2f} s")
        assert handover_s < TIMING.lease_ttl_s  # released, not left to expire
        three, two = assign(64, ["m0", "m1", "m2"]), assign(64, ["m1", "m2"])
        assert {m.from_member for m in moved(three, two)} == {"m0"}
        assert_handed_over_before_taken(cluster.journal, three, two)
        live = await RedisMembers(cluster.nodes["m1"].client, cluster.keys).live_members()
        assert live == ["m1", "m2"]

        await fail_over(cluster, killed="m1", survivor="m2")

    run_cluster(redis_single, 64, body)


async def fail_over(cluster: Cluster, killed: str, survivor: str) -> None:
    """Kill `killed`; `survivor` gets its partitions only after their leases expired."""
    victim = cluster.nodes[killed].shell
    deadlines = {p: victim.core.fetch_until(p) for p in victim.owned()}
    assert deadlines
    killed_at = time.monotonic()
    await cluster.kill(killed)
    await cluster.wait_settled([survivor], timeout_s=10.0)
    failover_s = time.monotonic() - killed_at
    bound_s = max(TIMING.member_ttl_s + TIMING.heartbeat_s, TIMING.lease_ttl_s)
    bound_s += TIMING.retry_s + TIMING.request_timeout_s + 0.5  # + scheduling
    print(
        f"crash: {len(deadlines)} partitions owned again after {failover_s:.2f} s"
        f" (lease ttl {TIMING.lease_ttl_s} s, member ttl {TIMING.member_ttl_s} s,"
        f" bound {bound_s:.2f} s)"
    )
    assert failover_s < bound_s
    for partition, fetch_until in deadlines.items():
        assert not victim.may_fetch(partition)
        taken_at = cluster.journal.at(survivor, "load", partition)
        # The server expired the lease `margin_s` after the victim's local deadline at the
        # earliest; the survivor's acquire succeeded after that (same machine, same clock rate).
        assert taken_at >= fetch_until + TIMING.margin_s - 0.05, partition


# -- joining ------------------------------------------------------------------------------------
def test_a_joining_member_takes_about_a_quarter_and_only_from_others(
    redis_single: RedisServer,
) -> None:
    async def body(cluster: Cluster) -> None:
        three_ids = ["m0", "m1", "m2"]
        for member in three_ids:
            await cluster.start(member)
        await cluster.wait_settled(three_ids)
        cluster.owners_seen.clear()
        await cluster.start("m3")
        join_s = await cluster.wait_settled([*three_ids, "m3"])
        print(f"join: the fourth member owns its share after {join_s:.2f} s")
        three, four = assign(64, three_ids), assign(64, [*three_ids, "m3"])
        moves = moved(three, four)
        assert {m.to_member for m in moves} == {"m3"}
        assert 6 <= len(moves) <= 28  # about 64 / 4
        assert cluster.nodes["m3"].shell.owned() == {m.partition for m in moves}
        for partition in set(range(64)) - {m.partition for m in moves}:
            assert cluster.owners_seen[partition] == {three[partition]}, partition
        assert_handed_over_before_taken(cluster.journal, three, four)
        await asyncio.gather(*(n.shell.stop() for n in cluster.nodes.values()))
        assert (
            await RedisLeases(cluster.nodes["m0"].client, cluster.keys).holders(range(64))
            == [None] * 64
        )  # a clean stop of everyone leaves no lease behind

    run_cluster(redis_single, 64, body)


# -- Redis Cluster --------------------------------------------------------------------------------
def test_two_members_on_a_redis_cluster(redis_cluster: RedisServer) -> None:
    async def body(cluster: Cluster) -> None:
        await cluster.start("a")
        await cluster.start("b")
        await cluster.wait_settled(["a", "b"])
        assert all(n.shell.owned() for n in cluster.nodes.values())
        await cluster.nodes["a"].shell.stop()
        await cluster.wait_settled(["b"])
        assert_handed_over_before_taken(cluster.journal, assign(16, ["a", "b"]), assign(16, ["b"]))

    run_cluster(redis_cluster, 16, body)


# -- Redis outage ---------------------------------------------------------------------------------
class Blackhole:
    """A TCP proxy to Redis that can swallow every byte both ways: a hung Redis, not a refusing
    one, so only the shell's own timeouts get it out of a request."""

    def __init__(self, upstream_port: int) -> None:
        self.upstream_port = upstream_port
        self.is_dark = False
        self.server: asyncio.Server | None = None
        self.writers: list[asyncio.StreamWriter] = []

    async def start(self) -> int:
        self.server = await asyncio.start_server(self._connect, "127.0.0.1", 0)
        return int(self.server.sockets[0].getsockname()[1])

    async def _connect(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        up_reader, up_writer = await asyncio.open_connection("127.0.0.1", self.upstream_port)
        self.writers += [writer, up_writer]
        await asyncio.gather(self._pump(reader, up_writer), self._pump(up_reader, writer))

    async def _pump(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        with contextlib.suppress(ConnectionError):
            while data := await reader.read(65536):
                if not self.is_dark:
                    writer.write(data)
                    await writer.drain()
        writer.close()

    async def close(self) -> None:
        if self.server is not None:
            self.server.close()
        for writer in self.writers:
            writer.close()
            with contextlib.suppress(ConnectionError):
                await writer.wait_closed()


def test_a_hung_redis_stops_fetching_at_the_deadline_and_ownership_recovers(
    redis_single: RedisServer,
) -> None:
    async def body(cluster: Cluster) -> None:
        proxy = Blackhole(redis_single.ports[0])
        cluster.server = replace(redis_single, url=f"redis://127.0.0.1:{await proxy.start()}/0")
        try:
            shell = (await cluster.start("m0")).shell
            await cluster.wait_settled(["m0"])
            # A request in flight meanwhile: renewals move its cut, the outage ends it.
            request = asyncio.create_task(on_the_wire_until_cut(shell, 0))
            await asyncio.sleep(TIMING.lease_ttl_s)  # past the first lease's deadline
            assert not request.done(), "renewals moved the request's deadline"
            proxy.is_dark = True
            dark_at = time.monotonic()
            deadline = max(shell.core.fetch_until(p) for p in range(8))
            cut_deadline = shell.core.fetch_until(0)
            await poll_until(lambda: not shell.owned(), "fetching stops", TIMING.lease_ttl_s)
            stopped_s = time.monotonic() - dark_at
            print(f"outage: fetching stopped {stopped_s:.2f} s after Redis hung")
            assert time.monotonic() <= deadline + 0.1  # may_fetch kept to the local deadline
            assert stopped_s < TIMING.lease_ttl_s - TIMING.margin_s + 0.1
            cut_at = await asyncio.wait_for(request, 1.0)
            assert cut_deadline <= cut_at <= cut_deadline + 0.1, "cut at the local deadline"
            await asyncio.sleep(TIMING.lease_ttl_s)  # the leases and the member expire
            proxy.is_dark = False
            recovered_s = await cluster.wait_settled(["m0"])
            print(f"outage: all partitions owned again {recovered_s:.2f} s after Redis came back")
        finally:
            await cluster.close()
            await proxy.close()

    run_cluster(redis_single, 8, body)

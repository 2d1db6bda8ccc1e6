"""Cluster mode's Placement: a node's answers from its partition table and its leases, with
fakes for the coordinator (the Redis adapters have their integration tests)."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from tests.fakes.cluster import never_cut

from trawl.cluster.partition_table import PartitionTable
from trawl.cluster.partitions import partition_of
from trawl.cluster.placement import MIN_POLL_S, NodePlacement
from trawl.cluster.redis_coord import CoordinatorUnavailable
from trawl.cluster.redis_links import START
from trawl.cluster.store_outages import BacklogBound, Store, StoreOutages
from trawl.model import CrawlUrl, Line

if TYPE_CHECKING:
    from collections.abc import Awaitable

    from trawl.loop.placement import Placement

N = 8
STARTED_AT = 1000.0


def site_in(partition: int) -> str:
    return next(s for i in range(10_000) if partition_of(s := f"s{i}.test", N) == partition)


@dataclass
class FakeLeases:
    fetchable: set[int] = field(default_factory=set)

    def may_fetch(self, partition: int) -> bool:
        return partition in self.fetchable


@dataclass
class FakeIpSlots:
    """Answers `try_acquire` from a script: a float is 'wait', None 'yours', an exception
    'the coordinator can't be asked'."""

    answers: list[float | Exception | None]
    asked: list[str] = field(default_factory=list)
    released: list[str] = field(default_factory=list)
    sent: list[str] = field(default_factory=list)  # in the order the notes were awaited
    release_fails: bool = False
    note_delay_s: float = 0.0  # how long Redis takes to answer a note (real time)
    order: list[str] = field(default_factory=list)  # notes and releases, as Redis saw them

    async def try_acquire(self, ip: str) -> float | None:
        self.asked.append(ip)
        answer = self.answers.pop(0)
        if isinstance(answer, Exception):
            raise answer
        return answer

    def note_sent(self, ip: str) -> Awaitable[None]:
        held = len(self.asked)  # settled now, as RedisIpGate picks its hold when called

        async def note() -> None:
            self.sent.append(f"{ip}#{held}")
            await asyncio.sleep(self.note_delay_s)
            self.order.append(f"sent {ip}")
            if self.release_fails:
                raise CoordinatorUnavailable("redis down")

        return note()

    async def release(self, ip: str) -> None:
        self.released.append(ip)
        self.order.append(f"released {ip}")
        if self.release_fails:
            raise CoordinatorUnavailable("redis down")


@dataclass
class FakePublisher:
    published: int = 0

    async def publish(self) -> bool:
        self.published += 1
        return True


@dataclass
class FakeRouter:
    routed: list[str] = field(default_factory=list)

    def route(self, item: CrawlUrl, *, must_crawl: bool, referrer: str = "") -> None:
        self.routed.append(item.url)


@dataclass
class Node:
    table: PartitionTable
    leases: FakeLeases
    slots: FakeIpSlots
    publisher: FakePublisher
    router: FakeRouter
    sleeps: list[float]
    placement: NodePlacement


def node(answers: list[float | Exception | None] | None = None) -> Node:
    table = PartitionTable(N, started_at=STARTED_AT)
    leases, slots = FakeLeases(), FakeIpSlots(list(answers or []))
    publisher, router, sleeps = FakePublisher(), FakeRouter(), []

    async def sleep(seconds: float) -> None:
        sleeps.append(seconds)

    placement = NodePlacement(
        owner="n1", table=table, leases=leases, router=router, publisher=publisher,
        ip_slots=slots, sleep=sleep, cuts=never_cut(N),
    )  # fmt: skip
    return Node(table, leases, slots, publisher, router, sleeps, placement)


def test_it_is_a_placement() -> None:
    placement: Placement = node().placement
    assert placement.owner == "n1"


def test_a_site_may_be_fetched_only_when_loaded_and_its_lease_fetchable() -> None:
    n = node()
    site = site_in(3)
    assert not n.placement.may_fetch(site), "neither"
    n.leases.fetchable.add(3)
    assert not n.placement.may_fetch(site), "lease won, checkpoint not loaded yet"
    n.table.load(3, START, now=1100.0, wall_now=5000.0)
    assert n.placement.may_fetch(site)
    assert not n.placement.may_fetch(site_in(4)), "another partition"
    n.leases.fetchable.discard(3)
    assert not n.placement.may_fetch(site), "lease past its local deadline, or handing over"
    n.leases.fetchable.add(3)
    n.table.forget(3)
    assert not n.placement.may_fetch(site), "forgotten"


def test_issue_19_a_store_outage_or_a_full_backlog_pauses_new_fetches_until_it_ends() -> None:
    outages = StoreOutages(BacklogBound(max_cuts=4))
    n = node()
    placement = NodePlacement(
        owner="n1", table=n.table, leases=n.leases, router=n.router, publisher=n.publisher,
        ip_slots=n.slots, cuts=never_cut(N), outages=outages,
    )  # fmt: skip
    site = site_in(3)
    n.leases.fetchable.add(3)
    n.table.load(3, START, now=1100.0, wall_now=5000.0)
    assert placement.may_fetch(site)
    outages.note_failure(Store.POSTGRES, 5001.0, "connection refused")
    assert not placement.may_fetch(site), "PostgreSQL down: the turn waits in line"
    outages.note_success(Store.POSTGRES, 5021.0)
    assert placement.may_fetch(site), "resumed by itself"
    outages.note_backlog(4, 0)
    assert not placement.may_fetch(site), "backlog at its bound"
    outages.note_backlog(0, 0)
    assert placement.may_fetch(site)
    assert placement.owned() == {3}, "a pause does not give partitions away"


def test_owned_is_loaded_and_fetchable() -> None:
    n = node()
    for p in (1, 2, 5):
        n.table.load(p, START, now=1100.0, wall_now=5000.0)
    n.leases.fetchable.update({2, 5, 6})
    assert n.placement.owned() == {2, 5}


def test_an_ip_slot_is_polled_until_free() -> None:
    n = node([0.25, 0.0, None])
    assert asyncio.run(n.placement.take_ip_slot("10.0.0.1"))
    assert n.slots.asked == ["10.0.0.1"] * 3
    assert n.sleeps == [0.25, MIN_POLL_S], "never a busy loop on a zero wait"


def test_an_unreachable_coordinator_means_no_request_now() -> None:
    n = node([0.5, CoordinatorUnavailable("redis down")])
    assert not asyncio.run(n.placement.take_ip_slot("10.0.0.1"))
    assert n.sleeps == [0.5]


def test_giving_a_slot_back_never_raises() -> None:
    n = node()
    n.slots.release_fails = True
    asyncio.run(n.placement.give_ip_slot("10.0.0.1"))
    assert n.slots.released == ["10.0.0.1"]


def test_a_send_is_told_to_the_coordinator_without_waiting_and_never_raises() -> None:
    n = node([None, None])

    async def body() -> None:
        assert await n.placement.take_ip_slot("10.0.0.1")
        n.placement.note_ip_sent("10.0.0.1")  # a plain call, from inside the fetch
        assert await n.placement.take_ip_slot("10.0.0.1")
        assert n.slots.sent == [], "nothing awaited yet"
        await asyncio.sleep(0)
        assert n.slots.sent == ["10.0.0.1#1"], "the slot held when the request went out"
        n.slots.release_fails = True
        n.placement.note_ip_sent("10.0.0.1")
        await asyncio.sleep(0)
        assert n.slots.sent == ["10.0.0.1#1", "10.0.0.1#2"]

    asyncio.run(body())


def test_discovered_urls_go_to_the_router_and_publish_to_the_publisher() -> None:
    n = node()
    router = n.placement.router
    router.route(
        CrawlUrl("http://a.test/", "a" * 32, "a.test", 1, Line.FAST, 1.0), must_crawl=False
    )
    assert n.router.routed == ["http://a.test/"]
    asyncio.run(n.placement.publish())
    asyncio.run(n.placement.publish())
    assert n.publisher.published == 2


def test_restarted_at_is_never_none_and_follows_the_take_over() -> None:
    n = node()
    site = site_in(2)
    assert n.placement.restarted_at(site) == STARTED_AT
    n.table.load(2, START, now=1300.0, wall_now=5000.0)
    assert n.placement.restarted_at(site) == 1300.0
    assert n.placement.restarted_at(site_in(1)) == STARTED_AT


def test_repr_names_the_owner_and_its_table() -> None:
    assert repr(node().placement) == (
        "<NodePlacement n1 <PartitionTable loaded=0 changed=0 acquired=0 handed_over=0>>"
    )


def test_a_slot_is_given_back_only_after_its_send_was_noted() -> None:
    """CI saw two nodes' requests reach one IP 0.233 s apart under a 0.30 s gap: a fast
    answer's release reached Redis before the note of its send, cleared the unsent mark
    and left the admission time as the last start; the note came too late."""
    n = node([None])
    n.slots.note_delay_s = 0.02

    async def main() -> None:
        assert await n.placement.take_ip_slot("10.0.0.9")
        n.placement.note_ip_sent("10.0.0.9")
        await n.placement.give_ip_slot("10.0.0.9")  # the answer came at once

    asyncio.run(main())
    assert n.slots.order == ["sent 10.0.0.9", "released 10.0.0.9"]

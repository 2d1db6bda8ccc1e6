"""Issue 16, cluster mode: scope changes recorded, broadcast and applied on every node.

Fakes stand for Redis (an in-memory record and link streams) and for the crawl's queue;
the ScopeBook, the ledger, ClusterScope and ClusterNode's stream handling are real."""

from __future__ import annotations

import asyncio
import re
from dataclasses import dataclass, field
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from tests.fakes.cluster import MemoryStreams

from trawl.cluster.cluster_scope import ClusterScope
from trawl.cluster.node import ClusterNode
from trawl.cluster.partition_table import PartitionTable
from trawl.cluster.redis_links import LinkBatch, RoutedLink
from trawl.cluster.scope_changes import ScopeChange, ScopeLedger, ScopeOp
from trawl.errors import DataError
from trawl.frontier.scope import ScopeType, SeedScope, Standing, seed_id_of
from trawl.frontier.scope_book import ScopeBook

DOCS = SeedScope("http://a.test/docs/", ScopeType.PREFIX, max_depth=3)


# -- fakes --------------------------------------------------------------------------------
class MemoryScopeStore:
    def __init__(self) -> None:
        self.rows: dict[int, SeedScope] = {}
        self.excludes: list[str] = []
        self.pages: dict[int, int] = {}

    def seeds(self) -> list[tuple[int, SeedScope]]:
        return list(self.rows.items())

    def put_seeds(self, seeds: list[tuple[int, SeedScope]]) -> None:
        self.rows.update(seeds)

    def credits(self) -> dict[int, int]:
        return dict(self.pages)

    def put_credits(self, pages: dict[int, int]) -> None:
        self.pages.update(pages)

    def exclusions(self) -> list[str]:
        return list(self.excludes)

    def add_exclusion(self, pattern: str, at: float) -> bool:
        self.excludes.append(pattern)
        return True

    def remove_exclusion(self, pattern: str) -> bool:
        self.excludes.remove(pattern)
        return True


class MemorySkipLog:
    def write(self, batch: Any) -> None:
        pass

    def counts(self) -> dict[str, int]:
        return {}

    def recent(self, limit: int, reason: str | None = None) -> list[Any]:
        return []


class Commits:
    def __init__(self) -> None:
        self.count = 0

    def commit(self) -> None:
        self.count += 1


@dataclass
class Node:
    """The parts of a CrawlContext ClusterScope uses, over a queue of URLs."""

    queue: list[str]
    scope: ScopeBook = field(
        default_factory=lambda: ScopeBook(store=MemoryScopeStore(), skip_log=MemorySkipLog())
    )
    durability: Commits = field(default_factory=Commits)
    dropped: list[str] = field(default_factory=list)

    def add_exclusion(self, pattern: str) -> int | None:  # as CrawlContext does it
        if not self.scope.add_exclusion(pattern, 0.0):
            return None
        matches = self.scope.matches(pattern)
        gone = [url for url in self.queue if matches(url)]
        self.queue = [url for url in self.queue if not matches(url)]
        self.dropped += gone
        return len(gone)

    def add_exclusion_dropping_later(self, pattern: str) -> bool:
        # CrawlContext drops on a task of its own, in slices (tests/integration/
        # test_exclusion_slices.py); here at once.
        return self.add_exclusion(pattern) is not None

    def remove_exclusion(self, pattern: str) -> bool:
        return self.scope.remove_exclusion(pattern)


class MemoryRecord:
    """RedisScope in memory: a counter, each thing's latest change, ordered by seq."""

    def __init__(self) -> None:
        self.latest: dict[str, ScopeChange] = {}
        self.seq = 0

    async def record(self, changes: list[ScopeChange], *, only_new: bool = False) -> list[Any]:
        out = []
        for change in changes:
            key = f"{change.op is ScopeOp.SEED} {change.key}"
            if only_new and key in self.latest:
                continue
            self.seq += 1
            self.latest[key] = change.numbered(self.seq)
            out.append(self.latest[key])
        return out

    async def changes_since(self, seq: int, limit: int) -> list[ScopeChange]:
        newer = sorted((c for c in self.latest.values() if c.seq > seq), key=lambda c: c.seq)
        return newer[:limit]


def cluster_scope(
    node: Node, record: MemoryRecord, streams: MemoryStreams, partitions: int = 4
) -> ClusterScope:
    return ClusterScope(ctx=node, record=record, links=streams, partitions=partitions)


# -- the change values and the ledger -----------------------------------------------------
patterns = st.text(min_size=1, max_size=20)
seeds = st.builds(
    SeedScope,
    url=st.sampled_from(["http://a.test/", "https://b.test/x/"]),
    type=st.sampled_from(list(ScopeType)),
    include=st.lists(st.sampled_from(["/a/", r"\.pdf$"]), max_size=2).map(tuple),
    max_depth=st.integers(0, 9), extra_hops=st.integers(0, 3),
)  # fmt: skip
changes = st.one_of(
    st.builds(ScopeChange, st.sampled_from([ScopeOp.EXCLUDE, ScopeOp.INCLUDE_AGAIN]), patterns,
              seq=st.integers(0, 2**40)),
    st.builds(ScopeChange, st.just(ScopeOp.SEED), seed=seeds, seq=st.integers(0, 2**40)),
)  # fmt: skip


@given(changes)
def test_a_scope_change_reads_back_as_sent(change: ScopeChange) -> None:
    assert ScopeChange.from_json(change.to_json(), "x") == change


def test_the_apis_changes_read_as_unnumbered() -> None:
    seed = {"op": "seed", "scope": {"url": "http://a.test/docs/", "type": "prefix"}}
    assert ScopeChange.from_json(seed, "x") == ScopeChange(
        ScopeOp.SEED, seed=SeedScope("http://a.test/docs/", ScopeType.PREFIX)
    )
    assert ScopeChange.from_json({"op": "exclude", "pattern": "/tag/"}, "x").seq == 0


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        ([], "a scope change is a JSON object"),
        ({"op": "limits"}, "unknown scope change 'limits'"),
        ({"op": "exclude"}, "needs a 'pattern' string"),
        ({"op": "exclude", "pattern": "/x/", "seq": -1}, "is not a change number"),
        ({"op": "seed", "scope": {"type": "page"}}, "e 7.scope: a seed scope needs a 'url'"),
        ({"op": "seed", "scope": {"url": "http://a.test/", "type": "site"}}, "type = 'site'"),
    ],
)
def test_a_damaged_change_is_a_data_error_naming_where(raw: object, message: str) -> None:
    with pytest.raises(DataError, match=re.escape(message)):
        ScopeChange.from_json(raw, "e 7")


def test_the_ledger_keeps_changes_to_one_thing_in_order() -> None:
    ledger = ScopeLedger()
    exclude = ScopeChange(ScopeOp.EXCLUDE, "/tag/", seq=4)
    lifted = ScopeChange(ScopeOp.INCLUDE_AGAIN, "/tag/", seq=6)
    assert ledger.is_new(exclude)
    ledger.note(exclude)
    assert not ledger.is_new(exclude), "a copy from another partition's stream"
    assert ledger.is_new(lifted)
    ledger.note(lifted)
    assert not ledger.is_new(exclude), "stale: a slower stream brought it after the newer"
    assert ledger.is_new(ScopeChange(ScopeOp.EXCLUDE, "/other/", seq=1)), "another thing"
    assert ledger.is_new(ScopeChange(ScopeOp.EXCLUDE, "/tag/")), "unnumbered: always"
    ledger.note(ScopeChange(ScopeOp.EXCLUDE, "/tag/", seq=2))
    assert ledger.is_new(ScopeChange(ScopeOp.EXCLUDE, "/tag/", seq=7))


# -- ClusterScope ---------------------------------------------------------------------------
def test_a_change_made_here_is_recorded_and_sent_to_every_partition() -> None:
    here, record, streams = Node([]), MemoryRecord(), MemoryStreams()
    scope = cluster_scope(here, record, streams, partitions=3)
    assert here.add_exclusion("/private/") == 0  # the API applies it here first
    seq = asyncio.run(scope.send({"op": "exclude", "pattern": "/private/"}))
    assert seq == 1
    assert [e.control for p in range(3) for e in streams.entries[p]] == [
        {"op": "exclude", "pattern": "/private/", "seq": 1}
    ] * 3
    assert [c.to_json() for c in record.latest.values()] == [streams.entries[0][0].control]
    for entry in streams.entries[0]:  # its own copies come back: nothing to do
        assert entry.control is not None
        assert not scope.apply(entry.control, entry.entry_id)


def test_an_exclusion_from_the_stream_empties_the_queue_once() -> None:
    queue = ["http://a.test/tag/1", "http://a.test/page", "http://b.test/tag/2"]
    owner, record, streams = Node(list(queue)), MemoryRecord(), MemoryStreams()
    scope = cluster_scope(owner, record, streams)
    control = {"op": "exclude", "pattern": "/tag/", "seq": 3}
    assert scope.apply(control, "p1 1-1")
    assert owner.queue == ["http://a.test/page"]
    assert owner.scope.runtime_exclusions == ("/tag/",)
    assert owner.scope.current.is_excluded("http://c.test/tag/9")
    assert not scope.apply(control, "p2 1-1"), "the copy on another partition's stream"
    assert owner.durability.count == 1
    assert scope.apply({"op": "include_again", "pattern": "/tag/", "seq": 5}, "p1 1-2")
    assert not scope.apply(control, "p3 1-1"), "stale: lifted since"
    assert owner.scope.runtime_exclusions == ()
    assert not owner.scope.current.is_excluded("http://c.test/tag/9")


def test_a_bad_or_unknown_change_is_skipped_not_raised(caplog: pytest.LogCaptureFixture) -> None:
    owner = Node(["http://a.test/x"])
    scope = cluster_scope(owner, MemoryRecord(), MemoryStreams())
    assert not scope.apply({"op": "exclude", "pattern": "(", "seq": 1}, "p0 1-1")
    assert not scope.apply({"op": "exclude"}, "p0 1-2")
    assert owner.queue == ["http://a.test/x"]
    assert owner.scope.runtime_exclusions == ()
    assert "scope change 1: " in caplog.text
    assert "p0 1-2: a exclude change needs a 'pattern' string; skipped" in caplog.text


def test_a_seed_added_at_run_time_reaches_the_other_nodes() -> None:
    record, streams = MemoryRecord(), MemoryStreams()
    here, there = Node([]), Node([])
    sender = cluster_scope(here, record, streams, partitions=2)
    receiver = cluster_scope(there, record, streams, partitions=2)
    here.scope.add_seeds([DOCS])
    asyncio.run(sender.send({"op": "seed", "scope": DOCS.to_json()}))
    seed_id = seed_id_of(DOCS.url)
    assert not receiver.knows_seed(seed_id)
    control = streams.entries[1][0].control
    assert control is not None
    assert receiver.apply(control, "p1 1-1")
    assert receiver.knows_seed(seed_id)
    assert there.scope.seeds == (DOCS,)
    under = there.scope.current.decide("http://a.test/docs/b", Standing(seed_id))
    outside = there.scope.current.decide("http://a.test/blog/", Standing(seed_id))
    assert (under.queue, outside.queue) == (True, False), "decided with the seed's own scope"


def test_api_seeds_are_recorded_not_streamed_and_learnt_by_sync() -> None:
    record, streams = MemoryRecord(), MemoryStreams()
    here, there = Node([]), Node([])
    sender = cluster_scope(here, record, streams, partitions=2)
    receiver = cluster_scope(there, record, streams, partitions=2)
    other = SeedScope("http://b.test/", ScopeType.DOMAIN, max_pages=5)
    here.scope.add_seeds([DOCS, other])
    seq = asyncio.run(sender.send({"op": "seeds", "scopes": [DOCS.to_json(), other.to_json()]}))
    assert seq == 2
    assert streams.entries == {}, "recorded only: no stream entries"
    assert asyncio.run(receiver.sync()) == 2
    assert there.scope.seeds == (DOCS, other)
    with pytest.raises(DataError):
        asyncio.run(sender.send({"op": "seeds", "scopes": "http://c.test/"}))


def test_a_late_joiner_gets_every_change_and_the_clusters_seed_scopes() -> None:
    record, streams = MemoryRecord(), MemoryStreams()
    first = cluster_scope(Node([]), record, streams)
    config_seed = SeedScope("http://a.test/docs/")  # `any`, from the config
    asyncio.run(first.join([config_seed]))
    for change in (
        {"op": "exclude", "pattern": "/tag/"},
        {"op": "exclude", "pattern": "/old/"},
        {"op": "include_again", "pattern": "/old/"},
        {"op": "seed", "scope": DOCS.to_json()},  # the same seed, its scope changed by an API
    ):
        asyncio.run(first.send(change))
    late = Node(["http://a.test/tag/1", "http://a.test/old/1"])
    joiner = cluster_scope(late, record, streams)
    in_force = asyncio.run(joiner.join([config_seed, SeedScope("http://n.test/")]))
    assert in_force == [DOCS, SeedScope("http://n.test/")], "the run-time scope outlives it"
    assert late.scope.runtime_exclusions == ("/tag/",)
    assert late.queue == ["http://a.test/old/1"]
    assert [c.seq for c in record.latest.values()] == [5, 2, 4, 6], "no rewrite of a.test/docs"
    assert joiner.ledger.synced_through == 6
    assert asyncio.run(joiner.sync()) == 0, "read once"
    assert asyncio.run(first.sync()) == 1, "the new node's own seed"


def test_a_change_read_in_pages_of_the_record_is_applied_in_order() -> None:
    record = MemoryRecord()
    changes = [ScopeChange(ScopeOp.EXCLUDE, f"/p{n}/") for n in range(5)]
    changes.append(ScopeChange(ScopeOp.INCLUDE_AGAIN, "/p0/"))
    asyncio.run(record.record(changes))
    node = Node([])
    scope = ClusterScope(
        ctx=node, record=record, links=MemoryStreams(), partitions=1, read_changes=2
    )
    assert asyncio.run(scope.sync()) == 4, "/p0/ is recorded as lifted: nothing to lift here"
    assert scope.ledger.synced_through == 6
    assert node.scope.runtime_exclusions == ("/p1/", "/p2/", "/p3/", "/p4/")


# -- ClusterNode: control entries in order with the links ------------------------------------
class NoLeases:
    def may_fetch(self, partition: int) -> bool:
        return True

    def token(self, partition: int) -> int | None:
        return 1


def test_the_node_hands_scope_changes_on_its_streams_to_cluster_scope() -> None:
    owner, record, streams = Node(["http://a.test/tag/1"]), MemoryRecord(), MemoryStreams()
    scope = cluster_scope(owner, record, streams, partitions=2)
    table = PartitionTable(2, started_at=0.0)
    table.load(0, "0-0", now=0.0, wall_now=0.0)
    table.load(1, "0-0", now=0.0, wall_now=0.0)
    node = ClusterNode(
        ctx=owner, table=table, leases=NoLeases(), publisher=None, links=streams, blobs=None,
        seen=None, scope=scope, checkpoint_interval_s=60.0,
    )  # fmt: skip
    asyncio.run(streams.send_control_all([0, 1], {"op": "exclude", "pattern": "/tag/", "seq": 1}))
    assert asyncio.run(node.consume_once()) == 0  # control entries carry no links
    assert owner.queue == []
    assert owner.scope.runtime_exclusions == ("/tag/",)
    assert (table.position(0), table.position(1)) == ("1-1", "1-1")
    assert scope.applied == 1, "once, though two streams brought it"


def test_a_routed_seed_the_node_does_not_know_makes_it_read_the_record() -> None:
    owner, record, streams = Node([]), MemoryRecord(), MemoryStreams()
    scope = cluster_scope(owner, record, streams, partitions=1)
    asyncio.run(record.record([ScopeChange(ScopeOp.SEED, seed=DOCS)], only_new=True))
    table = PartitionTable(1, started_at=0.0)
    table.load(0, "0-0", now=0.0, wall_now=0.0)
    node = ClusterNode(
        ctx=owner, table=table, leases=NoLeases(), publisher=None, links=streams, blobs=None,
        seen=None, scope=scope, checkpoint_interval_s=60.0,
    )  # fmt: skip
    seed = RoutedLink(DOCS.url, "d" * 32, "a.test", 0, 0.0, must_crawl=True,
                      standing=Standing(seed_id_of(DOCS.url)).pack())  # fmt: skip
    batches = {0: [LinkBatch("1-1", (seed,))]}
    assert node._names_unknown_seed(batches)
    asyncio.run(scope.sync())
    assert not node._names_unknown_seed(batches)
    assert owner.scope.seeds == (DOCS,)

"""Issue 16: a URL's scope standing (its seed, hops) survives routing and hand-over."""

from __future__ import annotations

import gzip
import json

from hypothesis import given
from hypothesis import strategies as st

from trawl.cluster.link_router import LinkBuffers
from trawl.cluster.partition_checkpoint import PartitionCheckpoint, QueuedRow, decode
from trawl.cluster.redis_links import FIELD, RoutedLink, decode_batch, encode_batch
from trawl.frontier.scope import Standing, seed_id_of
from trawl.model import CrawlUrl, Line

hashes = st.text("0123456789abcdef", min_size=32, max_size=32)
text = st.text(max_size=40)
standings = st.builds(
    Standing,
    seed=st.integers(0, 2**38 - 1), depth=st.integers(0, 0xFFFF),
    off_hops=st.integers(0, 0xFF), leaf=st.booleans(),
).map(Standing.pack)  # fmt: skip
links = st.builds(
    RoutedLink,
    url=text, url_hash=hashes, site=text, depth=st.integers(0, 99), score=st.floats(-1e9, 1e9),
    must_crawl=st.booleans(), referrer=text, line=st.integers(0, 2), kind=st.integers(0, 1),
    parts=text, redirects=st.integers(0, 20), standing=st.one_of(st.just(0), standings),
)  # fmt: skip
rows = st.builds(
    QueuedRow,
    site=text, line=st.integers(0, 2), url=text, url_hash=hashes, depth=st.integers(0, 50),
    discovered_at=st.floats(0, 2e9), attempts=st.integers(0, 9), kind=st.integers(0, 1),
    score=st.floats(-1e6, 1e6), score_parts=text, redirects=st.integers(0, 20),
    standing=st.one_of(st.just(0), standings),
)  # fmt: skip


@given(st.lists(links, max_size=10))
def test_issue_16_routed_links_keep_their_standing(batch: list[RoutedLink]) -> None:
    assert decode_batch("1-1", {FIELD: encode_batch(batch)}).links == tuple(batch)


def test_issue_16_a_standing_alone_still_writes_the_fields_before_it() -> None:
    packed = Standing(seed_id_of("http://a.test/"), depth=3, off_hops=1).pack()
    link = RoutedLink("http://a.test/x", "d" * 32, "a.test", 3, 0.5, standing=packed)
    (row,) = json.loads(encode_batch([link]))
    assert row[5:] == [0, "", 0, 0, "", 0, packed]
    assert decode_batch("1-1", {FIELD: encode_batch([link])}).links == (link,)
    assert link.item(7.0).standing == packed


def test_issue_16_entries_written_before_read_as_standing_zero() -> None:
    short = '[["http://a.test/","' + "d" * 32 + '","a.test",2,0.5]]'
    issue_13 = '[["http://a.test/","' + "d" * 32 + '","a.test",2,0.5,1,"",1,0,"{}",4]]'
    (old,) = decode_batch("1-1", {FIELD: short}).links
    (hop,) = decode_batch("1-1", {FIELD: issue_13}).links
    assert (old.standing, hop.standing, hop.redirects, hop.must_crawl) == (0, 0, 4, True)


def test_issue_16_the_router_sends_a_urls_standing() -> None:
    buffers = LinkBuffers(4, sent_capacity=1000)
    packed = Standing(seed_id_of("http://a.test/"), depth=2).pack()
    found = CrawlUrl("http://a.test/y", "f" * 32, "a.test", 2, Line.FAST, 0.0, standing=packed)
    buffers.route(found, must_crawl=False)
    (sent,) = buffers.take().values()
    assert sent[0].standing == packed
    assert sent[0].item(0.0) == found


@given(st.lists(rows, max_size=8))
def test_issue_16_a_checkpoint_keeps_each_rows_standing(queue: list[QueuedRow]) -> None:
    cp = PartitionCheckpoint(5, 9, 1.5, "1700000000000-3", tuple(queue), b"slice")
    assert decode(cp.encode(), "k") == cp


def test_issue_16_a_restored_row_queues_with_its_standing() -> None:
    packed = Standing(seed_id_of("http://a.test/"), depth=4, off_hops=2, leaf=True).pack()
    row = QueuedRow("a.test", 1, "http://a.test/z", "d" * 32, 4, 5.0, 0, 0, 0.5, "{}", 0, packed)
    (back,) = decode(PartitionCheckpoint(1, 2, 3.0, "1-1", (row,), b"").encode(), "k").queue
    assert Standing.unpack(back.item().standing) == Standing.unpack(packed)


def test_issue_16_checkpoint_rows_written_before_read_as_standing_zero() -> None:
    before_13 = ["a.test", 1, "http://a.test/", "d" * 32, 2, 5.0, 1, 0, 0.5, "{}"]
    before_16 = [*before_13, 3]
    header = {"format": "trawl-partition-checkpoint/1", "partition": 1, "fence": 2,
              "takenAt": 3.0, "streamId": "1-1", "queue": [before_13, before_16]}  # fmt: skip
    cp = decode(gzip.compress(json.dumps(header).encode() + b"\n"), "k")
    assert [(r.redirects, r.standing) for r in cp.queue] == [(0, 0), (3, 0)]

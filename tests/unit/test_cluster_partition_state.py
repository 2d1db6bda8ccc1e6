"""What moves with a partition between cluster nodes: its checkpoint (its queued URLs and
pages waiting for a browser), its seen slice, and the routed links that feed it. Pure code:
bytes and values in and out."""

from __future__ import annotations

import gzip
import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from trawl.cluster.link_router import LinkBuffers
from trawl.cluster.partition_checkpoint import PartitionCheckpoint, QueuedRow, decode
from trawl.cluster.partitions import partition_of
from trawl.cluster.redis_links import FIELD, RoutedLink, decode_batch, encode_batch
from trawl.errors import DataError, UsageError
from trawl.model import CrawlUrl, Line, UrlKind
from trawl.render.ports import RenderItem
from trawl.seen.partitioned import PartitionedSeen

hashes = st.text("0123456789abcdef", min_size=32, max_size=32)
text = st.text(max_size=40)
rows = st.builds(
    QueuedRow,
    site=text, line=st.integers(0, 2), url=text, url_hash=hashes, depth=st.integers(0, 50),
    discovered_at=st.floats(0, 2e9), attempts=st.integers(0, 9), kind=st.integers(0, 1),
    score=st.floats(-1e6, 1e6), score_parts=text, redirects=st.integers(0, 20),
)  # fmt: skip


nonempty = st.text(min_size=1, max_size=40)
renders = st.builds(
    RenderItem,
    url=nonempty, url_hash=hashes, site=nonempty, reason=text, storage_key=nonempty,
    record_id=text, fetched_at=st.floats(0, 2e9), queued_at=st.floats(0, 2e9),
    attempts=st.integers(0, 9), depth=st.integers(0, 50), standing=st.integers(0, 2**40),
    score=st.floats(-1e6, 1e6),
)  # fmt: skip


@given(
    st.integers(0, 99_999), st.integers(0, 2**62), st.floats(0, 4e9), st.lists(rows, max_size=8),
    st.binary(max_size=64), st.lists(renders, max_size=4),
)  # fmt: skip
def test_a_checkpoint_reads_back_as_written(
    partition: int,
    fence: int,
    at: float,
    queue: list[QueuedRow],
    slice_: bytes,
    waiting: list[RenderItem],
) -> None:
    cp = PartitionCheckpoint(
        partition, fence, at, "1700000000000-3", tuple(queue), slice_, tuple(waiting)
    )
    assert decode(cp.encode(), "k") == cp


def test_a_checkpoint_written_before_issue_18_has_no_render_waiting() -> None:
    cp = PartitionCheckpoint(3, 7, 1.0, "0-0", (), b"seen")
    header, _, rest = gzip.decompress(cp.encode()).partition(b"\n")
    old = json.loads(header)
    del old["renders"]
    data = gzip.compress(json.dumps(old).encode() + b"\n" + rest)
    assert decode(data, "k") == cp


def test_a_damaged_render_row_is_a_data_error() -> None:
    cp = PartitionCheckpoint(3, 7, 1.0, "0-0", (), b"")
    header = json.loads(gzip.decompress(cp.encode()).partition(b"\n")[0])
    header["renders"] = [["http://a.test/", "h", "", "empty-mount", "k", "r", 0, 0, 0, 0, 0, 0]]
    with pytest.raises(DataError, match="damaged partition checkpoint"):
        decode(gzip.compress(json.dumps(header).encode() + b"\n"), "k")


@pytest.mark.parametrize(
    "data",
    [b"", b"not gzip", gzip.compress(b"{}\n"), gzip.compress(b'{"format":"other/9"}\n'),
     gzip.compress(b'{"format":"trawl-partition-checkpoint/1","partition":1}\n')],
    # Named ids: a gzip header holds the time, and every xdist worker must collect one id.
    ids=["empty", "not gzip", "no format", "another format", "no fields"],
)  # fmt: skip
def test_a_damaged_checkpoint_is_a_data_error_naming_it(data: bytes) -> None:
    with pytest.raises(DataError, match="checkpoints/p00001/x: damaged partition checkpoint"):
        decode(data, "checkpoints/p00001/x")


def test_a_seen_slice_moves_with_its_partition() -> None:
    seen = PartitionedSeen(expected_urls=100_000, fp_rate=0.001, partitions=64)
    a, b, seed = "a" * 32, "b" * 32, "c" * 32
    assert seen.claim(3, a, must_crawl=False)
    assert not seen.claim(3, a, must_crawl=False)
    assert seen.claim(3, seed, must_crawl=True)
    assert not seen.claim(3, seed, must_crawl=True)
    assert seen.claim(4, a, must_crawl=False), "slices are per partition"
    data = seen.slice_bytes(3)
    seen.drop(3)
    assert seen.claim(3, a, must_crawl=False), "a dropped slice is forgotten"
    other = PartitionedSeen(expected_urls=100_000, fp_rate=0.001, partitions=64)
    other.load_slice(3, data)
    assert not other.claim(3, a, must_crawl=False)
    assert not other.claim(3, seed, must_crawl=True), "the exact seed set travels too"
    assert other.claim(3, b, must_crawl=False)
    other.add(5, [b])
    assert not other.claim(5, b, must_crawl=False)


def test_a_damaged_seen_slice_and_the_embedded_claims_are_refused() -> None:
    seen = PartitionedSeen(expected_urls=1000, fp_rate=0.01, partitions=4)
    with pytest.raises(DataError, match="partition 2: damaged seen-set slice"):
        seen.load_slice(2, b"\x00\x00\x00\x00\x00\x00\x00\x02[]garbage")
    with pytest.raises(UsageError):
        seen.add_if_new("a" * 32)


links = st.builds(
    RoutedLink,
    url=text, url_hash=hashes, site=text, depth=st.integers(0, 99), score=st.floats(-1e9, 1e9),
    must_crawl=st.booleans(), referrer=text, line=st.integers(0, 2), kind=st.integers(0, 1),
    parts=text, redirects=st.integers(0, 20), standing=st.integers(0, 1 << 40),
    pages=st.integers(0, 1 << 16),
)  # fmt: skip


@given(st.lists(links, max_size=10))
def test_routed_links_read_back_as_sent(batch: list[RoutedLink]) -> None:
    assert decode_batch("1-1", {FIELD: encode_batch(batch)}).links == tuple(batch)


def test_a_batch_written_before_the_optional_fields_still_reads() -> None:
    old = '[["http://a.test/","' + "d" * 32 + '","a.test",2,0.5]]'
    (link,) = decode_batch("1-1", {FIELD: old}).links
    assert (link.must_crawl, link.referrer, link.line, link.kind, link.parts) == (
        False, "", 0, 0, "",
    )  # fmt: skip


def test_issue_13_entries_without_the_redirect_count_read_as_zero_hops() -> None:
    old = '[["http://a.test/","' + "d" * 32 + '","a.test",2,0.5,0,"",1,0,"{}"]]'
    (link,) = decode_batch("1-1", {FIELD: old}).links
    assert (link.line, link.parts, link.redirects) == (1, "{}", 0)
    hop = RoutedLink("http://a.test/r", "e" * 32, "a.test", 2, 0.5, redirects=4)
    assert decode_batch("1-1", {FIELD: encode_batch([hop])}).links == (hop,)
    row = ["a.test", 1, "http://a.test/", "d" * 32, 2, 5.0, 1, 0, 0.5, "{}"]
    header = {"format": "trawl-partition-checkpoint/1", "partition": 1, "fence": 2,
              "takenAt": 3.0, "streamId": "1-1", "queue": [row]}  # fmt: skip
    cp = decode(gzip.compress(json.dumps(header).encode() + b"\n"), "k")
    assert cp.queue == (
        QueuedRow("a.test", 1, "http://a.test/", "d" * 32, 2, 5.0, 1, 0, 0.5, "{}"),
    )
    assert cp.queue[0].redirects == 0


def test_issue_13_a_routed_redirect_hop_keeps_its_chain_length() -> None:
    buffers = LinkBuffers(4, sent_capacity=1000)
    url = "http://a.test/inf/3"
    hop = CrawlUrl(url, "f" * 32, "a.test", 1, Line.FAST, 0.0, redirects=3)
    buffers.route(hop, must_crawl=False)
    (links,) = buffers.take().values()
    assert links[0].redirects == 3


def item(url: str, site: str, n: int) -> CrawlUrl:
    return CrawlUrl(url, f"{n:032x}", site, 1, Line.SLOW, 0.0, UrlKind.SITEMAP, 0.25, "{}")


def test_issue_19_a_repeat_goes_again_when_it_carries_linking_pages() -> None:
    buffers = LinkBuffers(4, sent_capacity=1000)
    found = item("http://a.test/x", "a.test", 1)
    buffers.route(found, must_crawl=False, pages=1)  # first found
    buffers.route(found, must_crawl=False)  # found again: nothing to count yet
    buffers.route(found, must_crawl=False, pages=2)  # the third page linking it
    (links,) = buffers.take().values()
    assert [x.pages for x in links] == [1, 2]
    assert buffers.repeats == 1
    plain = decode_batch("1-1", {FIELD: encode_batch([links[0]])}).links[0]
    assert plain.pages == 1
    rows = json.loads(encode_batch(links))
    assert len(rows[0]) < len(rows[1]) == 13, "one page, the usual case, is left out"
    assert decode_batch("1-1", {FIELD: encode_batch(links)}).links == tuple(links)


def test_links_are_buffered_by_partition_and_repeats_stay_home() -> None:
    buffers = LinkBuffers(16, sent_capacity=10_000)
    buffers.route(item("http://a.test/x", "a.test", 1), must_crawl=False)
    buffers.route(item("http://a.test/x", "a.test", 1), must_crawl=False)  # a repeat
    buffers.route(item("http://a.test/x", "a.test", 1), must_crawl=False, referrer="b.test")
    buffers.route(item("http://a.test/x", "a.test", 1), must_crawl=True)  # seeds always go
    buffers.route(item("http://c.test/", "c.test", 2), must_crawl=False)
    taken = buffers.take()
    assert buffers.take() == {}
    assert buffers.repeats == 1
    sent = {p: [(x.url, x.must_crawl, x.referrer) for x in batch] for p, batch in taken.items()}
    pa, pc = partition_of("a.test", 16), partition_of("c.test", 16)
    assert sent[pa][:3] == [
        ("http://a.test/x", False, ""),
        ("http://a.test/x", False, "b.test"),
        ("http://a.test/x", True, ""),
    ]
    assert ("http://c.test/", False, "") in sent[pc]
    first = taken[pa][0]
    assert (first.line, first.kind, first.score, first.parts) == (int(Line.SLOW), 1, 0.25, "{}")

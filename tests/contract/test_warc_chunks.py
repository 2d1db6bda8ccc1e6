"""WARC chunks in a blob store: keys read back, objects are valid WARC, nothing before flush.

Run against the local directory and a real S3 server (SeaweedFS), like test_blobs.py.
"""

from __future__ import annotations

import io
import random
import re
import subprocess
import sys
import threading
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
from tests.servers.s3 import empty_bucket
from warcio.archiveiterator import ArchiveIterator

from trawl.errors import DataError, UsageError
from trawl.store.blobs import BlobNotFound
from trawl.store.blobs_local import LocalBlobStore
from trawl.store.blobs_s3 import S3BlobStore
from trawl.store.warc_chunks import WarcChunkWriter, parse_chunk_key, read_record_from_blobs
from trawl.store.warc_record import (
    encode_response_record,
    encode_revisit_record,
    rewrite_head_for_decoded,
)

if TYPE_CHECKING:
    from collections.abc import Iterator

    from tests.servers.s3 import S3Server

    from trawl.store.blobs import BlobStore

T0 = 1_796_000_000.0  # 2026-11-30T00:53:20Z
NAME = re.compile(r"warc/node-7/2026/11/30/(\d{13})-(\d{6})-[0-9a-f]{6}\.warc\.gz")


class FakeClock:
    def __init__(self) -> None:
        self.t = T0

    def __call__(self) -> float:
        self.t += 0.25
        return self.t


@pytest.fixture(scope="module")
def s3_store(s3_server: S3Server) -> Iterator[S3BlobStore]:
    with S3BlobStore(s3_server.bucket_named("trawl-chunks")) as store:
        empty_bucket(store)
        yield store


def page(n: int, size: int = 3000, *, truncated: bool = False):
    rng = random.Random(n)
    words = [rng.choice(["alpha", "beta", "gamma", "delta", "<p>", "</p>"]) for _ in range(size)]
    body = " ".join(words).encode()[:size]
    head = b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Encoding: gzip\r\n\r\n"
    record = encode_response_record(
        url=f"http://127.0.0.1:8080/page/{n}",
        fetched_at=T0 + n,
        ip="127.0.0.1",
        http_head=rewrite_head_for_decoded(head, len(body)),
        payload=body,
        truncated=truncated,
    )
    return record, body


def writer_for(blobs: BlobStore, **kwargs) -> WarcChunkWriter:
    return WarcChunkWriter(blobs, node_id="node-7", clock=FakeClock(), **kwargs)


def test_keys_read_back_after_flush(blobs: BlobStore):
    writer = writer_for(blobs)
    written = {}
    for n in range(30):
        record, body = page(n, truncated=n % 7 == 0)
        written[writer.append(record)] = (n, record, body)
    batch = writer.flush()
    assert (len(batch.chunks), batch.records) == (1, 30)
    for key, (n, record, body) in written.items():
        stored = read_record_from_blobs(blobs, key)
        assert stored.payload == body
        assert stored.http_status == 200
        assert stored.target_uri == f"http://127.0.0.1:8080/page/{n}"
        assert stored.record_id == record.record_id
        assert stored.warc_headers["WARC-Payload-Digest"] == record.payload_digest
        assert stored.truncated == (n % 7 == 0)
        assert stored.header("Content-Length") == str(len(body))
        assert stored.header("X-Trawl-Original-Content-Encoding") == "gzip"


def test_the_writeback_hint_uploads_nothing(blobs: BlobStore):
    # Chunks live in memory until their upload: the port's early-writeback hint has nothing
    # to send, and must not seal or upload a chunk behind the crawl's commit order.
    writer = writer_for(blobs)
    key = writer.append(page(1)[0])
    writer.writeback_handle()()
    assert list(blobs.iter_keys("warc/")) == []
    writer.flush()
    assert read_record_from_blobs(blobs, key).payload == page(1)[1]


def test_one_object_per_flush_named_by_node_and_time(blobs: BlobStore):
    writer = writer_for(blobs)
    keys = [writer.append(page(n)[0]) for n in range(3)]
    writer.flush()
    keys += [writer.append(page(n)[0]) for n in range(3, 5)]
    writer.flush()
    objects = list(blobs.iter_keys("warc/"))
    assert len(objects) == 2
    assert {parse_chunk_key(k).file for k in keys} == set(objects)
    stamps = sorted(m.groups() for o in objects if (m := NAME.fullmatch(o)))
    assert [int(seq) for _, seq in stamps] == [1, 2]  # both names match
    assert int(stamps[0][0]) == round((T0 + 0.25) * 1000)  # when the chunk's first record came
    assert writer.stats().chunks_uploaded == 2


def test_each_object_is_a_warc_file_warcio_reads_with_digests(blobs: BlobStore):
    writer = writer_for(blobs)
    bodies = {}
    for n in range(12):
        record, body = page(n, size=2000 + 500 * n)
        writer.append(record)
        bodies[f"http://127.0.0.1:8080/page/{n}"] = body
    original = page(0)[0]
    writer.append(
        encode_revisit_record(
            url="http://127.0.0.1:8080/copy",
            fetched_at=T0 + 99,
            ip=None,
            http_head=b"HTTP/1.1 200 OK\r\nContent-Length: 3000\r\n\r\n",
            payload_digest=original.payload_digest,
            refers_to_id=original.record_id,
            refers_to_url="http://127.0.0.1:8080/page/0",
            refers_to_at=T0,
        )
    )
    writer.flush()
    (key,) = blobs.iter_keys()
    kinds, payloads = [], {}
    for rec in ArchiveIterator(io.BytesIO(blobs.get(key)), check_digests="raise"):
        kinds.append(rec.rec_type)
        if rec.rec_type == "warcinfo":
            assert rec.rec_headers.get_header("WARC-Filename") == key
        if rec.rec_type == "response":
            payloads[rec.rec_headers.get_header("WARC-Target-URI")] = rec.content_stream().read()
    assert kinds == ["warcinfo"] + ["response"] * 12 + ["revisit"]
    assert payloads == bodies


def test_warcio_offsets_match_storage_keys(blobs: BlobStore):
    writer = writer_for(blobs)
    keys = [writer.append(page(n)[0]) for n in range(5)]
    writer.flush()
    (obj,) = blobs.iter_keys()
    it = ArchiveIterator(io.BytesIO(blobs.get(obj)))
    spans = []
    for rec in it:
        if rec.rec_type == "response":
            rec.content_stream().read()
            spans.append(f"{obj}:{it.get_record_offset()}:{it.get_record_length()}")
    assert spans == keys


def test_unflushed_chunk_leaves_no_object(blobs: BlobStore):
    writer = writer_for(blobs)
    key = writer.append(page(1)[0])
    assert writer.stats().records_waiting == 1
    assert list(blobs.iter_keys()) == []
    with pytest.raises(BlobNotFound):
        read_record_from_blobs(blobs, key)
    del writer  # a crash: the chunk was only in memory
    assert list(blobs.iter_keys()) == []


def test_sealed_batch_is_not_stored_until_uploaded(blobs: BlobStore):
    writer = writer_for(blobs)
    first = writer.append(page(1)[0])
    batch = writer.seal()
    second = writer.append(page(2)[0])  # goes to the next chunk
    assert list(blobs.iter_keys()) == []
    writer.upload(batch)
    assert read_record_from_blobs(blobs, first).payload == page(1)[1]
    with pytest.raises(BlobNotFound):
        read_record_from_blobs(blobs, second)
    assert writer.flush().records == 1
    assert read_record_from_blobs(blobs, second).payload == page(2)[1]


def test_empty_flush_uploads_nothing(blobs: BlobStore):
    writer = writer_for(blobs)
    assert writer.flush().chunks == ()
    writer.close()
    assert list(blobs.iter_keys()) == []


def test_chunks_stay_under_the_size_limit(blobs: BlobStore):
    limit = 20_000
    writer = writer_for(blobs, max_chunk_bytes=limit)
    keys = {}
    for n in range(40):
        record, body = page(n)
        keys[writer.append(record)] = body
        if writer.wants_flush:
            writer.flush()
    writer.close()
    objects = list(blobs.iter_keys())
    assert len(objects) > 3
    assert all(blobs.size(o) <= limit for o in objects)
    for key, body in keys.items():
        assert read_record_from_blobs(blobs, key).payload == body


def test_record_bigger_than_the_limit_gets_a_chunk_of_its_own(blobs: BlobStore):
    writer = writer_for(blobs, max_chunk_bytes=5000)
    small = writer.append(page(1, 100)[0])
    big = writer.append(page(2, 80_000)[0])
    after = writer.append(page(3, 100)[0])
    batch = writer.flush()
    assert len(batch.chunks) == 3
    assert len({parse_chunk_key(k).file for k in (small, big, after)}) == 3
    assert len(read_record_from_blobs(blobs, big).payload) == 80_000


def test_writers_on_one_node_never_share_a_name(blobs: BlobStore):
    # Same node id, same clock: a restarted node must not overwrite the old objects.
    keys = []
    for _ in range(2):
        writer = writer_for(blobs)
        keys.append(writer.append(page(1)[0]))
        writer.close()
    assert len(list(blobs.iter_keys())) == 2
    assert all(read_record_from_blobs(blobs, k).payload == page(1)[1] for k in keys)


def test_appends_go_on_while_a_batch_uploads(blobs: BlobStore):
    writer = writer_for(blobs)
    keys = [writer.append(page(n)[0]) for n in range(20)]
    batch = writer.seal()
    uploader = threading.Thread(target=writer.upload, args=(batch,))
    uploader.start()
    keys += [writer.append(page(n)[0]) for n in range(20, 40)]
    uploader.join()
    writer.flush()
    assert [read_record_from_blobs(blobs, k).target_uri for k in keys] == [
        f"http://127.0.0.1:8080/page/{n}" for n in range(40)
    ]


def test_read_errors_name_the_storage_key(blobs: BlobStore):
    writer = writer_for(blobs)
    key = writer.append(page(1)[0])
    writer.flush()
    sk = parse_chunk_key(key)
    for bad in ("nonsense", f"{sk.file}:x:5", "/abs/key:0:10", "../up:0:10", f"{sk.file}:0:0"):
        with pytest.raises(DataError, match="storage key"):
            read_record_from_blobs(blobs, bad)
    with pytest.raises(DataError, match="short"):
        read_record_from_blobs(blobs, f"{sk.file}:{sk.offset + 10**6}:{sk.length}")
    with pytest.raises(DataError, match="gzip"):
        read_record_from_blobs(blobs, f"{sk.file}:{sk.offset + 1}:{sk.length - 1}")
    with pytest.raises(DataError, match="expected a response"):
        read_record_from_blobs(blobs, f"{sk.file}:0:{sk.offset}")  # the warcinfo record


def test_writer_state_and_misuse(tmp_path: Path):
    writer = writer_for(LocalBlobStore(tmp_path))
    assert "0 records waiting" in repr(writer)
    writer.append(page(1)[0])
    assert "1 records waiting" in repr(writer)
    writer.close()
    writer.close()
    assert "closed" in repr(writer)
    stats = writer.stats()
    assert (stats.chunks_uploaded, stats.records_uploaded, stats.records_waiting) == (1, 1, 0)
    with pytest.raises(UsageError, match="after close"):
        writer.append(page(2)[0])
    for node in ("", "a/b", "x:y", ".hidden", "n" * 65):
        with pytest.raises(UsageError, match="node id"):
            WarcChunkWriter(LocalBlobStore(tmp_path), node_id=node)


# The child of the crash test: writes one flushed and one unflushed batch, then waits to be
# killed. argv: store kind, then the local directory or the S3 endpoint, bucket, id, secret.
CRASH_CHILD = """
import sys, time
from pathlib import Path
from tests.contract.test_warc_chunks import page, writer_for
from trawl.store.blobs_local import LocalBlobStore
from trawl.store.blobs_s3 import S3BlobStore, S3Bucket

kind, *where = sys.argv[1:]
if kind == "local":
    blobs = LocalBlobStore(Path(where[0]))
else:
    endpoint, bucket, key_id, secret = where
    blobs = S3BlobStore(S3Bucket(bucket, endpoint, "us-east-1", key_id, secret))
writer = writer_for(blobs)
keys = [writer.append(page(n)[0]) for n in range(10)]
writer.flush()
print(*keys, sep="\\n", flush=True)
for n in range(10, 20):
    writer.append(page(n)[0])
print("waiting", flush=True)
time.sleep(60)
"""


def test_kill_9_keeps_flushed_records_and_leaves_nothing_else(
    blobs: BlobStore, request: pytest.FixtureRequest
):
    if isinstance(blobs, LocalBlobStore):
        where = [str(blobs.root)]
    else:
        server: S3Server = request.getfixturevalue("s3_server")
        where = [server.endpoint, "trawl-chunks", server.access_key_id, server.secret_access_key]
    kind = "local" if isinstance(blobs, LocalBlobStore) else "s3"
    args = [sys.executable, "-c", CRASH_CHILD, kind, *where]
    repo = Path(__file__).resolve().parents[2]  # the child imports this module
    with subprocess.Popen(args, cwd=repo, stdout=subprocess.PIPE, text=True) as child:
        try:
            assert child.stdout is not None
            lines = [child.stdout.readline().strip() for _ in range(11)]
        finally:
            child.kill()  # SIGKILL: no atexit, no flush, no finally in the child
    assert lines[-1] == "waiting"
    keys = lines[:-1]
    assert [read_record_from_blobs(blobs, k).payload for k in keys] == [
        page(n)[1] for n in range(10)
    ]
    assert list(blobs.iter_keys()) == [parse_chunk_key(keys[0]).file]

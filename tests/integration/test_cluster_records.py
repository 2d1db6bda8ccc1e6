"""A cluster node's commit order, on real Redis, PostgreSQL and S3 servers: a page record
commits only after the links its page found are in their streams and its body is uploaded;
a failed step keeps the record back, and the next publish resumes from that step. A
snapshot taken at a publish's cut (a partition checkpoint) is handed back only once every
cut up to it is complete."""

from __future__ import annotations

import asyncio
import sqlite3
import uuid
from typing import TYPE_CHECKING

from trawl.cluster.cluster_records import ClusterRecords, CommitPublisher
from trawl.cluster.link_router import LinkBuffers
from trawl.cluster.partitions import partition_of
from trawl.cluster.redis_coord import ClusterKeys, CoordinatorUnavailable, connect
from trawl.cluster.redis_links import START, RedisLinks
from trawl.model import CrawlUrl, Line, PageFetchedEvent, PageRecord
from trawl.store.blobs_s3 import S3BlobStore
from trawl.store.postgres_db import open_postgres
from trawl.store.records_postgres import PostgresRecords
from trawl.store.warc_chunks import WarcChunkWriter, read_record_from_blobs
from trawl.store.warc_record import encode_response_record

if TYPE_CHECKING:
    from collections.abc import Iterable, Sequence

    from tests.servers.redis import RedisServer
    from tests.servers.s3 import S3Server

    from trawl.cluster.redis_links import RoutedLink

PARTITIONS = 16
PAYLOAD = b"<a href=/2>two</a>"


class FlakyLinks:
    """RedisLinks whose sends fail while `down` is set (Redis unreachable)."""

    def __init__(self, real: RedisLinks) -> None:
        self.real = real
        self.down = True

    async def send_many(
        self, batches: Iterable[tuple[int, Sequence[RoutedLink]]]
    ) -> list[tuple[int, str]]:
        if self.down:
            raise CoordinatorUnavailable("redis: send: ConnectionError: refused (test)")
        return await self.real.send_many(batches)


def stored_page(n: int, key: str) -> PageRecord:
    return PageRecord(
        url_hash=f"{n:032x}", url=f"http://a.test/{n}", last_fetched_at=1000.0 + n,
        http_status=200, content_hash=f"{n:032x}", storage_key=key, site="a.test",
    )  # fmt: skip


def test_records_wait_for_their_links_and_bodies(
    redis_single: RedisServer,
    s3_server: S3Server,
    postgres_dsn: str,
) -> None:
    async def main() -> None:
        client = await connect(redis_single.url)
        blobs = S3BlobStore(s3_server.bucket_named(f"t{uuid.uuid4().hex[:10]}"))
        pg_conn, fresh_conn = open_postgres(postgres_dsn), open_postgres(postgres_dsn)
        pg = PostgresRecords(pg_conn, partition_of=lambda s: partition_of(s, PARTITIONS))
        links = RedisLinks(client, ClusterKeys(f"t{uuid.uuid4().hex[:10]}"))
        flaky = FlakyLinks(links)
        buffers = LinkBuffers(PARTITIONS, sent_capacity=1000)
        warc = WarcChunkWriter(blobs, node_id="n1")
        local = sqlite3.connect(":memory:", isolation_level=None)
        publisher = CommitPublisher(
            pg, warc=warc, buffers=buffers, links=flaky,  # type: ignore[arg-type]
        )  # fmt: skip
        records = ClusterRecords(pg, local=local, owned=lambda: set(range(PARTITIONS)))
        try:
            body = encode_response_record(
                url="http://a.test/1", fetched_at=1001.0, ip="127.0.0.1",
                http_head=b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\n\r\n",
                payload=PAYLOAD, truncated=False,
            )  # fmt: skip
            page = stored_page(1, warc.append(body))
            buffers.route(
                CrawlUrl("http://b.test/2", "2" * 32, "b.test", 1, Line.FAST, 1001.0),
                must_crawl=False, referrer="a.test",
            )  # fmt: skip
            records.put_page(page, PageFetchedEvent(page.url, page.url_hash, page.storage_key,
                             page.content_hash, 200, 1001.0))  # fmt: skip
            records.commit()  # the cut: nothing reaches PostgreSQL yet
            assert records.get_page(page.url_hash) == page, "this node still reads it"

            await publisher.publish()  # Redis is down: the links can't go, so nor can the record
            fresh = PostgresRecords(fresh_conn)  # another node's view: committed data only
            assert fresh.get_page(page.url_hash) is None
            assert list(blobs.iter_keys("warc/")) == [], "no upload before the links are sent"
            assert publisher.stats().cuts_waiting == 1
            assert publisher.stats().failures == 1
            # A checkpoint taken at a cut is handed back only once that cut is complete.
            taken = await publisher.publish_with(lambda: "a checkpoint")
            assert taken is None, "the cut before it is still waiting"
            assert publisher.stats().failures == 2

            flaky.down = False
            waiting = await publisher.publish_with(lambda: publisher.stats().cuts_waiting)
            assert waiting == 1, "taken at the cut, before the waiting cut completed"
            assert publisher.stats().cuts_waiting == 0
            batch = (await links.read_links(partition_of("b.test", PARTITIONS), START, 10))[0]
            assert [(x.url, x.referrer) for x in batch.links] == [("http://b.test/2", "a.test")]
            assert fresh.get_page(page.url_hash) == page
            assert read_record_from_blobs(blobs, page.storage_key).payload == PAYLOAD
            assert [e.url_hash for e in fresh.read_events(0, 10)] == [page.url_hash]
        finally:
            await client.aclose()
            blobs.close()
            pg_conn.close()
            fresh_conn.close()

    asyncio.run(main())

"""`trawl pages|events|page|host --cluster FILE` (issue 7) against real PostgreSQL and S3.

The same records, events, host record and body are written to a data directory (SQLite and
a WARC file) and to a cluster's shared stores (PostgreSQL and a WARC chunk in S3); each
command must then print the same bytes in both modes. Only the body's storage key differs,
since each store names its own objects.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import uuid
from dataclasses import dataclass
from typing import TYPE_CHECKING

import pytest
from tests.e2e.support import interruptible

from trawl.cli import main
from trawl.model import PageFetchedEvent, PageRecord
from trawl.politeness.robots import robots_from_response
from trawl.politeness.site_state import SiteState
from trawl.store.blobs_s3 import S3BlobStore
from trawl.store.layout import DB_NAME, WARC_DIR
from trawl.store.postgres_db import open_postgres
from trawl.store.records_postgres import PostgresRecords
from trawl.store.records_sqlite import SqliteRecords
from trawl.store.sqlite_db import open_database
from trawl.store.warc import WarcWriter
from trawl.store.warc_chunks import WarcChunkWriter
from trawl.store.warc_record import encode_response_record
from trawl.urls.normalise import url_hash

if TYPE_CHECKING:
    from pathlib import Path

    from tests.servers.s3 import S3Server

    from trawl.store.warc_record import EncodedRecord


T0 = 1_760_000_000.0
BODY = b"<html><body><p>hello from the cluster</p></body></html>"
BODY_URL = "http://a.test/"
URLS = [BODY_URL, "http://a.test/gone", "http://www.b.test/x?q=1"]


@dataclass(frozen=True, slots=True)
class Crawl:
    """One crawl written twice: to `data` and to the cluster named by `cluster_file`."""

    data: Path
    cluster_file: Path
    data_key: str  # the body's storage key in the data directory
    cluster_key: str  # ... and in S3
    dsn: str


@pytest.fixture(autouse=True)
def _no_aws_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    # The environment's key pair would win over the cluster file's.
    for name in list(os.environ):
        if name.startswith("AWS_"):
            monkeypatch.delenv(name)


def write_cluster_file(path: Path, dsn: str, s3: S3Server, bucket: str) -> Path:
    path.write_text(
        "[cluster]\n"
        'redis_url = "redis://127.0.0.1:1/0"\n'  # read-back never asks Redis
        f'postgres_dsn = "{dsn}"\n'
        f's3_endpoint = "{s3.endpoint}"\ns3_bucket = "{bucket}"\n'
        "partitions = 16\n"
        f'aws_access_key_id = "{s3.access_key_id}"\n'
        f'aws_secret_access_key = "{s3.secret_access_key}"\n'
    )
    return path


def page(n: int, url: str, storage_key: str) -> tuple[PageRecord, PageFetchedEvent | None]:
    status = [200, 404, 200][n]
    record = PageRecord(
        url_hash=url_hash(url),
        url=url,
        last_fetched_at=T0 + n,
        http_status=status,
        content_hash=f"{n:064x}" if status == 200 else "",
        storage_key=storage_key if n == 0 else "",
        site="b.test" if "b.test" in url else "a.test",
        depth=n,
        next_fetch_at=T0 + 86_400.5,
        visits=[[3600.0, 1], [7200.25, 0]],
        importance=0.125 * (n + 1),
        extra={"note": f"page {n}"},
    )
    if status != 200:
        return record, None
    event = PageFetchedEvent(
        url, record.url_hash, record.storage_key, record.content_hash, status, T0 + n
    )
    return record, event


def host_record() -> dict[str, object]:
    state = SiteState("a.test")
    # Origins whose sorted order (the written one) is not JSONB's shortest-first order.
    for origin in ("https://a.test", "http://www.a.test"):
        rules = robots_from_response(origin, 200, b"User-agent: *\nDisallow: /private\n", T0)
        state.set_robots(rules, "trawl")
    state.count_page(T0)
    state.note_error(T0, "http://a.test/gone", "timeout")
    return state.to_host_record("node-a")


def body_record() -> EncodedRecord:
    head = b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\n\r\n"
    return encode_response_record(
        url=BODY_URL, fetched_at=T0, ip="127.0.0.1", http_head=head, payload=BODY, truncated=False
    )


def write_data_dir(data: Path) -> str:
    with WarcWriter(data / WARC_DIR) as warc:
        key = warc.append(body_record())
        warc.sync()
    conn = open_database(data / DB_NAME)
    try:
        write_records(SqliteRecords(conn), key)
    finally:
        conn.close()
    return key


def write_cluster(dsn: str, s3: S3Server, bucket: str) -> str:
    with S3BlobStore(s3.bucket_named(bucket)) as blobs:
        chunks = WarcChunkWriter(blobs, node_id="node-a")
        key = chunks.append(body_record())
        chunks.flush()
    conn = open_postgres(dsn)
    try:
        write_records(PostgresRecords(conn), key)
    finally:
        conn.close()
    return key


def write_records(records: SqliteRecords | PostgresRecords, body_key: str) -> None:
    records.begin()
    for n, url in enumerate(URLS):
        records.put_page(*page(n, url, body_key))
    records.put_host("a.test", host_record())
    records.commit()


@pytest.fixture
def crawl(postgres_dsn: str, s3_server: S3Server, tmp_path: Path) -> Crawl:
    bucket = f"trawl-{uuid.uuid4().hex[:12]}"
    data_key = write_data_dir(tmp_path / "data")
    cluster_key = write_cluster(postgres_dsn, s3_server, bucket)
    path = write_cluster_file(tmp_path / "cluster.toml", postgres_dsn, s3_server, bucket)
    return Crawl(tmp_path / "data", path, data_key, cluster_key, postgres_dsn)


def run(args: list[str], capsys: pytest.CaptureFixture[str]) -> str:
    assert main(args) == 0
    captured = capsys.readouterr()
    assert captured.err == ""
    return captured.out


def both(crawl: Crawl, args: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[str, str]:
    """The command's output with --data, and with --cluster (the body key made the same)."""
    from_data = run([*args, "--data", str(crawl.data)], capsys)
    from_cluster = run([*args, "--cluster", str(crawl.cluster_file)], capsys)
    return from_data, from_cluster.replace(crawl.cluster_key, crawl.data_key)


@pytest.mark.parametrize(
    "args",
    [
        ["pages"],
        ["events"],
        ["events", "--from", "2"],
        ["page", BODY_URL],
        ["page", url_hash(URLS[1])],
        ["host", "www.a.test"],
    ],
    ids=["pages", "events", "events-from", "page-by-url", "page-by-hash", "host"],
)
def test_cluster_mode_prints_what_data_mode_prints(
    crawl: Crawl, args: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    from_data, from_cluster = both(crawl, args, capsys)
    assert from_data  # not two empty outputs
    assert from_cluster == from_data


def test_events_carry_offsets_from_one(crawl: Crawl, capsys: pytest.CaptureFixture[str]) -> None:
    out = run(["events", "--cluster", str(crawl.cluster_file)], capsys)
    lines = out.splitlines()
    assert len(lines) == 2
    assert lines[0].startswith('{"offset":1,"type":"page.fetched","url":"http://a.test/"')
    assert f'"storageKey":"{crawl.cluster_key}"' in lines[0]


def test_page_body_is_read_from_s3(
    crawl: Crawl, capsysbinary: pytest.CaptureFixture[bytes]
) -> None:
    assert main(["page", BODY_URL, "--body", "--cluster", str(crawl.cluster_file)]) == 0
    assert capsysbinary.readouterr().out == BODY
    assert main(["page", BODY_URL, "--body", "--data", str(crawl.data)]) == 0
    assert capsysbinary.readouterr().out == BODY


def error_of(args: list[str], capsys: pytest.CaptureFixture[str]) -> str:
    assert main(args) == 2
    err = capsys.readouterr().err
    assert err.startswith("trawl: error: ")
    assert err.count("\n") == 1, err
    return err


def test_missing_page_and_missing_body_are_one_line_errors(
    crawl: Crawl, capsys: pytest.CaptureFixture[str]
) -> None:
    cluster = ["--cluster", str(crawl.cluster_file)]
    assert "no page record" in error_of(["page", "http://nowhere.test/", *cluster], capsys)
    assert "no body stored" in error_of(["page", URLS[1], "--body", *cluster], capsys)
    assert "no host record" in error_of(["host", "nowhere.test", *cluster], capsys)


def test_body_whose_object_is_gone_is_a_one_line_error(
    crawl: Crawl,
    s3_server: S3Server,
    capsys: pytest.CaptureFixture[str],
) -> None:
    object_key = crawl.cluster_key.rsplit(":", 2)[0]
    bucket = crawl.cluster_file.read_text().split('s3_bucket = "')[1].split('"')[0]
    with S3BlobStore(s3_server.bucket_named(bucket)) as blobs:
        blobs.delete(object_key)
    err = error_of(["page", BODY_URL, "--body", "--cluster", str(crawl.cluster_file)], capsys)
    assert object_key in err


def test_unreachable_postgres_is_a_one_line_error(
    tmp_path: Path,
    s3_server: S3Server,
    capsys: pytest.CaptureFixture[str],
) -> None:
    dsn = "postgresql://trawl:s3cret@127.0.0.1:1/trawl"
    path = write_cluster_file(tmp_path / "c.toml", dsn, s3_server, "trawl-unused")
    for command in (["pages"], ["events"], ["page", BODY_URL], ["host", "a.test"]):
        err = error_of([*command, "--cluster", str(path)], capsys)
        assert "cannot connect" in err
        assert "s3cret" not in err


def test_bad_cluster_file_is_a_one_line_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "c.toml"
    assert "cluster file not found" in error_of(["pages", "--cluster", str(path)], capsys)
    path.write_text('[cluster]\nredis_url = "redis://127.0.0.1/0"\n')
    assert "missing" in error_of(["events", "--cluster", str(path)], capsys)


def test_data_and_cluster_exclude_each_other(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    for command in (["pages"], ["events"], ["page", BODY_URL], ["host", "a.test"]):
        with pytest.raises(SystemExit) as exit_info:
            main([*command, "--data", str(tmp_path), "--cluster", str(tmp_path / "c.toml")])
        assert exit_info.value.code == 2
        assert "not allowed with argument" in capsys.readouterr().err


def test_events_follow_prints_events_committed_later(crawl: Crawl) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}
    command = [sys.executable, "-m", "trawl", "events", "--follow"]
    follower = subprocess.Popen(
        [*command, "--from", "2", "--cluster", str(crawl.cluster_file)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        preexec_fn=interruptible,
    )
    try:
        assert follower.stdout is not None
        assert '"offset":2,' in follower.stdout.readline()
        conn = open_postgres(crawl.dsn)
        try:
            records = PostgresRecords(conn)
            record, event = page(2, "http://www.b.test/later", "")
            records.put_page(record, event)
            records.commit()
        finally:
            conn.close()
        started = time.monotonic()
        line = follower.stdout.readline()  # the poll finds it within a second
        assert '"offset":3,' in line
        assert '"url":"http://www.b.test/later"' in line
        assert time.monotonic() - started < 10
        follower.send_signal(signal.SIGINT)
        assert follower.wait(timeout=10) == 130
        assert follower.stderr is not None
        assert "Traceback" not in follower.stderr.read()
    finally:
        if follower.poll() is None:
            follower.kill()
            follower.wait()
        for stream in (follower.stdout, follower.stderr):
            if stream is not None:
                stream.close()

"""The BlobStore contract, run against the local directory and a real S3 server (SeaweedFS)."""

from __future__ import annotations

import os
import socket
import threading
import uuid
from dataclasses import replace
from typing import TYPE_CHECKING

import pytest
from tests.servers.s3 import empty_bucket

from trawl.errors import ConfigError, DataError, StoreUnavailable, UsageError
from trawl.store.blobs import MAX_KEY_BYTES, BlobNotFound, BlobStore
from trawl.store.blobs_local import LocalBlobStore
from trawl.store.blobs_s3 import S3BlobStore, S3Bucket

if TYPE_CHECKING:
    from collections.abc import Iterator
    from pathlib import Path

    from tests.servers.s3 import S3Server

MB = 1024 * 1024


def new_bucket_name() -> str:
    return f"trawl-{uuid.uuid4().hex[:16]}"


@pytest.fixture(scope="module")
def s3_store(s3_server: S3Server) -> Iterator[S3BlobStore]:
    # One bucket for the module (a new bucket costs SeaweedFS ~0.4 s), emptied after each
    # test. 5 MB parts: put_file's multipart path runs on a test-sized file.
    bucket = s3_server.bucket_named("trawl-blobs")
    with S3BlobStore(bucket, multipart_bytes=5 * MB) as store:
        empty_bucket(store)
        yield store


def test_put_then_get(blobs: BlobStore):
    blobs.put("warc/node-1/a.warc.gz", b"hello")
    assert blobs.get("warc/node-1/a.warc.gz") == b"hello"
    assert blobs.size("warc/node-1/a.warc.gz") == 5
    assert blobs.exists("warc/node-1/a.warc.gz")


def test_put_replaces_an_object_whole(blobs: BlobStore):
    blobs.put("k", b"a much longer first version")
    blobs.put("k", b"short")
    assert blobs.get("k") == b"short"
    assert blobs.size("k") == 5


def test_empty_object(blobs: BlobStore):
    blobs.put("empty", b"")
    assert blobs.get("empty") == b""
    assert blobs.size("empty") == 0
    assert blobs.get_range("empty", 0, 10) == b""


def test_unicode_key(blobs: BlobStore):
    blobs.put("warc/névé/ü €.bin", b"x")
    assert list(blobs.iter_keys("warc/né")) == ["warc/névé/ü €.bin"]
    assert blobs.get("warc/névé/ü €.bin") == b"x"


def test_reader_never_sees_a_partial_object(blobs: BlobStore):
    versions = {bytes([65 + n]) * (200_000 + 50_000 * n) for n in range(4)}
    blobs.put("hot", min(versions))
    seen: set[bytes] = set()
    stop = threading.Event()

    def read() -> None:
        while not stop.is_set():
            seen.add(blobs.get("hot"))

    reader = threading.Thread(target=read)
    reader.start()
    try:
        for _ in range(10):
            for data in sorted(versions):
                blobs.put("hot", data)
    finally:
        stop.set()
        reader.join()
    assert seen
    assert seen <= versions
    assert list(blobs.iter_keys()) == ["hot"]  # no temporary objects left behind


@pytest.mark.parametrize(
    ("offset", "length", "expected"),
    [
        (0, 1, b"0"),
        (0, 10, b"0123456789"),
        (3, 4, b"3456"),
        (9, 1, b"9"),
        (7, 3, b"789"),
        (7, 100, b"789"),  # runs past the end: what there is
        (10, 5, b""),  # starts at the end
        (50, 5, b""),  # starts past it
    ],
)
def test_get_range(blobs: BlobStore, offset: int, length: int, expected: bytes):
    blobs.put("digits", b"0123456789")
    assert blobs.get_range("digits", offset, length) == expected


@pytest.mark.parametrize(("offset", "length"), [(-1, 5), (0, 0), (3, -2)])
def test_get_range_refuses_bad_ranges(blobs: BlobStore, offset: int, length: int):
    blobs.put("digits", b"0123456789")
    with pytest.raises(UsageError, match="range"):
        blobs.get_range("digits", offset, length)


def test_iter_keys_by_prefix(blobs: BlobStore):
    keys = [
        "checkpoints/node-1/frontier-0001",
        "warc/node-1/2026/11/30/1796000000000-000001.warc.gz",
        "warc/node-1/2026/11/30/1796000001000-000002.warc.gz",
        "warc/node-1/2026/12/01/1796100000000-000003.warc.gz",
        "warc/node-1-old/x",
        "warc/node-10/2026/11/30/y",
        "warc/node-2/2026/11/30/z",
        "warc-index",
    ]
    for key in reversed(keys):
        blobs.put(key, key.encode())

    def listed(prefix: str = "") -> list[str]:
        found = list(blobs.iter_keys(prefix))
        assert len(found) == len(set(found))
        return sorted(found)  # the order is not part of the contract

    assert listed() == sorted(keys)
    assert listed("warc/") == sorted(k for k in keys if k.startswith("warc/"))
    assert listed("warc/node-1/") == keys[1:4]
    assert listed("warc/node-1") == sorted(keys[1:6])
    assert listed("warc/node-1/2026/11/30/1796000000") == [keys[1]]
    assert listed("warc") == sorted(keys[1:])
    assert listed("nothing/") == []
    assert listed("warc/node-2/2026/11/30/z") == [keys[6]]


def test_delete(blobs: BlobStore):
    blobs.put("a/b", b"1")
    blobs.put("a/c", b"2")
    blobs.delete("a/b")
    assert not blobs.exists("a/b")
    assert list(blobs.iter_keys("a/")) == ["a/c"]
    blobs.delete("a/b")  # deleting what is gone is no error
    blobs.delete("never/was")


def test_missing_key_is_blob_not_found(blobs: BlobStore):
    blobs.put("dir/present", b"x")
    for call in (
        lambda: blobs.get("dir/absent"),
        lambda: blobs.get_range("dir/absent", 0, 10),
        lambda: blobs.size("dir/absent"),
        lambda: blobs.get("dir"),  # a "directory" of other keys is no object
        lambda: blobs.get("dir/present/below"),
    ):
        with pytest.raises(BlobNotFound, match=r"no object 'dir") as info:
            call()
        assert isinstance(info.value, DataError)
    assert not blobs.exists("dir/absent")
    assert not blobs.exists("dir")


def test_large_object(blobs: BlobStore):
    data = os.urandom(9 * MB)
    blobs.put("big", data)
    assert blobs.size("big") == len(data)
    assert blobs.get("big") == data
    assert blobs.get_range("big", len(data) - 1000, 5000) == data[-1000:]
    assert blobs.get_range("big", 4 * MB, 3 * MB) == data[4 * MB : 7 * MB]


@pytest.mark.parametrize("size", [1000, 12 * MB])
def test_put_file(blobs: BlobStore, tmp_path: Path, size: int):
    source = tmp_path / "checkpoint.bin"
    data = os.urandom(size)
    source.write_bytes(data)
    blobs.put_file("checkpoints/node-1/frontier", source)
    assert blobs.get("checkpoints/node-1/frontier") == data
    source.write_bytes(b"new")
    blobs.put_file("checkpoints/node-1/frontier", source)
    assert blobs.get("checkpoints/node-1/frontier") == b"new"


def test_put_file_of_a_missing_file_is_a_data_error(blobs: BlobStore, tmp_path: Path):
    with pytest.raises(DataError, match=r"missing\.bin"):
        blobs.put_file("x", tmp_path / "missing.bin")
    assert not blobs.exists("x")


BAD_KEYS = [
    "",
    "/abs/key",
    "a//b",
    "a/",
    "../escape",
    "a/../../escape",
    "./a",
    "a/.hidden",
    ".part",
    "a\\b",
    "a\nb",
    "a\x00b",
    "k" * (MAX_KEY_BYTES + 1),
]


@pytest.mark.parametrize("key", BAD_KEYS)
def test_bad_keys_are_refused(blobs: BlobStore, key: str, tmp_path: Path):
    source = tmp_path / "f"
    source.write_bytes(b"x")
    for call in (
        lambda: blobs.put(key, b"x"),
        lambda: blobs.put_file(key, source),
        lambda: blobs.get(key),
        lambda: blobs.get_range(key, 0, 1),
        lambda: blobs.size(key),
        lambda: blobs.delete(key),
    ):
        with pytest.raises(UsageError, match="blob key"):
            call()
    assert list(blobs.iter_keys()) == []


@pytest.mark.parametrize("prefix", ["/abs", "a//", "../", "a/./"])
def test_bad_prefixes_are_refused(blobs: BlobStore, prefix: str):
    with pytest.raises(UsageError, match="blob key"):
        list(blobs.iter_keys(prefix))


# Local directory only.


def test_local_store_ignores_leftover_temporary_files(tmp_path: Path):
    store = LocalBlobStore(tmp_path)
    store.put("a/b", b"x")
    (tmp_path / "a" / ".b.1234.part").write_bytes(b"torn")  # a crash mid-put leaves this
    assert list(store.iter_keys()) == ["a/b"]
    assert "LocalBlobStore" in repr(store)


def test_local_store_files_stay_inside_the_root(tmp_path: Path):
    store = LocalBlobStore(tmp_path / "root")
    store.put("x/y/z", b"1")
    assert (tmp_path / "root" / "x" / "y" / "z").read_bytes() == b"1"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["root"]


# S3 only: settings and failures.


def test_s3_settings_from_the_environment():
    env = {
        "AWS_ENDPOINT_URL": "http://127.0.0.1:9",
        "AWS_ACCESS_KEY_ID": "id",
        "AWS_SECRET_ACCESS_KEY": "hush",
        "AWS_SESSION_TOKEN": "tok",
    }
    bucket = S3Bucket.resolve("b-1", env=env)
    assert (bucket.endpoint_url, bucket.region, bucket.access_key_id) == (
        "http://127.0.0.1:9",
        "us-east-1",
        "id",
    )
    assert bucket.session_token == "tok"
    assert "hush" not in repr(bucket)
    given = S3Bucket.resolve(
        "b-1",
        endpoint_url="http://127.0.0.2:9",
        region="eu-west-1",
        access_key_id="mine",
        secret_access_key="s",
        env=env,
    )
    assert (given.endpoint_url, given.region, given.session_token) == (
        "http://127.0.0.2:9",
        "eu-west-1",
        None,
    )


def test_s3_settings_name_what_is_missing():
    with pytest.raises(ConfigError, match=r"s3_endpoint .*AWS_SECRET_ACCESS_KEY") as info:
        S3Bucket.resolve("b-1", env={"AWS_ACCESS_KEY_ID": "id"})
    assert "AWS_ACCESS_KEY_ID" not in str(info.value)
    with pytest.raises(ConfigError, match="s3_bucket"):
        S3Bucket.resolve("", endpoint_url="http://x", access_key_id="a", secret_access_key="b")


def test_s3_refuses_a_wrong_secret(s3_server: S3Server):
    bucket = replace(s3_server.bucket_named(s3_server.bucket), secret_access_key="wrong")
    with pytest.raises(DataError, match=r"s3 http://127\.0\.0\.1:\d+/trawl-test: .*failed") as info:
        S3BlobStore(bucket, max_attempts=1)
    assert not isinstance(info.value, StoreUnavailable)  # refused, not out of reach


def test_s3_unreachable_server_is_a_store_outage():
    # StoreUnavailable (a DataError): a node waits for the store, and its API answers 503.
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # nothing listens here once closed
    bucket = S3Bucket.resolve(
        "trawl-x",
        endpoint_url=f"http://127.0.0.1:{port}",
        access_key_id="a",
        secret_access_key="b",
        env={},
    )
    with pytest.raises(
        StoreUnavailable, match=rf"127\.0\.0\.1:{port}/trawl-x: head bucket .*failed"
    ):
        S3BlobStore(bucket, max_attempts=2, connect_timeout_s=0.5)


def test_s3_store_repr_names_endpoint_and_bucket(s3_server: S3Server):
    with S3BlobStore(s3_server.bucket_named(s3_server.bucket)) as store:
        text = repr(store)
    assert s3_server.endpoint in text
    assert "bucket=trawl-test" in text
    assert s3_server.secret_access_key not in text


def test_s3_bucket_creation_is_idempotent(s3_server: S3Server):
    bucket = s3_server.bucket_named(new_bucket_name())
    with S3BlobStore(bucket) as first, S3BlobStore(bucket) as second:
        first.put("k", b"v")
        second.ensure_bucket()
        assert second.get("k") == b"v"

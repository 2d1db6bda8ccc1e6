"""WARC files on disk: write, rotate, read back by key, read with warcio and FastWARC, recover."""

from __future__ import annotations

import gzip
import json
import os
import random
import shutil
import subprocess
from typing import TYPE_CHECKING

import pytest
from fastwarc.warc import ArchiveIterator as FastIterator
from fastwarc.warc import WarcRecordType
from warcio.archiveiterator import ArchiveIterator

from trawl.errors import DataError, UsageError
from trawl.store.cdxj import index_path, surt_key
from trawl.store.layout import recover_warc_tails
from trawl.store.warc import (
    StorageKey,
    WarcWriter,
    ensure_index,
    index_lines,
    iter_records,
    parse_storage_key,
    read_record,
    recover_tail,
)
from trawl.store.warc_record import (
    encode_request_record,
    encode_response_record,
    gunzip_member,
    rewrite_head_for_decoded,
)

if TYPE_CHECKING:
    from pathlib import Path

T0 = 1_796_000_000.0


class FakeClock:
    def __init__(self) -> None:
        self.t = T0

    def __call__(self) -> float:
        self.t += 1.0
        return self.t


def page(n: int, size: int = 3000, *, truncated: bool = False):
    rng = random.Random(n)
    words = [rng.choice(["alpha", "beta", "gamma", "delta", "<p>", "</p>"]) for _ in range(size)]
    body = " ".join(words).encode()[:size]
    head = (
        b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Encoding: gzip\r\n"
        b"Transfer-Encoding: chunked\r\n\r\n"
    )
    return encode_response_record(
        url=f"http://127.0.0.1:8080/page/{n}",
        fetched_at=T0 + n,
        ip="127.0.0.1",
        http_head=rewrite_head_for_decoded(head, len(body)),
        payload=body,
        truncated=truncated,
    ), body


def write_pages(directory: Path, count: int, **kwargs) -> tuple[WarcWriter, dict[str, bytes]]:
    keys: dict[str, bytes] = {}
    with WarcWriter(directory, clock=FakeClock(), **kwargs) as writer:
        for n in range(count):
            record, body = page(n, truncated=n % 7 == 0)
            keys[writer.append(record)] = body
        writer.sync()
    return writer, keys


def warc_files(directory: Path) -> list[Path]:
    return sorted(directory.glob("*.warc.gz"))


def test_append_returns_keys_that_read_back(tmp_path: Path):
    writer, keys = write_pages(tmp_path, 50)
    assert len(warc_files(tmp_path)) == 1
    assert writer.stats().records == 50
    for n, (key, body) in enumerate(keys.items()):
        stored = read_record(tmp_path, key)
        assert stored.payload == body
        assert stored.http_status == 200
        assert stored.target_uri == f"http://127.0.0.1:8080/page/{n}"
        assert stored.truncated == (n % 7 == 0)
        assert stored.header("Content-Length") == str(len(body))
        assert stored.header("Content-Encoding") is None
        assert stored.header("X-Trawl-Original-Content-Encoding") == "gzip"


def test_key_names_file_offset_and_length(tmp_path: Path):
    with WarcWriter(tmp_path, prefix="crawl", clock=FakeClock()) as writer:
        record, _ = page(1)
        key = writer.append(record)
        name = writer.current_file
    sk = parse_storage_key(key)
    assert sk.file == name
    assert name.startswith("crawl-20261130T005321Z-00001-")
    assert name.endswith(".warc.gz")
    assert str(sk) == key
    assert sk.length == len(record.data)
    data = (tmp_path / name).read_bytes()
    assert data[sk.offset : sk.offset + sk.length] == record.data
    assert sk.offset + sk.length == len(data)


def test_rotation_keeps_files_under_the_limit(tmp_path: Path):
    limit = 20_000
    _, keys = write_pages(tmp_path, 60, max_file_bytes=limit)
    files = warc_files(tmp_path)
    assert len(files) > 3
    assert all(f.stat().st_size <= limit for f in files)
    assert {parse_storage_key(k).file for k in keys} == {f.name for f in files}
    for key, body in keys.items():
        assert read_record(tmp_path, key).payload == body


def test_record_bigger_than_the_limit_gets_a_file_of_its_own(tmp_path: Path):
    with WarcWriter(tmp_path, max_file_bytes=2000, clock=FakeClock()) as writer:
        small = writer.append(page(1, 100)[0])
        big = writer.append(page(2, 50_000)[0])
        after = writer.append(page(3, 100)[0])
    files = {parse_storage_key(k).file for k in (small, big, after)}
    assert len(files) == 3
    assert len(read_record(tmp_path, big).payload) == 50_000


def test_a_sync_handle_runs_on_another_thread_after_its_file_rotated(tmp_path: Path):
    import threading

    with WarcWriter(tmp_path, max_file_bytes=2000, clock=FakeClock()) as writer:
        first = writer.append(page(1, 100)[0])
        sync = writer.sync_handle()
        second = writer.append(page(2, 5_000)[0])  # rotates: the first file is closed
        errors: list[BaseException] = []

        def run() -> None:
            try:
                sync()
            except BaseException as exc:  # handed back to the test
                errors.append(exc)

        thread = threading.Thread(target=run)
        thread.start()
        thread.join()
        assert errors == []
        assert parse_storage_key(first).file != parse_storage_key(second).file
    assert read_record(tmp_path, first).payload == page(1, 100)[1]


def test_each_writer_opens_a_new_file(tmp_path: Path):
    write_pages(tmp_path, 3)
    first = warc_files(tmp_path)
    before = first[0].read_bytes()
    write_pages(tmp_path, 3)  # same clock start: same timestamp and sequence
    second = warc_files(tmp_path)
    assert len(second) == 2
    assert set(first) < set(second)
    assert first[0].read_bytes() == before


def test_every_file_starts_with_warcinfo(tmp_path: Path):
    write_pages(tmp_path, 30, max_file_bytes=20_000)
    for path in warc_files(tmp_path):
        with open(path, "rb") as fh:
            first = next(iter(ArchiveIterator(fh)))
            assert first.rec_type == "warcinfo"
            assert first.rec_headers.get_header("WARC-Filename") == path.name
            assert b"software: trawl/" in first.content_stream().read()


def test_warcio_reads_every_file_and_checks_digests(tmp_path: Path):
    _, keys = write_pages(tmp_path, 40, max_file_bytes=30_000)
    payloads = set()
    for path in warc_files(tmp_path):
        with open(path, "rb") as fh:
            for rec in ArchiveIterator(fh, check_digests="raise"):
                if rec.rec_type == "response":
                    assert rec.http_headers.get_statuscode() == "200"
                    assert rec.rec_headers.get_header("WARC-IP-Address") == "127.0.0.1"
                    payloads.add(rec.content_stream().read())
    assert payloads == set(keys.values())


def test_fastwarc_reads_every_file_and_verifies_digests(tmp_path: Path):
    _, keys = write_pages(tmp_path, 40, max_file_bytes=30_000)
    verified = skipped_none = 0
    for path in warc_files(tmp_path):
        with open(path, "rb") as fh:
            for rec in FastIterator(fh, parse_http=False, record_types=WarcRecordType.response):
                # The block digest is checked before the HTTP head is parsed (parsing eats it).
                assert rec.verify_block_digest()
                rec.parse_http()
                assert rec.verify_payload_digest()
                verified += 1
        with open(path, "rb") as fh:
            skipped_none += sum(1 for _ in FastIterator(fh, verify_digests=True)) - 1
    assert verified == skipped_none == len(keys)


def test_fastwarc_offsets_match_storage_keys(tmp_path: Path):
    _, keys = write_pages(tmp_path, 10)
    path = warc_files(tmp_path)[0]
    with open(path, "rb") as fh:
        offsets = [r.stream_pos for r in FastIterator(fh, record_types=WarcRecordType.response)]
    assert offsets == [parse_storage_key(k).offset for k in keys]


@pytest.mark.skipif(shutil.which("warcio") is None, reason="warcio CLI not installed")
def test_warcio_cli_check_and_index(tmp_path: Path):
    _, keys = write_pages(tmp_path, 5)
    path = warc_files(tmp_path)[0]
    check = subprocess.run(["warcio", "check", str(path)], capture_output=True, check=False)
    assert check.returncode == 0, check.stdout + check.stderr
    index = subprocess.run(
        ["warcio", "index", "-f", "warc-type,offset,length", str(path)],
        capture_output=True,
        text=True,
        check=True,
    )
    rows = [line for line in index.stdout.splitlines() if '"response"' in line]
    expected = [parse_storage_key(k) for k in keys]
    assert rows == [
        f'{{"warc-type": "response", "offset": "{sk.offset}", "length": "{sk.length}"}}'
        for sk in expected
    ]


def test_iter_records_yields_every_response_with_its_slice(tmp_path: Path):
    _, keys = write_pages(tmp_path, 12)
    path = warc_files(tmp_path)[0]
    found = [
        (f"{path.name}:{off}:{length}", body.payload) for off, length, body in iter_records(path)
    ]
    assert found == list(keys.items())


def test_recover_tail_leaves_a_good_file_alone(tmp_path: Path):
    write_pages(tmp_path, 5)
    path = warc_files(tmp_path)[0]
    size = path.stat().st_size
    assert recover_tail(path) == 0
    assert recover_tail(path, check_bytes=None) == 0
    assert path.stat().st_size == size


@pytest.mark.parametrize("cut", [1, 9, 30, 500])
def test_recover_tail_cuts_a_torn_last_member(tmp_path: Path, cut: int):
    _, keys = write_pages(tmp_path, 5)
    path = warc_files(tmp_path)[0]
    last = parse_storage_key(list(keys)[-1])
    with open(path, "r+b") as f:
        f.truncate(last.offset + last.length - cut)
    assert recover_tail(path) == last.length - cut
    assert path.stat().st_size == last.offset
    assert len(list(iter_records(path))) == 4


def test_recover_tail_cuts_appended_garbage(tmp_path: Path):
    write_pages(tmp_path, 5)
    path = warc_files(tmp_path)[0]
    size = path.stat().st_size
    with open(path, "ab") as f:
        f.write(os.urandom(3000))
    assert recover_tail(path) == 3000
    assert path.stat().st_size == size
    assert len(list(iter_records(path))) == 5


def test_recover_tail_cuts_a_member_with_zeroed_data(tmp_path: Path):
    # A crash can leave the file length written but the data blocks not: zeros.
    _, keys = write_pages(tmp_path, 5)
    path = warc_files(tmp_path)[0]
    last = parse_storage_key(list(keys)[-1])
    with open(path, "r+b") as f:
        f.seek(last.offset + 40)
        f.write(bytes(200))
    assert recover_tail(path) == last.length
    with open(path, "rb") as fh:
        assert sum(1 for _ in ArchiveIterator(fh, check_digests="raise")) == 5  # warcinfo + 4


def test_recover_tail_on_plain_gzip_members(tmp_path: Path):
    # Members from other writers have no "sl" length field: they are found by inflating.
    members = [gzip.compress(gunzip_member(page(n)[0].data), mtime=0) for n in range(3)]
    path = tmp_path / "other.warc.gz"
    path.write_bytes(b"".join(members) + b"\x1f\x8b\x08\x00torn")
    assert recover_tail(path) == 8
    assert path.read_bytes() == b"".join(members)
    assert [length for _, length, _ in iter_records(path)] == [len(m) for m in members]


def test_read_record_errors_are_data_errors(tmp_path: Path):
    _, keys = write_pages(tmp_path, 3)
    key = next(iter(keys))
    sk = parse_storage_key(key)
    bad_keys = [
        "nonsense",
        "file.warc.gz:12",
        "file.warc.gz:-1:5",
        "file.warc.gz:1:x",
        "../etc/passwd:0:10",
        f"{sk.file}:{sk.offset}:0",
    ]
    for bad in bad_keys:
        with pytest.raises(DataError, match="storage key"):
            read_record(tmp_path, bad)
    with pytest.raises(DataError, match="cannot read"):
        read_record(tmp_path, f"missing.warc.gz:0:{sk.length}")
    with pytest.raises(DataError, match="short"):
        read_record(tmp_path, f"{sk.file}:{sk.offset + 10**6}:{sk.length}")
    with pytest.raises(DataError, match="gzip"):
        read_record(tmp_path, f"{sk.file}:{sk.offset + 1}:{sk.length}")
    with pytest.raises(DataError, match="expected a response"):
        read_record(tmp_path, f"{sk.file}:0:{sk.offset}")  # the warcinfo record


def test_corrupt_slice_is_a_data_error(tmp_path: Path):
    _, keys = write_pages(tmp_path, 2)
    key = list(keys)[1]
    sk = parse_storage_key(key)
    path = tmp_path / sk.file
    with open(path, "r+b") as f:
        f.seek(sk.offset + sk.length - 6)
        f.write(b"\xff\xff")
    with pytest.raises(DataError, match=r"storage key .*gzip"):
        read_record(tmp_path, key)
    with pytest.raises(DataError, match=str(sk.offset)):
        list(iter_records(path))


def test_parse_storage_key_allows_colons_only_as_separators():
    assert parse_storage_key("a-b.warc.gz:0:7") == StorageKey("a-b.warc.gz", 0, 7)


def test_writer_state_and_misuse(tmp_path: Path):
    writer = WarcWriter(tmp_path, clock=FakeClock())
    assert "0 records" in repr(writer)
    writer.append(page(1)[0])
    stats = writer.stats()
    assert stats.files_opened == 1
    assert stats.records == 1
    assert stats.current_bytes == (tmp_path / stats.current_file).stat().st_size
    writer.close()
    writer.close()
    assert "closed" in repr(writer)
    with pytest.raises(UsageError, match="after close"):
        writer.append(page(2)[0])
    with pytest.raises(UsageError, match="prefix"):
        WarcWriter(tmp_path, prefix="a:b")


def capture(n: int):
    """Page n's response record and the request record concurrent with it."""
    record, body = page(n)
    request = encode_request_record(
        url=f"http://127.0.0.1:8080/page/{n}",
        fetched_at=T0 + n,
        ip="127.0.0.1",
        request_head=f"GET /page/{n} HTTP/1.1\r\nHost: 127.0.0.1:8080\r\n\r\n".encode(),
        concurrent_to=record.record_id,
    )
    return record, request, body


def read_index(warc_path: Path) -> list[tuple[str, str, dict[str, str]]]:
    lines = index_path(warc_path).read_text().splitlines()
    assert lines == sorted(lines)
    return [(k, t, json.loads(f)) for k, t, f in (line.split(" ", 2) for line in lines)]


def test_issue_14_each_file_gets_a_cdxj_index_whose_offsets_hold_the_records(tmp_path: Path):
    keys = {}
    with WarcWriter(tmp_path, max_file_bytes=12_000, clock=FakeClock()) as writer:
        for n in range(30):
            record, request, body = capture(n)
            keys[writer.append(record, request)] = (record.record_id, body)
        writer.sync()  # the files rotation left are indexed on the writer's thread: wait for it
        assert list(tmp_path.glob("*.cdxj"))  # rotation indexed the files it left
    files = warc_files(tmp_path)
    assert len(files) > 2
    indexed = 0
    for path in files:
        for key, _stamp, fields in read_index(path):
            assert fields["filename"] == path.name
            with open(path, "rb") as f:
                f.seek(int(fields["offset"]))
                member = f.read(int(fields["length"]))
                f.seek(int(fields["offset"]))
                records = ArchiveIterator(f)
                warc = next(records)
                assert warc.rec_type == "response"
                assert warc.rec_headers.get_header("WARC-Target-URI") == fields["url"]
                # The response is followed by its request, in the same file.
                req = next(records)
                assert req.rec_type == "request"
                assert req.rec_headers.get_header("WARC-Concurrent-To") == (
                    warc.rec_headers.get_header("WARC-Record-ID")
                )
            storage_key = f"{path.name}:{fields['offset']}:{fields['length']}"
            assert gunzip_member(member)  # exactly one whole member
            assert keys[storage_key][1] == read_record(tmp_path, storage_key).payload
            assert key == surt_key(fields["url"])
            assert fields["status"] == "200"
            indexed += 1
    assert indexed == 30


def test_issue_14_ensure_index_rebuilds_a_crashed_files_index_after_recovery(tmp_path: Path):
    writer = WarcWriter(tmp_path, clock=FakeClock())
    for n in range(6):
        record, request, _ = capture(n)
        writer.append(record, request)
    writer.sync()
    path = tmp_path / writer.current_file
    writer.close()
    expected = index_path(path).read_text()
    index_path(path).unlink()  # as if killed before close
    with open(path, "ab") as f:
        f.write(capture(6)[0].data[:-20])  # and torn mid-record
    assert recover_tail(path) > 0
    assert ensure_index(path)
    assert index_path(path).read_text() == expected
    assert not ensure_index(path)  # an existing index is kept


def test_leaving_a_full_file_is_done_off_the_appending_thread(tmp_path: Path, monkeypatch):
    """Issue 17: the fsync and index of a 1 GB file held the crawl's event loop 0.1-0.4 s at
    each rotation. They run on the writer's own thread; sync() waits for them."""
    import threading

    real_fsync = os.fsync
    fsyncs: list[str] = []

    def recording_fsync(fd: int) -> None:
        fsyncs.append(threading.current_thread().name)
        real_fsync(fd)

    monkeypatch.setattr(os, "fsync", recording_fsync)
    with WarcWriter(tmp_path, max_file_bytes=2000, clock=FakeClock()) as writer:
        first = writer.append(page(1, 100)[0])
        writer.append(page(2, 5_000)[0])  # rotates away from the first file
        appended = list(fsyncs)
        writer.sync()
        left = index_path(tmp_path / parse_storage_key(first).file)
        assert left.exists(), "sync() returns once the left file is indexed"
        synced = list(fsyncs)
    assert threading.current_thread().name not in appended
    assert any(name.startswith("warc-leave") for name in synced)
    assert read_record(tmp_path, first).payload == page(1, 100)[1]


def test_a_file_left_unfinished_by_a_crash_is_mended_at_start(tmp_path: Path):
    """A crash while the writer was leaving a file: that file, not the run's last, may lack
    its index (and, after a power loss, have a torn tail). Start-up checks it too."""
    _, keys = write_pages(tmp_path, 40, max_file_bytes=12_000)
    files = warc_files(tmp_path)
    assert len(files) >= 3
    middle = files[1]
    index_path(middle).unlink()
    whole = middle.read_bytes()
    middle.write_bytes(whole + page(99)[0].data[:500])  # a torn member at its end
    assert recover_warc_tails(tmp_path) == 500
    assert middle.read_bytes() == whole
    assert index_path(middle).exists()
    assert index_lines(middle) == index_path(middle).read_text().splitlines()
    for key, body in keys.items():
        assert read_record(tmp_path, key).payload == body

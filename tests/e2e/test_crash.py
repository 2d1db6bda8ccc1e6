"""kill -9 at any moment, rerun with the same --data: nothing committed is lost or torn.

The crawler runs as a subprocess in its own process group and is SIGKILLed (with its worker
processes) at random moments; the test web's request log is the witness for what was
fetched and how politely, and the read-back commands and warcio for what was kept.
"""

from __future__ import annotations

import gzip
import json
import os
import random
import signal
import sqlite3
import subprocess
import sys
import time
from collections import Counter
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from tests.e2e.support import crawl_command
from warcio.archiveiterator import ArchiveIterator

from trawl.cli import main
from trawl.store.warc import parse_storage_key
from trawl.testweb.answers import Responder
from trawl.testweb.politeness import check_politeness
from trawl.testweb.process import TestWebProcess
from trawl.testweb.robots_variants import RobotsVariant

if TYPE_CHECKING:
    from pathlib import Path

    import pytest

# Not pages: robots.txt (and its redirect target), and the sitemap trawl guesses per host.
ROBOTS_PATHS = {"/robots.txt", "/robots-rules.txt", "/sitemap.xml"}
KILLS = 4
KILL_AFTER_S = (1.5, 6.0)
# Pages whose outcome a kill can lose: per site, the request in flight plus at most one that
# ended in the last commit interval (0.5 s; sites are at least 1 s apart), so 2 per site.
REFETCH_PER_SITE_PER_KILL = 2
SITES, PAGES = 12, 8


@dataclass(frozen=True, slots=True)
class KillRun:
    after_s: float
    killed: bool  # False when the crawl had already exited on its own
    requests_before: int
    requests_after: int


def run_and_kill(command: list[str], out_dir: Path, n: int, after_s: float) -> tuple[bool, int]:
    """Start the crawl, SIGKILL its whole process group after `after_s`; (killed, returncode)."""
    with (out_dir / f"run{n}.out").open("wb") as out, (out_dir / f"run{n}.err").open("wb") as err:
        proc = subprocess.Popen(command, stdout=out, stderr=err, start_new_session=True)
        try:
            try:
                proc.wait(after_s)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait(10)
                # The test web logs a request when its answer is written: let one that was
                # in flight at the kill land in this run's share of the log.
                time.sleep(0.2)
                return True, proc.returncode
            return False, proc.returncode
        finally:
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait(10)
            _reap_group(proc.pid)


def _reap_group(pgid: int) -> None:
    # Worker processes are in the killed group too; make sure none outlives the test.
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline:
        try:
            os.killpg(pgid, 0)
        except ProcessLookupError:
            return
        time.sleep(0.05)
    raise AssertionError(f"processes of group {pgid} still alive 5 s after SIGKILL")


def read_lines(args: list[str], capsysbinary: pytest.CaptureFixture[bytes]) -> list[dict[str, Any]]:
    capsysbinary.readouterr()
    assert main(args) == 0
    return [json.loads(line) for line in capsysbinary.readouterr().out.splitlines()]


def read_body(url: str, data: Path, capsysbinary: pytest.CaptureFixture[bytes]) -> bytes:
    capsysbinary.readouterr()
    assert main(["page", url, "--data", str(data), "--body"]) == 0, url
    body: bytes = capsysbinary.readouterr().out
    return body


def host_path(url: str) -> tuple[str, str]:
    parts = urlsplit(url)
    assert parts.hostname is not None
    return parts.hostname, parts.path + (f"?{parts.query}" if parts.query else "")


def warc_response_slices(warc_dir: Path) -> set[tuple[str, int, int]]:
    """(file, offset, length) of every response record, read with digests checked."""
    out = set()
    for path in sorted(warc_dir.glob("*.warc.gz")):
        with path.open("rb") as fh:
            it = ArchiveIterator(fh, check_digests="raise")
            for record in it:
                record.content_stream().read()
                if record.rec_type == "response":
                    out.add((path.name, it.get_record_offset(), it.get_record_length()))
    return out


def check_store(
    web: TestWebProcess, data: Path, capsysbinary: pytest.CaptureFixture[bytes]
) -> dict[str, dict[str, Any]]:
    """Every invariant of the data directory against the test web; returns records by urlHash."""
    expected = web.web.expected_fetches(web.port)
    records = [
        r for r in read_lines(["pages", "--data", str(data)], capsysbinary) if r["kind"] == "page"
    ]
    by_page = Counter(host_path(r["url"]) for r in records)
    assert {p: n for p, n in by_page.items() if n > 1} == {}, "duplicate page records"
    assert set(by_page) - expected == set(), "records of pages a crawl should not fetch"
    assert expected - set(by_page) == set(), "expected pages without a record"
    by_hash = {r["urlHash"]: r for r in records}

    events = read_lines(["events", "--data", str(data)], capsysbinary)
    stored = {h: r for h, r in by_hash.items() if r["storageKey"]}
    assert stored, "no page body was stored"
    event_counts = Counter(e["urlHash"] for e in events)
    assert {h: n for h, n in event_counts.items() if n > 1} == {}, "pages with several events"
    assert set(event_counts) - set(stored) == set(), "events whose page record is missing"
    assert set(stored) - set(event_counts) == set(), "stored pages without an event"
    for e in events:
        assert e["storageKey"] == stored[e["urlHash"]]["storageKey"], e

    slices = warc_response_slices(data / "warc")
    responder = Responder(web.web, web.port)
    for record in stored.values():
        key = parse_storage_key(record["storageKey"])
        assert (key.file, key.offset, key.length) in slices, (
            f"{record['url']}: storageKey {record['storageKey']} is not a whole response record"
        )
        body = read_body(record["url"], data, capsysbinary)
        host, path = host_path(record["url"])
        served = {responder.answer(host, path, gz).body for gz in (False, True)}
        assert body in served, f"{record['url']}: stored body differs from the served page"
    return by_hash


def queue_rows(data: Path) -> set[tuple[str, float]]:
    """(site, leased_until) of every queued URL, read straight from the database."""
    conn = sqlite3.connect(f"file:{data / 'trawl.db'}?mode=ro", uri=True)
    try:
        return {
            (site, leased) for site, leased in conn.execute("SELECT site, leased_until FROM queue")
        }
    finally:
        conn.close()


def test_repeated_kill_9_loses_nothing(
    tmp_path: Path, capsysbinary: pytest.CaptureFixture[bytes]
) -> None:
    seed = int(os.environ.get("TRAWL_CRASH_SEED", random.randrange(1 << 30)))
    rng = random.Random(seed)
    print(f"crash test seed {seed} (rerun with TRAWL_CRASH_SEED={seed})", file=sys.stderr)
    with TestWebProcess(sites=SITES, pages=PAGES, seed=11, workdir=tmp_path / "web") as web:
        data = tmp_path / "data"
        command = crawl_command(web, data)
        runs: list[KillRun] = []
        for n in range(KILLS):
            after_s = rng.uniform(*KILL_AFTER_S)
            before = len(web.requests())
            killed, code = run_and_kill(command, tmp_path, n, after_s)
            if not killed:
                err = (tmp_path / f"run{n}.err").read_text()
                assert code == 0, f"run {n} exited {code} before its kill: {err}"
            runs.append(KillRun(after_s, killed, before, len(web.requests())))
        final = subprocess.run(command, capture_output=True, timeout=150, check=False)
        assert final.returncode == 0, final.stderr.decode()
        web.stop()
        requests = web.requests()

        kills = sum(r.killed for r in runs)
        context = f"seed {seed}, runs {runs}"
        fetched = Counter((r.host, r.path) for r in requests if r.path not in ROBOTS_PATHS)
        expected = web.web.expected_fetches(web.port)
        assert expected - set(fetched) == set(), f"pages never fetched ({context})"
        assert set(fetched) - expected == set(), f"pages a crawl should not fetch ({context})"
        # A page is fetched again only because a kill lost its outcome: never twice in a run.
        bounds = [(r.requests_before, r.requests_after) for r in runs]
        for lo, hi in [*bounds, (runs[-1].requests_after, len(requests))]:
            in_run = Counter(
                (r.host, r.path) for r in requests[lo:hi] if r.path not in ROBOTS_PATHS
            )
            assert {p: n for p, n in in_run.items() if n > 1} == {}, f"refetch in a run ({context})"
        refetches = {page: n - 1 for page, n in fetched.items() if n > 1}
        bound = kills * SITES * REFETCH_PER_SITE_PER_KILL
        assert sum(refetches.values()) <= bound, f"refetched {refetches} ({context})"
        violations = check_politeness(requests, **web.web.politeness_inputs())
        assert violations == [], f"impolite across kills ({context})"

        records = check_store(web, data, capsysbinary)
        # What is left queued waits on a robots.txt that answers 503, and no lease is open.
        blocked = {s.domain for s in web.web.sites if s.robots is RobotsVariant.SERVER_ERROR}
        assert queue_rows(data) <= {(site, 0) for site in blocked}, final.stdout.decode()
        # The command itself reads a body back, in a process of its own.
        url = next(r["url"] for r in records.values() if r["storageKey"])
        body = subprocess.run(
            [sys.executable, "-m", "trawl", "page", url, "--data", str(data), "--body"],
            capture_output=True, check=True, timeout=60,
        ).stdout  # fmt: skip
        assert body.lstrip().lower().startswith(b"<!doctype html"), body[:200]
        print(
            f"kills {kills}, requests {len(requests)}, refetched pages "
            f"{sum(refetches.values())} (bound {bound}), runs {runs}",
            file=sys.stderr,
        )


def test_torn_warc_tail_is_cut_on_startup(
    tmp_path: Path, capsysbinary: pytest.CaptureFixture[bytes]
) -> None:
    with TestWebProcess(sites=2, pages=4, seed=5, workdir=tmp_path / "web") as web:
        data = tmp_path / "data"
        command = crawl_command(web, data)
        first = subprocess.run(command, capture_output=True, timeout=120, check=False)
        assert first.returncode == 0, first.stderr.decode()
        records_before = check_store(web, data, capsysbinary)
        newest = max((data / "warc").glob("*.warc.gz"), key=lambda p: p.stat().st_mtime_ns)
        good_size = newest.stat().st_size
        member = gzip.compress(b"WARC/1.1\r\nWARC-Type: response\r\n" + b"x" * 4000)
        with newest.open("ab") as fh:
            fh.write(member[: len(member) // 2])  # a member cut off mid-write
        torn_size = newest.stat().st_size
        requests_before = len(web.requests())

        second = subprocess.run(command, capture_output=True, timeout=120, check=False)
        assert second.returncode == 0, second.stderr.decode()
        assert newest.stat().st_size == good_size, (
            f"{newest.name}: {torn_size} bytes with a torn tail, {newest.stat().st_size} after "
            f"restart, {good_size} before the tear"
        )
        assert len(web.requests()) == requests_before, "the rerun refetched finished work"
        assert check_store(web, data, capsysbinary) == records_before

        # Garbage that is not gzip at all is cut the same way.
        with newest.open("ab") as fh:
            fh.write(b"\x00garbage after the last record\n" * 10)
        third = subprocess.run(command, capture_output=True, timeout=120, check=False)
        assert third.returncode == 0, third.stderr.decode()
        assert newest.stat().st_size == good_size
        assert check_store(web, data, capsysbinary) == records_before


def test_kill_before_the_first_commit_keeps_the_site_gap(tmp_path: Path) -> None:
    """A kill within a commit interval of a site's first request: the restart still waits."""
    with TestWebProcess(sites=3, pages=1, seed=5, workdir=tmp_path / "web") as web:
        command = [*crawl_command(web, tmp_path / "data")[:-1], "3"]  # --max-time 3
        with (tmp_path / "run.err").open("wb") as err:
            proc = subprocess.Popen(command, stdout=err, stderr=err, start_new_session=True)
            try:
                deadline = time.monotonic() + 30
                while not web.requests() and time.monotonic() < deadline:
                    time.sleep(0.01)
                time.sleep(0.1)  # the first robots.txt requests are done, not yet committed
            finally:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait(10)
        assert web.requests(), "no request before the kill"
        # Restart at once, as a supervisor would (workers are reaped afterwards).
        rerun = subprocess.run(command, capture_output=True, timeout=60, check=False)
        _reap_group(proc.pid)
        assert rerun.returncode == 0, rerun.stderr.decode()
        requests = web.requests()
        violations = check_politeness(requests, **web.web.politeness_inputs())
        assert violations == [], (
            "the restart requested sites again within their gap: a site first requested after "
            "the last commit has no host record, so site_state() gives it no restart gap"
        )

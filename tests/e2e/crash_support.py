"""Shared by the e2e tests (and bench.crash_soak) that kill or signal real trawl processes.

A crawl runs as a subprocess in its own process group, so a signal can go to the whole
group (its forkserver and worker processes included) as systemd or a terminal sends it.
The test web's request log is the witness for what was fetched and how politely; the
read-back commands (run in-process: one interpreter for hundreds of reads) and warcio
for what was kept.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import signal
import sqlite3
import subprocess
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from warcio.archiveiterator import ArchiveIterator

from trawl.cli import main
from trawl.store.warc import parse_storage_key
from trawl.testweb.answers import Responder

if TYPE_CHECKING:
    from collections.abc import Callable

    from trawl.testweb.process import TestWebProcess

# Not pages: robots.txt (and its redirect target), and the sitemap trawl guesses per host.
ROBOTS_PATHS = {"/robots.txt", "/robots-rules.txt", "/sitemap.xml"}


# -- processes ----------------------------------------------------------------------------
def start_in_group(
    command: list[str], out_dir: Path, name: str, env: dict[str, str] | None = None
) -> subprocess.Popen[bytes]:
    """Start `command` as the leader of a new process group (stdout/stderr to files)."""
    with (out_dir / f"{name}.out").open("wb") as out, (out_dir / f"{name}.err").open("wb") as err:
        return subprocess.Popen(command, stdout=out, stderr=err, start_new_session=True, env=env)


def reap_group(pgid: int, timeout_s: float = 5.0) -> None:
    """Wait until no process of group `pgid` is left (worker processes included)."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        try:
            os.killpg(pgid, 0)
        except ProcessLookupError:
            return
        time.sleep(0.05)
    raise AssertionError(f"processes of group {pgid} still alive {timeout_s} s after the end")


def kill_group(proc: subprocess.Popen[bytes]) -> None:
    """SIGKILL the whole group of `proc` and wait for all of it."""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGKILL)
    proc.wait(10)
    reap_group(proc.pid)


@dataclass(frozen=True, slots=True)
class GroupMember:
    pid: int
    ppid: int
    cmdline: str
    ignored: frozenset[int]  # signal numbers this process ignores (SIG_IGN)


def group_members(pgid: int) -> list[GroupMember]:
    """Every live process of group `pgid`, read from /proc."""
    members = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        proc = Path("/proc", entry)
        try:
            stat = (proc / "stat").read_text().rsplit(")", 1)[1].split()
            if int(stat[2]) != pgid:
                continue
            status = (proc / "status").read_text()
            cmdline = (proc / "cmdline").read_text().replace("\0", " ")
        except (FileNotFoundError, ProcessLookupError, IndexError):
            continue  # gone meanwhile
        mask = int(next(x for x in status.splitlines() if x.startswith("SigIgn:")).split()[1], 16)
        ignored = frozenset(n for n in range(1, 65) if mask >> (n - 1) & 1)
        members.append(GroupMember(int(entry), int(stat[1]), cmdline, ignored))
    return members


def has_exited(pid: int) -> bool:
    """Gone, or a zombie its parent has not reaped yet."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] == "Z"
    except (FileNotFoundError, ProcessLookupError):
        return True


def worker_pids(pgid: int) -> list[int]:
    """Page worker processes of the crawl leading group `pgid`: the forkserver's children."""
    members = group_members(pgid)
    forkservers = {m.pid for m in members if "multiprocessing.forkserver" in m.cmdline}
    return [m.pid for m in members if m.ppid in forkservers]


def wait_until(
    what: str, check: Callable[[], bool], timeout_s: float, step_s: float = 0.05
) -> None:
    deadline = time.monotonic() + timeout_s
    while not check():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout_s} s waiting for {what}")
        time.sleep(step_s)


# -- read-back ----------------------------------------------------------------------------
def trawl_output(args: list[str]) -> bytes:
    """What `trawl <args>` writes to stdout, run in this process; it must exit 0."""
    raw = io.BytesIO()
    out = io.TextIOWrapper(raw, encoding="utf-8")  # `page --body` writes to its .buffer
    with contextlib.redirect_stdout(out):
        code = main(args)
        out.flush()
    assert code == 0, f"trawl {' '.join(args)} exited {code}"
    return raw.getvalue()


def read_lines(args: list[str]) -> list[dict[str, Any]]:
    return [json.loads(line) for line in trawl_output(args).splitlines()]


def read_body(url: str, data: Path) -> bytes:
    return trawl_output(["page", url, "--data", str(data), "--body"])


def host_path(url: str) -> tuple[str, str]:
    parts = urlsplit(url)
    assert parts.hostname is not None
    return parts.hostname, parts.path + (f"?{parts.query}" if parts.query else "")


def fetched_pages(web: TestWebProcess) -> Counter[tuple[str, str]]:
    """Page requests the test web answered (robots.txt and sitemaps left out)."""
    requests = web.requests()
    return Counter((r.host, r.path) for r in requests if r.path not in ROBOTS_PATHS)


def warc_response_slices(warc_dir: Path) -> set[tuple[str, int, int]]:
    """(file, offset, length) of every response record; warcio reads every file to its
    end with digests checked, so a torn or invalid file fails here."""
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
    web: TestWebProcess, data: Path, *, complete: bool = True
) -> dict[str, dict[str, Any]]:
    """Every invariant of the data directory against the test web; returns records by urlHash.

    `complete`: the crawl ran to its end, so every page the web's link graph reaches has a
    record. Otherwise (a crawl stopped by a signal) every page the web answered has one:
    nothing fetched was lost to the stop.
    """
    expected = web.web.expected_fetches(web.port)
    records = [r for r in read_lines(["pages", "--data", str(data)]) if r["kind"] == "page"]
    by_page = Counter(host_path(r["url"]) for r in records)
    assert {p: n for p, n in by_page.items() if n > 1} == {}, "duplicate page records"
    assert set(by_page) - expected == set(), "records of pages a crawl should not fetch"
    wanted = expected if complete else set(fetched_pages(web))
    assert wanted - set(by_page) == set(), "fetched pages without a record"
    by_hash = {r["urlHash"]: r for r in records}

    events = read_lines(["events", "--data", str(data)])
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
        body = read_body(record["url"], data)
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


def queued_urls(data: Path) -> int:
    conn = sqlite3.connect(f"file:{data / 'trawl.db'}?mode=ro", uri=True)
    try:
        return int(conn.execute("SELECT count(*) FROM queue").fetchone()[0])
    finally:
        conn.close()

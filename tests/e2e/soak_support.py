"""The crash soak (issue 13): `trawl crawl` SIGKILLed again and again on one data directory.

Shared by tests/e2e/test_crash.py (a few kills) and `python -m bench.crash_soak` (twenty).

Each run is killed (its whole process group, workers included) either at a random moment
or at a moment aimed at, seen from outside by polling the data directory every
`POLL_S` seconds:
- `warc_rotation`: a second WARC file of this run appeared (each run opens one file at
  start; another one is a rotation at `storage.warc_max_file_bytes`);
- `checkpoint`: `seen.tmp` exists (the seen set is being written and fsynced, mid
  checkpoint) or `seen.bloom` was just replaced by it (the rest of the checkpoint, the
  in-link file and the WAL checkpoint, follows);
- `commit`: the SQLite WAL file changed (size or mtime): a commit has just written it.
Each kill records the lag between the poll that saw its moment and the SIGKILL; the moment
itself happened at most one poll interval before that poll. The config overrides make all
three frequent: small WARC files, commits every 0.25 s, checkpoints every 2 s.

The refetch bound. Page outcomes are committed every `commit_interval_s`; a site's
requests start at least `min_delay_s` (1 s) after its previous response ended, which is
longer than a commit interval plus the page's processing. So when a kill comes, a site has
at most one request in flight and at most one ended request whose outcome is not yet
committed: each kill can make at most 2 pages per site be fetched again.
"""

from __future__ import annotations

import os
import random
import signal
import sys
import time
from collections import Counter
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, TextIO

from tests.e2e.crash_support import (
    ROBOTS_PATHS,
    check_store,
    kill_group,
    queue_rows,
    start_in_group,
)
from tests.e2e.support import crawl_command

from trawl.testweb.politeness import check_politeness
from trawl.testweb.process import TestWebProcess
from trawl.testweb.robots_variants import RobotsVariant

if TYPE_CHECKING:
    import subprocess
    from collections.abc import Callable
    from pathlib import Path

    from trawl.testweb.request_log import RequestLogRecord

MOMENTS = ("random", "warc_rotation", "checkpoint", "commit")
POLL_S = 0.001
REFETCH_PER_SITE_PER_KILL = 2  # one request in flight + one outcome not yet committed
LOG_SETTLE_S = 0.2  # the web logs a request when its answer is written


@dataclass(frozen=True, slots=True)
class SoakPlan:
    sites: int
    pages: int
    kills: int
    web_seed: int = 11
    random_kill_s: tuple[float, float] = (1.5, 6.0)  # a random kill, after the run's start
    aim_after_s: float = 1.5  # an aimed kill waits this long, and for the run's first request
    aim_timeout_s: float = 8.0  # then at most this long for its moment, and kills anyway
    warc_max_file_bytes: int = 30_000
    commit_interval_s: float = 0.25
    checkpoint_interval_s: float = 2.0
    final_timeout_s: float = 240.0

    def config_toml(self) -> str:
        return (
            f"[crawl]\ncommit_interval_s = {self.commit_interval_s}\n"
            f"checkpoint_interval_s = {self.checkpoint_interval_s}\n"
            f"[storage]\nwarc_max_file_bytes = {self.warc_max_file_bytes}\n"
            # A smaller seen set than the default 10 M URLs: every checkpoint writes it.
            "[seen]\nexpected_urls = 1000000\n"
        )

    def aims(self, rng: random.Random) -> list[str]:
        """The moment each kill aims at: every kind in turn, in a shuffled order."""
        out: list[str] = []
        while len(out) < self.kills:
            kinds = list(MOMENTS)
            rng.shuffle(kinds)
            out += kinds
        return out[: self.kills]


@dataclass(frozen=True, slots=True)
class Kill:
    n: int
    aimed: str
    hit: str  # the moment seen when the kill went out; "random" when none (or not seen)
    how: str  # what was seen, e.g. "seen.tmp present"
    at_s: float  # after the run's start
    lag_ms: float  # from the poll that saw the moment to the SIGKILL
    killed: bool  # False: the crawl ended on its own first
    requests_before: int
    requests_after: int


@dataclass(slots=True)
class DataDirWatch:
    """The moments of a crawl's data directory that a kill can aim at (see module doc)."""

    data: Path
    warc_at_start: set[str] = field(default_factory=set)
    warc_new: int = 0  # WARC files this run opened so far
    bloom_inode: int = -1
    wal_stamp: tuple[int, int] = (-1, -1)

    def __post_init__(self) -> None:
        self.warc_at_start = set(self._warc_files())
        self.bloom_inode = self._inode(self.data / "seen.bloom")
        self.wal_stamp = self._wal_stamp()

    def _warc_files(self) -> list[str]:
        try:
            return [n for n in os.listdir(self.data / "warc") if n.endswith(".warc.gz")]
        except FileNotFoundError:
            return []

    @staticmethod
    def _inode(path: Path) -> int:
        try:
            return path.stat().st_ino
        except FileNotFoundError:
            return -1

    def _wal_stamp(self) -> tuple[int, int]:
        try:
            st = (self.data / "trawl.db-wal").stat()
        except FileNotFoundError:
            return (-1, -1)
        return (st.st_size, st.st_mtime_ns)

    def seen(self, moment: str) -> str | None:
        """What shows `moment` happening now (or since the last call), else None."""
        if moment == "warc_rotation":
            new = len(set(self._warc_files()) - self.warc_at_start)
            rotated = new > self.warc_new and new >= 2
            self.warc_new = new
            return "new WARC file appeared" if rotated else None
        if moment == "checkpoint":
            if (self.data / "seen.tmp").exists():
                return "seen.tmp present"
            inode = self._inode(self.data / "seen.bloom")
            changed = inode != self.bloom_inode and self.bloom_inode != -1
            self.bloom_inode = inode
            return "seen.bloom just replaced" if changed else None
        if moment == "commit":
            stamp = self._wal_stamp()
            changed = stamp != self.wal_stamp and self.wal_stamp != (-1, -1)
            self.wal_stamp = stamp
            return "WAL just written" if changed else None
        raise ValueError(f"unknown moment {moment!r}")


def run_until_moment(
    proc: subprocess.Popen[bytes],
    watch: DataDirWatch,
    aim: str,
    plan: SoakPlan,
    after_s: float,
    progressed: Callable[[], bool],
) -> tuple[str, str, float, float, bool]:
    """SIGKILL `proc`'s group at the moment aimed at; (hit, how, at_s, lag_ms, killed).

    An aimed kill waits for `after_s` and for `progressed()` (the run has made a request),
    so that every run moves the crawl on; a random one comes `after_s` after the start.
    """
    started = time.monotonic()
    deadline = started + after_s + (0.0 if aim == "random" else plan.aim_timeout_s)
    aiming = False
    while True:
        if proc.poll() is not None:
            return "random", "the crawl ended first", time.monotonic() - started, 0.0, False
        how = None
        if aim != "random":
            how = watch.seen(aim)  # polled from the start, so a change is a fresh one
        seen_at = time.monotonic()
        if not aiming:
            aiming = aim != "random" and seen_at - started >= after_s and progressed()
            how = None
        if how is not None or seen_at >= deadline:
            os.killpg(proc.pid, signal.SIGKILL)
            lag_ms = (time.monotonic() - seen_at) * 1000
            proc.wait(10)
            if how is not None:
                return aim, how, seen_at - started, lag_ms, True
            how = "no aim" if aim == "random" else "not seen"
            return "random", how, seen_at - started, 0.0, True
        time.sleep(POLL_S)


@dataclass(frozen=True, slots=True)
class SoakReport:
    seed: int
    plan: SoakPlan
    kills: list[Kill]
    expected_pages: int
    requests: int
    refetches: int
    refetch_bound: int
    warc_files: int
    wall_s: float
    final_output: str

    def hits(self) -> Counter[str]:
        return Counter(k.hit for k in self.kills if k.killed)

    def lines(self) -> list[str]:
        killed = [k for k in self.kills if k.killed]
        out = [
            f"seed {self.seed}; test web {self.plan.sites} sites x {self.plan.pages} pages "
            f"({self.expected_pages} pages to fetch); WARC files rotate at "
            f"{self.plan.warc_max_file_bytes} bytes, commits every "
            f"{self.plan.commit_interval_s} s, checkpoints every "
            f"{self.plan.checkpoint_interval_s} s",
            f"kills {len(killed)} (of {len(self.kills)} runs; the rest ended on their own)",
        ]
        for moment in MOMENTS:
            ks = [k for k in killed if k.hit == moment]
            if not ks:
                out.append(f"  {moment}: 0 kills")
                continue
            hows = ", ".join(f"{h}: {n}" for h, n in Counter(k.how for k in ks).items())
            if moment == "random":
                out.append(f"  random: {len(ks)} kills ({hows})")
                continue
            out.append(
                f"  {moment}: {len(ks)} kills ({hows}); SIGKILL sent at most"
                f" {max(k.lag_ms for k in ks):.1f} ms after the poll that saw it (polls every"
                f" {POLL_S * 1000:.0f} ms)"
            )
        aimed_missed = sum(1 for k in killed if k.aimed != "random" and k.hit == "random")
        out += [
            f"  aimed but not seen in {self.plan.aim_timeout_s} s (killed anyway): {aimed_missed}",
            f"requests {self.requests}; pages refetched {self.refetches}, bound "
            f"{self.refetch_bound} (= {len(killed)} kills x {self.plan.sites} sites x "
            f"{REFETCH_PER_SITE_PER_KILL})",
            f"WARC files {self.warc_files}, all read end to end by warcio with digests checked",
            "every page fetched, one record and one event per stored page, 0 politeness violations",
            f"wall time {self.wall_s:.1f} s",
        ]
        return out


def run_soak(plan: SoakPlan, tmp: Path, seed: int, log: TextIO = sys.stderr) -> SoakReport:
    """Kill a crawl `plan.kills` times, finish it, and check every invariant (AssertionError
    when one fails); returns the figures."""
    rng = random.Random(seed)
    started = time.monotonic()
    with TestWebProcess(
        sites=plan.sites, pages=plan.pages, seed=plan.web_seed, workdir=tmp / "web"
    ) as web:
        data = tmp / "data"
        config = tmp / "soak.toml"
        config.write_text(plan.config_toml())
        command = [*crawl_command(web, data), "--config", str(config)]
        kills: list[Kill] = []
        for n, aim in enumerate(plan.aims(rng)):
            after_s = rng.uniform(*plan.random_kill_s) if aim == "random" else plan.aim_after_s
            before = len(web.requests())
            watch = DataDirWatch(data)
            log_size = web.log_path.stat().st_size if web.log_path.exists() else 0

            def progressed(since: int = log_size) -> bool:
                return web.log_path.exists() and web.log_path.stat().st_size > since

            proc = start_in_group(command, tmp, f"run{n}")
            try:
                hit, how, at_s, lag_ms, killed = run_until_moment(
                    proc, watch, aim, plan, after_s, progressed
                )
            finally:
                kill_group(proc)
            if not killed:
                err = (tmp / f"run{n}.err").read_text()
                assert proc.returncode == 0, f"run {n} exited {proc.returncode}: {err}"
            time.sleep(LOG_SETTLE_S)
            kill = Kill(n, aim, hit, how, at_s, lag_ms, killed, before, len(web.requests()))
            kills.append(kill)
            log.write(f"  {kill}\n")
            if not killed:
                break
        proc = start_in_group(command, tmp, "final")
        try:
            code = proc.wait(plan.final_timeout_s)
        finally:
            kill_group(proc)
        final_err = (tmp / "final.err").read_text()
        assert code == 0, final_err
        assert "Traceback" not in final_err, final_err
        web.stop()
        return check_soak(
            web, data, kills, plan, seed, (tmp / "final.out").read_text(),
            wall_s=time.monotonic() - started,
        )  # fmt: skip


def check_soak(
    web: TestWebProcess, data: Path, kills: list[Kill], plan: SoakPlan, seed: int, final: str,
    *, wall_s: float,
) -> SoakReport:  # fmt: skip
    """Every invariant of the soak, from the web's request log and the data directory."""
    requests = web.requests()
    context = f"seed {seed} (rerun with TRAWL_CRASH_SEED={seed}), kills {kills}"
    fetched = Counter((r.host, r.path) for r in requests if r.path not in ROBOTS_PATHS)
    expected = web.web.expected_fetches(web.port)
    # No discovered URL lost: every page the link graph reaches from the seeds was fetched.
    assert expected - set(fetched) == set(), f"pages never fetched ({context})"
    assert set(fetched) - expected == set(), f"pages a crawl should not fetch ({context})"
    # A page is fetched again only because a kill lost its outcome: never twice in a run.
    bounds = [(k.requests_before, k.requests_after) for k in kills]
    for lo, hi in [*bounds, (kills[-1].requests_after, len(requests))]:
        twice = _twice(requests[lo:hi])
        assert twice == {}, f"refetch within one run ({context})"
    refetches = sum(n - 1 for n in fetched.values())
    bound = sum(k.killed for k in kills) * plan.sites * REFETCH_PER_SITE_PER_KILL
    assert refetches <= bound, f"refetched {refetches} pages, bound {bound} ({context})"
    violations = check_politeness(requests, **web.web.politeness_inputs())
    assert violations == [], f"impolite across kills: {violations[:5]} ({context})"
    check_store(web, data)
    # What is left queued waits on a robots.txt that answers 503, and no lease is open.
    blocked = {s.domain for s in web.web.sites if s.robots is RobotsVariant.SERVER_ERROR}
    assert queue_rows(data) <= {(site, 0) for site in blocked}, final
    return SoakReport(
        seed=seed,
        plan=plan,
        kills=kills,
        expected_pages=len(expected),
        requests=len(requests),
        refetches=refetches,
        refetch_bound=bound,
        warc_files=len(list((data / "warc").glob("*.warc.gz"))),
        wall_s=wall_s,
        final_output=final,
    )


def _twice(requests: list[RequestLogRecord]) -> dict[tuple[str, str], int]:
    in_run = Counter((r.host, r.path) for r in requests if r.path not in ROBOTS_PATHS)
    return {p: n for p, n in in_run.items() if n > 1}

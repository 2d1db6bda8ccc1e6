"""How fast a cluster moves a node's sites: kill -9 failover, SIGTERM hand-over, and the
Redis load the lease timing costs (issue 19).

    python -m bench.cluster_failover                  # the defaults of [node]
    python -m bench.cluster_failover --old-timing     # issue 7's: leases 30 s, members 15 s

On real servers started here (Redis, PostgreSQL, SeaweedFS S3, nginx serving an 800-site
web), all on 127.0.0.1, with 1,024 partitions:
- hand-over: one node crawls alone (so it holds all 1,024 partitions) for `--crawl` s, then
  gets SIGTERM; measured until Redis shows none of its leases (every partition handed
  over) and until it exits.
- failover: two nodes crawl for `--crawl` s, then one is killed with SIGKILL; measured
  until the survivor holds every partition of the dead one, and, from nginx's log, until
  each of the dead node's sites (those still with pages to fetch) got a request again.
- Redis load: commands per second (INFO commandstats) over 10 s of the two nodes' steady
  crawl, split into lease and member scripts and everything else (link streams, IP slots).
Politeness is checked on the whole nginx log of each run.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path
from statistics import median
from typing import TYPE_CHECKING

import psycopg
import redis
from tests.servers.postgres import temporary_postgres
from tests.servers.redis import temporary_redis
from tests.servers.s3 import S3Server, running_seaweedfs

from bench.runinfo import describe_run
from bench.webfarm.accesslog import NGINX_TOLERANCE_S, read_access_log
from bench.webfarm.generate import WebSpec, generate_web
from bench.webfarm.nginx import Nginx
from trawl.cluster.partitions import partition_of
from trawl.cluster.redis_coord import ClusterKeys
from trawl.testweb.politeness import check_politeness
from trawl.urls.registered_domain import registered_domain

if TYPE_CHECKING:
    from collections.abc import Callable

RESULTS = Path(__file__).resolve().parent / "results"
PARTITIONS = 1024
NODE_CONFIG = "[node]\ncheckpoint_interval_s = 30\n"
OLD_TIMING = (
    "member_ttl_s = 15.0\nlease_ttl_s = 30.0\nmargin_s = 12.0\nrenew_after_s = 6.0\n"
    "retry_s = 1.5\nrequest_timeout_s = 3.0\n"
)
POLL_S = 0.02
# `trawl node`, with the cluster's INFO lines (take-overs, hand-overs) in its log.
NODE_MAIN = (
    "import logging, sys; from trawl.cli import main;"
    " logging.basicConfig(level=logging.WARNING, format='%(asctime)s %(name)s %(message)s');"
    " logging.getLogger('trawl.cluster').setLevel(logging.INFO); sys.exit(main())"
)


class Run:
    """One fresh cluster (Redis key space, PostgreSQL schema, S3 bucket) on shared servers."""

    def __init__(self, spec: WebSpec, redis_url: str, pg_dsn: str, s3: S3Server, tmp: Path,
                 node_config: str) -> None:  # fmt: skip
        self.spec, self.tmp = spec, tmp
        self.name = f"b{uuid.uuid4().hex[:8]}"
        with psycopg.connect(pg_dsn, autocommit=True) as conn:
            conn.execute(f"CREATE SCHEMA {self.name}")
        dsn = f"{pg_dsn} options='-c search_path={self.name}'"
        (tmp / "cluster.toml").write_text(
            f'[cluster]\nname = "{self.name}"\nredis_url = "{redis_url}"\n'
            f'postgres_dsn = "{dsn}"\ns3_endpoint = "{s3.endpoint}"\n'
            f's3_bucket = "{self.name}"\npartitions = {PARTITIONS}\n'
        )
        (tmp / "node.toml").write_text(node_config)
        (tmp / "seeds.txt").write_text("\n".join(spec.seeds) + "\n")
        self.env = {**os.environ, "AWS_ACCESS_KEY_ID": s3.access_key_id,
                    "AWS_SECRET_ACCESS_KEY": s3.secret_access_key}  # fmt: skip
        self.redis = redis.Redis.from_url(redis_url, decode_responses=True)
        self.keys = ClusterKeys(self.name)
        self.procs: dict[str, subprocess.Popen[bytes]] = {}

    def start(self, node_id: str, seeds: bool) -> None:
        tmp = self.tmp
        command = [
            sys.executable, "-c", NODE_MAIN, "node",
            *(["--seeds-file", str(tmp / "seeds.txt")] if seeds else []),
            "--cluster", str(tmp / "cluster.toml"), "--node-id", node_id,
            "--work", str(tmp / node_id), "--hosts-file", str(self.spec.hosts_file),
            "--contact", "https://trawl.invalid/bench", "--config", str(tmp / "node.toml"),
        ]  # fmt: skip
        with (tmp / f"{node_id}.log").open("ab") as log:
            self.procs[node_id] = subprocess.Popen(command, stdout=log, stderr=log, env=self.env)

    def holders(self) -> list[str | None]:
        pipe = self.redis.pipeline(transaction=False)
        for partition in range(PARTITIONS):
            pipe.hget(self.keys.lease(partition), "member")
        return list(pipe.execute())

    def wait_until(self, check: Callable[[], bool], timeout_s: float) -> float | None:
        """Seconds until `check()`, or None after `timeout_s`."""
        started = time.monotonic()
        while time.monotonic() - started < timeout_s:
            if check():
                return time.monotonic() - started
            time.sleep(POLL_S)
        return None

    def commandstats(self) -> dict[str, int]:
        info: dict[str, dict[str, int]] = self.redis.info("commandstats")  # type: ignore[assignment]
        return {name.removeprefix("cmdstat_"): int(v["calls"]) for name, v in info.items()}

    def stop_all(self) -> dict[str, int | None]:
        for proc in self.procs.values():
            if proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
        codes: dict[str, int | None] = {}
        for node_id, proc in self.procs.items():
            try:
                codes[node_id] = proc.wait(timeout=120)
            except subprocess.TimeoutExpired:
                proc.kill()
                codes[node_id] = None
        return codes

    def close(self) -> None:
        self.redis.close()


def politeness(spec: WebSpec, access: Path) -> int:
    records = read_access_log(access)
    return len(check_politeness(records, tolerance_s=NGINX_TOLERANCE_S, **spec.politeness_inputs()))


def hand_over(run: Run, access: Path, crawl_s: float) -> dict[str, object]:
    run.start("n1", seeds=True)
    owns_all = lambda: run.holders().count("n1") == PARTITIONS  # noqa: E731
    if run.wait_until(owns_all, 60) is None:
        raise SystemExit("n1 never held all partitions")
    time.sleep(crawl_s)
    proc = run.procs["n1"]
    sent = time.monotonic()
    proc.send_signal(signal.SIGTERM)
    released = run.wait_until(lambda: "n1" not in run.holders(), 60)
    code = proc.wait(timeout=120)
    exited = time.monotonic() - sent
    log = (run.tmp / "n1.log").read_text(errors="replace")
    return {
        "partitions": PARTITIONS,
        "handover_s": None if released is None else round(released, 2),
        "exit_s": round(exited, 2),
        "exit_code": code,
        "handed_over_lines": log.count("handed over"),
        "violations": politeness(run.spec, access),
    }


def fail_over(run: Run, access: Path, crawl_s: float) -> dict[str, object]:
    run.start("n1", seeds=True)
    run.start("n2", seeds=False)
    both = lambda: set(run.holders()) == {"n1", "n2"}  # noqa: E731
    if run.wait_until(both, 60) is None:
        raise SystemExit("n1 and n2 never shared the partitions")
    time.sleep(max(0.0, crawl_s - 10.0))
    before, t0 = run.commandstats(), time.monotonic()
    time.sleep(10.0)
    after, window_s = run.commandstats(), time.monotonic() - t0
    load = {k: round((after.get(k, 0) - before.get(k, 0)) / window_s, 1) for k in after}
    lost = {p for p, member in enumerate(run.holders()) if member == "n2"}
    killed_wall = time.time()
    run.procs["n2"].kill()

    def survivor_owns_all() -> bool:
        holders = run.holders()
        return all(holders[p] == "n1" for p in lost)

    owned = run.wait_until(survivor_owns_all, 60)
    time.sleep(15.0)
    codes = run.stop_all()
    records = read_access_log(access)
    pages = [r for r in records if not r.path.endswith("/robots.txt")]
    lost_sites = {
        site for site in {registered_domain(s.host) for s in run.spec.sites}
        if partition_of(site, PARTITIONS) in lost
    }  # fmt: skip
    first_after: dict[str, float] = {}
    for r in sorted(records, key=lambda r: r.t_start):
        if r.site in lost_sites and r.t_start > killed_wall and r.site not in first_after:
            first_after[r.site] = r.t_start - killed_wall
    waits = sorted(first_after.values())
    # Sites the dead node was crawling right before it died: they surely had pages left.
    active = {
        r.site
        for r in pages
        if r.site in lost_sites and killed_wall - 5 <= r.t_start <= killed_wall
    }
    active_waits = sorted(first_after[site] for site in active if site in first_after)
    before_kill = [r.t_start for r in pages if r.site in lost_sites and r.t_start <= killed_wall]
    last_before = max(before_kill, default=killed_wall)
    return {
        "killed_at": time.strftime("%H:%M:%S", time.localtime(killed_wall))
        + f"{killed_wall % 1:.3f}"[1:],
        "partitions_lost": len(lost),
        "sites_lost": len(lost_sites),
        "owned_again_s": None if owned is None else round(owned, 2),
        "sites_fetched_again": len(waits),
        "first_request_after_s": spread(waits),
        "active_sites": len(active),
        "active_sites_fetched_again": len(active_waits),
        "active_first_request_after_s": spread(active_waits),
        "dead_node_last_request_before_kill_s": round(killed_wall - last_before, 2),
        "exit_codes": codes,
        "violations": politeness(run.spec, access),
        "redis_calls_per_s_two_nodes": {k: v for k, v in sorted(load.items()) if v},
    }


def spread(values: list[float]) -> dict[str, float | None]:
    """min, p50, p90 and max of sorted `values`, in seconds to 0.01."""
    if not values:
        return {"min": None, "p50": None, "p90": None, "max": None}
    p90 = values[min(len(values) - 1, int(len(values) * 0.9))]
    return {"min": round(values[0], 2), "p50": round(median(values), 2), "p90": round(p90, 2),
            "max": round(values[-1], 2)}  # fmt: skip


def run_phase(phase: str, spec: WebSpec, web: Path, servers: tuple[str, str, S3Server],
              node_config: str, crawl_s: float) -> dict[str, object]:  # fmt: skip
    redis_url, pg_dsn, s3 = servers
    with tempfile.TemporaryDirectory(prefix=f"bench-{phase}-") as tmp_name:
        tmp = Path(tmp_name)
        access = tmp / "access.jsonl"
        run = Run(spec, redis_url, pg_dsn, s3, tmp, node_config)
        try:
            with Nginx(web, spec, access_log=access):
                try:
                    return (hand_over if phase == "handover" else fail_over)(run, access, crawl_s)
                finally:
                    run.stop_all()
        finally:
            run.close()
            for node_id in run.procs:
                (RESULTS / f"cluster-{phase}-{node_id}.log").write_bytes(
                    (tmp / f"{node_id}.log").read_bytes()
                )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--crawl", type=float, default=25.0, help="seconds of crawl first")
    parser.add_argument("--old-timing", action="store_true", help="issue 7's lease timing")
    parser.add_argument("--phases", nargs="+", default=["handover", "failover"])
    parser.add_argument("--sites", type=int, default=800, help="sites of the web (30 pages each)")
    parser.add_argument("--web", type=Path, default=None, help="where the web is generated")
    args = parser.parse_args()
    web = args.web or Path(f"/tmp/trawl-bench-web-failover-{args.sites}")
    spec = generate_web(web, n_sites=args.sites, pages_per_site=30)
    node_config = NODE_CONFIG + (OLD_TIMING if args.old_timing else "")
    RESULTS.mkdir(exist_ok=True)
    out: dict[str, object] = {}
    with contextlib.ExitStack() as stack:
        tmp = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="bench-servers-")))
        redis_server = stack.enter_context(temporary_redis(False))
        pg = stack.enter_context(temporary_postgres())
        s3 = stack.enter_context(running_seaweedfs(tmp))
        servers = (redis_server.url, pg.dsn, s3)
        for phase in args.phases:
            out[phase] = run_phase(phase, spec, web, servers, node_config, args.crawl)
            print(json.dumps({phase: out[phase]}), flush=True)
    meta = {
        **describe_run(),
        "command": " ".join(["python -m bench.cluster_failover", *sys.argv[1:]]),
    }
    timing = "old" if args.old_timing else "default"
    (RESULTS / f"cluster-failover-{timing}-{args.sites}.json").write_text(
        json.dumps({"meta": meta, **out}, indent=1)
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())

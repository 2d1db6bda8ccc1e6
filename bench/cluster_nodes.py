"""Pages/s of 1, 2 and 3 `trawl node` processes on one machine, on the same synthetic web.

    python -m bench.cluster_nodes            # 800 sites x 12 pages, 40 s per run
    python -m bench.cluster_nodes --time 60

Besides the rate, each run reports what a page costs the shared services (issue 19's
capacity plan): Redis commands per page (INFO's total_commands_processed), PostgreSQL
transactions and rows written per page (pg_stat_database), the nodes' CPU per page
(their processes and workers, from getrusage) and the whole machine's busy CPU per page
(/proc/stat: nginx and the servers included).

Each run gets a fresh cluster (its own Redis key space, PostgreSQL schema and S3 bucket on
servers started once, all on 127.0.0.1) and a fresh nginx access log, the witness for the
rate and for politeness. The ratio column compares each run with the 1-node run measured
in the same invocation. On a 2-core machine the nodes share two cores with nginx, Redis,
PostgreSQL and SeaweedFS, so this measures CPU contention more than scale-out.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import resource
import signal
import subprocess
import sys
import tempfile
import time
import uuid
from collections import Counter
from pathlib import Path

import psycopg
import redis
from tests.servers.postgres import temporary_postgres
from tests.servers.redis import temporary_redis
from tests.servers.s3 import S3Server, running_seaweedfs

from bench.runinfo import describe_run
from bench.speed import ROBOTS, steady_rate
from bench.webfarm.accesslog import NGINX_TOLERANCE_S, read_access_log
from bench.webfarm.generate import WebSpec, generate_web
from bench.webfarm.nginx import Nginx
from trawl.testweb.politeness import check_politeness

RESULTS = Path(__file__).resolve().parent / "results"
NODE_CONFIG = "[node]\ncheckpoint_interval_s = 30\n"


def _redis_commands(url: str) -> dict[str, int]:
    """Commands processed so far, by command (scripts' own calls included), and in all."""
    client = redis.Redis.from_url(url)
    try:
        stats: dict[str, object] = client.info("stats")  # type: ignore[assignment]
        by: dict[str, dict[str, object]] = client.info("commandstats")  # type: ignore[assignment]
    finally:
        client.close()
    counts = {name.removeprefix("cmdstat_"): int(str(v["calls"])) for name, v in by.items()}
    counts["total"] = int(str(stats["total_commands_processed"]))
    return counts


def _pg_writes(dsn: str) -> tuple[int, int]:
    """(transactions committed, rows inserted + updated + deleted) in the bench database."""
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute("SELECT pg_stat_force_next_flush()")
        row = conn.execute(
            "SELECT xact_commit, tup_inserted + tup_updated + tup_deleted FROM pg_stat_database"
            " WHERE datname = current_database()"
        ).fetchone()
    assert row is not None
    return int(row[0]), int(row[1])


def _machine_busy_s() -> float:
    """CPU-seconds every core spent busy since boot (all processes)."""
    fields = [int(x) for x in Path("/proc/stat").read_text().split("\n")[0].split()[1:]]
    idle = fields[3] + fields[4]  # idle, iowait
    return (sum(fields[:8]) - idle) / os.sysconf("SC_CLK_TCK")


def _children_cpu_s() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def run_nodes(
    n: int, spec: WebSpec, root: Path, redis_url: str, pg_dsn: str, s3: S3Server, seconds: float
) -> dict[str, object]:
    name = f"b{uuid.uuid4().hex[:8]}"
    commands_before, (xacts_before, rows_before) = _redis_commands(redis_url), _pg_writes(pg_dsn)
    busy_before, nodes_before = _machine_busy_s(), _children_cpu_s()
    with psycopg.connect(pg_dsn, autocommit=True) as conn:
        conn.execute(f"CREATE SCHEMA {name}")
    dsn = f"{pg_dsn} options='-c search_path={name}'"
    with tempfile.TemporaryDirectory(prefix=f"bench-nodes{n}-") as tmp:
        work = Path(tmp)
        (work / "cluster.toml").write_text(
            f'[cluster]\nname = "{name}"\nredis_url = "{redis_url}"\npostgres_dsn = "{dsn}"\n'
            f's3_endpoint = "{s3.endpoint}"\ns3_bucket = "{name}"\npartitions = 1024\n'
        )
        (work / "node.toml").write_text(NODE_CONFIG)
        (work / "seeds.txt").write_text("\n".join(spec.seeds) + "\n")
        env = {**os.environ, "AWS_ACCESS_KEY_ID": s3.access_key_id,
               "AWS_SECRET_ACCESS_KEY": s3.secret_access_key}  # fmt: skip
        access = work / "access.jsonl"
        with Nginx(root, spec, access_log=access):
            procs = []
            for i in range(n):
                seeds = ["--seeds-file", str(work / "seeds.txt")] if i == 0 else []
                command = [
                    sys.executable, "-m", "trawl", "node", *seeds,
                    "--cluster", str(work / "cluster.toml"), "--node-id", f"n{i + 1}",
                    "--work", str(work / f"n{i + 1}"), "--hosts-file", str(spec.hosts_file),
                    "--contact", "https://trawl.invalid/bench", "--config", str(work / "node.toml"),
                ]  # fmt: skip
                log = (work / f"n{i + 1}.log").open("ab")
                procs.append(subprocess.Popen(command, stdout=log, stderr=log, env=env))
                log.close()
            time.sleep(seconds)
            for proc in procs:
                proc.send_signal(signal.SIGTERM)
            codes = [proc.wait(timeout=120) for proc in procs]
        records = read_access_log(access)
        for i in range(n):
            (RESULTS / f"cluster-n{n}-node{i + 1}.log").write_bytes(
                (work / f"n{i + 1}.log").read_bytes()
            )
    busy, nodes_cpu = _machine_busy_s() - busy_before, _children_cpu_s() - nodes_before
    after = _redis_commands(redis_url)
    by_command = {k: v - commands_before.get(k, 0) for k, v in after.items()}
    commands = by_command.pop("total")
    top = sorted(by_command.items(), key=lambda kv: -kv[1])[:8]
    xacts, rows = (
        after - before
        for after, before in zip(_pg_writes(pg_dsn), (xacts_before, rows_before), strict=True)
    )
    pages = [r for r in records if r.path not in ROBOTS]
    violations = check_politeness(
        records, tolerance_s=NGINX_TOLERANCE_S, **spec.politeness_inputs()
    )
    with psycopg.connect(pg_dsn, autocommit=True) as conn:
        stored = conn.execute(f"SELECT count(*) FROM {name}.pages").fetchone()
    return {
        "nodes": n,
        "exit_codes": codes,
        "pages_logged": len(pages),
        "pages_stored": int(stored[0]) if stored else 0,
        "steady_pages_per_s": round(steady_rate([r.t_start for r in pages], 10.0), 1),
        "redis_commands_per_page": round(commands / max(len(pages), 1), 1),
        "redis_top_per_page": {k: round(v / max(len(pages), 1), 2) for k, v in top},
        "pg_transactions_per_page": round(xacts / max(len(pages), 1), 3),
        "pg_rows_written_per_page": round(rows / max(len(pages), 1), 2),
        "node_cpu_ms_per_page": round(nodes_cpu * 1e3 / max(len(pages), 1), 2),
        "machine_cpu_ms_per_page": round(busy * 1e3 / max(len(pages), 1), 2),
        "violations": len(violations),
        "violation_kinds": dict(Counter(str(v.kind) for v in violations)),
        "violation_examples": [f"{v.kind} {v.subject}: {v.detail}" for v in violations[:5]],
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--time", type=float, default=40.0, help="seconds per run")
    parser.add_argument("--nodes", type=int, nargs="+", default=[1, 2, 3])
    parser.add_argument("--web", type=Path, default=Path("/tmp/trawl-bench-web-cluster"))
    args = parser.parse_args()
    spec = generate_web(args.web, n_sites=800, pages_per_site=12)
    RESULTS.mkdir(exist_ok=True)
    runs = []
    with contextlib.ExitStack() as stack:
        tmp = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="bench-servers-")))
        redis = stack.enter_context(temporary_redis(False))
        pg = stack.enter_context(temporary_postgres())
        s3 = stack.enter_context(running_seaweedfs(tmp))
        for n in args.nodes:
            runs.append(run_nodes(n, spec, args.web, redis.url, pg.dsn, s3, args.time))
            print(json.dumps(runs[-1]), flush=True)
    base = float(str(runs[0]["steady_pages_per_s"])) or 1.0
    print(
        "| nodes | steady pages/s | vs 1 node | pages logged | stored | violations"
        " | Redis cmds/page | PG xacts/page | PG rows/page | node CPU ms/page"
        " | machine CPU ms/page |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for r in runs:
        rate = float(str(r["steady_pages_per_s"]))
        print(f"| {r['nodes']} | {rate} | {rate / base:.2f}x | {r['pages_logged']} |"
              f" {r['pages_stored']} | {r['violations']} | {r['redis_commands_per_page']} |"
              f" {r['pg_transactions_per_page']} | {r['pg_rows_written_per_page']} |"
              f" {r['node_cpu_ms_per_page']} | {r['machine_cpu_ms_per_page']} |")  # fmt: skip
    meta = {**describe_run(), "command": " ".join(["python -m bench.cluster_nodes", *sys.argv[1:]])}
    (RESULTS / "cluster-nodes.json").write_text(json.dumps({"meta": meta, "runs": runs}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())

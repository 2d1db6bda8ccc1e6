"""Microseconds to make room in the keep-alive pool at its cap: this tree against a base.

Run: python -m bench.pool_bench [--base /tmp/base/src] [--hosts 2205] [--cap 2000]

At the cap (fetch.max_connections, 2,000), a fetch to a host without an idle connection
closes the least recently used idle one (`ConnectionPool.oldest`) and later idles its own
(`put`). On the full bench web 2,205 hosts outnumber the cap, so that pair runs for a good
share of fetches; here `--hosts` hosts are fetched round robin under a cap of `--cap`.
Each tree runs in a child process of its own (both import `trawl`), the rounds alternate
between them, and the median µs per `oldest()` + `put()` is printed.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
from pathlib import Path

from bench.runinfo import compared_trees, describe_run

_CHILD = """
import sys, time
from trawl.fetch.pool import ConnectionPool

class Conn:
    __slots__ = ("key", "idle_since")
    def __init__(self, key):
        self.key, self.idle_since = key, 0.0

hosts, cap, calls = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
keys = [("http", f"site{i}.test", 80, "127.0.0.1") for i in range(hosts)]
pool = ConnectionPool(cap, 15.0)
now = 0.0
for key in keys[:cap]:
    now += 0.001
    pool.put(Conn(key), now)
started = time.perf_counter()
for i in range(calls):  # round robin over more hosts than the cap: each needs room
    pool.oldest()
    now += 0.001
    pool.put(Conn(keys[(cap + i) % hosts]), now)
print((time.perf_counter() - started) / calls * 1e6)
"""


def _run(src: Path, hosts: int, cap: int, calls: int) -> float:
    env = {**os.environ, "PYTHONPATH": str(src)}
    out = subprocess.run(
        [sys.executable, "-c", _CHILD, str(hosts), str(cap), str(calls)],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    return float(out.stdout)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--base", type=Path, help="a base checkout's src/ to compare with")
    parser.add_argument("--hosts", type=int, default=2205, help="hosts fetched in turn")
    parser.add_argument("--cap", type=int, default=2000, help="fetch.max_connections")
    parser.add_argument("--calls", type=int, default=5000)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    trees = compared_trees(args.base)
    times: dict[str, list[float]] = {name: [] for name in trees}
    for _ in range(args.rounds):
        for name, src in trees.items():
            times[name].append(_run(src, args.hosts, args.cap, args.calls))
    print(describe_run())
    for name, values in times.items():
        median = statistics.median(values)
        print(f"{name}: {median:.2f} µs per oldest() + put(), {args.hosts} hosts, cap {args.cap}")


if __name__ == "__main__":
    main()

"""Run `trawl demo` and report its pages/s and peak memory (trawl's processes only).

    python bench/demo_footprint.py [--sites 60] [--pages 20]

Samples /proc every 0.1 s for the demo's process tree; the test web server (a child of the
demo) is reported apart from trawl's own processes (the crawler and its worker processes).
"""

from __future__ import annotations

import argparse
import contextlib
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

PAGE_KB = os.sysconf("SC_PAGE_SIZE") // 1024


def children(pid: int) -> list[int]:
    out: list[int] = []
    for task in Path(f"/proc/{pid}/task").glob("*"):
        with contextlib.suppress(OSError):
            out += [int(c) for c in (task / "children").read_text().split()]
    return out


def tree(pid: int) -> list[int]:
    pids, todo = [], [pid]
    while todo:
        p = todo.pop()
        pids.append(p)
        todo += children(p)
    return pids


def rss_kb(pid: int) -> int:
    try:
        return int(Path(f"/proc/{pid}/statm").read_text().split()[1]) * PAGE_KB
    except (OSError, IndexError, ValueError):
        return 0


def is_testweb(pid: int) -> bool:
    try:
        return b"trawl.testweb" in Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return False


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sites", type=int, default=60)
    parser.add_argument("--pages", type=int, default=20)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        cmd = [
            sys.executable, "-m", "trawl", "demo", "--data", f"{tmp}/data",
            "--sites", str(args.sites), "--pages", str(args.pages),
        ]  # fmt: skip
        started = time.monotonic()
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        peak_trawl = peak_web = 0
        while proc.poll() is None:
            pids = tree(proc.pid)
            peak_trawl = max(peak_trawl, sum(rss_kb(p) for p in pids if not is_testweb(p)))
            peak_web = max(peak_web, sum(rss_kb(p) for p in pids if is_testweb(p)))
            time.sleep(0.1)
        out = proc.stdout.read() if proc.stdout else ""
        wall = time.monotonic() - started
    print(out.strip())
    match = re.search(r"([\d.]+) pages/s", out)
    print(f"\ncommand: {' '.join(cmd)}")
    print(f"wall time {wall:.1f}s; crawl rate {match.group(1) if match else '?'} pages/s")
    print(f"peak RSS, trawl (crawler + workers): {peak_trawl / 1024:.1f} MiB")
    print(f"peak RSS, test web server: {peak_web / 1024:.1f} MiB")
    return proc.returncode or 0


if __name__ == "__main__":
    sys.exit(main())

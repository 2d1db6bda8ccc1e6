"""How long a checkpoint of the in-link counter holds up the crawl loop's thread.

Run: python -m bench.checkpoint_stall [--base /tmp/base/src] [--rounds 5]

The minute's checkpoint saves the in-link counter (~28 MB at its default width) on a
thread beside the crawl loop. What it does while holding the GIL stalls the loop. Each tree
runs in a child process of its own: a thread saves a default-sized counter to a file while
the main thread sleeps 1 ms at a time, and the longest gap between two of its wake-ups is
taken (median over `--rounds` saves).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from pathlib import Path

from bench.runinfo import compared_trees, describe_run

_CHILD = """
import os, statistics, sys, tempfile, threading, time
from trawl.frontier.inlinks import InLinkCounter

counter, rounds = InLinkCounter(), int(sys.argv[1])
fd, path = tempfile.mkstemp()
os.close(fd)

def save():
    with open(path, "wb") as out:
        if hasattr(counter, "write_to"):
            counter.write_to(out)
        else:  # before: the whole checkpoint built in memory first
            out.write(counter.to_bytes())

gaps = []
for _ in range(rounds):
    saver = threading.Thread(target=save)
    worst, last = 0.0, time.perf_counter()
    saver.start()
    while saver.is_alive():
        time.sleep(0.001)
        now = time.perf_counter()
        worst, last = max(worst, now - last), now
    gaps.append(worst * 1000)
os.remove(path)
print(counter.size_bytes, statistics.median(gaps))
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--base", type=Path, help="a base checkout's src/ to compare with")
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    trees = compared_trees(args.base)
    print(describe_run())
    for name, src in trees.items():
        out = subprocess.run(
            [sys.executable, "-c", _CHILD, str(args.rounds)],
            env={**os.environ, "PYTHONPATH": str(src)},
            capture_output=True,
            text=True,
            check=True,
        ).stdout.split()
        size, gap = int(out[0]), float(out[1])
        print(f"{name}: a {size:,}-byte counter saved; the loop thread's worst gap {gap:.1f} ms")


if __name__ == "__main__":
    main()

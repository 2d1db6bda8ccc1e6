"""How long work on a thread beside the crawl loop holds up the loop's thread.

Run: python -m bench.checkpoint_stall [--part inlinks|cdxj] [--base /tmp/base/src] [--rounds 5]

`--part inlinks` (the default): the minute's checkpoint saves the in-link counter (~28 MB at
its default width) on a thread. `--part cdxj`: a full WARC file's CDXJ index (42,000 lines
like the bench web's) is sorted and written on the WARC writer's thread at a rotation. What
that thread does while holding the GIL stalls the loop. Each tree runs in a child process
of its own, the work on a thread while the main thread either sleeps 1 ms at a time
(`--main sleep`, the default) or runs SQLite statements back to back (`--main sqlite`: like
the crawl loop, it lets go of the GIL at every statement and must win it back), and the
longest gap between two of its steps is taken (median over `--rounds`).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from pathlib import Path

from bench.runinfo import compared_trees, describe_run

_INLINKS = """
from trawl.frontier.inlinks import InLinkCounter

counter = InLinkCounter()
size = counter.size_bytes

def save():
    with open(path, "wb") as out:
        if hasattr(counter, "write_to"):
            counter.write_to(out)
        else:  # before: the whole checkpoint built in memory first
            out.write(counter.to_bytes())
"""

_CDXJ = """
import random
from pathlib import Path
from trawl.store.cdxj import CdxEntry, cdx_line, surt_key, write_index

rng = random.Random(1)
lines = []
for _ in range(42_000):
    url = (f"http://site{rng.randrange(2000):04d}.test/section/{rng.randrange(10**6)}"
           f"/article-{rng.randrange(10**6)}.html")
    entry = CdxEntry(surt_key(url), "20261205163000", url, "text/html", "200", "A" * 32)
    lines.append(cdx_line(entry, offset=rng.randrange(10**9), length=25_000,
                          filename="trawl-20261205T163000Z-00001-abcdef.warc.gz"))
size = sum(map(len, lines))

def save():
    write_index(Path(path), lines)
"""

_MEASURE = """
import os, sqlite3, statistics, sys, tempfile, threading, time

rounds, main_mode = int(sys.argv[1]), sys.argv[2]
fd, path = tempfile.mkstemp()
os.close(fd)
exec(sys.argv[3])
conn = sqlite3.connect(":memory:")
conn.execute("CREATE TABLE t(k INTEGER PRIMARY KEY, v TEXT)")

def step(i):
    if main_mode == "sleep":
        time.sleep(0.001)
    else:  # each statement lets go of the GIL and wins it back, as the crawl loop's do
        conn.execute("INSERT OR REPLACE INTO t VALUES (?, ?)", (i % 1000, "x"))

gaps = []
for _ in range(rounds):
    saver = threading.Thread(target=save)
    worst, last, i = 0.0, time.perf_counter(), 0
    saver.start()
    while saver.is_alive():
        step(i)
        i += 1
        now = time.perf_counter()
        worst, last = max(worst, now - last), now
    gaps.append(worst * 1000)
os.remove(path)
print(size, statistics.median(gaps))
"""

_PARTS = {"inlinks": (_INLINKS, "counter"), "cdxj": (_CDXJ, "CDXJ index")}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--base", type=Path, help="a base checkout's src/ to compare with")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--part", choices=sorted(_PARTS), default="inlinks")
    parser.add_argument("--main", choices=("sleep", "sqlite"), default="sleep")
    args = parser.parse_args()
    setup, what = _PARTS[args.part]
    trees = compared_trees(args.base)
    print(describe_run())
    for name, src in trees.items():
        out = subprocess.run(
            [sys.executable, "-c", _MEASURE, str(args.rounds), args.main, setup],
            env={**os.environ, "PYTHONPATH": str(src)},
            capture_output=True,
            text=True,
            check=True,
        ).stdout.split()
        size, gap = int(out[0]), float(out[1])
        print(f"{name}: a {size:,}-byte {what} saved; the loop thread's worst gap {gap:.1f} ms")


if __name__ == "__main__":
    main()

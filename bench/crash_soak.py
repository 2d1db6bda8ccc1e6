"""The crash soak of issue 13: `trawl crawl` SIGKILLed twenty times on one data directory.

    python -m bench.crash_soak                 # 20 kills, 12 sites x 40 pages
    python -m bench.crash_soak --kills 8 --seed 7

Kills come at random moments and, in turn, aimed at a WARC rotation, a checkpoint and a
commit, seen from outside by polling the data directory (tests/e2e/soak_support.py says
how, and derives the refetch bound). After the last kill the crawl runs to its end; then
every invariant is checked: every page fetched, no stored page or discovered URL lost, one
record and one event per stored page, every WARC file read end to end by warcio, zero
politeness violations in the test web's request log, refetches within the bound. A failed
invariant ends the run with its AssertionError. tests/e2e/test_crash.py runs the same soak
with four kills.
"""

from __future__ import annotations

import argparse
import random
import sys
import tempfile
from pathlib import Path

from tests.e2e.soak_support import SoakPlan, run_soak

from bench.runinfo import describe_run


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.crash_soak")
    parser.add_argument("--kills", type=int, default=20)
    parser.add_argument("--sites", type=int, default=12)
    parser.add_argument("--pages", type=int, default=40)
    parser.add_argument("--seed", type=int, default=None, help="kill schedule seed")
    args = parser.parse_args(argv)
    seed = args.seed if args.seed is not None else random.randrange(1 << 30)
    plan = SoakPlan(sites=args.sites, pages=args.pages, kills=args.kills)
    with tempfile.TemporaryDirectory(prefix="crash-soak-") as tmp:
        report = run_soak(plan, Path(tmp), seed)
    for key, value in describe_run().items():
        print(f"{key}: {value}")
    print("\n".join(report.lines()))
    return 0


if __name__ == "__main__":
    sys.exit(main())

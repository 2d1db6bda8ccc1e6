"""The crawl process's garbage collections during a `bench.speed` crawl (issue 17).

    python -m bench.gc_pauses [--quick] [--max-time 90] [--src <checkout>/src]

Runs `python -m bench.speed --skip-scrapy` with a probe (bench/gc_probe/sitecustomize.py)
in the crawl process, then prints per generation: how many collections, their total and
longest time, and the most objects generation 0 held at a collection's start; and the
cycles that freezing kept (collected at exit after unfreezing). `--src` runs another
checkout's code under the same harness, for before/after pairs. Loopback only, like
bench.speed.
"""

from __future__ import annotations

import argparse
import json

from bench.probed_speed import add_crawl_options, probe_lines


def summarise(lines: list[str]) -> list[str]:
    out = []
    for line in lines:
        rec = json.loads(line)
        for gen in (0, 1, 2):
            runs = [c for c in rec["collections"] if c[0] == gen]
            if not runs:
                continue
            ms = [c[2] for c in runs]
            most = max(c[1] for c in runs)
            objs = f", generation 0 at most {most:,} objects" if gen < 2 else ""
            out.append(
                f"gen{gen}: {len(runs)} collections, {sum(ms):.0f} ms in all, "
                f"longest {max(ms):.1f} ms{objs}"
            )
        out.append(f"at exit: {rec['frozen_at_exit']:,} frozen, {rec['found_at_exit']} unreachable")
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_crawl_options(parser, max_time=90.0)
    args = parser.parse_args()
    for line in summarise(probe_lines("gc_probe", "GC_PAUSES_OUT", args)):
        print(line)


if __name__ == "__main__":
    main()

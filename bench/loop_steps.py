"""How long the crawl loop stands still in each of its longer steps (issue 17: lag p99 < 50 ms).

    python -m bench.loop_steps [--quick] [--max-time 90] [--src <checkout>/src]
                               [--steps module:Class.method,...]

Runs `python -m bench.speed --skip-scrapy` with a probe (bench/step_probe/sitecustomize.py)
in the crawl process that times each call of the named steps on the crawl loop's thread:
wall time (the loop stood still that long) and the thread's CPU time in it (the rest it
waited: a write the kernel held back, a lock, the GIL, or another process on its core).
Prints, per step, calls, the wall time's p50/p99/max and total, the CPU share, and how many
calls took more than 40 and 50 ms. The lag watch ticks every 20 ms, so a step of 50 ms or
more shows in the lag's p99 once such steps fill 1 % of the crawl's time between them.
Loopback only, like bench.speed.
"""

from __future__ import annotations

import argparse
import json

from bench.probed_speed import add_crawl_options, probe_lines

STEPS = (
    "trawl.loop.durability:Durability.commit",
    "trawl.loop.durability:Durability._commit_written",
    "trawl.frontier.scope_book:ScopeBook.flush",
    "trawl.politeness.site_book:SiteBook.write_changed",
    "trawl.frontier.intake:Intake.flush_rescores",
    "trawl.store.records_sqlite:SqliteRecords.commit",
    "trawl.store.wal_checkpoints:WalCheckpoints.after_commit",
    "trawl.store.wal_checkpoints:WalCheckpoints.start",
    "trawl.store.records_sqlite:SqliteRecords.put_page",
    "trawl.store.warc:WarcWriter.append",
    "trawl.frontier.intake:Intake.add_page_links",
)


def _quantile(values: list[float], q: float) -> float:
    return values[min(len(values) - 1, int(q * len(values)))]


def summarise(calls: dict[str, list[list[float]]], seconds: float) -> list[str]:
    out = [
        f"{'step':<58} {'calls':>7} {'p50 ms':>7} {'p99 ms':>7} {'max ms':>7}"
        f" {'wall s':>7} {'CPU %':>6} {'>40':>4} {'>50':>4}"
    ]
    for name, timed in calls.items():
        if not timed:
            continue  # not called, or not in the sources run
        wall = sorted(w for w, _ in timed)
        total_wall = sum(wall)
        total_cpu = sum(c for _, c in timed)
        out.append(
            f"{name:<58} {len(wall):>7} {_quantile(wall, 0.5):>7.2f} {_quantile(wall, 0.99):>7.2f}"
            f" {wall[-1]:>7.1f} {total_wall / 1000:>7.2f}"
            f" {100 * total_cpu / max(total_wall, 1e-9):>6.0f}"
            f" {sum(w > 40 for w in wall):>4} {sum(w > 50 for w in wall):>4}"
        )
    out.append(f"(a crawl of {seconds:.0f} s)")
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_crawl_options(parser, max_time=90.0)
    parser.add_argument("--steps", default=",".join(STEPS))
    args = parser.parse_args()
    for line in probe_lines("step_probe", "LOOP_STEPS_OUT", args, {"LOOP_STEPS": args.steps}):
        print("\n".join(summarise(json.loads(line)["calls"], args.max_time)))


if __name__ == "__main__":
    main()

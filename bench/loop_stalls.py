"""Where the crawl loop stalls during a `bench.speed` crawl (issue 17: lag p99 < 50 ms).

    python -m bench.loop_stalls [--quick] [--max-time 90] [--stall-ms 40] [--src <checkout>/src]

Runs `python -m bench.speed --skip-scrapy` with a probe (bench/stall_probe/sitecustomize.py)
in the crawl process: whenever the lag watch's tick is more than `--stall-ms` overdue, a
thread samples every thread's stack every 5 ms. Prints how many stalls there were and how
long; how much of their wall time the main thread spent on CPU (the rest it was preempted or
waited on a lock or the GIL); and where the main thread was, by its innermost frame and by
trawl's own frames, and for the longest stalls the main thread's commonest stacks in each.
Loopback only, like bench.speed.

The probe is active in a `trawl serve` process too, so the API bench's crawl can be probed
the same way (its output is read with `summarise` below):

    PYTHONPATH=bench/stall_probe:src:. LOOP_STALLS_OUT=/tmp/stalls.jsonl LOOP_STALLS_MS=100 \
        python -m bench.api_latency
"""

from __future__ import annotations

import argparse
import json
from collections import Counter

from bench.probed_speed import add_crawl_options, probe_lines

# Other threads' innermost frames that mean they were idle (an executor thread waiting for
# work, the process pool's manager in select): left out of their list.
IDLE = ("_worker (thread.py:", "wait (threading.py:", "select (selectors.py:")


def summarise(record: dict[str, list[list[object]]], top: int = 15) -> list[str]:
    stalls = record["stalls"]
    out = [f"{len(stalls)} stalls"]
    if stalls:
        overdue = sorted(float(str(s[1])) for s in stalls)
        wall = sum(float(str(s[3])) for s in stalls)
        main_cpu = sum(float(str(s[4])) for s in stalls)
        process_cpu = sum(float(str(s[5])) for s in stalls)
        out[0] += (
            f": overdue median {overdue[len(overdue) // 2]:.0f} ms, worst {overdue[-1]:.0f} ms;"
            f" {wall:.0f} ms of wall time, the main thread on CPU {main_cpu:.0f} ms"
            f" ({100 * main_cpu / wall:.0f} %), the whole process {process_cpu:.0f} ms"
        )
    inner: Counter[str] = Counter()
    ours: Counter[str] = Counter()
    for where, n in record["samples"]:
        first, _, trawl = str(where).partition(" | ")
        inner[first] += int(str(n))
        ours[trawl.split(" < ")[0] if trawl else "(no trawl frame)"] += int(str(n))
    total = sum(inner.values()) or 1
    for title, counts in (("innermost frame", inner), ("innermost trawl frame", ours)):
        out.append(f"main thread's samples by {title} ({total} in all):")
        out += [f"  {n:5d} {100 * n / total:4.0f} %  {name}" for name, n in counts.most_common(top)]
    longest = sorted(stalls, key=lambda st: -float(str(st[1])))[:top]
    if longest and len(longest[0]) > 6:
        out.append("the longest stalls: at s, overdue ms, the main thread's commonest stacks")
        for st in longest:
            where = "; ".join(f"{n}x {w}" for w, n in st[6])  # type: ignore[attr-defined]
            out.append(f"  {float(str(st[0])):7.1f} {float(str(st[1])):6.0f}  {where}")
            if len(st) > 8:
                busy = "; ".join(f"{n}x {w}" for w, n in st[7])  # type: ignore[attr-defined]
                gcs = ", ".join(f"gen{g} {ms} ms" for g, ms in st[8])  # type: ignore[attr-defined]
                out.append(
                    f"          other threads busy: {busy or '-'}; collections: {gcs or '-'}"
                )
    blkio = record.get("main_blkio_ms")
    out.append(
        "the main thread blocked on disk I/O over the whole run: "
        + ("unknown (sysctl kernel.task_delayacct=1 to count it)" if blkio is None
           else f"{blkio:.0f} ms")
    )  # fmt: skip
    ticking = record.get("main_blkio_ticking")
    if ticking:
        out.append(
            f"  of it while the crawl loop ticked (start-up and shutdown left out):"
            f" {ticking[1]:.0f} ms in {ticking[0]:.0f} s"
        )
    waits = record.get("disk_waits", [])
    if waits:
        out.append("the main thread in disk I/O (state D) at the watchdog's 5 ms looks, whole run:")
        out += [f"  {n:5d}  {where}" for where, n in waits[:top]]
    kernel = record.get("kernel", [])
    if kernel:
        out.append("the main thread in the kernel (state, wait channel) at the samples:")
        out += [f"  {n:5d}  {where}" for where, n in kernel[:top]]
    others = [(w, n) for w, n in record["others"] if not str(w).startswith(IDLE)]
    if others:
        out.append("other threads' samples during stalls (idle waits left out):")
        out += [f"  {n:5d}  {where}" for where, n in others[:top]]
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_crawl_options(parser, max_time=90.0)
    parser.add_argument("--stall-ms", type=float, default=40.0)
    args = parser.parse_args()
    env = {"LOOP_STALLS_MS": str(args.stall_ms)}
    for line in probe_lines("stall_probe", "LOOP_STALLS_OUT", args, env):
        print("\n".join(summarise(json.loads(line))))


if __name__ == "__main__":
    main()

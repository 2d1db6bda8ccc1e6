"""What dropping drained sites' schedule slots costs the crawl loop at a checkpoint.

    python -m bench.schedule_forget [--slots 1000000] [--drained 1000]
    PYTHONPATH=<checkout>/src:. python -m bench.schedule_forget   # another tree

Builds a `SiteSchedule` of `--slots` sites with work, gives each a turn, drops whatever was
drained (as the checkpoint before does), drains `--drained` more, and times the next
`forget_idle`: what one checkpoint holds the loop for. Pure, no sockets.
"""

from __future__ import annotations

import argparse
import time

from trawl.frontier.site_schedule import SiteSchedule
from trawl.model import Line


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--slots", type=int, default=1_000_000)
    parser.add_argument("--drained", type=int, default=1_000)
    args = parser.parse_args()
    schedule = SiteSchedule()
    for i in range(args.slots):
        schedule.add_work(f"s{i}.test", Line.SLOW, 2, ready_at=0.0)
    for now, turns in ((0.0, args.slots), (1.0, args.drained)):
        for _ in range(turns):
            turn = schedule.pop_ready(now)
            assert turn is not None
            schedule.take_work(*turn)
            schedule.release(turn[0], ready_at=now + 1.0)
        if now == 0.0:
            schedule.forget_idle()  # the checkpoint before: nothing drained yet
    started = time.perf_counter()
    dropped = schedule.forget_idle()
    took = time.perf_counter() - started
    print(
        f"forget_idle with {args.slots:,} slots, {args.drained:,} drained since the last: "
        f"{took * 1000:.1f} ms, {dropped:,} dropped"
    )


if __name__ == "__main__":
    main()

"""Milliseconds of crawl-loop time per `GET /v1/sites` ranking, over 2,000 sites.

    python -m bench.site_ranking_bench [--sites 2000] [--rounds 20]
    PYTHONPATH=<other checkout>/src:. python -m bench.site_ranking_bench   # another tree

The API runs the ranking on the crawl loop (live site state lives there), so its cost is
loop time that every fetch waits behind. Builds `--sites` site states, 1 in 50 with
failures and 1 in 200 parked, as a crawl of the bench web has at most, and prints the best of
`--rounds` for each sort (`busy`, `troubled`) with the default row limit the bench asks for.
"""

from __future__ import annotations

import argparse
import time

from trawl.api.site_ranking import busiest, most_troubled
from trawl.politeness.site_state import SiteState

NOW = 86400.0 * 20000 + 3600.0


def sites(n: int) -> list[SiteState]:
    out = []
    for i in range(n):
        state = SiteState(f"s{i:05d}.bench")
        for _ in range(i % 7):
            state.count_page(NOW - 60)
        if i % 50 == 0:
            state.clock.consecutive_failures = i % 3
            state.clock.error_count = 1 + i % 5
        if i % 200 == 0:
            state.clock.parked_until = NOW + 600
        out.append(state)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sites", type=int, default=2000)
    parser.add_argument("--rounds", type=int, default=20)
    args = parser.parse_args()
    states = sites(args.sites)
    queued = {s.site: i % 11 for i, s in enumerate(states)}
    for name, rank in (("busy", busiest), ("troubled", most_troubled)):
        best = float("inf")
        for _ in range(args.rounds):
            started = time.perf_counter()
            rank(states, NOW, queued.__getitem__, 20)
            best = min(best, time.perf_counter() - started)
        print(f"sort={name}: {1000 * best:.3f} ms for {args.sites} sites")


if __name__ == "__main__":
    main()

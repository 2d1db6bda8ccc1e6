"""What encoding a page's records as JSON costs: the stdlib's encoder against `compact_json`.

    trawl demo --max-time 60          # or any data directory a crawl left
    python -m bench.record_json [--db trawl-demo-data/trawl.db] [--rounds 5]

Reads the host records, stored pages' records and events of a crawl's database, and times
encoding each kind as the SQLite record store writes it once a page: `json.dumps` with
compact separators (before) and `trawl.store.json_text.compact_json` (now), best of
`--rounds`. Checks that both texts read back as the same JSON. Pure, no sockets.
"""

from __future__ import annotations

import argparse
import json
import sqlite3
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING

from trawl.store.json_text import compact_json

if TYPE_CHECKING:
    from collections.abc import Callable

_KINDS = {
    "host records": "SELECT record FROM hosts",
    "page records": "SELECT record FROM pages WHERE storage_key != ''",
    "events": "SELECT event FROM events",
}


def _stdlib(data: object) -> str:
    return json.dumps(data, separators=(",", ":"))


def _best_us(encode: Callable[[object], str], records: list[object], rounds: int) -> float:
    best = float("inf")
    for _ in range(rounds):
        started = time.perf_counter()
        for record in records:
            encode(record)
        best = min(best, time.perf_counter() - started)
    return best / len(records) * 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--db", type=Path, default=Path("trawl-demo-data/trawl.db"))
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--limit", type=int, default=5_000, help="records of each kind")
    args = parser.parse_args()
    if not args.db.is_file():
        sys.exit(f"no database at {args.db}: run `trawl demo` first, or give --db")
    conn = sqlite3.connect(f"file:{args.db}?mode=ro", uri=True)
    print(f"$ python -m bench.record_json --db {args.db} --rounds {args.rounds}")
    print("| record | count | mean bytes | json.dumps µs | compact_json µs | ratio |")
    print("|---|---|---|---|---|---|")
    for kind, query in _KINDS.items():
        rows = conn.execute(f"{query} LIMIT ?", (args.limit,)).fetchall()
        records: list[object] = [json.loads(text) for (text,) in rows]
        if not records:
            print(f"| {kind} | 0 | - | - | - | - |")
            continue
        for record in records:
            if json.loads(compact_json(record)) != json.loads(_stdlib(record)):
                sys.exit(f"{kind}: compact_json reads back differently: {record!r}")
        size = sum(len(_stdlib(r)) for r in records) / len(records)
        before = _best_us(_stdlib, records, args.rounds)
        now = _best_us(compact_json, records, args.rounds)
        print(
            f"| {kind} | {len(records):,} | {size:,.0f} | {before:.2f} | {now:.2f} "
            f"| {now / before:.2f} |"
        )


if __name__ == "__main__":
    main()

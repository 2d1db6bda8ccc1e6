"""What keeping the skip report costs: ns per noted skip, and ms per commit of skips.

Run: `PYTHONPATH=src python -m bench.skips_bench`. The per-link path (issue 16's design
load: ~50 links a page, 20,000 scope checks a second) notes a skip with `SkipTally.note`;
the baseline is the cheapest thing a counter-only report could do there (one dict
increment), in the same run. The commit side writes a batch into SQLite in one
transaction, with the table already at its bound (10,000 rows), so every batch also rolls
the window.
"""

from __future__ import annotations

import json
import random
import sqlite3
import sys
import tempfile
import time
import timeit
from pathlib import Path

from bench.runinfo import describe_run
from trawl.frontier.skips import DEFAULT_SAMPLE_SIZE, SkipTally
from trawl.store.skips_sqlite import SqliteSkipLog
from trawl.store.sqlite_db import open_database

REASONS = ("scope", "exclude", "max_depth", "hops", "too_many_params")
N = 200_000


def _notes() -> list[tuple[str, str, str, str, float]]:
    rng = random.Random(16)
    return [
        (
            f"https://site{rng.randrange(500)}.example/{rng.randrange(10**6)}",
            rng.choice(REASONS),
            r"exclude /tag/",
            f"https://news{rng.randrange(20)}.example/article-{n}",
            1.8e9 + n / 1000,
        )
        for n in range(N)
    ]


def ns_per_note(notes: list[tuple[str, str, str, str, float]]) -> tuple[float, float]:
    """(SkipTally.note, a bare dict increment), best of 5, ns per skip."""
    tally = SkipTally()
    counts: dict[str, int] = {}

    def with_tally() -> None:
        note = tally.note
        for url, reason, rule, referrer, at in notes:
            note(url, reason, rule, referrer, at)

    def counter_only() -> None:
        for _url, reason, _rule, _referrer, _at in notes:
            counts[reason] = counts.get(reason, 0) + 1

    best = [min(timeit.repeat(f, number=1, repeat=5)) / N * 1e9 for f in (with_tally, counter_only)]
    return best[0], best[1]


def ms_per_commit(notes: list[tuple[str, str, str, str, float]], batch: int) -> float:
    """Median ms to write `batch` skips and commit, with the table full."""
    with tempfile.TemporaryDirectory() as tmp:
        conn = open_database(Path(tmp) / "trawl.db")
        log = SqliteSkipLog(conn)
        tally = SkipTally()
        times: list[float] = []
        rounds = len(notes) // batch
        for r in range(rounds):
            for note in notes[r * batch : (r + 1) * batch]:
                tally.note(*note)
            started = time.perf_counter()
            log.write(tally.take_unflushed())
            conn.commit()
            if (r + 1) * batch > DEFAULT_SAMPLE_SIZE:  # only full-table rounds count
                times.append(time.perf_counter() - started)
        rows = conn.execute("SELECT count(*) FROM skipped").fetchone()[0]
        assert rows == DEFAULT_SAMPLE_SIZE, rows
        conn.close()
    times.sort()
    return times[len(times) // 2] * 1e3


def main() -> None:
    notes = _notes()
    tally_ns, counter_ns = ns_per_note(notes)
    figures: dict[str, object] = {
        "ns_per_note": round(tally_ns, 1),
        "ns_per_note_counter_only": round(counter_ns, 1),
        "sqlite": sqlite3.sqlite_version,
    }
    for batch in (100, 1_000, 5_000):
        figures[f"ms_per_commit_of_{batch}"] = round(ms_per_commit(notes, batch), 2)
    json.dump({**describe_run(), **figures}, sys.stdout, indent=1)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()

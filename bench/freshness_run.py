"""A continuous crawl of the freshness test web, and what recrawling cost and saved.

    python -m bench.freshness_run [--time 180] [--sites 12] [--pages 8] [--min-interval 5s]

Runs `run_crawl` with `crawl.continuous` on `build_web(freshness=True)` (live pages that
change on every request, static pages with validators, sitemaps, copies, near-copies,
popular pages) for `--time` seconds, then reports from the test web's request log and the
crawl's own counters:
- fetches per changing vs static page (the ratio is the figure: same run, same sites);
- the share of refetches answered 304, and the bytes those 304s did not send, against
  what unconditional refetches of the same pages would have downloaded (the baseline);
- exact duplicates and near-duplicates found;
- the refresh/discovery split of site turns actually achieved, against recrawl.refresh_share.
Results go to bench/results/freshness.json (git-ignored). Traffic: loopback only.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import io
import json
import statistics
import sys
import tempfile
from collections import Counter, defaultdict
from pathlib import Path

from bench.runinfo import describe_run
from trawl.cli import main as trawl_main
from trawl.cli.runner import run_crawl
from trawl.config import Duration, Settings, with_overrides
from trawl.testweb.politeness import check_politeness
from trawl.testweb.process import TestWebProcess

RESULTS = Path(__file__).parent / "results" / "freshness.json"


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--time", type=float, default=180.0, help="crawl seconds")
    p.add_argument("--sites", type=int, default=12)
    p.add_argument("--pages", type=int, default=8)
    p.add_argument("--seed", type=int, default=7)
    p.add_argument("--min-interval", default="5s")
    p.add_argument("--max-interval", default="10m")
    return p.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="trawl-fresh-") as tmp_dir:
        tmp = Path(tmp_dir)
        with TestWebProcess(
            sites=args.sites, pages=args.pages, seed=args.seed, workdir=tmp / "web", freshness=True
        ) as web:
            settings = with_overrides(
                Settings(),
                crawl={
                    "contact_url": "https://trawl.invalid/bench",
                    "max_time_s": args.time,
                    "continuous": True,
                },
                network={"hosts_file": str(web.hosts_file)},
                recrawl={
                    "min_interval": Duration.parse(args.min_interval),
                    "max_interval": Duration.parse(args.max_interval),
                },
            )
            seeds = [(u, "bench seed") for u in web.seeds]
            summary = asyncio.run(
                run_crawl(settings, tmp / "data", seeds, io.StringIO(), is_tty=False)
            )
            web.stop()
            requests = web.requests()
            spec = web.web.freshness()
            violations = check_politeness(requests, **web.web.politeness_inputs())
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            trawl_main(["pages", "--data", str(tmp / "data")])
        records = [json.loads(line) for line in out.getvalue().splitlines()]

    by_key: dict[tuple[str, str], list] = defaultdict(list)
    for r in requests:
        by_key[(r.host, r.path)].append(r)
    changing = [len(by_key[k]) for k in spec.changing_urls]
    static = [len(by_key[k]) for k in spec.static_urls]
    # Refetches: every request of a page after its first (robots.txt excluded).
    refetches = [r for k, rs in by_key.items() if k[1] != "/robots.txt" for r in rs[1:]]
    not_modified = [r for r in refetches if r.status == 304]
    full_size = {k: max((r.body_bytes for r in rs if r.status == 200), default=0)
                 for k, rs in by_key.items()}  # fmt: skip
    saved_log = sum(full_size[(r.host, r.path)] for r in not_modified)
    downloaded_refetch = sum(r.body_bytes for r in refetches)
    st = summary.stats
    fast, slow, refresh = summary.turns_by_line
    kinds = Counter(r["kind"] for r in records)
    result = {
        "run": describe_run(),
        "crawl_s": args.time,
        "sites": args.sites,
        "requests": len(requests),
        "politeness_violations": len(violations),
        "fetches_per_changing_page": statistics.mean(changing),
        "fetches_per_static_page": statistics.mean(static),
        "changing_vs_static_ratio": statistics.mean(changing) / statistics.mean(static),
        "refetches": len(refetches),
        "refetches_304": len(not_modified),
        "share_304_of_refetches": len(not_modified) / max(1, len(refetches)),
        "refetch_bytes_downloaded": downloaded_refetch,
        "refetch_bytes_saved_by_304": saved_log,
        "refetch_bytes_unconditional_baseline": downloaded_refetch + saved_log,
        "crawler_bytes_saved_counter": st.bytes_saved,
        "refetches_changed_unchanged": dict(st.refetches),
        "exact_duplicates": st.duplicates,
        "near_duplicates": st.near_duplicates,
        "revisit_records": st.revisits,
        "pages_stored": st.pages_stored,
        "sitemap_urls": st.sitemap_urls,
        "sitemap_new": st.sitemap_new,
        "turns_fast_slow_refresh": [fast, slow, refresh],
        "refresh_share_achieved": refresh / max(1, fast + slow + refresh),
        "contested_turns_refresh_discovery": list(summary.contested_turns),
        "refresh_share_while_both_waited": summary.contested_turns[0]
        / max(1, sum(summary.contested_turns)),
        "refresh_share_configured": settings.recrawl.refresh_share,
        "records_by_kind": dict(kinds),
    }
    RESULTS.parent.mkdir(exist_ok=True)
    RESULTS.write_text(json.dumps(result, indent=2) + "\n")
    width = max(len(k) for k in result)
    for key, value in result.items():
        if key != "run":
            print(f"{key:<{width}}  {value}")
    print(json.dumps(result["run"]), file=sys.stderr)
    return 0 if not violations else 1


if __name__ == "__main__":
    sys.exit(main())

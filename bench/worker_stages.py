"""Where the page workers' CPU goes during a `bench.speed` crawl, stage by stage.

    python -m bench.worker_stages [--quick] [--max-time 60] [--src <checkout>/src]

Runs `python -m bench.speed --skip-scrapy` with a probe (bench/worker_probe/sitecustomize.py)
in the page workers: the thread CPU time of each function `process_page` calls, summed over
both workers, per page they processed. Unlike `bench.page_work_bench`, which times the same
code on pages in a loop, these are the crawl's own pages in the crawl's order, with the
crawl's other processes on the same cores: the link memo's hit rate and the main-text window
hints are the crawl's (both printed), not a replay's. Loopback only, like bench.speed.
"""

from __future__ import annotations

import argparse
import json
import tempfile
from pathlib import Path

from bench.probed_speed import add_crawl_options, failed, run_probed

NAMES = {
    "decode_html": "decode bytes",
    "parse_decoded": "parse HTML (selectolax/Lexbor)",
    "links_of_tree": "links, meta robots, canonical",
    "parse_x_robots_tag": "X-Robots-Tag",
    "content_hash": "content hash (sha256; older trees)",
    "body_sha256": "content hash = payload digest (sha256)",
    "_encode_capture": "WARC records (gzip, block digest, headers)",
    "normalise_links": "normalise links + urlHash + site (link memo)",
    "sha1_digest": "sha1 of a page not stored (older trees)",
    "_main_text": "main-text simhash (resiliparse)",
    "_canonical": "canonical URL",
    "shape_of_tree": "page shape (thin pages)",
}


def summarise(records: list[dict[str, object]]) -> list[str]:
    pages = sum(int(str(r["pages"])) for r in records)
    if not pages:
        return ["the workers wrote no pages"]

    def total(key: str) -> float:
        return sum(float(str(r.get(key, 0))) for r in records)

    whole = total("process_pages")
    stages: dict[str, float] = {}
    for r in records:
        for name, seconds in dict(r["stages"]).items():  # type: ignore[call-overload]
            stages[name] = stages.get(name, 0.0) + float(seconds)
    out = [
        f"{len(records)} workers, {pages} pages; process_pages {1000 * whole / pages:.3f} ms"
        f" thread CPU a page; the worker processes {1000 * total('process_cpu') / pages:.3f}"
        " ms CPU a page in all (unpickling, pipes, start-up included)",
        "| stage | ms thread CPU a page | share of process_pages |",
        "|---|---|---|",
    ]
    for name, seconds in sorted(stages.items(), key=lambda kv: -kv[1]):
        out.append(
            f"| {NAMES.get(name, name)} | {1000 * seconds / pages:.3f}"
            f" | {100 * seconds / whole:.1f} % |"
        )
    rest = whole - sum(stages.values())
    out.append(
        f"| the rest of process_page(s) | {1000 * rest / pages:.3f} | {100 * rest / whole:.1f} % |"
    )
    lookups, misses = total("memo_lookups"), total("memo_misses")
    bypassed = total("memo_bypassed")
    out.append(
        f"link memo: {misses:.0f} misses of {lookups:.0f} hrefs looked up"
        f" ({100 * misses / max(lookups, 1):.1f} %), {bypassed:.0f} hrefs past it"
        f" ({100 * bypassed / max(lookups + bypassed, 1):.1f} %: it was not paying),"
        f" {(lookups + bypassed) / pages:.1f} hrefs a page"
    )
    for key, what in (("hinted", "with a window hint"), ("unhinted", "without")):
        n = total(key)
        out.append(
            f"main text, pages {what}: {100 * n / pages:.1f} %,"
            f" {1000 * total(key + '_cpu') / max(n, 1):.3f} ms each"
        )
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_crawl_options(parser, max_time=60.0)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as out:
        run = run_probed("worker_probe", {"WORKER_STAGES_OUT": out}, args)
        records = [json.loads(p.read_text()) for p in sorted(Path(out).glob("*.json"))]
        if run.returncode != 0 or not records:
            failed(run)
        print("\n".join(summarise(records)))


if __name__ == "__main__":
    main()

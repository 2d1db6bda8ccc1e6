"""Where trawl's CPU goes per page: py-spy over a crawl of the bench web, grouped by stage.

    python -m bench.profile_crawl [--max-time 60] [--quick]     # py-spy: pip install -e '.[bench]'

Samples the crawler and its worker processes (py-spy --subprocesses, idle samples left out)
and prints a table of stages with their share of CPU samples and the ms of CPU per page that
share represents (CPU per page measured in the same run from /proc).
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
from collections import Counter
from pathlib import Path

from bench.speed import run_measured
from bench.webfarm.accesslog import read_access_log
from bench.webfarm.generate import generate_web
from bench.webfarm.nginx import Nginx

# First matching rule wins; each is (stage, substrings of a frame "function (file:line)").
STAGES: tuple[tuple[str, tuple[str, ...]], ...] = (
    # process_page calls main_text through page_work._main_text (the site's window hint).
    ("main-text simhash (resiliparse)", ("_main_text", "main_text_fingerprint", "main_text.py")),
    ("text fingerprint, page shape (simhash)", ("fingerprint_tree", "shape_of_tree")),
    (
        "parse HTML (selectolax/Lexbor)",
        ("extract_links", "links_of_tree", "parse_html", "parse_decoded", "decode_html"),
    ),
    ("normalise links + urlHash + site", ("normalise_links",)),
    ("WARC record: gzip (ISA-L)", ("gzip_member",)),
    ("WARC record: digests (sha1 before 4f0d494), headers", ("encode_response_record",)),
    ("content hash = payload digest (sha256)", ("content_hash", "body_sha256")),
    ("worker: pickling, pipes", ("_sendback_result", "Queue.get", "SimpleQueue")),
    (
        "main: hand-off to workers (pickle, pipe, futures)",
        (
            "Queue._feed",
            "_ExecutorManagerThread",
            "ProcessPoolExecutor.submit",
            "BatchedWorkers",
        ),
    ),
    (
        # The crawl's Http1Fetcher (its protocol callbacks run straight from uvloop); the
        # aiohttp adapter's frames still count here for a base tree that fetched with it.
        "HTTP fetch (trawl/fetch, or aiohttp before)",
        ("Fetcher.fetch", "trawl/fetch/", "aiohttp/", "_SelectorSocketTransport", "uvloop"),
    ),
    ("link scores + in-link counts", ("link_scores.py", "inlinks.py", "scoring.py")),
    ("duplicates: fingerprint index, revisits", ("loop/content.py", "fingerprints_sqlite")),
    ("SQLite: page records + events", ("SqliteRecords.put_page",)),
    ("SQLite: frontier (head, lease, done, enqueue)", ("Frontier.",)),
    (
        "SQLite: commit + host records",
        ("Durability.commit", "SqliteRecords.commit", "WalCheckpoints"),
    ),
    ("trap rules, referrers, similarity", ("traps.py", "note_referrer")),
    ("seen set + discovery bookkeeping", ("Intake.", "SeenSet")),
    ("WARC append (write)", ("WarcWriter",)),
    ("robots.txt + politeness", ("robots", "site_clock", "ip_gate", "SiteRequests.take_turn")),
    ("event loop, scheduling, other", ("",)),
)


def is_idle(leaf: str) -> bool:
    """A sample whose innermost frame waits: py-spy counts a thread blocked in C as busy."""
    if any(w in leaf for w in ("select (", "poll (", "Connection._recv", "wait (")):
        return True
    return leaf.startswith("_worker (concurrent/futures/thread.py")  # a pool's queue.get


def stage_of(frames: list[str]) -> str:
    for stage, needles in STAGES:
        if any(needle in frame for frame in frames for needle in needles if needle):
            return stage
    return STAGES[-1][0]


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--max-time", type=float, default=60.0)
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--keep-raw", type=Path, help="also save py-spy's raw stacks here")
    args = parser.parse_args()
    sites, pages = (800, 12) if args.quick else (2000, 50)
    root = Path("/tmp/trawl-bench-web" + ("-quick" if args.quick else ""))
    spec = generate_web(root, n_sites=sites, pages_per_site=pages)
    with tempfile.TemporaryDirectory(prefix="bench-profile-") as tmp:
        work = Path(tmp)
        (work / "seeds.txt").write_text("\n".join(spec.seeds) + "\n")
        raw = work / "profile.raw"
        crawl = [
            sys.executable, "-m", "trawl", "crawl", "--seeds-file", str(work / "seeds.txt"),
            "--data", str(work / "data"), "--hosts-file", str(spec.hosts_file),
            "--contact", "https://trawl.invalid/bench", "--max-time", str(args.max_time),
        ]  # fmt: skip
        # The venv's py-spy when the venv is not on PATH (`.venv/bin/python -m ...`).
        beside = Path(sys.executable).with_name("py-spy")
        spy = [shutil.which("py-spy") or str(beside), "record", "--subprocesses", "--rate", "100"]
        spy += ["--format", "raw"]
        with Nginx(root, spec, access_log=work / "access.jsonl"):
            _, cpu, _, _ = run_measured([*spy, "-o", str(raw), "--", *crawl], work / "out.log")
        if args.keep_raw is not None:
            args.keep_raw.write_bytes(raw.read_bytes())
        not_pages = ("/robots.txt", "/sitemap.xml")
        pages = sum(1 for r in read_access_log(work / "access.jsonl") if r.path not in not_pages)
        counts: Counter[str] = Counter()
        for line in raw.read_text().splitlines():
            stack, _, n = line.rpartition(" ")
            frames = stack.split(";")
            if is_idle(frames[-1]):
                continue  # idle: waiting on sockets, pipes, locks or a thread pool's queue
            counts[stage_of(frames)] += int(n)
    total = sum(counts.values())
    ms_per_page = 1000 * cpu / max(pages, 1)
    print(f"command: python -m bench.profile_crawl {' '.join(sys.argv[1:])}")
    print(f"pages {pages}, CPU {cpu:.1f}s (py-spy overhead included), {ms_per_page:.2f} ms/page\n")
    print("| stage | share of CPU samples | ms CPU per page |")
    print("|---|---|---|")
    for stage, _ in STAGES:
        share = counts[stage] / max(total, 1)
        print(f"| {stage} | {100 * share:.1f} % | {share * ms_per_page:.2f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""trawl vs Scrapy on the same synthetic web, in one run: pages/s, CPU/page, RSS, politeness.

    python -m bench.speed                 # full: 2,000 sites x 100 pages x ~100 KB, 150 s each
    python -m bench.speed --quick         # short mode for hot-path changes (tens of seconds)
    python -m bench.speed --skip-scrapy   # trawl only
    python -m bench.speed --quick --scope-variants 2   # trawl with scope: any vs domain vs
                                                       # domain + 20 includes + 20 excludes
    python -m bench.speed --render-variants 2   # trawl with --render auto vs off
    python -m bench.speed --idle-variants 2     # trawl with sites leaving memory after 10 min
                                                # (the default) vs after 2 s: their price
    python -m bench.speed --gzip          # pages served gzipped (pre-compressed copies), as
                                          # most of the web serves them
    python -m bench.speed --zipf-text     # pages' prose from a real web's vocabulary (a web
                                          # of its own, generated once)

Installs what it needs (nginx from Debian, Scrapy from PyPI) on first use. Each crawler gets
a fresh nginx with its own access log; the log is the witness for the crawl rate and for
politeness (trawl.testweb.politeness). Results go to bench/results/speed[-quick].json and a
markdown table on stdout.

The full web has 100 pages a site (its own folder beside the 50-page web other benches
share): at 50, a crawler past ~700 pages/s fetched the whole web before a 150 s run ended,
and its steady rate averaged in the last half-minute's leftovers of a few hundred sites
(issue 17, thirty-sixth session: 812-855 pages/s from 60 to 120 s, 715 reported). A run that
fetches more than `WEB_SHARE_WARNING` of its web says so beside the table.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from collections import Counter
from dataclasses import asdict, dataclass
from pathlib import Path

from bench.proc import process_cpu_s
from bench.runinfo import describe_run
from bench.webfarm.accesslog import NGINX_TOLERANCE_S, read_access_log
from bench.webfarm.generate import WebSpec, generate_web, write_gzipped
from bench.webfarm.nginx import Nginx
from trawl.testweb.politeness import check_politeness

ROOT = Path(__file__).resolve().parent
RESULTS = ROOT / "results"
# Not pages: robots.txt, and the /sitemap.xml trawl tries on each site without Sitemap lines.
ROBOTS = {"/robots.txt", "/sitemap.xml"}
FULL_WEB = (2000, 100)  # sites, pages a site
WEB_SHARE_WARNING = 0.8


@dataclass
class RunFigures:
    crawler: str
    wall_s: float
    pages_logged: int  # non-robots requests in the server's log
    steady_pages_per_s: float
    cpu_s: float
    cpu_main_s: float  # the crawler's own process; the rest is its worker processes
    cpu_ms_per_page: float
    peak_rss_mib: float
    violations: int
    violation_kinds: dict[str, int]
    statuses: dict[str, int]
    loop_lag: str = ""  # trawl's own line: "p50 ≤ 1.0 ms, p99 ≤ 25 ms, worst 31 ms; ..."
    web_share: float = 0.0  # pages logged over the web's pages: near 1, the web ran out


def page_size_kb(spec: WebSpec) -> float:
    home = spec.www_dir / spec.sites[0].host
    sizes = [p.stat().st_size for p in home.rglob("*.html")]
    return sum(sizes) / max(len(sizes), 1) / 1024


def tree_pids(pid: int) -> list[int]:
    pids, todo = [], [pid]
    while todo:
        p = todo.pop()
        pids.append(p)
        try:
            for task in Path(f"/proc/{p}/task").iterdir():
                todo += [int(c) for c in (task / "children").read_text().split()]
        except (OSError, ValueError):
            continue
    return pids


def sample(pid: int, cpu_by_pid: dict[int, float]) -> int:
    """Tree RSS in KiB now; records each process's CPU seconds so far in cpu_by_pid."""
    page_kib = os.sysconf("SC_PAGE_SIZE") // 1024
    rss = 0
    for p in tree_pids(pid):
        try:
            rss += int(Path(f"/proc/{p}/statm").read_text().split()[1]) * page_kib
            cpu_by_pid[p] = process_cpu_s(p)
        except (OSError, ValueError, IndexError):
            continue
    return rss


def run_measured(cmd: list[str], log: Path) -> tuple[float, float, float, float]:
    """Run a crawler: (wall s, CPU s of it and all descendants, CPU s of it, peak RSS MiB).

    CPU is the larger of the rusage of waited-for descendants and the per-process samples:
    worker processes reparented on exit are missing from the first, the last 0.2 s from the
    second.
    """
    started = time.monotonic()
    cpu_by_pid: dict[int, float] = {}
    with log.open("wb") as out:
        proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT)
        peak = 0
        while True:
            pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
            if pid:
                break
            peak = max(peak, sample(proc.pid, cpu_by_pid))
            time.sleep(0.2)
    code = os.waitstatus_to_exitcode(status)
    if code != 0:
        raise RuntimeError(f"{cmd[0:4]} exited {code}; see {log}")
    cpu = max(usage.ru_utime + usage.ru_stime, sum(cpu_by_pid.values()))
    return time.monotonic() - started, cpu, cpu_by_pid.get(proc.pid, 0.0), peak / 1024


def steady_rate(starts: list[float], warmup_s: float) -> float:
    """Pages/s between warm-up and the last 5 s (the tail drains in-flight work)."""
    if not starts:
        return 0.0
    t0, t1 = min(starts) + warmup_s, max(starts) - 5.0
    if t1 <= t0:
        return 0.0
    return sum(1 for t in starts if t0 <= t < t1) / (t1 - t0)


# Issue 16: scope settings measured against `any` in the same run. The patterns match no URL
# of the bench web (so every variant fetches the same pages) but each is searched on every
# link: the cost of the check itself.
_PATTERNS = [
    *(a for n in range(20) for a in ("--include", f"/never-included-{n}/[a-z]+\\.html$")),
    *(a for n in range(20) for a in ("--exclude", f"[?&]never_excluded_{n}=")),
]
SCOPE_VARIANTS: dict[str, list[str]] = {
    "trawl": [],
    "trawl scope domain": ["--scope", "domain"],
    "trawl scope domain + 20 inc + 20 exc": ["--scope", "domain", *_PATTERNS],
}
# Issue 18: the render step's price on a web without script-built pages (`--render-variants`).
RENDER_VARIANTS: dict[str, list[str]] = {"trawl": [], "trawl render off": ["--render", "off"]}
# Sites leaving memory when idle (loop.idle_sites), at the default 10 min (never, in a bench
# run) and at 2 s: most sites then leave between two of their requests and are read back from
# their host records, the worst a broad crawl's churn could cost (`--idle-variants`).
IDLE_VARIANTS: dict[str, list[str]] = {"trawl": [], "trawl sites idle 2 s": []}
CONFIG_TEXT = {"trawl sites idle 2 s": "[crawl]\nsite_idle_s = 2.0\n"}
TRAWL_VARIANTS = {**SCOPE_VARIANTS, **RENDER_VARIANTS, **IDLE_VARIANTS}


def crawler_command(name: str, spec: WebSpec, work: Path, max_time: float) -> list[str]:
    seeds = work / "seeds.txt"
    seeds.write_text("\n".join(spec.seeds) + "\n")
    if name in TRAWL_VARIANTS:
        config: list[str] = []
        if name in CONFIG_TEXT:
            (work / "trawl.toml").write_text(CONFIG_TEXT[name])
            config = ["--config", str(work / "trawl.toml")]
        return [
            sys.executable, "-m", "trawl", "crawl", "--seeds-file", str(seeds),
            "--data", str(work / "trawl-data"), "--hosts-file", str(spec.hosts_file),
            "--contact", "https://trawl.invalid/bench", "--max-time", str(max_time),
            *TRAWL_VARIANTS[name], *config,
        ]  # fmt: skip
    return [
        sys.executable, "-m", "bench.scrapy_baseline.run", "--seeds-file", str(seeds),
        "--hosts-file", str(spec.hosts_file), "--max-time", str(max_time),
        "--out", str(work / "scrapy-out"), "--concurrency", "4000",
    ]  # fmt: skip


def measure(
    name: str, spec: WebSpec, root: Path, max_time: float, warmup: float, *, gzipped: bool = False
) -> RunFigures:
    with tempfile.TemporaryDirectory(prefix=f"bench-{name.replace(' ', '-')}-") as tmp:
        work = Path(tmp)
        access = work / "access.jsonl"
        with Nginx(root, spec, access_log=access, gzip_static=gzipped):
            wall, cpu, cpu_main, rss = run_measured(
                crawler_command(name, spec, work, max_time), work / "out.log"
            )
        records = read_access_log(access)
        log_name = name.replace(" ", "-").replace("+", "")
        output = (work / "out.log").read_bytes()
        (RESULTS / f"{log_name}-output.log").write_bytes(output)
    pages = [r for r in records if r.path not in ROBOTS]
    violations = check_politeness(
        records, tolerance_s=NGINX_TOLERANCE_S, **spec.politeness_inputs()
    )
    if name == "scrapy":
        # Scrapy's UA names no "trawl/"; that rule is about trawl's own identification.
        violations = [v for v in violations if v.kind != "bad_user_agent"]
    return RunFigures(
        crawler=name,
        wall_s=round(wall, 1),
        pages_logged=len(pages),
        steady_pages_per_s=round(steady_rate([r.t_start for r in pages], warmup), 1),
        cpu_s=round(cpu, 1),
        cpu_main_s=round(cpu_main, 1),
        cpu_ms_per_page=round(1000 * cpu / max(len(pages), 1), 2),
        peak_rss_mib=round(rss, 1),
        violations=len(violations),
        violation_kinds=dict(Counter(str(v.kind) for v in violations)),
        statuses=dict(Counter(str(r.status) for r in pages)),
        loop_lag=loop_lag_of(output.decode(errors="replace")),
        web_share=round(len(pages) / max(spec.expected_pages, 1), 3),
    )


def loop_lag_of(output: str) -> str:
    """trawl's summary line on its event loop's lag (issue 17), '' for other crawlers."""
    prefix = "event loop lag "
    for line in output.splitlines():
        if line.startswith(prefix):
            return line[len(prefix) :]
    return ""


def ensure_scrapy() -> None:
    try:
        import scrapy  # noqa: F401
    except ImportError:
        pip = [sys.executable, "-m", "pip", "install", "-q", "scrapy>=2.14,<3"]
        subprocess.run(pip, check=True)


def report(figures: list[RunFigures], meta: dict[str, object]) -> str:
    rows = [
        "| crawler | steady pages/s | CPU ms/page | event loop ms/page | peak RSS MiB | pages "
        "| violations | event loop lag |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for f in figures:
        main_ms = 1000 * f.cpu_main_s / max(f.pages_logged, 1)
        rows.append(
            f"| {f.crawler} | {f.steady_pages_per_s} | {f.cpu_ms_per_page} | {main_ms:.2f} "
            f"| {f.peak_rss_mib} | {f.pages_logged} | {f.violations} | {f.loop_lag or '-'} |"
        )
    for f in figures:
        if f.web_share > WEB_SHARE_WARNING:
            rows.append(
                f"\n{f.crawler} fetched {f.web_share:.0%} of the web's pages: its steady rate"
                " may be held by the web running out, not by the crawler (FULL_WEB: a larger web)"
            )
    by = {f.crawler: f for f in figures}
    if "trawl" in by and "scrapy" in by:
        t, s = by["trawl"], by["scrapy"]
        rows.append("")
        rows.append(
            f"trawl/Scrapy: pages/s x{t.steady_pages_per_s / max(s.steady_pages_per_s, 1e-9):.2f}"
            f", CPU per page x{t.cpu_ms_per_page / max(s.cpu_ms_per_page, 1e-9):.3f}"
            f" (Scrapy uses {s.cpu_ms_per_page / max(t.cpu_ms_per_page, 1e-9):.1f}x trawl's CPU)"
        )
    variants = [f for f in figures if f.crawler in TRAWL_VARIANTS]
    if len({f.crawler for f in variants}) > 1:
        rows += [
            "",
            "| variant | runs | pages/s (mean) | vs trawl | CPU ms/page (mean) | vs trawl |",
            "|---|---|---|---|---|---|",
        ]
        means = {}
        for name in TRAWL_VARIANTS:
            runs = [f for f in variants if f.crawler == name]
            if runs:
                rate = sum(f.steady_pages_per_s for f in runs) / len(runs)
                cpu = sum(f.cpu_ms_per_page for f in runs) / len(runs)
                means[name] = (len(runs), rate, cpu)
        base_rate, base_cpu = means["trawl"][1], means["trawl"][2]
        for name, (n, rate, cpu) in means.items():
            rows.append(
                f"| {name} | {n} | {rate:.1f} | x{rate / max(base_rate, 1e-9):.3f} "
                f"| {cpu:.2f} | x{cpu / max(base_cpu, 1e-9):.3f} |"
            )
    rows.append("")
    rows.append("```\n" + json.dumps(meta, indent=1) + "\n```")
    return "\n".join(rows)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="800 sites x 12 pages, 30 s runs")
    parser.add_argument("--skip-scrapy", action="store_true")
    parser.add_argument("--max-time", type=float, help="seconds per crawler run")
    parser.add_argument("--web", type=Path, default=Path("/tmp/trawl-bench-web"))
    parser.add_argument(
        "--scope-variants",
        type=int,
        metavar="ROUNDS",
        help="trawl only, with each scope variant in turn, ROUNDS times (issue 16)",
    )
    parser.add_argument(
        "--render-variants",
        type=int,
        metavar="ROUNDS",
        help="trawl only, --render auto then off in turn, ROUNDS times (issue 18)",
    )
    parser.add_argument(
        "--idle-variants",
        type=int,
        metavar="ROUNDS",
        help="trawl only, sites idle after 10 min (default) then 2 s in turn, ROUNDS times",
    )
    parser.add_argument(
        "--gzip", action="store_true", help="serve the pages gzipped (pre-compressed copies)"
    )
    parser.add_argument(
        "--zipf-text",
        action="store_true",
        help="prose from a Zipf vocabulary of two million words (bench/webfarm/vocabulary.py)",
    )
    args = parser.parse_args()
    quick = (800, 12, 30.0, 8.0)
    sites, pages, max_time, warmup = quick if args.quick else (*FULL_WEB, 150.0, 30.0)
    max_time = args.max_time or max_time
    vocabulary = "zipf" if args.zipf_text else "small"
    suffix = ("-quick" if args.quick else f"-{pages}p") + ("-zipf" if args.zipf_text else "")
    root = args.web.with_name(args.web.name + suffix)
    t = time.monotonic()
    spec = generate_web(root, n_sites=sites, pages_per_site=pages, vocabulary=vocabulary)
    if args.gzip:
        write_gzipped(spec)
    gen_s = time.monotonic() - t
    RESULTS.mkdir(exist_ok=True)
    crawlers = ["trawl"] if args.skip_scrapy else ["trawl", "scrapy"]
    if args.scope_variants:
        crawlers = list(SCOPE_VARIANTS) * args.scope_variants  # interleaved: noise spreads
    if args.render_variants:
        crawlers = list(RENDER_VARIANTS) * args.render_variants
    if args.idle_variants:
        crawlers = list(IDLE_VARIANTS) * args.idle_variants
    if "scrapy" in crawlers:
        ensure_scrapy()
    figures = [measure(name, spec, root, max_time, warmup, gzipped=args.gzip) for name in crawlers]
    meta: dict[str, object] = {
        **describe_run(),
        "command": " ".join(["python -m bench.speed", *sys.argv[1:]]),
        "web": f"{sites} sites x {pages} pages, avg {page_size_kb(spec):.0f} KB"
        + (", served gzipped" if args.gzip else "")
        + (", Zipf prose" if args.zipf_text else "")
        + f" (gen {gen_s:.0f}s)",
        "max_time_s": max_time,
        "warmup_s": warmup,
    }
    name = "speed-scope" if args.scope_variants else "speed"
    if args.render_variants:
        name = "speed-render"
    if args.idle_variants:
        name = "speed-idle"
    if args.gzip:
        name += "-gzip"
    if args.zipf_text:
        name += "-zipf"
    out = RESULTS / (f"{name}-quick.json" if args.quick else f"{name}.json")
    out.write_text(json.dumps({"meta": meta, "runs": [asdict(f) for f in figures]}, indent=1))
    print(report(figures, meta))
    return 0


if __name__ == "__main__":
    sys.exit(main())

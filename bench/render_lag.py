"""Does rendering in headless Chromium slow or stall the plain crawl? (issues 18 and 17)

    python -m bench.render_lag [--rounds 2] [--max-time 60] [--concurrency 2]
                               [--force-on '\\.bench/sec1/p1\\.html$'] [--web /tmp/trawl-bench-web]
    python -m bench.render_lag --rounds 1 --stall-ms 40   # and where the loop stalled

Issue 18: "the render worker must not block or slow the plain crawl"; issue 17: the crawl
loop's lag p99 under 50 ms. Playwright's client (its route handlers, its pipe to the node
driver) runs on the crawl's own event loop; Chromium and the driver are processes of their
own, on the same two cores. Results: bench/RESULTS.md, "JavaScript rendering (issue 18)".

The web: bench.speed's full bench web (2,000 static sites x 50 pages of ~100 KB, nginx) for
the plain crawl, and the test web's script cases (`build_web(script_cases=True)`: the
script-app.test shells, site 2's Vue shell and never-settling page, served by `python -m
trawl.testweb`). One `trawl crawl` of both, seeded with every home page, with `[render]
force_on = ["script-app.test", <--force-on>]`: the app is forced as
tests/e2e/test_render_crawl.py forces it, and the pattern (default: each site's
/sec1/p1.html, one page a site) forces plain pages too, so the browser has work all the
run long (the script cases alone are ~10 pages, done in seconds). Rendering a plain page is
real browser work: a fresh context, a renderer process, parsing and layout of ~100 KB. Two
variants, alternated `--rounds` times on the same web with the same config and limits:
- `render forced`: `--render auto` (Debian's chromium on the PATH);
- `render off`: `--render off`, the baseline: no browser is started, nothing is rendered.

Per run: plain pages/s (nginx's log, from 10 s in to 5 s before the end, as in
bench.speed); the crawl loop's lag from its LoopLag histogram (p50 and p99 as bucket
bounds, as the summary line gives them, the worst, and the share of the 20 ms ticks more
than 50 ms late) and the new turns held for it; renders by outcome and the pages sent to
the browser; CPU-seconds sampled from /proc every 0.5 s: the crawl's own process (the event
loop, Playwright's client included), its page workers, Playwright's node driver, Chromium's
tree (renderers it reaped included), and the rest of the machine's busy time (nginx, the
test web, and whatever else this shared machine ran meanwhile: a noisy run shows there).
The crawl runs in a child of this module (`--crawl-child`): `trawl crawl`, then one JSON
line with the histogram's counts.
`--stall-ms` loads bench/stall_probe into every crawl (both variants) and prints, as
bench.loop_stalls does, the stalls longer than that: how long, how much of them the loop's
thread was on the CPU, and where it was. `--nice-browser N` adds a third variant, rendering
with the driver and Chromium reniced to N by this bench (trawl launches the browser at nice
+10 itself since 4340a87, render.chromium; this tries another value). Loopback only.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import math
import os
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench.loop_stalls import summarise
from bench.proc import process_cpu_s
from bench.runinfo import describe_run
from bench.speed import ROBOTS, steady_rate
from bench.webfarm.accesslog import read_access_log
from bench.webfarm.generate import WebSpec, generate_web
from bench.webfarm.nginx import Nginx
from trawl.render.process_tree import tree_cpu_s
from trawl.testweb.process import TestWebProcess

ROOT = Path(__file__).resolve().parent
CHILD = "--crawl-child"
FIGURES = "render_lag: "  # the child's last line: its JSON figures
VARIANTS: dict[str, list[str]] = {"render forced": [], "render off": ["--render", "off"]}
NICED = "render forced, browser niced"  # `--nice-browser`: a variant of this bench's making
WARMUP_S = 10.0
SAMPLE_S = 0.5
LATE_S = 0.05  # issue 17's goal for the p99
PARTS = ("crawl", "workers", "driver", "chromium")


# -- the crawl's process (`python -m bench.render_lag --crawl-child <trawl crawl flags>`) --


def crawl_child(argv: list[str]) -> int:
    """`trawl crawl` with `argv`'s flags, its summary, then the figures the summary rounds."""
    from trawl.cli.dispatch import build_parser
    from trawl.cli.options import settings_from_args
    from trawl.cli.runner import print_summary, run_async, run_crawl
    from trawl.loop.stop_signals import stop_signals_noted
    from trawl.wiring.seeds import read_seeds

    if os.environ.get("LOOP_STALLS_OUT"):
        load_stall_probe()
    args = build_parser().parse_args(["crawl", *argv])
    seeds = read_seeds(args.urls, args.seeds_file)
    with stop_signals_noted():
        summary = run_async(
            run_crawl(settings_from_args(args), args.data, seeds, sys.stderr, is_tty=False)
        )
    print_summary(summary, sys.stdout)
    st, lag = summary.stats, summary.stats.loop_lag
    figures = {
        "lag": [[b if math.isfinite(b) else None, n] for b, n in lag.histogram.cumulative()],
        "ticks": lag.ticks,
        "worst_s": lag.worst,
        "held": lag.held,
        "renders": st.renders,
        "decisions": st.render_decisions,
        "render_requests": st.render_requests,
        "pages_fetched": st.pages_fetched,
    }
    print(FIGURES + json.dumps(figures), flush=True)
    return 0


def load_stall_probe() -> None:
    """bench/stall_probe in this process: bench.probe_target knows `trawl crawl` by its
    command line, and this child's differs."""
    import importlib.util

    import bench.probe_target

    bench.probe_target.is_crawl = lambda: True
    spec = importlib.util.spec_from_file_location(
        "stall_probe", ROOT / "stall_probe" / "sitecustomize.py"
    )
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["stall_probe"] = module  # kept: its watch thread and exit hook use it
    spec.loader.exec_module(module)


# -- CPU by part, from /proc ----------------------------------------------------------------


def _children() -> dict[int, list[int]]:
    out: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
            except OSError:
                continue
            parent = int(stat[stat.rindex(")") + 2 :].split(" ", 2)[1])
            out.setdefault(parent, []).append(int(entry.name))
    return out


def _subtree(pid: int, children: dict[int, list[int]]) -> list[int]:
    tree, todo = [], [pid]
    while todo:
        tree.append(todo.pop())
        todo.extend(children.get(tree[-1], ()))
    return tree


def _own_cpu_s(pid: int) -> float:
    """utime + stime of `pid` alone (not its reaped children); 0 once it is gone."""
    try:
        return process_cpu_s(pid)
    except OSError:
        return 0.0


def _is_driver(pid: int) -> bool:
    try:
        return b"playwright" in Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return False


def _renice(pids: list[int], nice: int) -> None:
    """Every thread of `pids` to `nice` (Linux: a thread's nice value is its own); what
    they start later inherits it, Chromium's renderers from its zygote."""
    for pid in pids:
        try:
            tids = [int(t.name) for t in Path(f"/proc/{pid}/task").iterdir()]
        except OSError:
            continue
        for tid in tids:
            with contextlib.suppress(OSError):
                if os.getpriority(os.PRIO_PROCESS, tid) < nice:
                    os.setpriority(os.PRIO_PROCESS, tid, nice)


def machine_busy_s() -> float:
    """CPU-seconds every core has spent busy since boot (/proc/stat: all but idle, iowait)."""
    ticks = [int(f) for f in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:9]]
    return (sum(ticks) - ticks[3] - ticks[4]) / os.sysconf("SC_CLK_TCK")


class TreeCpu:
    """CPU-seconds of a crawl's processes by part: the crawl's own process; each direct
    child's tree, the node driver (Chromium is its child, whose renderers Chromium's zygote
    reaps) split into the driver's own and the rest. Each figure is the highest sampled:
    it only grows, and a process that ended keeps its last sample (up to SAMPLE_S short)."""

    def __init__(self, root: int, nice_browser: int | None = None) -> None:
        self.root = root
        self.nice_browser = nice_browser
        self._seen: dict[tuple[str, int], float] = {}
        self.machine_s = -machine_busy_s()  # the whole machine's, once the run has ended

    def sample(self) -> None:
        children = _children()
        self._note("crawl", self.root, _own_cpu_s(self.root))
        for child in children.get(self.root, ()):
            total = tree_cpu_s(_subtree(child, children))
            if _is_driver(child):
                own = _own_cpu_s(child)
                self._note("driver", child, own)
                if self.nice_browser is not None:
                    _renice(_subtree(child, children), self.nice_browser)
                self._note("chromium", child, total - own)
            else:
                self._note("workers", child, total)

    def _note(self, part: str, pid: int, cpu_s: float) -> None:
        self._seen[part, pid] = max(self._seen.get((part, pid), 0.0), cpu_s)

    def parts(self) -> dict[str, float]:
        out = dict.fromkeys(PARTS, 0.0)
        for (part, _), cpu_s in self._seen.items():
            out[part] += cpu_s
        return out


# -- one run --------------------------------------------------------------------------------


@dataclass
class RunFigures:
    variant: str
    round: int
    pages: int  # plain pages in nginx's log (robots.txt and sitemap probes left out)
    pages_per_s: float
    cpu_s: dict[str, float]  # PARTS, and "other": the machine's less the crawl's
    lag_p50_ms: float
    lag_p99_ms: float
    worst_ms: float
    late_share: float  # ticks more than LATE_S late
    ticks: int
    held: int
    renders: dict[str, int]
    sent: int  # pages the policy sent to the browser
    script_requests: int  # requests the test web's script cases got (crawl and browser)


def quantile_ms(cumulative: list[list[float | None]], count: int, q: float) -> float:
    for bound, running in cumulative:
        if running is not None and running >= q * count:
            return math.inf if bound is None else 1000 * bound
    return math.inf


def run_crawl(cmd: list[str], log: Path, env: dict[str, str], nice: int | None) -> TreeCpu:
    """Run the crawl's child to its end, sampling its CPU (and renicing its browser to
    `nice` unless None); raise if it failed."""
    with log.open("wb") as out:
        proc = subprocess.Popen(
            cmd, stdout=out, stderr=subprocess.STDOUT, cwd=ROOT.parent, env={**os.environ, **env}
        )
        cpu = TreeCpu(proc.pid, nice)
        while proc.poll() is None:
            cpu.sample()
            time.sleep(SAMPLE_S)
        cpu.machine_s += machine_busy_s()
    if proc.returncode != 0:
        tail = log.read_text(errors="replace")[-3000:]
        raise RuntimeError(f"the crawl exited {proc.returncode}; its output ends:\n{tail}")
    return cpu


def child_figures(log: Path) -> dict[str, Any]:
    for line in log.read_text(errors="replace").splitlines():
        if line.startswith(FIGURES):
            figures: dict[str, Any] = json.loads(line[len(FIGURES) :])
            return figures
    raise RuntimeError(f"no figures line in {log}")


@dataclass
class Rig:
    """What every run shares: the bench web, the test web, seeds, hosts and config."""

    spec: WebSpec
    testweb: TestWebProcess
    work: Path
    max_time_s: float
    stall_ms: float | None  # the stall probe's threshold; None: no probe
    nice_browser: int | None  # the NICED variant's nice value; None: no such variant

    def variants(self) -> list[str]:
        return [*VARIANTS, *([NICED] if self.nice_browser is not None else [])]

    def command(self, variant: str, data: Path) -> list[str]:
        return [
            sys.executable, "-m", "bench.render_lag", CHILD,
            "--seeds-file", str(self.work / "seeds.txt"), "--data", str(data),
            "--hosts-file", str(self.work / "hosts"), "--config", str(self.work / "render.toml"),
            "--contact", "https://trawl.invalid/bench", "--max-time", str(self.max_time_s),
            *VARIANTS.get(variant, []),
        ]  # fmt: skip


def measure(rig: Rig, variant: str, n: int) -> RunFigures:
    name = variant.replace(" ", "-")
    with tempfile.TemporaryDirectory(prefix=f"render-lag-{name}-", dir=rig.work) as tmp:
        run = Path(tmp)
        access, log = run / "access.jsonl", run / "out.log"
        script_before = len(rig.testweb.requests())
        env = {}
        if rig.stall_ms is not None:
            env = {"LOOP_STALLS_OUT": str(rig.work / f"stalls-{name}-{n}.jsonl")}
            env["LOOP_STALLS_MS"] = str(rig.stall_ms)
        with Nginx(rig.spec.root, rig.spec, access_log=access):
            nice = rig.nice_browser if variant == NICED else None
            cpu = run_crawl(rig.command(variant, run / "data"), log, env, nice)
        records = read_access_log(access)
        script_requests = len(rig.testweb.requests()) - script_before
        (rig.work / f"{name}-{n}.log").write_bytes(log.read_bytes())
        got = child_figures(log)
    starts = [r.t_start for r in records if r.path not in ROBOTS]
    lag, ticks, decisions = got["lag"], got["ticks"], got["decisions"]
    return RunFigures(
        variant=variant,
        round=n,
        pages=len(starts),
        pages_per_s=round(steady_rate(starts, WARMUP_S), 1),
        cpu_s={k: round(v, 1) for k, v in cpu.parts().items()}
        | {"other": round(cpu.machine_s - sum(cpu.parts().values()), 1)},
        lag_p50_ms=quantile_ms(lag, ticks, 0.5),
        lag_p99_ms=quantile_ms(lag, ticks, 0.99),
        worst_ms=round(1000 * got["worst_s"]),
        late_share=1 - next(r for b, r in lag if b == LATE_S) / max(ticks, 1),
        ticks=ticks,
        held=got["held"],
        renders=got["renders"],
        sent=sum(v for k, v in decisions.items() if k in ("forced", "detected")),
        script_requests=script_requests,
    )


# -- the bench --------------------------------------------------------------------------------


def write_inputs(work: Path, spec: WebSpec, web: TestWebProcess, args: argparse.Namespace) -> None:
    # The test web's seeds first: its first home page links every script case.
    (work / "seeds.txt").write_text("\n".join([*web.seeds, *spec.seeds]) + "\n")
    hosts = spec.hosts_file.read_text() + web.hosts_file.read_text()
    (work / "hosts").write_text(hosts)
    patterns = ", ".join(f"'{p}'" for p in ("script-app.test", args.force_on))  # TOML literals
    (work / "render.toml").write_text(
        f"[render]\nforce_on = [{patterns}]\nconcurrency = {args.concurrency}\n"
    )


def _ms(value: float) -> str:
    return "inf" if math.isinf(value) else f"{value:g}"


def report(runs: list[RunFigures], meta: dict[str, object]) -> str:
    rows = [
        "| round | variant | plain pages/s | pages | crawl process CPU s (ms/page)"
        " | workers CPU s | driver CPU s | chromium CPU s | other CPU s | lag p50 / p99 ≤ ms"
        " | worst ms | ticks > 50 ms | turns held | renders | sent to browser |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for f in runs:
        c = f.cpu_s
        rows.append(
            f"| {f.round} | {f.variant} | {f.pages_per_s} | {f.pages}"
            f" | {c['crawl']} ({1000 * c['crawl'] / max(f.pages, 1):.2f}) | {c['workers']}"
            f" | {c['driver']} | {c['chromium']} | {c['other']}"
            f" | {_ms(f.lag_p50_ms)} / {_ms(f.lag_p99_ms)}"
            f" | {f.worst_ms} | {100 * f.late_share:.2f} % of {f.ticks} | {f.held}"
            f" | {dict(sorted(f.renders.items())) or '-'} | {f.sent} |"
        )
    rows += ["", "| variant | runs | plain pages/s (mean) | crawl ms/page (mean) | lag p99 ≤ ms"
             " | worst ms | ticks > 50 ms (mean) | renders done+timeout (mean) |",
             "|---|---|---|---|---|---|---|---|"]  # fmt: skip
    for variant in dict.fromkeys(f.variant for f in runs):
        vs = [f for f in runs if f.variant == variant]
        if not vs:
            continue
        n = len(vs)
        ms_page = sum(1000 * f.cpu_s["crawl"] / max(f.pages, 1) for f in vs) / n
        finished = sum(f.renders.get("done", 0) + f.renders.get("timeout", 0) for f in vs) / n
        rows.append(
            f"| {variant} | {n} | {sum(f.pages_per_s for f in vs) / n:.1f} | {ms_page:.2f}"
            f" | {' / '.join(_ms(f.lag_p99_ms) for f in vs)}"
            f" | {' / '.join(str(f.worst_ms) for f in vs)}"
            f" | {100 * sum(f.late_share for f in vs) / n:.2f} % | {finished:.0f} |"
        )
    rows += ["", "```\n" + json.dumps(meta, indent=1) + "\n```"]
    return "\n".join(rows)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--max-time", type=float, default=60.0, help="seconds per crawl")
    parser.add_argument("--concurrency", type=int, default=2, help="[render] concurrency")
    parser.add_argument(
        "--force-on", default=r"\.bench/sec1/p1\.html$", help="an RE2 pattern of plain pages"
    )
    parser.add_argument("--web", type=Path, default=Path("/tmp/trawl-bench-web"))
    parser.add_argument(
        "--stall-ms",
        type=float,
        help="load bench/stall_probe into each crawl (as bench.loop_stalls does) and print"
        " where its loop stalled longer than this",
    )
    parser.add_argument(
        "--nice-browser",
        type=int,
        metavar="N",
        help=f"a third variant, {NICED!r}: this bench renices Playwright's driver and"
        " Chromium's processes to N as it samples them (what a src change would do at launch)",
    )
    args = parser.parse_args()
    spec = generate_web(args.web, n_sites=2000, pages_per_site=50)  # a no-op once written
    work = Path(tempfile.mkdtemp(prefix="render-lag-"))
    with TestWebProcess(sites=3, pages=5, script_cases=True, workdir=work / "testweb") as web:
        write_inputs(work, spec, web, args)
        rig = Rig(spec, web, work, args.max_time, args.stall_ms, args.nice_browser)
        runs = [measure(rig, v, n + 1) for n in range(args.rounds) for v in rig.variants()]
    meta: dict[str, object] = {
        **describe_run(),
        "command": " ".join(["python -m bench.render_lag", *sys.argv[1:]]),
        "web": f"{len(spec.sites)} sites x {spec.pages_per_site} pages + the script cases",
        "config": (work / "render.toml").read_text(),
        "max_time_s": args.max_time,
        "logs": str(work),
    }
    print(report(runs, meta))
    for f in runs if args.stall_ms is not None else ():
        name = f"{f.variant.replace(' ', '-')}-{f.round}"
        print(f"\n{name}, stalls over {args.stall_ms:g} ms (bench/stall_probe):")
        for line in (work / f"stalls-{name}.jsonl").read_text().splitlines():
            print("\n".join(summarise(json.loads(line))))
    return 0


if __name__ == "__main__":
    if sys.argv[1:2] == [CHILD]:
        sys.exit(crawl_child(sys.argv[2:]))
    sys.exit(main())

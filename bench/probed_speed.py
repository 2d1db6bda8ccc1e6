"""A `bench.speed --skip-scrapy` crawl with a probe loaded into trawl's processes.

The probes (bench/gc_probe, bench/stall_probe, bench/worker_probe) are `sitecustomize`
modules: put first on PYTHONPATH, every Python process of the run imports one at start-up,
and it turns itself on in the process it is for (bench/probe_target.py) when its output
variable is set. bench.gc_pauses, bench.loop_stalls and bench.worker_stages run the crawl
through here and read what their probe wrote. Loopback only, like bench.speed.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, NoReturn

if TYPE_CHECKING:
    import argparse

ROOT = Path(__file__).resolve().parent


def add_crawl_options(parser: argparse.ArgumentParser, max_time: float) -> None:
    parser.add_argument("--quick", action="store_true", help="the quick bench web")
    parser.add_argument("--max-time", type=float, default=max_time)
    parser.add_argument("--src", type=Path, help="the trawl sources to run (default: these)")


def run_probed(
    probe: str, env: dict[str, str], args: argparse.Namespace
) -> subprocess.CompletedProcess[str]:
    """Run the crawl with bench/`probe` loaded and `env` set; print its result rows."""
    src = args.src or ROOT.parent / "src"
    env = dict(os.environ, **env)
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT / probe), str(src), str(ROOT.parent)])
    cmd = [sys.executable, "-m", "bench.speed", "--skip-scrapy", "--max-time", str(args.max_time)]
    if args.quick:
        cmd.append("--quick")
    run = subprocess.run(cmd, env=env, cwd=ROOT.parent, capture_output=True, text=True)
    for line in run.stdout.splitlines():
        if line.startswith(("| trawl", "| crawler")):
            print(line)
    return run


def failed(run: subprocess.CompletedProcess[str]) -> NoReturn:
    sys.exit(f"bench.speed failed (exit {run.returncode}): {run.stderr[-2000:]}")


def probe_lines(
    probe: str, out_var: str, args: argparse.Namespace, env: dict[str, str] | None = None
) -> list[str]:
    """Run the crawl with bench/`probe`, which writes JSON lines to the file that $`out_var`
    names, and return those lines; exit with the crawl's error if it failed or wrote none."""
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "probe.jsonl"
        run = run_probed(probe, {out_var: str(out), **(env or {})}, args)
        if run.returncode != 0 or not out.exists():
            failed(run)
        return out.read_text().splitlines()

"""How long `trawl` takes to start (issue 14): median wall time of short commands.

    python -m bench.startup [--repeats 15] [--src DIR] [--label NAME]

Runs each command `--repeats` times as `python -m trawl ...` (with `--src` first on
PYTHONPATH: point it at another checkout's `src` to measure that code, e.g. the code before
a change) and prints the median and spread of the wall times, then the modules that
`python -X importtime` says cost the most in `import trawl.cli.dispatch` (the parser) and in
`trawl page`.

The read-back commands read a small data directory that this script makes first, with a
short crawl of the local test web (this checkout's code does the crawl), so `trawl page`
and `trawl host` find a record. Nothing leaves the machine: the test web is on loopback.
Results go to bench/results/startup-<label>.json.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

from bench.runinfo import describe_run
from trawl.testweb.process import TestWebProcess

HERE = Path(__file__).resolve().parent
OWN_SRC = HERE.parent / "src"
CONTACT = "https://trawl.invalid/bench-startup"


def make_data_dir(data: Path, workdir: Path) -> tuple[str, str]:
    """A few pages of one test-web site crawled into `data`; returns (page URL, host)."""
    with TestWebProcess(sites=1, pages=4, seed=1, workdir=workdir) as web:
        web.start()
        seed = web.seeds[0]
        crawl = [sys.executable, "-m", "trawl", "crawl", "--data", str(data)]
        crawl += ["--hosts-file", str(web.hosts_file), "--contact", CONTACT]
        crawl += ["--max-pages", "4", "--max-time", "30", seed]
        subprocess.run(crawl, env=_env(OWN_SRC), check=True, capture_output=True)
        return seed, web.web.seed_domains[0]


def _env(src: Path) -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(src)}


def time_command(args: list[str], src: Path, repeats: int) -> dict[str, float]:
    """Wall seconds of `python -m trawl ARGS`: median, min and max over `repeats` runs."""
    command = [sys.executable, "-m", "trawl", *args]
    times = []
    for _ in range(repeats):
        started = time.perf_counter()
        done = subprocess.run(command, env=_env(src), capture_output=True, check=False)
        times.append(time.perf_counter() - started)
        if done.returncode != 0:
            raise RuntimeError(f"{command} exited {done.returncode}: {done.stderr[-500:]!r}")
    return {"median_s": statistics.median(times), "min_s": min(times), "max_s": max(times)}


def import_offenders(python_args: list[str], src: Path, top: int = 8) -> list[tuple[str, float]]:
    """`python -X importtime ARGS`: self time summed by top-level package (trawl's modules
    one by one), largest first, in seconds."""
    command = [sys.executable, "-X", "importtime", *python_args]
    done = subprocess.run(command, env=_env(src), capture_output=True, text=True, check=False)
    by_root: dict[str, float] = defaultdict(float)
    for line in done.stderr.splitlines():
        if not line.startswith("import time:") or "self [us]" in line:
            continue
        self_us, _cumulative, name = line.removeprefix("import time:").split("|")
        name = name.strip()
        root = name if name.startswith("trawl.") else name.split(".")[0]
        by_root[root] += int(self_us) / 1e6
    return sorted(by_root.items(), key=lambda kv: -kv[1])[:top]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeats", type=int, default=15)
    parser.add_argument("--src", type=Path, default=OWN_SRC, help="the trawl code to measure")
    parser.add_argument("--label", default="current", help="names the results file")
    args = parser.parse_args()
    src = args.src.resolve()
    with tempfile.TemporaryDirectory(prefix="trawl-bench-startup-") as tmp:
        data = Path(tmp) / "data"
        page, host = make_data_dir(data, Path(tmp) / "web")
        commands = {
            "python -c pass": None,
            "trawl --version": ["--version"],
            "trawl --help": ["--help"],
            "trawl page --data DIR URL": ["page", "--data", str(data), page],
            "trawl host HOST --data DIR": ["host", host, "--data", str(data)],
            "trawl pages --data DIR": ["pages", "--data", str(data)],
        }
        figures = {}
        for name, trawl_args in commands.items():
            if trawl_args is None:
                figures[name] = _time_python(src, args.repeats)
            else:
                figures[name] = time_command(trawl_args, src, args.repeats)
            f = figures[name]
            print(
                f"{name:28} median {f['median_s'] * 1000:7.1f} ms"
                f"  (min {f['min_s'] * 1000:.1f}, max {f['max_s'] * 1000:.1f}; {args.repeats} runs)"
            )
        offenders = {
            "import trawl.cli.dispatch": import_offenders(["-c", "import trawl.cli.dispatch"], src),
            "trawl page": import_offenders(["-m", "trawl", "page", "--data", str(data), page], src),
        }
    for what, rows in offenders.items():
        print(f"\nlargest import costs in `{what}` (self time by package):")
        for name, seconds in rows:
            print(f"  {seconds * 1000:7.1f} ms  {name}")
    run = {**describe_run(), "src": str(src), "repeats": args.repeats}
    out = HERE / "results" / f"startup-{args.label}.json"
    out.parent.mkdir(exist_ok=True)
    out.write_text(json.dumps({"run": run, "figures": figures, "imports": offenders}, indent=1))
    print(f"\n{run['machine']}; src {src}; saved {out}")
    return 0


def _time_python(src: Path, repeats: int) -> dict[str, float]:
    """The floor: the interpreter starting and exiting, nothing imported."""
    times = []
    for _ in range(repeats):
        started = time.perf_counter()
        subprocess.run([sys.executable, "-c", "pass"], env=_env(src), check=True)
        times.append(time.perf_counter() - started)
    return {"median_s": statistics.median(times), "min_s": min(times), "max_s": max(times)}


if __name__ == "__main__":
    sys.exit(main())

"""Renders per second, CPU-seconds per render and the browser's memory (issue 18).

Run: `python -m bench.render_bench [--pages 40] [--concurrency 2]`. Needs Debian's chromium.

The page is a small empty-shell app: a 1 KB HTML shell, a ~60 KB bundle that builds a
heading, 40 paragraphs and 60 links, and a stylesheet. Everything the browser asks for is
answered from memory (no socket is opened), so the figures are the browser's own cost:
- cold: every page on a site of its own, so the bundle and stylesheet are fetched each time;
- warm: every page on one site, so after the first they come from the per-site cache;
- warm at `--concurrency` renders at once on the one browser.
The baseline is `cold`: the ratios show what the cache and concurrency buy.

CPU-seconds count this process (Python and its event loop), Playwright's node driver and
Chromium's whole tree, renderers it has reaped included (/proc/<pid>/stat). Memory is the
browser tree's summed VmRSS (overstated: shared pages count in every process) and PSS (each
page once), sampled after every render; the peak of each is printed.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import time
from dataclasses import dataclass

from bench.runinfo import describe_run
from trawl.render.browser import ChromiumRenderer
from trawl.render.ports import RenderJob, RenderState, SubresourceAnswer
from trawl.render.process_tree import process_tree, tree_cpu_s, tree_pss_bytes, tree_rss_bytes

SHELL = (
    b"<!doctype html><html><head><meta charset=utf-8><title>Shop</title>"
    b"<link rel=stylesheet href=/static/app.css></head><body>"
    b"<noscript>You need to enable JavaScript to run this app.</noscript>"
    b"<div id=root></div><script src=/static/app.js></script></body></html>"
)
APP_JS = (
    "const words = 'alpha beta gamma delta epsilon zeta eta theta iota kappa'.split(' ');\n"
    "function para(n) { let s = ''; for (let i = 0; i < 60; i++) s += words[(n + i) % 10] + ' ';"
    " return `<p>${s}</p>`; }\n"
    "const root = document.getElementById('root');\n"
    "let html = '<h1>Catalogue</h1>';\n"
    "for (let n = 0; n < 40; n++) html += para(n);\n"
    'for (let n = 0; n < 60; n++) html += `<a href="/item/${n}">item ${n}</a> `;\n'
    "root.innerHTML = html;\n"
    # Padding standing for a framework's code: parsed and compiled, mostly not run.
    + "".join(f"function unused{n}(x) {{ return x * {n} + {n % 7}; }}\n" for n in range(1800))
).encode()
APP_CSS = b"body{font:16px sans-serif;margin:2em} h1{color:#333} a{margin-right:.5em}\n" * 40
ANSWERS = {
    "/static/app.js": SubresourceAnswer(200, (("content-type", "text/javascript"),), APP_JS),
    "/static/app.css": SubresourceAnswer(200, (("content-type", "text/css"),), APP_CSS),
}
NOT_FOUND = SubresourceAnswer(404, (("content-type", "text/plain"),), b"not found")


async def fetch(url: str, resource_type: str) -> SubresourceAnswer | None:
    return ANSWERS.get("/" + url.split("/", 3)[3], NOT_FOUND)


@dataclass
class Figures:
    name: str
    renders: int
    wall_s: float
    cpu_s: float
    peak_rss_mb: float
    peak_pss_mb: float
    states: dict[str, int]

    def line(self, baseline: Figures | None) -> str:
        rate = self.renders / self.wall_s
        cpu = self.cpu_s / self.renders
        ratio = ""
        if baseline is not None:
            base_rate = baseline.renders / baseline.wall_s
            base_cpu = baseline.cpu_s / baseline.renders
            ratio = f"  ({rate / base_rate:.2f}x renders/s, {cpu / base_cpu:.2f}x CPU)"
        return (
            f"{self.name:<16} {rate:6.2f} renders/s  {cpu:6.3f} CPU-s/render"
            f"  peak RSS {self.peak_rss_mb:5.0f} MB  PSS {self.peak_pss_mb:5.0f} MB"
            f"  {self.states}{ratio}"
        )


def job(site: str, n: int) -> RenderJob:
    return RenderJob(
        url=f"http://www.{site}/page/{n}",
        site=site,
        html=SHELL,
        content_type="text/html; charset=utf-8",
        timeout_s=10.0,
        max_subrequests=20,
        max_subresource_bytes=5_000_000,
    )


def our_cpu_s() -> float:
    """This process, the node driver and Chromium: the tree under this process."""
    return tree_cpu_s(process_tree(os.getpid()))


def memory(tree: tuple[int, ...]) -> tuple[int, int, float]:
    """(summed VmRSS, summed PSS, the CPU-seconds this reading took)."""
    started = time.thread_time()
    rss, pss = tree_rss_bytes(tree), tree_pss_bytes(tree)
    return rss, pss, time.thread_time() - started


async def run(
    renderer: ChromiumRenderer, name: str, jobs: list[RenderJob], concurrency: int
) -> Figures:
    peaks = [0, 0]
    sampling = [0.0]  # CPU-seconds spent reading memory figures: not the renders' cost
    states: dict[str, int] = {}
    queue = list(reversed(jobs))

    async def worker() -> None:
        while queue:
            result = await renderer.render(queue.pop(), fetch)
            if result.state is not RenderState.DONE or "item 59" not in result.html:
                sys.exit(f"render_bench: {result.state.value} {result.message}")
            states[result.state.value] = states.get(result.state.value, 0) + 1
            tree = await renderer.browser_processes()
            rss, pss, spent = await asyncio.to_thread(memory, tree)
            peaks[0], peaks[1] = max(peaks[0], rss), max(peaks[1], pss)
            sampling[0] += spent

    cpu0, t0 = our_cpu_s(), time.monotonic()
    async with asyncio.TaskGroup() as group:
        for _ in range(concurrency):
            group.create_task(worker())
    wall, cpu = time.monotonic() - t0, our_cpu_s() - cpu0 - sampling[0]
    return Figures(name, len(jobs), wall, cpu, peaks[0] / 1e6, peaks[1] / 1e6, states)


async def main(pages: int, concurrency: int) -> None:
    renderer = ChromiumRenderer(
        user_agent="trawl-bench/1.0", recycle_after_pages=10 * pages + 10, max_rss_mb=100_000
    )
    try:
        await renderer.render(job("warmup.test", 0), fetch)  # launch outside the timings
        cold = await run(renderer, "cold", [job(f"s{n}.test", n) for n in range(pages)], 1)
        warm = await run(renderer, "warm", [job("one.test", n) for n in range(pages)], 1)
        together = await run(
            renderer,
            f"warm x{concurrency}",
            [job("one.test", n) for n in range(pages)],
            concurrency,
        )
    finally:
        await renderer.close()
    info = describe_run()
    print(f"command: {info['command']}\ncommit:  {info['commit']}\nmachine: {info['machine']}")
    print(f"chromium: {renderer.executable}; {pages} renders each; quiet wait 0.5 s per page")
    print(cold.line(None))
    print(warm.line(cold))
    print(together.line(cold))
    print(f"renderer: {renderer!r}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pages", type=int, default=40)
    parser.add_argument("--concurrency", type=int, default=2)
    args = parser.parse_args()
    asyncio.run(main(args.pages, args.concurrency))

"""Endpoint latencies of `trawl serve` while it crawls hard, against the same process idle.

    python -m bench.api_latency [--sites 2000] [--pages 50] [--warmup 20] [--requests 100]
                                [--rate 20] [--extra-seeds N]

Serves the bench web farm (nginx, as bench.speed) and runs `trawl serve` on it. After
`--warmup` seconds of crawling, every endpoint is asked `--requests` times, one after
another on a kept-alive connection at `--rate` calls a second, and p50/p95/p99/max are
recorded: that is the "busy" column. The crawl's pages/s before and while measuring
show that it was measured under a full-speed crawl. Then every site is paused through the
API itself (PUT /v1/hosts/{host}/limits), the crawl drains, and the same requests are made
again. `--extra-seeds N` seeds the crawl with N more URLs (query-string variants of the home
pages) beside the home pages: the cost of a seed added through the API (`POST /v1/seeds`
with a URL new each call) grew with the seeds a crawl has (issue 17, thirty-fifth session).
The idle phase is the "idle" baseline of the same process, data and database size. The ratio
busy/idle is the figure to compare across runs; the absolute numbers depend on the machine
and its load. Results go to
bench/results/api-latency.json. Traffic: loopback only.
"""

from __future__ import annotations

import argparse
import http.client
import itertools
import json
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.parse
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import TYPE_CHECKING

from bench.runinfo import describe_run
from bench.webfarm.generate import generate_web
from bench.webfarm.nginx import Nginx

if TYPE_CHECKING:
    from collections.abc import Callable

RESULTS = Path(__file__).parent / "results" / "api-latency.json"
TOKEN = "bench-token"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Api:
    """One kept-alive HTTP/1.1 connection to the API."""

    def __init__(self, port: int) -> None:
        self.conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)

    def call(self, method: str, path: str, body: object = None) -> tuple[int, bytes, float]:
        headers = {"Authorization": f"Bearer {TOKEN}"}
        data = None
        if body is not None:
            data = json.dumps(body).encode()
            headers["Content-Type"] = "application/json"
        try:
            return self._exchange(method, path, data, headers)
        except (http.client.RemoteDisconnected, ConnectionResetError, BrokenPipeError):
            # uvicorn closes a connection idle for 5 s (the warm-up): open a new one.
            self.conn.close()
            return self._exchange(method, path, data, headers)

    def _exchange(
        self, method: str, path: str, data: bytes | None, headers: dict[str, str]
    ) -> tuple[int, bytes, float]:
        start = time.perf_counter()
        self.conn.request(method, path, body=data, headers=headers)
        response = self.conn.getresponse()
        payload = response.read()
        return response.status, payload, time.perf_counter() - start

    def json(self, path: str) -> object:
        status, payload, _ = self.call("GET", path)
        if status != 200:
            raise RuntimeError(f"GET {path}: {status} {payload[:200]!r}")
        return json.loads(payload)


def wait_until_up(api: Api, proc: subprocess.Popen[bytes], timeout_s: float = 60) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError("trawl serve exited at start")
        try:
            api.json("/v1/stats")
            return
        except (OSError, http.client.HTTPException):
            api.conn.close()
            time.sleep(0.3)
    raise RuntimeError("trawl serve did not answer")


def endpoints(api: Api, seeds: list[str]) -> dict[str, tuple[str, str, object]]:
    """Name -> (method, path, body), built from what the crawl has stored so far."""
    events = api.json("/v1/events?from=0&limit=50")
    if not isinstance(events, dict) or not events["events"]:
        raise RuntimeError("the crawl stored nothing during the warm-up")
    page = events["events"][-1]
    site = urllib.parse.urlsplit(seeds[0]).hostname or ""
    paths = set(api.json("/openapi.json")["paths"])  # type: ignore[index]
    out: dict[str, tuple[str, str, object]] = {
        "GET /v1/pages/{urlHash}": ("GET", f"/v1/pages/{page['urlHash']}", None),
        "GET /v1/pages/{urlHash}/body": ("GET", f"/v1/pages/{page['urlHash']}/body", None),
        "GET /v1/pages?url=": ("GET", "/v1/pages?url=" + urllib.parse.quote(page["url"]), None),
        "GET /v1/hosts/{host}": ("GET", f"/v1/hosts/{site}", None),
        "GET /v1/events (100)": ("GET", "/v1/events?from=0&limit=100", None),
        "GET /v1/stats": ("GET", "/v1/stats", None),
        "GET /metrics": ("GET", "/metrics", None),
        "POST /v1/seeds (1 URL)": ("POST", "/v1/seeds", {"urls": [seeds[0]]}),
        # A seed the crawl does not have yet, each call (the row above re-posts a seed).
        "POST /v1/seeds (1 new URL)": ("POST", "/v1/seeds", _new_seed(seeds[0])),
        "PUT /v1/hosts/{host}/limits": ("PUT", f"/v1/hosts/{site}/limits", {"crawlDelay": 1}),
    }
    if "/v1/stats/history" in paths:
        out["GET /v1/stats/history"] = ("GET", "/v1/stats/history", None)
    if "/v1/sites" in paths:
        out["GET /v1/sites"] = ("GET", "/v1/sites?sort=troubled&limit=20", None)
    out["GET / (dashboard)"] = ("GET", "/", None)
    return out


def _new_seed(home: str) -> Callable[[], dict[str, list[str]]]:
    made = itertools.count()
    return lambda: {"urls": [f"{home}?api-seed={next(made)}"]}


def measure(
    api: Api, plan: dict[str, tuple[str, str, object]], n: int, rate: float
) -> dict[str, dict]:
    """`n` calls of each endpoint, at most `rate` a second (0: back to back)."""
    figures: dict[str, dict] = {}
    gap = 1.0 / rate if rate > 0 else 0.0
    for name, (method, path, body) in plan.items():
        times = []
        for _ in range(n):
            started = time.perf_counter()
            status, payload, seconds = api.call(method, path, body() if callable(body) else body)
            time.sleep(max(0.0, gap - (time.perf_counter() - started)))
            if status != 200:
                raise RuntimeError(f"{name}: {status} {payload[:200]!r}")
            times.append(seconds * 1000)
        print(f"  {name}: p50 {statistics.median(times):.2f} ms", file=sys.stderr, flush=True)
        q = statistics.quantiles(times, n=100)
        figures[name] = {
            "p50_ms": round(q[49], 2),
            "p95_ms": round(q[94], 2),
            "p99_ms": round(q[98], 2),
            "max_ms": round(max(times), 2),
        }
    return figures


def pause_everything(port: int, sites: list[str], connections: int = 16) -> float:
    """PUT a pause on every site, `connections` requests at a time; returns seconds taken."""

    def pause(chunk: list[str]) -> None:
        api = Api(port)
        for site in chunk:
            status, payload, _ = api.call("PUT", f"/v1/hosts/{site}/limits", {"paused": True})
            if status != 200:
                raise RuntimeError(f"pause {site}: {status} {payload[:200]!r}")

    start = time.perf_counter()
    with ThreadPoolExecutor(connections) as pool:
        list(pool.map(pause, [sites[i::connections] for i in range(connections)]))
    return time.perf_counter() - start


def run(args: argparse.Namespace, tmp: Path) -> dict[str, object]:
    root = args.web
    spec = generate_web(root, n_sites=args.sites, pages_per_site=args.pages)
    seeds_file = tmp / "seeds.txt"
    extra = [f"{spec.seeds[n % len(spec.seeds)]}?seed={n}" for n in range(args.extra_seeds)]
    seeds_file.write_text("\n".join([*spec.seeds, *extra]) + "\n")
    (tmp / "token").write_text(TOKEN)
    port = free_port()
    command = [
        sys.executable, "-m", "trawl", "serve", "--seeds-file", str(seeds_file),
        "--data", str(tmp / "data"), "--hosts-file", str(spec.hosts_file),
        "--contact", "https://trawl.invalid/bench", "--listen", f"127.0.0.1:{port}",
        "--token-file", str(tmp / "token"), "--max-time", str(args.warmup + 600),
    ]  # fmt: skip
    with Nginx(root, spec, access_log=tmp / "access.jsonl"):
        proc = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        try:
            api = Api(port)
            wait_until_up(api, proc)
            time.sleep(args.warmup - 5)
            warm = api.json("/v1/stats")
            time.sleep(5)
            plan = endpoints(api, spec.seeds)
            before = api.json("/v1/stats")
            warm_rate = (before["pagesFetched"] - warm["pagesFetched"]) / 5  # type: ignore[index]
            t0 = time.monotonic()
            print("busy:", file=sys.stderr)
            busy = measure(api, plan, args.requests, args.rate)
            after = api.json("/v1/stats")
            busy_rate = (after["pagesFetched"] - before["pagesFetched"]) / (  # type: ignore[index]
                time.monotonic() - t0
            )
            lag = after.get("loopLag") if isinstance(after, dict) else None  # issue 17
            domains = sorted({s.host for s in spec.sites})  # a hostname acts on its domain
            pause_s = pause_everything(port, domains)
            time.sleep(5)  # requests in flight drain
            print(f"paused {len(domains)} sites in {pause_s:.1f} s; idle:", file=sys.stderr)
            idle = measure(api, plan, args.requests, args.rate)
        finally:
            proc.send_signal(signal.SIGTERM)
            _, err = proc.communicate(timeout=120)
    if proc.returncode != 0:
        raise RuntimeError(f"trawl serve exited {proc.returncode}: {err[-2000:]!r}")
    return {
        "busy": busy,
        "idle": idle,
        "crawl_pages_per_s_while_measuring": round(busy_rate, 1),
        "crawl_pages_per_s_before_measuring": round(warm_rate, 1),
        "requests_per_s": args.rate,
        "pause_all_sites_s": round(pause_s, 2),
        "sites_paused": len(domains),
        "loop_lag_at_end_of_busy": lag,
    }


def report(result: dict[str, object]) -> str:
    busy, idle = result["busy"], result["idle"]
    assert isinstance(busy, dict)
    assert isinstance(idle, dict)
    lines = [
        "| endpoint | busy p50 ms | busy p95 ms | busy p99 ms | idle p50 ms | p50 busy/idle |",
        "|---|---|---|---|---|---|",
    ]
    for name, b in busy.items():
        i = idle[name]
        ratio = b["p50_ms"] / max(i["p50_ms"], 1e-6)
        lines.append(
            f"| {name} | {b['p50_ms']} | {b['p95_ms']} | {b['p99_ms']} | {i['p50_ms']} "
            f"| {ratio:.1f}x |"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    # The 50-page web the other benches share (bench.speed's full web has 100 pages a site,
    # for 150 s runs): the ~90 s of busy crawl here fetch well under its 110,250 pages.
    p.add_argument("--sites", type=int, default=2000)
    p.add_argument("--pages", type=int, default=50)
    p.add_argument("--warmup", type=float, default=20.0, help="crawl seconds before measuring")
    p.add_argument("--requests", type=int, default=100, help="requests per endpoint and phase")
    # An API client polling, not a load test: back-to-back calls keep the API's thread busy
    # and take the GIL from the crawl loop (the crawl fell from 315 to 130 pages/s under
    # 575 calls/s of GET /v1/stats), so "under a full-speed crawl" would not hold.
    p.add_argument("--rate", type=float, default=20.0, help="calls per second (0: no pause)")
    p.add_argument("--web", type=Path, default=Path("/tmp/trawl-bench-web"))
    p.add_argument("--extra-seeds", type=int, default=0, help="more seed URLs (see above)")
    args = p.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="trawl-api-latency-") as tmp:
        result = run(args, Path(tmp))
    meta = {
        **describe_run(), "sites": args.sites, "pages": args.pages, "warmup_s": args.warmup,
        "extra_seeds": args.extra_seeds,
    }  # fmt: skip
    RESULTS.parent.mkdir(exist_ok=True)
    RESULTS.write_text(json.dumps({"meta": meta, **result}, indent=1))
    print(report(result))
    print(
        f"\ncrawl before measuring: {result['crawl_pages_per_s_before_measuring']} pages/s, "
        f"while measuring ({args.rate:g} calls/s): "
        f"{result['crawl_pages_per_s_while_measuring']} pages/s; "
        f"pausing {result['sites_paused']} sites over the API took {result['pause_all_sites_s']} s"
    )
    lag = result.get("loop_lag_at_end_of_busy")
    if isinstance(lag, dict):
        p50, p99 = lag.get("p50"), lag.get("p99")
        print(
            f"crawl loop lag over warm-up and busy phase (bucket bounds): p50 <= {p50} s, "
            f"p99 <= {p99} s, worst {lag.get('worst')} s"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())

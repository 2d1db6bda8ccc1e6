"""How long one big page, or one big sitemap, holds up the crawl loop (issue 17).

Run: python -m bench.big_pages [--base /tmp/base/src] [--links 250000] [--entries 50000]

A loopback server (127.0.0.9, a port the OS picks) serves one site: a home page of
`--links` distinct links (~9.5 MB at 250,000: an index page under fetch.max_body_bytes)
and a sitemap of `--entries` URLs (50,000 is the sitemaps.org maximum a file). Each tree
crawls it with `python -m trawl crawl --max-time 25` in a process of its own, once for
the page and once for the sitemap, and the crawl's own summary gives the worst lag of its
event loop, the URLs left in its queue and what it skipped. Other crawls would have waited
that long for every timer, response and API call. Traffic: loopback only, bounded by the
crawl's --max-time.
"""

from __future__ import annotations

import argparse
import http.server
import os
import re
import subprocess
import sys
import tempfile
import threading
from pathlib import Path

from bench.runinfo import compared_trees, describe_run

ADDRESS = "127.0.0.9"
HOST = "big.bench"
MAX_TIME_S = 25


def serve(links: int, entries: int) -> http.server.ThreadingHTTPServer:
    page = (
        "<html><body>"
        + "".join(f'<a href="/item/{i}">item {i}</a>\n' for i in range(links))
        + "</body></html>"
    ).encode()
    leaf = b"<html><body><p>an item</p><a href='/'>home</a></body></html>"

    class Handler(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_GET(self) -> None:
            port = self.server.server_address[1]
            if self.path == "/robots.txt":
                body, kind = b"User-agent: *\nAllow: /\n", "text/plain"
            elif self.path == "/sitemap.xml":
                body, kind = sitemap(port, entries), "application/xml"
            elif self.path == "/" and links:
                body, kind = page, "text/html"
            else:
                body, kind = leaf, "text/html"
            self.send_response(200)
            self.send_header("Content-Type", kind)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: object) -> None:
            return

    server = http.server.ThreadingHTTPServer((ADDRESS, 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


def sitemap(port: int, entries: int) -> bytes:
    urls = "".join(f"<url><loc>http://{HOST}:{port}/entry/{i}</loc></url>" for i in range(entries))
    ns = "http://www.sitemaps.org/schemas/sitemap/0.9"
    return f'<?xml version="1.0"?><urlset xmlns="{ns}">{urls}</urlset>'.encode()


def crawl(src: Path, port: int) -> dict[str, str]:
    with tempfile.TemporaryDirectory(prefix="bench-big-") as tmp:
        env = {**os.environ, "PYTHONPATH": str(src)}
        command = [
            sys.executable, "-m", "trawl", "crawl", f"http://{HOST}:{port}/",
            "--resolve", f"{HOST}:{ADDRESS}", "--allow-private",
            "--contact", "https://trawl.invalid/bench", "--data", str(Path(tmp) / "data"),
            "--max-time", str(MAX_TIME_S),
        ]  # fmt: skip
        run = subprocess.run(
            command,
            capture_output=True,
            text=True,
            env=env,
            timeout=MAX_TIME_S + 60,
        )
    out = run.stdout + run.stderr
    if run.returncode != 0:
        raise SystemExit(f"crawl failed ({run.returncode}):\n{out[-2000:]}")
    worst = re.search(r"event loop lag .* worst ([\d.]+) ms", out)
    left = re.search(r"URLs left in queue (\d+)", out)
    skipped = re.search(r"skipped (\{[^}]*\})", out)
    return {
        "worst lag ms": worst.group(1) if worst else "?",
        "left in queue": left.group(1) if left else "?",
        "skipped": skipped.group(1) if skipped else "?",
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--base", type=Path, help="a base checkout's src/ to compare with")
    parser.add_argument("--links", type=int, default=250_000)
    parser.add_argument("--entries", type=int, default=50_000)
    args = parser.parse_args()
    trees = compared_trees(args.base)
    print(describe_run())
    cases = {
        f"a page of {args.links:,} links": serve(args.links, 0),
        f"a sitemap of {args.entries:,} entries": serve(0, args.entries),
    }
    print("| case | tree | worst loop lag ms | URLs left in queue | skipped |")
    print("|---|---|---|---|---|")
    for case, server in cases.items():
        for name, src in trees.items():
            got = crawl(src, server.server_address[1])
            print(
                f"| {case} | {name} | {got['worst lag ms']} | {got['left in queue']}"
                f" | {got['skipped']} |"
            )
    for server in cases.values():
        server.shutdown()


if __name__ == "__main__":
    main()

"""`python -m trawl.testweb`: serve a test web until SIGTERM/SIGINT.

Prints one JSON line when ready: {"ready": true, "port", "seeds", "hosts_file", "log", "sites"}
(and "hostile": [domains] with --hostile, "freshness": true with --freshness).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import signal
import sys
from pathlib import Path

from trawl.testweb.server import TestWebServer
from trawl.testweb.sites import build_web


def _parse(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m trawl.testweb", description=__doc__)
    parser.add_argument("--sites", type=int, default=60, help="number of sites (default 60)")
    parser.add_argument("--pages", type=int, default=20, help="pages per site (default 20)")
    parser.add_argument("--seed", type=int, default=1, help="generator seed (default 1)")
    parser.add_argument("--log", type=Path, required=True, help="request log (JSON lines)")
    parser.add_argument("--hosts-out", type=Path, required=True, help="hosts file to write")
    parser.add_argument("--port", type=int, default=None, help="port (default: a free one)")
    parser.add_argument("--hostile", action="store_true", help="add the hostile sites (127.3.0.x)")
    parser.add_argument(
        "--freshness",
        action="store_true",
        help="add live and static pages, sitemaps, copies and popular pages (needs >= 12 sites)",
    )
    parser.add_argument(
        "--robots-cases",
        action="store_true",
        help="give two sites robots.txt groups named like trawl and a cross-site redirect",
    )
    parser.add_argument(
        "--scope-cases",
        action="store_true",
        help="add a cross-site redirect, a www. page and a sitemap to site 3 (needs >= 4 sites)",
    )
    parser.add_argument(
        "--script-cases",
        action="store_true",
        help="add the script-built sites and pages of issue 18 (needs >= 3 sites)",
    )
    parser.add_argument(
        "--exit-with-stdin",
        action="store_true",
        help="stop when stdin closes (the parent that holds its other end has ended)",
    )
    return parser.parse_args(argv)


def _stop_on_stdin_eof(loop: asyncio.AbstractEventLoop, stop: asyncio.Event) -> None:
    """A parent killed outright (SIGKILL) cannot stop its test web: the pipe it held closes
    instead, and a web left running would keep the port the parent's rerun needs."""
    fd = sys.stdin.fileno()

    def on_readable() -> None:
        if not os.read(fd, 4096):
            loop.remove_reader(fd)
            stop.set()

    loop.add_reader(fd, on_readable)


async def _serve(args: argparse.Namespace) -> int:
    web = build_web(
        args.sites,
        args.pages,
        args.seed,
        hostile=args.hostile,
        freshness=args.freshness,
        robots_cases=args.robots_cases,
        scope_cases=args.scope_cases,
        script_cases=args.script_cases,
    )
    loop = asyncio.get_running_loop()
    stop = asyncio.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    if args.exit_with_stdin:
        _stop_on_stdin_eof(loop, stop)
    server = TestWebServer(web, args.log)
    try:
        port = await server.start(loop, args.port)
        args.hosts_out.write_text("\n".join(web.hosts_lines(port)) + "\n", encoding="utf-8")
        ready = {
            "ready": True,
            "port": port,
            "seeds": web.seed_urls(port),
            "hosts_file": str(args.hosts_out),
            "log": str(args.log),
            "sites": len(web.sites),
        }
        if web.hostile:
            ready["hostile"] = [site.domain for site in web.hostile]
        if web.freshness_spec is not None:
            ready["freshness"] = True
        print(json.dumps(ready), flush=True)
        await stop.wait()
    finally:
        await server.close()
    return 0


def main(argv: list[str] | None = None) -> int:
    return asyncio.run(_serve(_parse(argv)))


if __name__ == "__main__":
    sys.exit(main())

"""`trawl demo`: crawl a built-in local test web end to end, then show what came out.

The test web (trawl.testweb) runs in its own process on loopback addresses 127.x.y.z; the
crawl reaches it only through a hosts file, so nothing leaves the machine.
"""

from __future__ import annotations

import contextlib
import itertools
import json
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING

from trawl.cli.runner import print_summary, run_async, run_crawl

if TYPE_CHECKING:
    import argparse
    from collections.abc import Iterator

    from trawl.testweb.process import TestWebProcess
    from trawl.testweb.request_log import RequestLogRecord

# Start-up (issue 14): the parser imports this module, so the crawl's and the test web's
# modules are imported by the functions that use them, when the demo runs.

DEMO_CONTACT = "https://trawl.invalid/demo-contact"
# A rerun in the same directory resumes the crawl; the test web must come back on the same
# port, or every page gets a new URL and the rerun stores the first run's pages again as
# near-copies of themselves.
WEB_FILE = "demo-web.json"
# The web's request log of every run on this web in this directory: a resumed crawl is
# judged polite across its runs (robots.txt was fetched by an earlier run; the restart
# kept each site's gap), not as if its first request here were its first ever.
REQUESTS_FILE = "demo-requests.jsonl"
# The running web's files (its request log, hosts file): in the data directory, so a run
# killed before it could add its log to REQUESTS_FILE leaves it for the rerun to add.
WEB_DIR = "demo-web"
# A killed run's web notices its parent's end (its stdin closes) and frees the port within
# a fraction of a second; a rerun started at once tries the port this many times.
_PORT_ATTEMPTS = 3
_PORT_RETRY_S = 1.0


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("demo", help="crawl a built-in local test web and summarise")
    p.add_argument("--sites", type=int, default=60, help="sites in the test web (default 60)")
    p.add_argument("--pages", type=int, default=20, help="pages per site (default 20)")
    p.add_argument("--seed", type=int, default=1, help="test web generator seed")
    p.add_argument("--data", type=Path, default=Path("trawl-demo-data"), help="data directory")
    p.add_argument("--max-time", type=float, default=300.0, help="stop after this many seconds")
    p.set_defaults(func=cmd_demo)


def _web_key(args: argparse.Namespace) -> dict[str, int]:
    return {"sites": args.sites, "pages": args.pages, "seed": args.seed}


def _earlier_port(args: argparse.Namespace, data: Path) -> int | None:
    try:
        saved = json.loads((data / WEB_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    port = saved.get("port") if isinstance(saved, dict) else None
    same_web = isinstance(saved, dict) and all(saved.get(k) == v for k, v in _web_key(args).items())
    return port if same_web and isinstance(port, int) and 0 < port < 65536 else None


@contextlib.contextmanager
def _started_web(args: argparse.Namespace, data: Path) -> Iterator[TestWebProcess]:
    web = _start_web(args, data)
    try:
        yield web
    finally:
        web.stop()


class _StoppedEarly(Exception):
    """A stop signal came while the test web was starting (and took it down, as the
    process group's member it is): there is no crawl to checkpoint."""


def _start_web(args: argparse.Namespace, data: Path) -> TestWebProcess:
    """The test web, on the earlier demo's port when this directory holds one."""
    from trawl.loop.stop_signals import stop_requested
    from trawl.testweb.process import TestWebProcess

    port = _earlier_port(args, data)
    workdir = data / WEB_DIR
    for attempt in range(_PORT_ATTEMPTS if port is not None else 0):
        try:
            return TestWebProcess(
                sites=args.sites, pages=args.pages, seed=args.seed, workdir=workdir, port=port
            ).start()
        except RuntimeError:
            if stop_requested():  # not a busy port: the web took the signal too
                raise _StoppedEarly from None
            if attempt + 1 < _PORT_ATTEMPTS:
                time.sleep(_PORT_RETRY_S)
    if port is not None:
        aside = _set_aside(data)
        sys.stderr.write(
            f"trawl demo: port {port} of the earlier demo in {data} is busy: its stored URLs "
            f"would point at nothing, so this run starts afresh (the earlier data is now in "
            f"{aside})\n"
        )
        data.mkdir(parents=True)
    try:
        return TestWebProcess(
            sites=args.sites, pages=args.pages, seed=args.seed, workdir=workdir
        ).start()
    except RuntimeError:
        if stop_requested():
            raise _StoppedEarly from None
        raise


def _set_aside(data: Path) -> Path:
    """Move the earlier demo's directory out of the way (never while a trawl uses it)."""
    from trawl.store.layout import lock_data_dir

    lock_data_dir(data).close()  # raises DataError while another trawl holds it
    for n in itertools.count(1):
        aside = data.with_name(f"{data.name}.old-{n}")
        if not aside.exists():
            data.rename(aside)
            return aside
    raise AssertionError("unreachable")


def _add_leftover_log(args: argparse.Namespace, data: Path) -> None:
    """Add the request log a killed run left in WEB_DIR to the history of its web, or, for
    another web, start the history afresh; the web about to start truncates that log."""
    leftover = data / WEB_DIR / "requests.jsonl"
    same_web = _earlier_port(args, data) is not None
    if not same_web:
        (data / REQUESTS_FILE).unlink(missing_ok=True)
    if same_web and leftover.exists():
        _append_log(leftover, data)
    leftover.unlink(missing_ok=True)


def _append_log(log: Path, data: Path) -> None:
    with (data / REQUESTS_FILE).open("ab") as history:
        history.write(log.read_bytes())


def _remember_web(args: argparse.Namespace, data: Path, port: int) -> None:
    (data / WEB_FILE).write_text(json.dumps({**_web_key(args), "port": port}), encoding="utf-8")


def _all_requests(web: TestWebProcess, data: Path) -> list[RequestLogRecord]:
    """This run's requests after those of the earlier runs on the same web (kept in the
    data directory)."""
    from trawl.testweb.request_log import read_request_log

    if web.log_path.exists():
        _append_log(web.log_path, data)
        web.log_path.unlink()
    return read_request_log(data / REQUESTS_FILE)


def cmd_demo(args: argparse.Namespace) -> int:
    """The demo; SIGINT/SIGTERM, to it or its process group, end it with status 0: the
    crawl checkpoints (the test web may be gone already) and a rerun resumes it."""
    from trawl.loop.stop_signals import stop_signals_noted

    with stop_signals_noted():
        try:
            return _demo(args, args.data.resolve())
        except _StoppedEarly:
            sys.stderr.write("trawl demo: stopped before the crawl began\n")
            return 0


def _demo(args: argparse.Namespace, data: Path) -> int:
    from trawl.config import Settings, with_overrides
    from trawl.testweb.politeness import check_politeness

    data.mkdir(parents=True, exist_ok=True)
    _add_leftover_log(args, data)
    with _started_web(args, data) as web:
        # Now, not at the end: a rerun after a kill must find the port too.
        _remember_web(args, data, web.port)
        settings = with_overrides(
            Settings(),
            crawl={"contact_url": DEMO_CONTACT, "max_time_s": args.max_time},
            network={"hosts_file": str(web.hosts_file)},
        )
        seeds = [(u, "demo seed") for u in web.seeds]
        out = sys.stderr
        out.write(
            f"trawl demo: test web of {args.sites} sites x {args.pages} pages on loopback "
            f"port {web.port}; crawling into {data}\n"
        )
        summary = run_async(run_crawl(settings, data, seeds, out, is_tty=out.isatty()))
        web.stop()  # the server logs a request just after answering it: flush the log
        requests = web.requests()
        every_run = _all_requests(web, data)
        violations = check_politeness(every_run, **web.web.politeness_inputs())
    print_summary(summary, sys.stdout)
    print(
        f"test web saw {len(requests)} requests ({len(every_run)} in every run here); "
        f"politeness violations: {len(violations)}"
    )
    for v in violations[:10]:
        print(f"  {v}")
    print(
        f"WARC files:   {data / 'warc'}\n"
        f"records:      {data / 'trawl.db'}\n"
        "look at them:\n"
        f"  trawl pages --data {data} | head\n"
        f"  trawl events --data {data} | head\n"
        f"  trawl page http://{web.web.seed_domains[0]}:{web.port}/ --data {data}\n"
        f"  trawl page http://{web.web.seed_domains[0]}:{web.port}/ --data {data} --body | head\n"
        f"  trawl host {web.web.seed_domains[0]} --data {data}\n"
        f"  warcio index {data / 'warc'}/*.warc.gz | head"
    )
    return 1 if violations else 0

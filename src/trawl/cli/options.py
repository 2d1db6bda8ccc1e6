"""Options that several commands parse the same way, and the settings they make.

Importing this module imports no crawl machinery (issue 14: start-up time); the config is
loaded inside settings_from_args.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import argparse

    from trawl.config import Settings


def add_seed_options(p: argparse.ArgumentParser) -> None:
    """Seed URLs as arguments or in a file (`trawl crawl`, `serve`, `seed`, `node`)."""
    p.add_argument("urls", nargs="*", metavar="URL", help="seed URLs")
    p.add_argument("--seeds-file", type=Path, help="file of seed URLs, one per line")


def add_crawl_options(p: argparse.ArgumentParser, *, continuous: bool = True) -> None:
    """The options of `trawl crawl`; `trawl serve` is always continuous, so it lacks
    `--continuous` (`continuous=False`)."""
    add_seed_options(p)
    p.add_argument("--data", type=Path, default=Path("trawl-data"), help="data directory")
    p.add_argument("--max-pages", type=int, help="stop after this many pages (robots.txt excluded)")
    p.add_argument("--max-time", type=float, help="stop after this many seconds")
    if continuous:
        p.add_argument(
            "--continuous",
            action="store_true",
            default=None,
            help="keep crawling and recrawling due pages instead of stopping when the frontier"
            " empties",
        )
    add_fetch_options(p)


def add_fetch_options(p: argparse.ArgumentParser) -> None:
    """How a crawling process reaches the web and names itself, and the config file beneath
    those flags (`trawl crawl`, `serve`, `node`); fetch_settings reads them."""
    p.add_argument(
        "--resolve",
        action="append",
        default=None,
        metavar="HOST:IP",
        help="map a name (or *.suffix) to an address, like curl; repeatable",
    )
    p.add_argument("--hosts-file", help="file of 'IP host...' lines")
    p.add_argument("--dns-server", help="resolve names through this DNS server IP[:PORT]")
    p.add_argument(
        "--allow-private",
        action="store_true",
        default=None,
        help="allow loopback/private addresses for names not mapped explicitly",
    )
    p.add_argument("--user-agent", help="full User-Agent (must name trawl and a contact URL)")
    p.add_argument("--contact", help="contact URL for the User-Agent (required)")
    p.add_argument("--config", type=Path, help="TOML config file")
    p.add_argument(
        "--render",
        choices=("auto", "off"),
        default=None,
        help="render pages built by JavaScript in headless Chromium (auto, the default when"
        " Chromium is installed) or never (off); see docs/CONFIG.md [render]",
    )
    add_scope_options(p)


SCOPE_TYPES = ("page", "prefix", "host", "domain", "any")  # custom needs includes: config


def add_scope_options(p: argparse.ArgumentParser) -> None:
    """What to crawl (issue 16): the `[scope]` defaults every seed given here takes."""
    g = p.add_argument_group("scope", "what to crawl; see docs/CONFIG.md [scope]")
    g.add_argument(
        "--scope",
        choices=SCOPE_TYPES,
        help="follow links within each seed's page, prefix, host, registered domain, or any"
        " (the default: every link)",
    )
    g.add_argument(
        "--include",
        action="append",
        metavar="RE",
        help="also follow URLs matching this RE2 regular expression; repeatable",
    )
    g.add_argument(
        "--exclude",
        action="append",
        metavar="RE",
        help="never fetch URLs matching this RE2 regular expression (always wins); repeatable",
    )
    g.add_argument("--max-depth", type=int, metavar="N", help="links from a seed; 0 = no limit")
    g.add_argument(
        "--extra-hops", type=int, metavar="N", help="follow links out of scope N hops further"
    )
    g.add_argument(
        "--max-pages-per-seed",
        type=int,
        metavar="N",
        help="queue at most N URLs credited to each seed (the seed included); 0 = no limit",
    )


def settings_from_args(args: argparse.Namespace) -> Settings:
    """`trawl crawl`'s and `trawl serve`'s settings: add_crawl_options' flags over the config."""
    return fetch_settings(
        args,
        max_pages=args.max_pages,
        max_time_s=args.max_time,
        continuous=getattr(args, "continuous", None),  # serve has no --continuous
    )


def fetch_settings(args: argparse.Namespace, **crawl: object) -> Settings:
    """The config file's settings with add_fetch_options' flags over them, and `crawl`'s keys
    (each command's limits) in the crawl section; a flag not given (None) keeps the config's
    value."""
    from trawl.config import load_settings, with_overrides

    settings = load_settings(args.config)
    s = settings.scope
    return with_overrides(
        settings,
        crawl={"user_agent": args.user_agent, "contact_url": args.contact, **crawl},
        scope={
            "type": args.scope,
            # Patterns given here widen or narrow the config's: both hold.
            "include": (*s.include, *args.include) if args.include else None,
            "exclude": (*s.exclude, *args.exclude) if args.exclude else None,
            "max_depth": args.max_depth,
            "extra_hops": args.extra_hops,
            "max_pages": args.max_pages_per_seed,
        },
        render={"mode": args.render},
        network={
            "resolve": tuple(args.resolve) if args.resolve else None,
            "hosts_file": args.hosts_file,
            "dns_server": args.dns_server,
            "allow_private": args.allow_private,
        },
    )


def add_read_source(p: argparse.ArgumentParser, *, api: bool = False) -> None:
    """`--data DIR` (the default) or `--cluster FILE` (and for events, `--api URL`): where a
    read-back command reads."""
    source = p.add_mutually_exclusive_group()
    source.add_argument(
        "--data",
        type=Path,
        default=Path("trawl-data"),
        help="data directory of a crawl (default trawl-data)",
    )
    source.add_argument(
        "--cluster",
        type=Path,
        metavar="FILE",
        help="cluster file: read the cluster's PostgreSQL (and S3 for bodies) instead",
    )
    if api:
        source.add_argument("--api", metavar="URL", help="read them from a `trawl serve` API")

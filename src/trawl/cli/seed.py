"""`trawl seed`: add seeds through a `trawl serve` API, or straight to a cluster's streams."""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

from trawl.api import DEFAULT_LISTEN
from trawl.cli.options import add_seed_options
from trawl.errors import UsageError

if TYPE_CHECKING:
    import argparse


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "seed",
        help="add seeds through a `trawl serve` API, or straight to a cluster",
        description=(
            "Add seeds through the API of a running `trawl serve` or cluster node (--api), or"
            " send them straight to the link streams of their sites' partitions (--cluster)."
            " With --api the answer says how many were new; with --cluster it cannot: the"
            " node owning each partition decides what it already knows (it checks its exact"
            " seed table), so `sent` counts every distinct valid seed, known to the cluster"
            " or not."
        ),
    )
    add_seed_options(p)
    source = p.add_mutually_exclusive_group(required=True)
    source.add_argument("--api", metavar="URL", help=f"e.g. http://{DEFAULT_LISTEN}")
    source.add_argument(
        "--cluster",
        type=Path,
        metavar="FILE",
        help="cluster file: route the seeds through the cluster's Redis (no node need be up)",
    )
    p.add_argument(
        "--priority",
        choices=("high", "normal", "low"),
        default="normal",
        help="the API's seed priority (default normal; low waits in the slow line; --api only)",
    )
    p.add_argument(
        "--token-file",
        type=Path,
        help="file holding the operator token (or TRAWL_API_TOKEN; --api only)",
    )
    p.add_argument(
        "--config",
        type=Path,
        help="TOML config whose [urls] rules normalise the seeds, as the nodes' (--cluster only)",
    )
    p.set_defaults(func=cmd_seed)


def cmd_seed(args: argparse.Namespace) -> int:
    """`trawl seed`: POST /v1/seeds, or with --cluster XADD to the partitions' link streams;
    prints what was queued or sent and each rejection's reason."""
    from trawl.api.client import post_seeds
    from trawl.api.serve import read_token
    from trawl.config import load_settings
    from trawl.wiring.embedded import normalise_rules
    from trawl.wiring.seeds import read_seeds

    urls = [raw for raw, _ in read_seeds(args.urls, args.seeds_file)]
    if not urls:
        raise UsageError("no seed URLs: give them as arguments or with --seeds-file")
    if args.cluster is not None:
        if args.priority != "normal":
            raise UsageError("seed priorities need --api: --cluster sends every seed as normal")
        if args.token_file is not None:
            raise UsageError("--token-file is for --api: --cluster writes to Redis directly")
        from trawl.cluster.extra import require_cluster_packages

        require_cluster_packages("trawl seed --cluster")
        # Imported here: redis and boto3 add ~0.3 s to every other command's start.
        from trawl.cluster.cluster_seeds import cmd_seed_cluster

        return cmd_seed_cluster(args, urls, normalise_rules(load_settings(args.config)))
    if args.config is not None:
        raise UsageError("--config is for --cluster: the API normalises with its node's config")
    answer = post_seeds(args.api, urls, args.priority, read_token(args.token_file, os.environ))
    rejected = answer["rejected"]
    known = len(urls) - answer["queued"] - len(rejected)
    print(
        f"queued {answer['queued']} of {len(urls)} URLs ({known} already known, "
        f"{len(rejected)} rejected)"
    )
    for item in rejected:
        print(f"rejected {item.get('url')!r}: {item.get('reason')}")
    return 0

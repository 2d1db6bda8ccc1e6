"""`trawl node --cluster FILE [--node-id ID]`: run one machine of a cluster until SIGTERM.

The parser is built without importing the cluster adapters; `cmd_node` imports them.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from trawl.cli.options import add_fetch_options, add_seed_options, fetch_settings
from trawl.cli.runner import run_async
from trawl.errors import DataError

if TYPE_CHECKING:
    import argparse


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "node",
        help="run one machine of a trawl cluster (until SIGTERM/SIGINT)",
        description="Join the cluster FILE names, crawl the partitions this node is given,"
        " and on SIGTERM/SIGINT hand them over and exit 0. Seeds given here are sent to"
        " their partitions' owners.",
    )
    add_seed_options(p)
    p.add_argument("--cluster", type=Path, required=True, metavar="FILE", help="cluster file")
    p.add_argument("--node-id", help="this node's member id (default: the host name)")
    p.add_argument(
        "--work",
        type=Path,
        help="local cache directory, emptied at start (default: ./trawl-node-<node id>)",
    )
    p.add_argument(
        "--listen", metavar="HOST:PORT", help="serve the control API here (e.g. 127.0.0.1:8700)"
    )
    p.add_argument(
        "--token-file", type=Path, help="operator token for the API's writes (or TRAWL_API_TOKEN)"
    )
    add_fetch_options(p)
    p.set_defaults(func=cmd_node)


def cmd_node(args: argparse.Namespace) -> int:
    from trawl.cluster.extra import require_cluster_packages

    require_cluster_packages("trawl node")
    # Imported here: redis, boto3 and psycopg add start-up time to every other command.
    from trawl.api.serve import bind_listener, read_token
    from trawl.cluster.cluster_file import load_cluster_file
    from trawl.cluster.wiring import default_node_id, run_node
    from trawl.loop.stop_signals import stop_signals_noted
    from trawl.wiring.embedded import normalise_rules
    from trawl.wiring.seeds import normalise_seeds, read_seeds

    cluster = load_cluster_file(args.cluster)
    # A node runs until told to stop.
    settings = fetch_settings(args, continuous=True, max_pages=0, max_time_s=0.0)
    seeds = normalise_seeds(read_seeds(args.urls, args.seeds_file), normalise_rules(settings))
    api = None
    if args.listen:  # bound before anything starts: a busy address is a one-line error
        api = (bind_listener(args.listen), read_token(args.token_file, os.environ))
    node_id = args.node_id or default_node_id()
    work = args.work or Path(f"trawl-node-{node_id}")
    if (work / "trawl.db").exists() and not (work / "NODE").exists():
        raise DataError(f"{work}: holds an embedded crawl's data; a node needs its own directory")
    work.mkdir(parents=True, exist_ok=True)
    (work / "NODE").write_text(f"cache of trawl node {node_id}; emptied at start\n")
    with stop_signals_noted():
        summary = run_async(
            run_node(settings, cluster, node_id, work, sys.stderr, seeds=seeds, api=api)
        )
    print(
        f"node {node_id}: {summary.pages_fetched} pages fetched, {summary.pages_stored} stored"
        f" in {summary.seconds:.1f} s; partitions taken {summary.acquired},"
        f" handed over {summary.handed_over}; {summary.checkpoints} checkpoints"
    )
    return 0

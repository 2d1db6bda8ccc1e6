"""`trawl cluster status`: members, partition owners, stream lag and checkpoint ages."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import argparse


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """`trawl cluster ...`: commands about a whole cluster (issue 7)."""
    p = sub.add_parser("cluster", help="inspect a trawl cluster")
    group = p.add_subparsers(dest="cluster_command", required=True)
    p = group.add_parser("status", help="members, partition owners, stream lag, checkpoint ages")
    p.add_argument("--cluster", type=Path, required=True, metavar="FILE", help="cluster file")
    p.add_argument("--json", action="store_true", help="print everything as one JSON object")
    p.set_defaults(func=cmd_cluster_status)


def cmd_cluster_status(args: argparse.Namespace) -> int:
    from trawl.cluster.extra import require_cluster_packages

    require_cluster_packages("trawl cluster status")
    # Imported here: redis and boto3 add ~0.3 s to every other command's start.
    from trawl.cluster.status import cmd_status

    return cmd_status(args)

"""Cluster mode's third-party packages, which come with the `[cluster]` extra.

A base install (`pip install trawl`) crawls on one machine without Redis, PostgreSQL or S3,
so it does not pull their clients; each cluster command checks for them first, and a
missing one is a one-line usage error naming the install command, not an ImportError
traceback from deep in an adapter.
"""

from __future__ import annotations

import importlib.util

from trawl.errors import UsageError

# Import names: redis (leases, members, link streams), psycopg (records), boto3 (bodies).
CLUSTER_PACKAGES = ("redis", "psycopg", "boto3")


def require_cluster_packages(what: str) -> None:
    """Raise UsageError if `what` (a command or option) lacks a cluster package."""
    missing = [name for name in CLUSTER_PACKAGES if importlib.util.find_spec(name) is None]
    if missing:
        raise UsageError(
            f"{what} needs cluster mode's packages ({', '.join(missing)} not installed):"
            " pip install 'trawl[cluster]'"
        )

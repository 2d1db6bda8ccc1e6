"""How many sockets the fetcher may hold, given the process's open-files limit.

Why: every connection is a file descriptor, and so are the crawl's own files (SQLite's
database, WAL and shared memory on several connections, WARC files and their indexes,
the page workers' pipes, a browser's, the API's sockets). With a cap of 2,000
connections and a soft `ulimit -n` of 1,024 (many systems' default), a crawl of more
sites than that ran out of descriptors: connects failed with EMFILE and counted against
the sites, WAL checkpoints failed, and a WARC fsync ended the crawl.

How this works:
- `plan_open_files` (pure) raises the soft limit towards what the connection cap needs
  plus `RESERVED_FDS` for the crawl's own files, never past the hard limit, and caps the
  connections at what then fits. `max_connections` 0 (no cap) asks for as much as the
  hard limit allows, and is capped at what fits too: the descriptors are a hard bound.
- `apply_open_files` (the shell) reads and sets RLIMIT_NOFILE and says when the cap had to
  come down (raise the hard limit: `ulimit -Hn`, or systemd's LimitNOFILE).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

__all__ = ["RESERVED_FDS", "OpenFilesPlan", "apply_open_files", "plan_open_files"]

log = logging.getLogger(__name__)

# Descriptors kept for the crawl's own files. `trawl crawl` of the test web held at most
# 31 besides its sockets (/proc/<pid>/fd sampled every 0.2 s: SQLite's database, WAL and
# shared memory on 3 connections, a WARC file, 14 pipes to its page worker, epoll); the
# rest is headroom for the API, a browser, DNS sockets and files opened for a moment.
RESERVED_FDS = 256
_UNLIMITED_TARGET = 1 << 20  # Linux's default fs.nr_open: setrlimit refuses more
_MIN_CONNECTIONS = 1


@dataclass(frozen=True, slots=True)
class OpenFilesPlan:
    soft_limit: int  # the soft RLIMIT_NOFILE to set (the current one when unchanged)
    max_connections: int  # the fetcher's cap on open sockets, never 0 (no cap)
    lowered: bool  # the cap asked for did not fit


def plan_open_files(
    soft: int, hard: int | None, max_connections: int, reserve: int = RESERVED_FDS
) -> OpenFilesPlan:
    """The soft limit and connection cap for `max_connections` (0: as many as fit) under
    the current `soft` limit and `hard` one (None: unlimited)."""
    wanted = max_connections + reserve if max_connections > 0 else _UNLIMITED_TARGET
    ceiling = _UNLIMITED_TARGET if hard is None else hard
    new_soft = max(soft, min(wanted, ceiling))
    # A tiny limit keeps half for the crawl's own files rather than no socket at all.
    kept = min(reserve, new_soft // 2)
    fits = max(_MIN_CONNECTIONS, new_soft - kept)
    cap = fits if max_connections <= 0 else min(max_connections, fits)
    return OpenFilesPlan(new_soft, cap, lowered=max_connections > 0 and cap < max_connections)


def apply_open_files(max_connections: int) -> int:
    """Raise this process's soft open-files limit for `max_connections` sockets (children
    inherit it) and return the connection cap that fits."""
    try:
        import resource
    except ImportError:  # not a POSIX system: nothing to read or raise
        return max_connections
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    infinity = resource.RLIM_INFINITY
    plan = plan_open_files(
        _UNLIMITED_TARGET if soft == infinity else soft,
        None if hard == infinity else hard,
        max_connections,
    )
    if plan.soft_limit != soft and soft != infinity:
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (plan.soft_limit, hard))
        except (ValueError, OSError) as exc:
            plan = plan_open_files(soft, soft, max_connections)  # keep to what we have
            log.warning("cannot raise the open-files limit from %d: %s", soft, exc)
    if plan.lowered:
        log.warning(
            "open-files limit %d (hard %s): at most %d connections at once, not %d;"
            " raise it (ulimit -Hn, systemd LimitNOFILE) for more",
            plan.soft_limit,
            "unlimited" if hard == infinity else hard,
            plan.max_connections,
            max_connections,
        )
    return plan.max_connections

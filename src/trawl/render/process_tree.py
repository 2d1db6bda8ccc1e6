"""A process tree's memory and CPU, read from /proc (Linux): the render browser's budget.

Chromium runs as a tree of processes (browser, zygotes, GPU and network services, one
renderer a page), so its memory and CPU are sums over the tree under the process launched
with a marker switch. Summed VmRSS counts shared pages in every process; PSS counts each
shared page once, and is what the tree really holds.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Iterable

__all__ = ["find_process", "process_tree", "tree_cpu_s", "tree_pss_bytes", "tree_rss_bytes"]


def find_process(switch: str) -> int | None:
    """The id of the process whose command line holds the argument `switch`, if any."""
    wanted = switch.encode()
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            args = (entry / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue  # gone meanwhile, or not ours to read
        if wanted in args:
            return int(entry.name)
    return None


def process_tree(root: int) -> list[int]:
    """`root` and its descendants, from each process's parent in /proc/<pid>/stat."""
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        # "pid (comm) state ppid ...": comm may hold spaces and parentheses.
        parent = int(stat[stat.rindex(")") + 2 :].split(" ", 2)[1])
        children.setdefault(parent, []).append(int(entry.name))
    tree, todo = [], [root]
    while todo:
        pid = todo.pop()
        tree.append(pid)
        todo.extend(children.get(pid, ()))
    return tree


def tree_rss_bytes(pids: Iterable[int]) -> int:
    """The summed VmRSS of `pids` (those that exited meanwhile count 0)."""
    total = 0
    for pid in pids:
        try:
            status = Path(f"/proc/{pid}/status").read_text()
        except OSError:
            continue
        for line in status.splitlines():
            if line.startswith("VmRSS:"):
                total += int(line.split()[1]) * 1024
                break
    return total


def tree_pss_bytes(pids: Iterable[int]) -> int:
    """The summed proportional set size of `pids` (/proc/<pid>/smaps_rollup): each shared
    page counted once across them, so the sum is what the tree really holds."""
    total = 0
    for pid in pids:
        try:
            rollup = Path(f"/proc/{pid}/smaps_rollup").read_text()
        except OSError:
            continue
        for line in rollup.splitlines():
            if line.startswith("Pss:"):
                total += int(line.split()[1]) * 1024
                break
    return total


def tree_cpu_s(pids: Iterable[int]) -> float:
    """The user and system CPU seconds used by `pids` and by their children that exited and
    were reaped (utime, stime, cutime, cstime of /proc/<pid>/stat): for a whole tree this
    counts Chromium's short-lived renderers too, which its zygote reaps."""
    ticks = 0
    for pid in pids:
        try:
            stat = Path(f"/proc/{pid}/stat").read_text()
        except OSError:
            continue
        fields = stat[stat.rindex(")") + 2 :].split()
        ticks += sum(int(f) for f in fields[11:15])  # fields 14 to 17 of proc(5)
    return ticks / os.sysconf("SC_CLK_TCK")

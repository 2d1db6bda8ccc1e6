"""What Linux's /proc says of one process, for benches that count CPU a process at a time
(worker processes that are a forkserver's children, a database backend, a browser)."""

from __future__ import annotations

import os
from pathlib import Path


def process_cpu_s(pid: int) -> float:
    """utime + stime of `pid` alone (not its reaped children), in seconds. Raises OSError
    once the process is gone."""
    stat = Path(f"/proc/{pid}/stat").read_text()
    # The fields after the command's closing parenthesis (a command may hold one): utime
    # and stime are the 14th and 15th of the line, the 12th and 13th from there.
    fields = stat[stat.rindex(")") + 2 :].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

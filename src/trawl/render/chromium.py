"""Where the Chromium to render with is: Debian's, never a downloaded one (issue 18), and
how it is started: below the crawl loop's CPU priority.

Apart from render.browser so that a crawl can tell whether it may render without
importing Playwright (~250 ms): the browser is only started, and Playwright only
imported, when the first page needs rendering.

Why niced: a render costs ~1.4 CPU-seconds, and on a machine the crawl keeps busy the
browser took the loop's cores: its lag p99 went from <= 50 ms to <= 250 ms
(bench/RESULTS.md, `python -m bench.render_lag`). Run as root, Chromium even raises its own
main and IO threads to nice -8. So it is started through a small launcher script: `nice`
at the page workers' niceness (loop.workers), and as root `setpriv` takes CAP_SYS_NICE out
of its capability sets, so it cannot raise itself back.
"""

from __future__ import annotations

import os
import shlex
import shutil
import stat
from pathlib import Path

from trawl.errors import ConfigError

__all__ = ["BROWSER_NICENESS", "CHROMIUM_NAMES", "find_chromium", "write_niced_launcher"]

CHROMIUM_NAMES = ("chromium", "chromium-browser", "google-chrome")
BROWSER_NICENESS = 10  # as loop.workers.WORKER_NICENESS: the crawl loop comes first


def find_chromium(path: str | None = None) -> str:
    """The Chromium executable: `path` if given, else the first of CHROMIUM_NAMES on PATH
    (Debian's is /usr/bin/chromium). Raises ConfigError naming what was tried."""
    if path is not None:
        if Path(path).is_file() and os.access(path, os.X_OK):
            return path
        raise ConfigError(f"render: Chromium {path!r} is not an executable file")
    for name in CHROMIUM_NAMES:
        found = shutil.which(name)
        if found is not None:
            return found
    tried = ", ".join(CHROMIUM_NAMES)
    raise ConfigError(
        f"render: no Chromium found: tried {tried} on PATH={os.environ.get('PATH', '')!r}"
        " (install Debian's chromium: apt-get install chromium, or set [render] chromium)"
    )


def write_niced_launcher(
    executable: str, directory: Path, niceness: int = BROWSER_NICENESS
) -> Path:
    """Write `directory/chromium` (a shell script): `executable` run niced, and as root
    without CAP_SYS_NICE. Without `nice` on the PATH the script runs it as it is."""
    command = [executable]
    setpriv = shutil.which("setpriv")
    if os.geteuid() == 0 and setpriv is not None:
        # Dropping a capability from the bounding set needs CAP_SETPCAP, so root only; an
        # unprivileged process cannot lower its niceness anyway (RLIMIT_NICE is 0).
        drop = ["--bounding-set", "-sys_nice", "--inh-caps", "-sys_nice", "--"]
        command = [setpriv, *drop, *command]
    nice = shutil.which("nice")
    if nice is not None:
        command = [nice, "-n", str(niceness), *command]
    path = directory / "chromium"
    path.write_text(f'#!/bin/sh\nexec {shlex.join(command)} "$@"\n')
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return path

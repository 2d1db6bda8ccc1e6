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

Where it writes: each launch gets a scratch directory of its own for its profile (the
user-data dir: ~1 MB of SQLite files and caches, written with fsync as the browser starts)
and its temporary files, on tmpfs (/dev/shm) when there is room there, so the browser's
writes never queue on the disk where the crawl's own SQLite commits wait (issue 18: the
crawl loop's stalls under rendering were commits). Measured: the browser's tree wrote
~2 MB to disk for a launch and 20 renders before, ~0.02 MB after. The launcher script is
where the directory is handed over: Playwright refuses `--user-data-dir` in `launch()` and
makes a profile of its own in the driver's temporary directory, but Chromium heeds the last
of a repeated switch, so the script's trailing `--user-data-dir` wins (Playwright's stays
empty, and Playwright removes it).
"""

from __future__ import annotations

import os
import shlex
import shutil
import stat
from pathlib import Path
from typing import TYPE_CHECKING

from trawl.errors import ConfigError

if TYPE_CHECKING:
    from collections.abc import Callable, Iterable, Sequence

__all__ = [
    "BROWSER_NICENESS",
    "CHROMIUM_NAMES",
    "SCRATCH_MIN_FREE_BYTES",
    "SCRATCH_ROOTS",
    "find_chromium",
    "pick_scratch_root",
    "scratch_prefix",
    "stale_scratch",
    "write_niced_launcher",
]

CHROMIUM_NAMES = ("chromium", "chromium-browser", "google-chrome")
BROWSER_NICENESS = 10  # as loop.workers.WORKER_NICENESS: the crawl loop comes first
SCRATCH_ROOTS = (Path("/dev/shm"),)  # tmpfs on Linux: memory, never the disk
# A browser's scratch holds ~1 MB of profile and a few MB at most of temporary files;
# containers give /dev/shm 64 MB, which other programs may need: then the default it is.
SCRATCH_MIN_FREE_BYTES = 256 * 1024 * 1024


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


def pick_scratch_root(
    candidates: Iterable[Path] = SCRATCH_ROOTS, min_free_bytes: int = SCRATCH_MIN_FREE_BYTES
) -> Path | None:
    """The first of `candidates` that is a directory this process may write with at least
    `min_free_bytes` free, or None (then scratch goes to the default temporary directory)."""
    for root in candidates:
        try:
            fs = os.statvfs(root)
        except OSError:
            continue  # not there
        roomy = fs.f_bavail * fs.f_frsize >= min_free_bytes
        if roomy and root.is_dir() and os.access(root, os.W_OK | os.X_OK):
            return root
    return None


def scratch_prefix(pid: int) -> str:
    """The start of the names of the scratch directories the process `pid` makes."""
    return f"trawl-chromium-{pid}-"


def stale_scratch(names: Iterable[str], is_alive: Callable[[int], bool]) -> list[str]:
    """Those of `names` (entries of a scratch root) that are scratch directories of trawl
    processes no longer alive: a crawl killed before it could remove them. On tmpfs they
    hold memory until removed. Assumes the root is not shared across PID namespaces (a
    container sharing the host's /dev/shm but not its process ids)."""
    stale = []
    for name in names:
        head, _, rest = name.partition("trawl-chromium-")
        pid, dash, _ = rest.partition("-")
        if not head and dash and pid.isdigit() and not is_alive(int(pid)):
            stale.append(name)
    return stale


def write_niced_launcher(
    executable: str,
    path: Path,
    niceness: int = BROWSER_NICENESS,
    scratch: Path | None = None,
    disabled_features: Sequence[str] = (),
) -> Path:
    """Write `path` (a shell script) and return it: `executable` run niced, and as root
    without CAP_SYS_NICE. Without `nice` on the PATH the script runs it as it is. With
    `scratch` (a directory), the browser's temporary files go to `scratch/tmp` (TMPDIR, made
    here) and its profile to `scratch/profile` (a trailing `--user-data-dir`).
    `disabled_features` are added to the `--disable-features` the script is given (Chromium
    heeds only the last of a repeated switch, so a second one would undo Playwright's)."""
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
    lines = ["#!/bin/sh", *_merge_disabled_features(disabled_features)]
    lines.append(f'exec {shlex.join(command)} "$@"')
    if scratch is not None:
        (scratch / "tmp").mkdir(exist_ok=True)
        lines[-1:-1] = [f"TMPDIR={shlex.quote(str(scratch / 'tmp'))}", "export TMPDIR"]
        lines[-1] += " " + shlex.quote(f"--user-data-dir={scratch / 'profile'}")
    path.write_text("\n".join(lines) + "\n")
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return path


def _merge_disabled_features(features: Sequence[str]) -> list[str]:
    """Shell lines that add `features` to the arguments' `--disable-features` (or add one)."""
    if not features:
        return []
    listed = shlex.quote(",".join(features))
    return [
        "merged=",
        "for arg do",
        "  shift",
        f'  case $arg in --disable-features=*) arg="$arg,"{listed}; merged=1 ;; esac',
        '  set -- "$@" "$arg"',
        "done",
        f'[ -n "$merged" ] || set -- "$@" --disable-features={listed}',
    ]

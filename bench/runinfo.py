"""What every benchmark prints and saves beside its figures: command, commit and machine."""

from __future__ import annotations

import os
import platform
import subprocess
import sys
from pathlib import Path

THIS_SRC = Path(__file__).resolve().parents[1] / "src"


def describe_run() -> dict[str, str]:
    commit = subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, check=False
    ).stdout.strip()
    return {
        "command": " ".join(sys.argv),
        "commit": commit or "?",
        "machine": (
            f"{platform.machine()} {os.cpu_count()} cores {platform.platform()}"
            f" python {platform.python_version()}"
        ),
    }


def compared_trees(base: Path | None) -> dict[str, Path]:
    """The sources a bench runs: this checkout's ("new"), after `--base`'s ("base") if given
    (a frozen checkout: `git worktree add --detach /tmp/base <commit>`)."""
    return {"new": THIS_SRC} if base is None else {"base": base, "new": THIS_SRC}

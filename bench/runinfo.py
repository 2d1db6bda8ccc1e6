"""What every benchmark prints and saves beside its figures: command, commit and machine."""

from __future__ import annotations

import os
import platform
import subprocess
import sys


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

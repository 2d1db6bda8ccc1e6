"""The niced launcher Chromium is started through (render/chromium.py, issue 18): the browser
runs below the crawl loop's priority and, as root, cannot raise itself back."""

from __future__ import annotations

import os
import subprocess
from typing import TYPE_CHECKING

from trawl.render.chromium import BROWSER_NICENESS, write_niced_launcher

if TYPE_CHECKING:
    from pathlib import Path

CAP_SYS_NICE = 23  # linux/capability.h

REPORT = """#!/bin/sh
echo "args=$*"
echo "nice=$(nice)"
grep '^CapBnd:' /proc/self/status
"""


def test_the_browser_runs_niced_with_its_arguments_and_without_cap_sys_nice(
    tmp_path: Path,
) -> None:
    fake = tmp_path / "fake-chromium"
    fake.write_text(REPORT)
    fake.chmod(0o755)
    launcher = write_niced_launcher(str(fake), tmp_path)
    out = subprocess.run(
        [str(launcher), "--headless", "a b"], capture_output=True, text=True, check=True
    ).stdout
    lines = dict(
        line.split("=", 1) if "=" in line else line.split(":", 1) for line in out.splitlines()
    )
    assert lines["args"] == "--headless a b"
    assert int(lines["nice"]) == os.nice(0) + BROWSER_NICENESS
    bounding = int(lines["CapBnd"].strip(), 16)
    if os.geteuid() == 0:  # an unprivileged browser cannot lower its niceness anyway
        assert not bounding & (1 << CAP_SYS_NICE)
        assert bounding & (1 << (CAP_SYS_NICE - 1)), "only CAP_SYS_NICE is dropped"

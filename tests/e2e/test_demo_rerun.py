"""`trawl demo` twice in one directory: the rerun resumes against the same URLs."""

from __future__ import annotations

import re
import subprocess
import sys
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pathlib import Path


def _demo(data: Path) -> tuple[str, str]:
    result = subprocess.run(
        [sys.executable, "-m", "trawl", "demo", "--sites", "12", "--pages", "4",
         "--data", str(data), "--max-time", "60"],
        capture_output=True, text=True, timeout=180, check=True,
    )  # fmt: skip
    return result.stdout, result.stderr


def _count(pattern: str, text: str) -> int:
    match = re.search(pattern, text)
    return int(match.group(1)) if match else 0


def test_a_rerun_keeps_the_test_webs_port_so_nothing_is_stored_twice(tmp_path: Path) -> None:
    out1, err1 = _demo(tmp_path / "data")
    out2, err2 = _demo(tmp_path / "data")
    port1 = _count(r"loopback port (\d+)", err1)
    assert port1 > 0
    assert _count(r"loopback port (\d+)", err2) == port1
    assert _count(r"stored (\d+)", out1) > 0
    # Same URLs: the rerun finds the first run's pages known, not near-copies at new URLs.
    assert _count(r"near-duplicates (\d+)", out2) <= _count(r"near-duplicates (\d+)", out1)
    assert _count(r"stored (\d+)", out2) < _count(r"stored (\d+)", out1)
    for out in (out1, out2):
        assert "politeness violations: 0" in out

"""Shared by the e2e tests that run `trawl crawl` as a real process."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pathlib import Path

    from trawl.testweb.process import TestWebProcess

CONTACT = "https://trawl.invalid/test"


def crawl_command(web: TestWebProcess, data: Path, max_time_s: float = 240) -> list[str]:
    """`python -m trawl crawl` of the test web's seeds into `data`."""
    return [
        sys.executable, "-m", "trawl", "crawl", *web.seeds,
        "--data", str(data), "--hosts-file", str(web.hosts_file),
        "--contact", CONTACT, "--max-time", str(max_time_s),
    ]  # fmt: skip

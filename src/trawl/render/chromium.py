"""Where the Chromium to render with is: Debian's, never a downloaded one (issue 18).

Apart from render.browser so that a crawl can tell whether it may render without
importing Playwright (~250 ms): the browser is only started, and Playwright only
imported, when the first page needs rendering.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from trawl.errors import ConfigError

__all__ = ["CHROMIUM_NAMES", "find_chromium"]

CHROMIUM_NAMES = ("chromium", "chromium-browser", "google-chrome")


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

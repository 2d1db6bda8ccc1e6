"""The browsers a ChromiumRenderer launches, over its life (issue 18): start, recycle, close.

How this works. One browser at a time takes new renders (`start_render`): it is launched
when there is none, when the last one died, or when it retires. A browser retires after
`recycle_after_pages` renders, once its process tree's memory passes `max_rss_mb` (read
from /proc after each render: the tree under the process launched with this launch's
marker switch), or when the renderer finds it stuck (`retire`). A retiring browser finishes
its renders while new ones start on its successor, and is closed when its last one ends. A
browser that dies under a render counts as a crash; the next render launches a new one.
Summed VmRSS counts shared pages in every process (a fresh browser's processes sum to
~600 MB of VmRSS but ~290 MB of PSS), so the bound is checked on PSS once VmRSS passes it.

A launch: Debian's Chromium, started through a niced launcher script (render.chromium),
with a scratch directory of its own for its profile and temporary files, on tmpfs when
/dev/shm has room (so its SQLite profile never writes to the crawl's disk; removed when the
browser is closed), and without the features a fresh context per render pays for and
never uses (`_DISABLED_FEATURES`).

All of it runs on the renderer's event loop; /proc and file work goes to a thread.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
import tempfile
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from playwright.async_api import Error as PlaywrightError
from playwright.async_api import async_playwright

from trawl.errors import ConfigError, UsageError
from trawl.render.chromium import (
    pick_scratch_root,
    scratch_prefix,
    stale_scratch,
    write_niced_launcher,
)
from trawl.render.process_tree import (
    find_process,
    process_tree,
    tree_cpu_s,
    tree_pss_bytes,
    tree_rss_bytes,
)

if TYPE_CHECKING:
    from playwright.async_api import Browser, Playwright

__all__ = ["Launch", "Launches"]

LAUNCH_TIMEOUT_S = 30.0
MARKER_SWITCH = "--trawl-render"  # Chromium ignores switches it does not know
_CHROMIUM_ARGS = (
    "--disable-gpu",
    "--disable-dev-shm-usage",  # containers give /dev/shm 64 MB; renderers crash past it
    "--no-first-run",
    "--disable-sync",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-default-apps",
    "--mute-audio",
    # The second wall (see render.browser's docstring): nothing resolves, everything else
    # (loopback included, which bypasses proxies by default) goes to the discard port.
    "--host-resolver-rules=MAP * ~NOTFOUND",
    "--proxy-server=http://127.0.0.1:9",
    "--proxy-bypass-list=<-loopback>",
)
# Added to Playwright's own `--disable-features` by the launcher (render.chromium). A fresh
# context is a new window, and a render's new window started three renderer processes, one
# of them for the page: the omnibox popup's WebUI (chrome://omnibox-popup.top-chrome, two
# of them preloaded per window) and a spare renderer kept warm for the context, closed
# right after. Without them a render starts one renderer and costs ~0.62 CPU-s instead of
# ~1.72 (the omnibox ~1.0, the spare ~0.06), bench/RESULTS.md (issue 18).
_DISABLED_FEATURES = ("WebUIOmniboxPopup", "WebUIOmniboxAimPopup", "SpareRendererForSitePerProcess")


@dataclass(slots=True, eq=False)
class Launch:
    """One launched browser. Written by the renderer's tasks on its event loop only."""

    browser: Browser
    marker: str  # the value of MARKER_SWITCH this browser was started with
    launcher: Path  # its niced launcher script (render.chromium), removed once closed
    scratch: Path  # its profile and temporary files, removed once closed
    pages: int = 0  # renders started on it
    active: int = 0  # renders running on it now
    retiring: bool = False  # no new render starts on it; closed when `active` drops to 0
    closed_by_us: bool = False
    root_pid: int | None = None  # found in /proc on the first memory check


class Launches:
    """The browsers of one renderer (see the module's docstring). `executable` is Chromium's
    (render.chromium.find_chromium); raises ConfigError for bounds below 1."""

    def __init__(
        self, *, executable: str, recycle_after_pages: int, max_rss_mb: int, sandbox: bool
    ) -> None:
        if recycle_after_pages < 1:
            raise ConfigError(
                f"render: recycle_after_pages must be >= 1, got {recycle_after_pages}"
            )
        if max_rss_mb < 1:
            raise ConfigError(f"render: max_rss_mb must be >= 1, got {max_rss_mb}")
        self._executable = executable
        self._recycle_after_pages = recycle_after_pages
        self._max_rss_bytes = max_rss_mb * 1_000_000
        self._sandbox = sandbox
        self._lock = asyncio.Lock()  # one launch at a time
        self._playwright: Playwright | None = None
        self._scratch_root = pick_scratch_root()  # None: the default temporary directory
        self._launchers: Path | None = None  # holds each launch's niced launcher script
        self._current: Launch | None = None
        self._live: set[Launch] = set()  # launched and not closed yet
        self.closed = False
        self.launched = 0
        self.crashes = 0
        self.rss_bytes = 0  # the current browser's tree, at its last memory check

    async def start_render(self) -> Launch:
        """The browser for a new render (launched first if need be), with the render counted
        on it until `end_render`. Raises UsageError after close(), ConfigError when
        Chromium does not start."""
        launch = await self._launch_for_render()
        launch.active += 1
        launch.pages += 1
        if launch.pages >= self._recycle_after_pages:
            launch.retiring = True
        return launch

    async def end_render(self, launch: Launch) -> None:
        """A render on `launch` ended: check its memory, close it if it retired and is idle."""
        launch.active -= 1
        if not launch.retiring and launch.browser.is_connected():
            launch.retiring = await asyncio.to_thread(self._is_over_memory, launch)
        if launch.retiring and launch.active == 0:
            await self._close_browser(launch)

    def retire(self, launch: Launch) -> None:
        """No new render starts on `launch` (it seems stuck); closed once idle."""
        launch.retiring = True

    async def cpu_s(self, launch: Launch) -> float:
        """The browser's CPU-seconds so far (reaped renderers included); 0 once it is gone."""
        return await asyncio.to_thread(self._tree_cpu_s, launch)

    async def processes(self) -> tuple[int, ...]:
        """The process ids of the current browser's tree (empty when none runs)."""
        launch = self._current
        if launch is None or not launch.browser.is_connected():
            return ()
        return tuple(await asyncio.to_thread(self._tree_of, launch))

    async def close(self) -> None:
        self.closed = True
        async with self._lock:
            for launch in list(self._live):
                await self._close_browser(launch)
            self._current = None
            if self._playwright is not None:
                await self._playwright.stop()
                self._playwright = None
            if self._launchers is not None:
                await asyncio.to_thread(shutil.rmtree, self._launchers, ignore_errors=True)
                self._launchers = None

    def __repr__(self) -> str:
        return (
            f"<Launches launched={self.launched} live={len(self._live)} crashes={self.crashes}"
            f" rss_mb={self.rss_bytes // 1_000_000} scratch={self._scratch_root}"
            f" closed={self.closed}>"
        )

    async def _launch_for_render(self) -> Launch:
        async with self._lock:
            if self.closed:
                raise UsageError("render: ChromiumRenderer.render() called after close()")
            current = self._current
            if current is not None and not current.retiring and current.browser.is_connected():
                return current
            if current is not None:
                current.retiring = True
                if current.active == 0:
                    await self._close_browser(current)
            self._current = await self._launch()
            return self._current

    async def _launch(self) -> Launch:
        if self._playwright is None:
            self._playwright = await async_playwright().start()
        marker = uuid.uuid4().hex
        launcher, scratch = await asyncio.to_thread(self._prepare_launch, marker)
        try:
            browser = await self._playwright.chromium.launch(
                executable_path=str(launcher),
                headless=True,
                chromium_sandbox=self._sandbox,
                args=[f"{MARKER_SWITCH}={marker}", *_CHROMIUM_ARGS],
                timeout=LAUNCH_TIMEOUT_S * 1000,
                # The crawl's process owns its signals; close() stops the browser.
                handle_sigint=False,
                handle_sigterm=False,
                handle_sighup=False,
            )
        except PlaywrightError as exc:
            await asyncio.to_thread(_remove_launch_files, launcher, scratch)
            hint = " (its sandbox was on: without user namespaces, pass sandbox=False)"
            raise ConfigError(
                f"render: Chromium {self._executable!r} did not start: {_first_line(exc)}"
                + (hint if self._sandbox else "")
            ) from None
        launch = Launch(browser, marker, launcher, scratch)
        browser.on("disconnected", lambda _: self._on_disconnected(launch))
        self.launched += 1
        self._live.add(launch)
        return launch

    def _prepare_launch(self, marker: str) -> tuple[Path, Path]:
        """The launch's niced launcher script, in the default temporary directory (tmpfs
        may be mounted noexec), and its scratch directory, on tmpfs if it has room."""
        # A short name: Chromium's singleton socket goes in scratch/tmp, and a socket's
        # path has room for 107 bytes. The pid in it tells a killed crawl's leftovers.
        prefix = scratch_prefix(os.getpid())
        if self._launchers is None:
            for root in {self._scratch_root, None}:
                _remove_stale_scratch(root)
            self._launchers = Path(tempfile.mkdtemp(prefix=prefix))
        scratch = Path(tempfile.mkdtemp(prefix=prefix, dir=self._scratch_root))
        launcher = write_niced_launcher(
            self._executable,
            self._launchers / marker,
            scratch=scratch,
            disabled_features=_DISABLED_FEATURES,
        )
        return launcher, scratch

    def _on_disconnected(self, launch: Launch) -> None:
        launch.retiring = True
        if not launch.closed_by_us:
            self.crashes += 1

    def _is_over_memory(self, launch: Launch) -> bool:
        """Summed VmRSS first (0.5 ms): it overstates, as shared pages count in every
        process, but never understates; only past the bound is the real share read (PSS,
        ~25 ms for a browser's ten processes)."""
        tree = self._tree_of(launch)
        self.rss_bytes = tree_rss_bytes(tree)
        return self.rss_bytes > self._max_rss_bytes and tree_pss_bytes(tree) > self._max_rss_bytes

    def _tree_cpu_s(self, launch: Launch) -> float:
        return tree_cpu_s(self._tree_of(launch)) if launch.browser.is_connected() else 0.0

    def _tree_of(self, launch: Launch) -> list[int]:
        """The browser's process tree, from /proc (the root found once, by its marker)."""
        if launch.root_pid is None:
            launch.root_pid = find_process(f"{MARKER_SWITCH}={launch.marker}")
        return [] if launch.root_pid is None else process_tree(launch.root_pid)

    async def _close_browser(self, launch: Launch) -> None:
        if launch not in self._live:
            return
        self._live.discard(launch)
        launch.retiring = True
        launch.closed_by_us = launch.browser.is_connected()
        if self._current is launch:
            self._current = None
            self.rss_bytes = 0
        with contextlib.suppress(PlaywrightError):  # it died on its own: nothing to close
            await launch.browser.close()
        await asyncio.to_thread(_remove_launch_files, launch.launcher, launch.scratch)


def _remove_stale_scratch(root: Path | None) -> None:
    """Remove the scratch and launcher directories killed crawls left in `root` (None: the
    default temporary directory)."""
    root = Path(tempfile.gettempdir()) if root is None else root
    for name in stale_scratch(os.listdir(root), _is_alive):
        shutil.rmtree(root / name, ignore_errors=True)


def _is_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)  # signal 0: only checks that the process exists
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # another user's
    return True


def _remove_launch_files(launcher: Path, scratch: Path) -> None:
    """Remove a closed (or never started) browser's launcher script and scratch directory."""
    launcher.unlink(missing_ok=True)
    shutil.rmtree(scratch, ignore_errors=True)


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__

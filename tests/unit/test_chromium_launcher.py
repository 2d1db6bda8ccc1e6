"""The niced launcher Chromium is started through (render/chromium.py, issue 18): the browser
runs below the crawl loop's priority and, as root, cannot raise itself back, and writes its
profile and temporary files to a scratch directory of the launch's own (tmpfs if roomy)."""

from __future__ import annotations

import os
import subprocess
from typing import TYPE_CHECKING

from trawl.render.chromium import (
    BROWSER_NICENESS,
    pick_scratch_root,
    scratch_prefix,
    stale_scratch,
    write_niced_launcher,
)

if TYPE_CHECKING:
    from pathlib import Path

CAP_SYS_NICE = 23  # linux/capability.h

REPORT = """#!/bin/sh
echo "args=$*"
echo "nice=$(nice)"
echo "tmpdir=${TMPDIR-unset}"
grep '^CapBnd:' /proc/self/status
"""


def run_launcher(
    tmp_path: Path,
    scratch: Path | None = None,
    features: tuple[str, ...] = (),
    args: tuple[str, ...] = ("--headless", "a b"),
) -> dict[str, str]:
    fake = tmp_path / "fake-chromium"
    fake.write_text(REPORT)
    fake.chmod(0o755)
    launcher = write_niced_launcher(
        str(fake), tmp_path / "launcher", scratch=scratch, disabled_features=features
    )
    out = subprocess.run([str(launcher), *args], capture_output=True, text=True, check=True).stdout
    return dict(
        line.split("=", 1) if "=" in line else line.split(":", 1) for line in out.splitlines()
    )


def test_the_browser_runs_niced_with_its_arguments_and_without_cap_sys_nice(
    tmp_path: Path,
) -> None:
    lines = run_launcher(tmp_path)
    assert lines["args"] == "--headless a b"
    assert int(lines["nice"]) == os.nice(0) + BROWSER_NICENESS
    bounding = int(lines["CapBnd"].strip(), 16)
    if os.geteuid() == 0:  # an unprivileged browser cannot lower its niceness anyway
        assert not bounding & (1 << CAP_SYS_NICE)
        assert bounding & (1 << (CAP_SYS_NICE - 1)), "only CAP_SYS_NICE is dropped"


def test_issue_18_the_browser_writes_its_profile_and_temp_files_to_its_scratch(
    tmp_path: Path,
) -> None:
    scratch = tmp_path / "scratch dir"  # a space: the script quotes it
    scratch.mkdir()
    lines = run_launcher(tmp_path, scratch)
    # Last, so it wins over the --user-data-dir Playwright put before it.
    assert lines["args"] == f"--headless a b --user-data-dir={scratch}/profile"
    assert lines["tmpdir"] == f"{scratch}/tmp"
    assert (scratch / "tmp").is_dir()


def test_without_scratch_the_browser_keeps_its_environment(tmp_path: Path) -> None:
    assert run_launcher(tmp_path)["tmpdir"] == os.environ.get("TMPDIR", "unset")


def test_scratch_goes_to_the_first_writable_root_with_room(tmp_path: Path) -> None:
    missing = tmp_path / "no-such-dir"
    assert pick_scratch_root([missing, tmp_path], min_free_bytes=0) == tmp_path
    assert pick_scratch_root([missing], min_free_bytes=0) is None
    assert pick_scratch_root([tmp_path], min_free_bytes=1 << 62) is None  # no room: default
    a_file = tmp_path / "a-file"
    a_file.write_text("")
    assert pick_scratch_root([a_file], min_free_bytes=0) is None


def test_scratch_left_by_a_killed_crawl_is_found_and_no_other() -> None:
    names = [
        scratch_prefix(101) + "ab12cd",  # its crawl is gone
        scratch_prefix(202) + "ef34gh",  # its crawl still runs
        "trawl-chromium-x1y2z3",  # not a scratch directory: no pid
        "trawl-chromium-303",  # nor this
        "pulse-shm-303",
        "my-trawl-chromium-404-ab",
    ]
    asked = []

    def is_alive(pid: int) -> bool:
        asked.append(pid)
        return pid == 202

    assert stale_scratch(names, is_alive) == [scratch_prefix(101) + "ab12cd"]
    assert asked == [101, 202]


def test_issue_18_disabled_features_join_playwrights_list_not_replace_it(
    tmp_path: Path,
) -> None:
    # Chromium heeds the last --disable-features only: a second one would drop Playwright's.
    given = ("--disable-features=Pw1,Pw2", "a b")
    lines = run_launcher(tmp_path, features=("Ours1", "Ours2"), args=given)
    assert lines["args"] == "--disable-features=Pw1,Pw2,Ours1,Ours2 a b"
    alone = run_launcher(tmp_path, features=("Ours1",), args=("a b",))
    assert alone["args"] == "a b --disable-features=Ours1"

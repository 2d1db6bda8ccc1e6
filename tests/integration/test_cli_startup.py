"""Issue 14: every `trawl` command took ~1.4 s to start, `--version` included, because the
CLI imported the crawl, the API and the cluster adapters before parsing its arguments."""

from __future__ import annotations

import json
import statistics
import subprocess
import sys
import time
from typing import TYPE_CHECKING

import pytest

from trawl.store.layout import DB_NAME
from trawl.store.sqlite_db import open_database

if TYPE_CHECKING:
    from pathlib import Path

# Third-party packages that only a crawl, the API or cluster mode need.
HEAVY = (
    "aiohttp", "fastapi", "uvicorn", "boto3", "psycopg", "redis", "resiliparse", "selectolax",
    "warcio", "uvloop", "pydantic",
)  # fmt: skip

# Runs `trawl ARGS` in a fresh interpreter, then prints the modules it had imported.
_RUN_MAIN = """
import json, sys
from trawl.cli import main
try:
    status = main(sys.argv[1:])
except SystemExit as exc:  # --version and --help exit from argparse
    status = exc.code
print(json.dumps({"status": status, "modules": sorted(sys.modules)}))
"""


def imported_by(args: list[str]) -> tuple[int, set[str]]:
    done = subprocess.run(
        [sys.executable, "-c", _RUN_MAIN, *args], capture_output=True, text=True, timeout=60
    )
    answer = json.loads(done.stdout.splitlines()[-1])
    return answer["status"], set(answer["modules"])


def heavy_in(modules: set[str], heavy: tuple[str, ...] = HEAVY) -> list[str]:
    return sorted(m for m in modules if m.split(".")[0] in heavy)


def test_issue_14_importing_the_cli_imports_no_heavy_module() -> None:
    done = subprocess.run(
        [sys.executable, "-c", "import sys, trawl.cli.dispatch; print(' '.join(sys.modules))"],
        capture_output=True, text=True, timeout=60, check=True,
    )  # fmt: skip
    assert heavy_in(set(done.stdout.split())) == []


@pytest.mark.parametrize("args", [["--version"], ["--help"], ["serve", "--help"]])
def test_issue_14_parsing_imports_no_heavy_module(args: list[str]) -> None:
    status, modules = imported_by(args)
    assert status == 0
    # Nor the crawl's own modules: they import the heavy ones.
    assert heavy_in(modules, (*HEAVY, "publicsuffixlist", "asyncio")) == []
    assert "trawl.wiring.embedded" not in modules


@pytest.fixture(scope="module")
def empty_data(tmp_path_factory: pytest.TempPathFactory) -> Path:
    data = tmp_path_factory.mktemp("data")
    open_database(data / DB_NAME).close()
    return data


def test_issue_14_read_back_commands_import_only_what_they_need(empty_data: Path) -> None:
    status, modules = imported_by(["page", "http://a.test/", "--data", str(empty_data)])
    assert status == 2  # "no page record": the command ran through its lookup
    assert heavy_in(modules, (*HEAVY, "publicsuffixlist", "isal", "asyncio")) == []
    status, modules = imported_by(["pages", "--data", str(empty_data)])
    assert (status, heavy_in(modules)) == (0, [])
    status, modules = imported_by(["host", "www.a.test", "--data", str(empty_data)])
    assert status == 2  # "no host record": looked up by its registered domain
    assert heavy_in(modules) == []
    assert "publicsuffixlist" in modules  # a hostname needs the list (a site does not)


def test_issue_14_version_starts_fast() -> None:
    # Was ~1.4 s (1.8 s on this shared machine); now ~0.15 s. The bound is generous so a
    # loaded machine cannot make it flake; bench/startup.py measures it properly.
    times = []
    for _ in range(5):
        started = time.perf_counter()
        subprocess.run(
            [sys.executable, "-m", "trawl", "--version"],
            capture_output=True,
            check=True,
            timeout=60,
        )
        times.append(time.perf_counter() - started)
    assert statistics.median(times) < 0.6

"""Issue 14, item 8: the base install pulled boto3, psycopg and redis, which only cluster
mode needs. They are the `[cluster]` extra now; without them a cluster command says so in one
line, and a single-machine crawl does not need them."""

from __future__ import annotations

import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from trawl.cli import main
from trawl.cluster.extra import CLUSTER_PACKAGES

ROOT = Path(__file__).resolve().parents[2]


def names(requirements: list[str]) -> set[str]:
    return {r.split(">")[0].split("[")[0].split("=")[0].strip() for r in requirements}


def test_issue_14_cluster_packages_are_an_extra_the_dev_install_includes() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    extras = project["optional-dependencies"]
    assert names(project["dependencies"]).isdisjoint(CLUSTER_PACKAGES)
    assert names(extras["cluster"]) == set(CLUSTER_PACKAGES)
    # The test command installs '.[dev]', and the tests run cluster mode.
    assert set(extras["cluster"]) <= set(extras["dev"])


@pytest.mark.parametrize(
    "args",
    [
        ["node", "--cluster", "cluster.toml"],
        ["cluster", "status", "--cluster", "cluster.toml"],
        ["seed", "--cluster", "cluster.toml", "http://a.test/"],
        ["pages", "--cluster", "cluster.toml"],
    ],
    ids=["node", "cluster-status", "seed", "read-back"],
)
@pytest.mark.parametrize("missing", CLUSTER_PACKAGES)
def test_issue_14_cluster_mode_without_its_packages_is_one_line(
    args: list[str],
    missing: str,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.setitem(sys.modules, missing, None)  # `import missing` fails, find_spec is None
    assert main(args) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    assert f"({missing} not installed)" in err
    assert "pip install 'trawl[cluster]'" in err


def test_issue_14_a_single_machine_crawl_needs_no_cluster_package() -> None:
    blocked = "; ".join(f"sys.modules[{n!r}] = None" for n in (*CLUSTER_PACKAGES, "botocore"))
    code = (
        f"import sys; {blocked}; "
        "import trawl.cli.dispatch, trawl.wiring.embedded, trawl.loop.crawler, trawl.api.serve, "
        "trawl.cli.readback, trawl.cli.demo"
    )
    subprocess.run([sys.executable, "-c", code], check=True, timeout=60)

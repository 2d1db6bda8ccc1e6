"""The README's test command is the one that installs what the tests need (issue 14 item 0).

Read, not run: the README's second code block must be `scripts/test`, `.ci/run` must be that
script, and the script must install every Debian package the tests start, make the venv,
install the dev extra, lint, type-check and run pytest, stopping on the first failure.
"""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "scripts" / "test"
# What the tests start or drive: tests/servers/{redis,postgres}.py, tests/e2e/test_bench_*
# (nginx), tests/e2e/test_dashboard.py (chromium and its driver).
NEEDED_PACKAGES = {"nginx-light", "chromium", "chromium-driver", "postgresql", "redis-server"}


def _code_blocks(markdown: str) -> list[str]:
    return re.findall(r"```sh\n(.*?)```", markdown, flags=re.DOTALL)


def _commands(script: str) -> list[str]:
    return [line.strip() for line in script.splitlines() if not line.strip().startswith("#")]


def test_issue_14_readme_test_command_is_the_installing_script() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    after = readme.split("\nRun the tests", 1)[1]
    assert _code_blocks(after)[0].strip() == "scripts/test"
    assert SCRIPT.stat().st_mode & 0o111, "scripts/test must be executable"


def test_issue_14_ci_runs_the_readme_test_command() -> None:
    ci = _commands((ROOT / ".ci" / "run").read_text(encoding="utf-8"))
    assert "set -euo pipefail" in ci
    assert any(re.search(r"\bscripts/test\b", line) for line in ci if line.startswith("exec"))


def test_issue_14_test_script_installs_every_package_ci_needs() -> None:
    lines = _commands(SCRIPT.read_text(encoding="utf-8"))
    text = "\n".join(lines)
    assert "set -euo pipefail" in lines
    missing_added = set(re.findall(r"missing\+=\(([\w-]+)\)", text))
    assert missing_added == NEEDED_PACKAGES
    assert re.search(r"apt-get install -y -qq \"\$\{missing\[@\]\}\"", text)
    # The one install line, then lint, types and tests, in that order.
    steps = ["python3 -m venv .venv", "pip install -q -e '.[dev]'", "ruff check", "mypy",
             "python -m pytest -q"]  # fmt: skip
    at = [text.find(step) for step in steps]
    assert -1 not in at, dict(zip(steps, at, strict=True))
    assert at == sorted(at)

"""Issue 15: the command line imported in a circle (cli -> demo -> cli, node_cli -> cli). Now
the dispatcher imports the command modules, the command modules import only the shared
`options` and `runner`, and those two import nothing else of the command line."""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path

import pytest

import trawl.cli

CLI_DIR = Path(trawl.cli.__file__).parent
SHARED = {"trawl.cli.options", "trawl.cli.runner"}
COMMANDS = sorted(
    f"trawl.cli.{p.stem}"
    for p in CLI_DIR.glob("*.py")
    if p.stem not in {"__init__", "dispatch", "options", "runner"}
)


def cli_imports(module: str) -> set[str]:
    """The trawl.cli modules `module`'s source imports, at its top or inside a function."""
    source = (CLI_DIR / f"{module.rsplit('.', 1)[1]}.py").read_text(encoding="utf-8")
    found: set[str] = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom):
            assert node.level == 0, "relative import"  # absolute ones are all this test reads
            if node.module == "trawl.cli":  # `from trawl.cli import demo` imports a module
                found |= {f"trawl.cli.{a.name}" for a in node.names}
            found.add(str(node.module))
    return {m for m in found if m.startswith("trawl.cli.")}


def test_issue_15_every_command_has_its_module() -> None:
    assert COMMANDS == [
        "trawl.cli.cluster", "trawl.cli.crawl", "trawl.cli.demo", "trawl.cli.node",
        "trawl.cli.readback", "trawl.cli.seed", "trawl.cli.serve", "trawl.cli.skipped",
    ]  # fmt: skip


@pytest.mark.parametrize("module", sorted(SHARED))
def test_issue_15_shared_modules_import_nothing_of_the_command_line(module: str) -> None:
    assert cli_imports(module) == set()


@pytest.mark.parametrize("module", COMMANDS)
def test_issue_15_a_command_imports_only_the_shared_modules(module: str) -> None:
    assert cli_imports(module) <= SHARED


# Imports one module in a fresh interpreter, then prints the trawl.cli modules loaded.
_IMPORT_ALONE = """
import importlib, json, sys
importlib.import_module(sys.argv[1])
print(json.dumps(sorted(m for m in sys.modules if m.startswith("trawl.cli"))))
"""


@pytest.mark.parametrize("module", [*sorted(SHARED), *COMMANDS])
def test_issue_15_each_cli_module_imports_alone_without_the_dispatcher(module: str) -> None:
    done = subprocess.run(
        [sys.executable, "-c", _IMPORT_ALONE, module],
        capture_output=True, text=True, timeout=60, check=True,
    )  # fmt: skip
    loaded = set(json.loads(done.stdout))
    assert module in loaded
    assert loaded - {module, "trawl.cli"} <= SHARED


@pytest.mark.parametrize(
    ("module", "loaded"),
    [("trawl.cli", ["trawl.cli"]), ("trawl.cli.runner", ["trawl.cli", "trawl.cli.runner"])],
)
def test_issue_15_the_package_and_the_runner_load_no_parser(module: str, loaded: list[str]) -> None:
    done = subprocess.run(
        [sys.executable, "-c", _IMPORT_ALONE, module],
        capture_output=True, text=True, timeout=60, check=True,
    )  # fmt: skip
    assert json.loads(done.stdout) == loaded

"""Issue 14, item 8: `trawl-demo-data/` was not in .gitignore, so a demo run in a clone left
its WARCs and database showing in `git status`."""

from __future__ import annotations

import argparse
from pathlib import Path

from trawl.cli.dispatch import build_parser

ROOT = Path(__file__).resolve().parents[2]


def default_data_dirs() -> set[str]:
    """The `--data` default of every subcommand (the directories a run makes unasked)."""
    parser = build_parser()
    (commands,) = (a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return {
        str(action.default)
        for command in commands.choices.values()
        for action in command._actions
        if action.dest == "data" and action.default is not None
    }


def test_issue_14_every_default_data_directory_is_git_ignored() -> None:
    ignored = set((ROOT / ".gitignore").read_text(encoding="utf-8").splitlines())
    dirs = default_data_dirs()
    assert {"trawl-data", "trawl-demo-data"} <= dirs
    assert [d for d in sorted(dirs) if f"{d}/" not in ignored] == []

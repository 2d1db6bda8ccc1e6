"""The `trawl` command line: `dispatch` builds the parser and runs the command named; one
module per command (crawl, serve, seed, demo, readback, cluster, node); `options` holds what
several commands parse alike, and `runner` what the commands that crawl share.

This package's own import stays tiny: `trawl.cli.runner` is imported by commands (and tests)
that must not pull in the parser, so `main` imports the dispatcher only when called.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Sequence


def main(argv: Sequence[str] | None = None) -> int:
    """`trawl ...` (the console script `trawl.cli:main` and `python -m trawl`)."""
    # A module named `trawl.cli.main` would replace this function as the package's `main`
    # attribute once imported, hence the dispatcher's own name.
    from trawl.cli.dispatch import main as dispatch

    return dispatch(argv)

"""Issue 14, item 8: what `trawl serve --help` offers."""

from __future__ import annotations

import pytest

from trawl.cli import main


def help_of(command: str, capsys: pytest.CaptureFixture[str]) -> str:
    with pytest.raises(SystemExit) as exit_info:
        main([command, "--help"])
    assert exit_info.value.code == 0
    return capsys.readouterr().out


def test_issue_14_serve_help_does_not_offer_continuous(capsys: pytest.CaptureFixture[str]) -> None:
    assert "--continuous" in help_of("crawl", capsys)
    serve_help = help_of("serve", capsys)
    assert "--continuous" not in serve_help
    assert "--max-pages" in serve_help  # the other crawl options stay
    with pytest.raises(SystemExit) as exit_info:
        main(["serve", "--continuous"])
    assert exit_info.value.code == 2  # argparse: unrecognized argument

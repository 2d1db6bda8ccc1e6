"""Bad input from the operator: one clear line on stderr, exit status 2, nothing lost."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

from trawl.cli import main
from trawl.store.layout import lock_data_dir

if TYPE_CHECKING:
    from pathlib import Path

CONTACT = ["--contact", "https://trawl.invalid/test"]


def run_error(args: list[str], capsys: pytest.CaptureFixture[str]) -> str:
    assert main(args) == 2
    err = capsys.readouterr().err
    assert err.startswith("trawl: error: ")
    assert "Traceback" not in err
    assert err.count("\n") == 1
    return err


def test_malformed_seed_line_is_named_with_file_and_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    seeds = tmp_path / "seeds.txt"
    seeds.write_text("# my seeds\nhttp://a.test/\nmailto:someone@a.test\n")
    err = run_error(
        ["crawl", "--seeds-file", str(seeds), "--data", str(tmp_path / "d"), *CONTACT], capsys
    )
    assert f"{seeds}:3" in err
    assert "mailto:someone@a.test" in err


def test_contact_url_is_required(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    err = run_error(["crawl", "http://a.test/", "--data", str(tmp_path / "d")], capsys)
    assert "contact URL is required" in err


def test_user_agent_without_contact_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    err = run_error(
        ["crawl", "http://a.test/", "--data", str(tmp_path / "d"), "--user-agent", "mybot/1.0"],
        capsys,
    )
    assert "must name trawl and a contact URL" in err


def test_bad_config_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    config = tmp_path / "trawl.toml"
    config.write_text("[politeness]\nmin_delay_s = 0.1\n")
    err = run_error(
        ["crawl", "http://a.test/", "--config", str(config), "--data", str(tmp_path / "d")],
        capsys,
    )
    assert "min_delay_s" in err


def test_bad_resolve_flag(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    err = run_error(
        ["crawl", "http://a.test/", "--resolve", "a.test", "--data", str(tmp_path), *CONTACT],
        capsys,
    )
    assert "--resolve" in err


def test_damaged_database_is_reported_and_left_alone(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = tmp_path / "d"
    data.mkdir()
    db = data / "trawl.db"
    db.write_bytes(b"this is not sqlite" * 100)
    err = run_error(["crawl", "http://a.test/", "--data", str(data), *CONTACT], capsys)
    assert "damaged or not a trawl database" in err
    assert db.read_bytes() == b"this is not sqlite" * 100
    err = run_error(["pages", "--data", str(data)], capsys)
    assert "trawl.db" in err


def test_read_back_of_a_missing_directory(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    err = run_error(["pages", "--data", str(tmp_path / "nothing")], capsys)
    assert "no trawl database" in err


def test_two_crawls_never_share_a_data_directory(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with lock_data_dir(tmp_path):
        err = run_error(["crawl", "http://a.test/", "--data", str(tmp_path), *CONTACT], capsys)
    assert "another trawl process" in err


@pytest.mark.parametrize(
    ("flags", "named"),
    [
        (["--exclude", "(?=x)"], "scope.exclude[0]: '(?=x)' is not a valid RE2 pattern"),
        (["--include", "((("], "scope.include"),
        (["--max-depth", "-1"], "scope.max_depth = -1"),
        (["--extra-hops", "-2"], "scope.extra_hops = -2"),
    ],
)
def test_issue_16_bad_scope_flags_name_the_key(
    flags: list[str], named: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = tmp_path / "d"
    err = run_error(["crawl", "http://a.test/", "--data", str(data), *CONTACT, *flags], capsys)
    assert named in err
    assert not data.exists()  # refused before anything was opened


def test_issue_16_a_seed_table_without_url(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = tmp_path / "trawl.toml"
    config.write_text('[[seeds]]\ntype = "domain"\n')
    err = run_error(
        ["crawl", "--config", str(config), "--data", str(tmp_path / "d"), *CONTACT], capsys
    )
    assert "seeds[0]: missing key 'url'" in err

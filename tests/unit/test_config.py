from __future__ import annotations

from pathlib import Path

import pytest

from trawl.config import Settings, documented_keys, load_settings, with_overrides
from trawl.errors import ConfigError

ROOT = Path(__file__).resolve().parents[2]


def test_defaults_are_the_hard_rule() -> None:
    s = load_settings(None)
    assert s.politeness.min_delay_s == 1.0
    assert s.politeness.per_ip_max_in_flight == 2
    assert s.politeness.per_ip_min_gap_s == 0.25
    assert s.fetch.total_timeout_s == 10.0
    assert s.fetch.max_body_bytes == 10 * 1024 * 1024
    assert s.frontier.lease_s == 300.0


def test_toml_file_is_read(tmp_path: Path) -> None:
    path = tmp_path / "trawl.toml"
    path.write_text(
        '[crawl]\ncontact_url = "https://ex.org/bot"\nmax_pages = 5\n'
        '[politeness]\nmin_delay_s = 2\n[urls]\nsession_params = ["sid"]\n'
    )
    s = load_settings(path)
    assert s.crawl.contact_url == "https://ex.org/bot"
    assert s.crawl.max_pages == 5
    assert s.politeness.min_delay_s == 2.0
    assert s.urls.session_params == ("sid",)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("[crawl\n", "not valid TOML"),
        ("[crawl]\nmax_pagez = 3\n", "unknown key 'max_pagez'"),
        ("[craw]\n", r"unknown section \[craw\]"),
        ('[crawl]\nmax_pages = "many"\n', "expected an integer"),
        ("[politeness]\nmin_delay_s = 0.2\n", "must be >= 1.0"),
        ("[network]\nallow_private = 1\n", "expected true or false"),
    ],
)
def test_bad_config_is_one_clear_error(tmp_path: Path, text: str, message: str) -> None:
    path = tmp_path / "bad.toml"
    path.write_text(text)
    with pytest.raises(ConfigError, match=message):
        load_settings(path)


def test_missing_config_file(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="not found"):
        load_settings(tmp_path / "nope.toml")


def test_flags_override_config() -> None:
    s = with_overrides(Settings(), crawl={"max_pages": 7, "max_time_s": None})
    assert s.crawl.max_pages == 7
    assert s.crawl.max_time_s == 0.0


def test_every_key_is_documented() -> None:
    doc = (ROOT / "docs" / "CONFIG.md").read_text()
    missing = [key for key in documented_keys() if f"`{key}`" not in doc]
    assert missing == []

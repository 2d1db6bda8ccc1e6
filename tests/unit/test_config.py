from __future__ import annotations

from pathlib import Path

import pytest

from trawl.config import Settings, documented_keys, load_settings, with_overrides
from trawl.errors import ConfigError
from trawl.frontier.scope import ScopeType, SeedScope, Standing

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


SCOPED = """\
[scope]
type = "domain"
exclude = ["/tag/"]
extra_hops = 1

[[seeds]]
url = "https://Docs.Example.org/v2/index.html"
type = "prefix"
include = ["//cdn\\\\.example\\\\.org/"]
max_depth = 3
"""


def test_scope_and_seed_tables_are_read(tmp_path: Path) -> None:
    path = tmp_path / "trawl.toml"
    path.write_text(SCOPED)
    s = load_settings(path)
    assert s.scope.type == "domain"
    assert s.scope.off_scope_redirects == "capture"
    assert s.seeds[0].url == "https://Docs.Example.org/v2/index.html"
    table, extra = s.crawl_scope(("https://other.test/",)).seeds
    assert table == SeedScope(
        "https://docs.example.org/v2/index.html",
        ScopeType.PREFIX,
        include=(r"//cdn\.example\.org/",),
        max_depth=3,
        extra_hops=1,
    )
    assert extra == SeedScope("https://other.test/", ScopeType.DOMAIN, extra_hops=1)


def test_default_scope_is_any() -> None:
    scope = Settings().crawl_scope(("https://a.test/",))
    assert scope.check("https://anywhere.else/").in_scope
    assert scope.decide("https://x.test/", Standing(0, 40)).queue


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('[scope]\ntype = "site"\n', r"^scope\.type = 'site': one of page, "),
        (
            '[scope]\nexclude = ["(a)\\\\1"]\n',
            r"^scope\.exclude\[0\]: '\(a\)\\\\1' is not",
        ),
        ('[scope]\ninclude = ["ok", "(?<=x)"]\n', r"^scope\.include\[1\]: '\(\?<=x\)' is not"),
        ("[scope]\nmax_depth = -1\n", r"^scope\.max_depth = -1: must be 0\.\.65535"),
        ("[scope]\nextra_hops = -1\n", r"^scope\.extra_hops = -1: must be 0\.\.255"),
        ('[scope]\noff_scope_redirects = "keep"\n', r"^scope\.off_scope_redirects = 'keep'"),
        ('[[seeds]]\ntype = "host"\n', r"^.*bad\.toml: seeds\[0\]: missing key 'url'"),
        ('[[seeds]]\nurl = "https://a.test/"\ntype = "dom"\n', r"^seeds\[0\]\.type = 'dom'"),
        ('[[seeds]]\nurl = "https://a.test/"\nmax_depth = -2\n', r"^seeds\[0\]\.max_depth = -2"),
        ('[[seeds]]\nurl = "https://a.test/"\nextra_hops = -3\n', r"^seeds\[0\]\.extra_hops = -3"),
        (
            '[[seeds]]\nurl = "https://a.test/"\n[[seeds]]\nurl = "https://b.test/"\n'
            'exclude = ["x{2,1}"]\n',
            r"^seeds\[1\]\.exclude\[0\]: 'x\{2,1\}' is not a valid RE2",
        ),
        ('[[seeds]]\nurl = "ftp://a.test/"\n', r"^seeds\[0\]\.url: 'ftp://a\.test/'"),
        (
            '[[seeds]]\nurl = "https://a.test/"\nmax_urls = 3\n',
            r"seeds\[0\] unknown key 'max_urls'",
        ),
        (
            '[[seeds]]\nurl = "https://a.test/"\nmax_pages = -3\n',
            r"^seeds\[0\]\.max_pages = -3: must be >= 0",
        ),
        ('[[seeds]]\nurl = "https://a.test/"\nmax_depth = "3"\n', r"seeds\[0\]\.max_depth: exp"),
        ('seeds = "https://a.test/"\n', r"seeds must be \[\[seeds\]\] tables"),
    ],
)
def test_bad_scope_is_one_line_error_naming_the_key(
    tmp_path: Path, text: str, message: str
) -> None:
    path = tmp_path / "bad.toml"
    path.write_text(text)
    with pytest.raises(ConfigError, match=message) as caught:
        load_settings(path)
    assert "\n" not in str(caught.value)

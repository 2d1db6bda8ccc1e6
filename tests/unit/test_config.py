from __future__ import annotations

from pathlib import Path

import pytest

from trawl.config import Settings, documented_keys, load_settings, with_overrides
from trawl.errors import ConfigError
from trawl.frontier.scope import ScopeType, SeedScope, Standing
from trawl.render.policy import RenderRules

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
        ("[frontier]\nmax_links_per_page = 0\n", "max_links_per_page = 0: must be > 0"),
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


def test_render_defaults() -> None:
    r = load_settings(None).render
    assert (r.mode, r.chromium, r.concurrency, r.page_timeout_s) == ("auto", "", 1, 15.0)
    assert (r.max_subrequests, r.max_subresource_bytes) == (60, 8 * 1024 * 1024)
    assert (r.recycle_after_pages, r.max_browser_rss_mb, r.max_queued) == (100, 1024, 10_000)
    assert r.cpu_share == 0.25
    assert RenderRules.from_settings(r) == RenderRules()
    assert RenderRules() == RenderRules(
        site_share=0.2,
        site_min_pages=3,
        overall_share=0.05,
        overall_min=20,
        learn_after=5,
        recheck_every=20,
        min_text_gain_chars=200,
        min_links_gained=1,
        force_on=(),
        force_off=(),
    )


RENDERED = """\
[render]
mode = "off"
chromium = "/usr/lib/chromium/chromium"
concurrency = 1
page_timeout_s = 30
max_subrequests = 0
max_queued = 50
site_share = 0.5
overall_min = 0
learn_after = 2
force_on = ["spa.example.org", "^https://example\\\\.com/app/"]
force_off = ["static.example.org"]
"""


def test_render_section_is_read(tmp_path: Path) -> None:
    path = tmp_path / "trawl.toml"
    path.write_text(RENDERED)
    r = load_settings(path).render
    assert (r.mode, r.chromium, r.concurrency, r.page_timeout_s) == (
        "off",
        "/usr/lib/chromium/chromium",
        1,
        30.0,
    )
    assert (r.max_subrequests, r.max_queued) == (0, 50)
    assert r.recycle_after_pages == 100
    rules = RenderRules.from_settings(r)
    assert (rules.site_share, rules.overall_min, rules.learn_after) == (0.5, 0, 2)
    assert rules.force_on == ("spa.example.org", r"^https://example\.com/app/")
    assert rules.is_forced_on("https://www.spa.example.org/")
    assert rules.is_forced_on("https://example.com/app/x")
    assert rules.is_forced_off("https://static.example.org/")


def test_render_flag_overrides_the_file() -> None:
    s = with_overrides(Settings(), render={"mode": "off", "chromium": None})
    assert (s.render.mode, s.render.chromium) == ("off", "")


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('mode = "on"', r"^render\.mode = 'on': must be auto or off$"),
        ('chromium = "a\\nb"', r"^render\.chromium = 'a\\nb': not a file path$"),
        ("concurrency = 0", r"^render\.concurrency = 0: must be > 0$"),
        ("page_timeout_s = 0", r"^render\.page_timeout_s = 0\.0: must be > 0 and finite$"),
        ("page_timeout_s = nan", r"^render\.page_timeout_s = nan: must be > 0"),
        ("page_timeout_s = inf", r"^render\.page_timeout_s = inf: must be > 0"),
        ("max_subrequests = -1", r"^render\.max_subrequests = -1: must be >= 0$"),
        ("max_subresource_bytes = -1", r"^render\.max_subresource_bytes = -1: must be >= 0$"),
        ("recycle_after_pages = 0", r"^render\.recycle_after_pages = 0: must be > 0$"),
        ("max_browser_rss_mb = 0", r"^render\.max_browser_rss_mb = 0: must be > 0$"),
        ("max_queued = 0", r"^render\.max_queued = 0: must be > 0$"),
        ("cpu_share = 0", r"^render\.cpu_share = 0\.0: must be > 0 and finite$"),
        ("cpu_share = inf", r"^render\.cpu_share = inf: must be > 0 and finite$"),
        ("site_share = 1.5", r"^render\.site_share = 1\.5: must be a number from 0 to 1$"),
        ("overall_share = -0.01", r"^render\.overall_share = -0\.01: must be a number from 0"),
        ("site_min_pages = -1", r"^render\.site_min_pages = -1: must be an integer >= 0$"),
        ("overall_min = -1", r"^render\.overall_min = -1: must be an integer >= 0$"),
        ("learn_after = 0", r"^render\.learn_after = 0: must be an integer >= 1$"),
        ("recheck_every = 0", r"^render\.recheck_every = 0: must be an integer >= 1$"),
        ("min_text_gain_chars = -1", r"^render\.min_text_gain_chars = -1: must be an integer"),
        ("min_links_gained = -2", r"^render\.min_links_gained = -2: must be an integer >= 0$"),
        ('force_on = ["a.test", "(?=x)"]', r"^render\.force_on\[1\]: '\(\?=x\)' is not a valid"),
        ('force_off = ["bad!.test"]', r"^render\.force_off\[0\]: 'bad!\.test' looks like a host"),
        ('force_on = "a.test"', r"\[render\] force_on: expected a list of strings"),
        ("concurrency = 1.5", r"\[render\] concurrency: expected an integer"),
        ('modes = "auto"', r"\[render\] unknown key 'modes'"),
    ],
)
def test_bad_render_setting_is_one_line_error_naming_the_key(
    tmp_path: Path, text: str, message: str
) -> None:
    path = tmp_path / "bad.toml"
    path.write_text(f"[render]\n{text}\n")
    with pytest.raises(ConfigError, match=message) as caught:
        load_settings(path)
    assert "\n" not in str(caught.value)

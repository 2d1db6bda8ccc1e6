"""Issue 16: crawls of the local test web with a scope, judged by the web's request log.

Six one-shot `trawl crawl` processes run at once, each against a test web of its own (a
shared web would mix their requests in one log and its politeness check): what a crawl
costs is its slowest site at one request a second, not the sum of the crawls. What each
crawl should fetch is walked here from the web's link graph (`scoped_walk`, written from
the issue's rules, not from trawl's code); the web has the scope cases
(`build_web(scope_cases=True)`): a cross-site redirect, a www. page and a sitemap on site 3.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from collections import Counter, deque
from contextlib import ExitStack
from dataclasses import dataclass, field
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

import pytest
from tests.e2e.support import CONTACT

from trawl.cli import main
from trawl.store.records_sqlite import SqliteRecords
from trawl.store.sqlite_db import open_database
from trawl.testweb.layout import PageKind
from trawl.testweb.politeness import check_politeness
from trawl.testweb.process import TestWebProcess
from trawl.testweb.sites import build_web

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator
    from pathlib import Path

    from trawl.model import PageRecord
    from trawl.testweb.request_log import RequestLogRecord
    from trawl.testweb.sites import ScopeCases, Site, TestWeb

Key = tuple[str, str]  # (host, path)

SITES, PAGES, WEB_SEED = 4, 8, 5  # ~15-20 URLs a site; site 2 has a blog., site 3 both
MAX_TIME_S = 75.0  # a limit that must not be reached: one-shot crawls end when done
NOT_PAGES = {"/robots.txt", "/sitemap.xml"}
EXCLUDE = "/articles/"
# -- the crawls ----------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Crawl:
    """One crawl: its seed (a site index and path), CLI scope flags, and a config file."""

    site: int
    path: str
    flags: tuple[str, ...] = ()
    config: str = ""  # TOML; "{seed}" is replaced by the seed URL


CRAWLS = {
    "domain": Crawl(2, "/", ("--scope", "domain")),
    "prefix_capture": Crawl(3, "/docs/", ("--scope", "prefix")),
    "prefix_drop": Crawl(
        3,
        "/docs/",
        config=(
            '[scope]\noff_scope_redirects = "drop"\n\n[[seeds]]\nurl = "{seed}"\ntype = "prefix"\n'
        ),
    ),
    "exclude": Crawl(2, "/", ("--scope", "domain", "--exclude", EXCLUDE)),
    "include": Crawl(
        1, "/", ("--scope", "page", "--include", r"^http://(www\.)?site0001\.test(:\d+)?/docs/")
    ),
    "extra_hops": Crawl(0, "/", ("--scope", "domain", "--extra-hops", "1")),
}


@dataclass
class Run:
    web: TestWebProcess
    data: Path
    seed: Key
    returncode: int
    stdout: str  # the summary
    stderr: str  # the start-up line and progress
    requests: list[RequestLogRecord]

    @property
    def port(self) -> int:
        return self.web.port

    def url(self, key: Key) -> str:
        return f"http://{key[0]}:{self.port}{key[1]}"

    def page_requests(self) -> Counter[Key]:
        return Counter((r.host, r.path) for r in self.requests if r.path not in NOT_PAGES)

    def records(self) -> dict[str, PageRecord]:
        conn = open_database(self.data / "trawl.db", readonly=True)
        try:
            return {p.url: p for p in SqliteRecords(conn).iter_pages()}
        finally:
            conn.close()


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Run]]:
    tmp = tmp_path_factory.mktemp("scope")
    with ExitStack() as stack:
        started = {}
        for name, crawl in CRAWLS.items():
            web = stack.enter_context(
                TestWebProcess(
                    sites=SITES,
                    pages=PAGES,
                    seed=WEB_SEED,
                    scope_cases=True,
                    workdir=tmp / name / "web",
                )
            )
            seed = (web.web.sites[crawl.site].apex, crawl.path)
            seed_url = f"http://{seed[0]}:{web.port}{seed[1]}"
            command = [
                sys.executable, "-m", "trawl", "crawl", "--data", str(tmp / name / "data"),
                "--hosts-file", str(web.hosts_file), "--contact", CONTACT,
                "--max-time", str(MAX_TIME_S), *crawl.flags,
            ]  # fmt: skip
            if crawl.config:
                config = tmp / name / "trawl.toml"
                config.write_text(crawl.config.replace("{seed}", seed_url), encoding="utf-8")
                command += ["--config", str(config)]
            else:
                command.append(seed_url)
            stdout, stderr = tmp / name / "crawl.stdout", tmp / name / "crawl.stderr"
            with stdout.open("wb") as out_file, stderr.open("wb") as err_file:
                proc = subprocess.Popen(command, stdout=out_file, stderr=err_file)
            stack.callback(_end, proc)  # a failed start-up leaves no crawl behind
            started[name] = (web, seed, proc)
        out = {}
        for name, (web, seed, proc) in started.items():
            try:
                code = proc.wait(MAX_TIME_S + 60)
            except subprocess.TimeoutExpired:
                proc.kill()
                code = proc.wait()
            web.stop()
            stdout, stderr = (
                (tmp / name / f"crawl.{s}").read_text(errors="replace")
                for s in ("stdout", "stderr")
            )
            out[name] = Run(web, tmp / name / "data", seed, code, stdout, stderr, web.requests())
        yield out


def _end(proc: subprocess.Popen[bytes]) -> None:
    if proc.poll() is None:
        proc.kill()
        proc.wait()


# -- what a crawl of the link graph with a scope fetches -------------------------------------


@dataclass
class Walk:
    fetched: set[Key] = field(default_factory=set)
    captured: set[Key] = field(default_factory=set)  # off-scope redirect targets, as leaves
    skipped: dict[Key, str] = field(default_factory=dict)  # first reason each was skipped for
    hosts: set[str] = field(default_factory=set)  # hosts whose robots.txt is read


def scoped_walk(
    web: TestWeb,
    port: int,
    seed: Key,
    in_scope: Callable[[Key], bool],
    *,
    excluded: Callable[[Key], bool] = lambda key: False,
    extra_hops: int = 0,
    capture: bool = True,
) -> Walk:
    """The issue's rules over the link graph: a seed is in scope; an exclude wins; links
    out of scope are followed while the page has off-scope hops left (a link back in
    resets them); a redirect moves its page (no hop), and an off-scope target with no hop
    left is captured (fetched, its links not followed) or dropped; sitemap entries must be
    in scope. A skipped URL is not claimed: another path may still bring it in."""
    walk = Walk()
    queue: deque[tuple[Key, int, bool]] = deque([(seed, 0, False)])
    queued = {seed}

    def offer(target: Key, off: int, leaf: bool) -> None:
        if target not in queued:
            queued.add(target)
            queue.append((target, off, leaf))
            if leaf:
                walk.captured.add(target)

    def skip(target: Key, reason: str) -> None:
        walk.skipped.setdefault(target, reason)

    while queue:
        key, off, leaf = queue.popleft()
        host, path = key
        if host not in walk.hosts:
            walk.hosts.add(host)
            for entry in web.sitemap_targets(host):
                if excluded(entry):
                    skip(entry, "exclude")
                elif in_scope(entry):
                    offer(entry, 0, False)
                else:
                    skip(entry, "scope")
        if not web.is_allowed(host, path, port):
            continue
        walk.fetched.add(key)
        page = web.page(host, path)
        moved = page is not None and page.kind is PageKind.REDIRECT
        for target in web.followed_targets(host, path):
            if target == seed:
                continue
            if leaf:
                skip(target, "capture")
            elif excluded(target):
                skip(target, "exclude")
            elif in_scope(target):
                offer(target, 0, False)
            elif moved and off:
                offer(target, off, False)  # the same off-scope hop, moved
            elif off < extra_hops:
                offer(target, off + 1, False)
            elif moved and capture:
                offer(target, off, True)
            else:
                skip(target, "extra_hops" if extra_hops else "scope")
    return walk


def on_site(site: Site) -> Callable[[Key], bool]:
    return lambda key: key[0] in site.hosts


def under_prefix(site: Site, prefix: str) -> Callable[[Key], bool]:
    """`prefix` scope: the apex or its www. host (which are the same), under `prefix`."""
    hosts = {site.apex, f"www.{site.apex}"}
    return lambda key: key[0] in hosts and key[1].startswith(prefix)


def everywhere(key: Key) -> bool:
    return True


def site_of(web: TestWeb, run: Run) -> Site:
    site = web.site_of(run.seed[0])
    assert site is not None
    return site


def assert_clean(run: Run) -> None:
    """The crawl ended by itself, without error, and politely."""
    assert run.returncode == 0, run.stderr[-2000:] + run.stdout
    assert ", URLs left in queue 0\n" in run.stdout  # it ran out of work: no limit hit
    assert check_politeness(run.requests, **run.web.web.politeness_inputs()) == []


def assert_fetched_once(run: Run, expected: set[Key]) -> None:
    fetched = run.page_requests()
    assert set(fetched) == expected
    assert [key for key, n in fetched.items() if n > 1] == []


def cases(run: Run) -> ScopeCases:
    return run.web.web.scope_cases()


def test_the_scope_cases_change_nothing_else_in_the_web() -> None:
    """The flag's additions are on site 3 only, and remove nothing there."""
    base = build_web(SITES, PAGES, WEB_SEED)
    web = build_web(SITES, PAGES, WEB_SEED, scope_cases=True)
    the = web.scope_cases()
    assert web.seed_domains == base.seed_domains
    for old, new in zip(base.sites, web.sites, strict=True):
        if new.domain != the.site:
            assert new == old
            assert new.pages == old.pages
            continue
        added = set(new.pages) - set(old.pages)
        assert added == {the.away, the.www_page, the.listed_in_prefix, the.listed_out_of_prefix,
                         the.listed_other_host}  # fmt: skip
        changed = {k for k in old.pages if new.pages[k] != old.pages[k]}
        assert changed == {(new.apex, "/docs/")}  # it links the redirect and the www. page
        assert set(new.sitemaps) == {the.sitemap}
    assert base.expected_fetches(80) < web.expected_fetches_with_sitemaps(80)


# -- 1. domain ------------------------------------------------------------------------------


def test_domain_scope_never_asks_another_domain_and_fetches_its_subdomains(
    runs: dict[str, Run],
) -> None:
    run = runs["domain"]
    web = run.web.web
    site = site_of(web, run)
    assert_clean(run)
    walk = scoped_walk(web, run.port, run.seed, on_site(site))
    assert {k[0] for k in walk.skipped} - set(site.hosts)  # other domains were linked
    assert {r.site for r in run.requests} == {site.domain}  # robots.txt included
    assert_fetched_once(run, walk.fetched)
    assert {r.host for r in run.requests if r.path == "/robots.txt"} == walk.hosts
    assert f"blog.{site.domain}" in {host for host, _ in run.page_requests()}
    assert ", sites 1, " in run.stdout  # the sites it only saw linked cost it nothing


# -- 2. prefix ------------------------------------------------------------------------------


def test_prefix_scope_stays_under_the_seeds_directory_with_www_the_same(
    runs: dict[str, Run],
) -> None:
    run = runs["prefix_drop"]
    web = run.web.web
    site = site_of(web, run)
    assert_clean(run)
    inside = under_prefix(site, "/docs/")
    walk = scoped_walk(web, run.port, run.seed, inside, capture=False)
    assert any(not inside(key) and key[0] in site.hosts for key in walk.skipped)
    assert_fetched_once(run, walk.fetched)
    assert all(inside(key) for key in run.page_requests())
    assert cases(run).www_page in run.page_requests()  # www.S/docs/ is under S/docs/
    assert {r.site for r in run.requests} == {site.domain}


# -- 3. include and exclude -----------------------------------------------------------------


def test_domain_scope_with_an_exclude_requests_nothing_it_matches(runs: dict[str, Run]) -> None:
    run = runs["exclude"]
    web = run.web.web
    site = site_of(web, run)
    assert_clean(run)
    excluded = re.compile(EXCLUDE)
    walk = scoped_walk(
        web, run.port, run.seed, on_site(site), excluded=lambda k: bool(excluded.search(k[1]))
    )
    unexcluded = scoped_walk(web, run.port, run.seed, on_site(site))
    assert any(excluded.search(path) for _, path in unexcluded.fetched)  # it had work to do
    assert_fetched_once(run, walk.fetched)
    assert [r.path for r in run.requests if excluded.search(run.url((r.host, r.path)))] == []
    assert f"blog.{site.domain}" in {host for host, _ in run.page_requests()}


def test_an_include_widens_a_page_scope_to_one_more_path(runs: dict[str, Run]) -> None:
    run = runs["include"]
    web = run.web.web
    site = site_of(web, run)
    assert_clean(run)

    def included(key: Key) -> bool:
        return key[0] in (site.apex, f"www.{site.apex}") and key[1].startswith("/docs/")

    walk = scoped_walk(web, run.port, run.seed, included)
    assert len(walk.fetched) > 2  # the seed and more than the /docs/ index
    assert (site.apex, "/articles/") in walk.skipped  # linked from every page, not included
    assert_fetched_once(run, walk.fetched)
    assert all(key == run.seed or included(key) for key in run.page_requests())


# -- 4. extra hops --------------------------------------------------------------------------


def test_one_extra_hop_fetches_exactly_the_first_off_scope_hop(runs: dict[str, Run]) -> None:
    run = runs["extra_hops"]
    web = run.web.web
    site = site_of(web, run)
    assert_clean(run)
    walks = [scoped_walk(web, run.port, run.seed, on_site(site), extra_hops=n) for n in (0, 1, 2)]
    assert walks[0].fetched < walks[1].fetched < walks[2].fetched  # each hop adds pages
    assert_fetched_once(run, walks[1].fetched)
    assert {r.host for r in run.requests if r.path == "/robots.txt"} == walks[1].hosts


# -- 5. off-scope redirects -----------------------------------------------------------------


def test_an_off_scope_redirect_target_is_stored_but_its_links_not_followed(
    runs: dict[str, Run],
) -> None:
    run = runs["prefix_capture"]
    web = run.web.web
    site, the = site_of(web, run), cases(run)
    assert_clean(run)
    walk = scoped_walk(web, run.port, run.seed, under_prefix(site, "/docs/"))
    assert walk.captured == {the.away_target}
    assert web.followed_targets(*the.away_target)  # it has links to not follow
    assert_fetched_once(run, walk.fetched)
    other = {(r.host, r.path) for r in run.requests if r.site == the.other_site}
    assert other - {(the.away_target[0], p) for p in NOT_PAGES} == {the.away_target}
    assert {r.site for r in run.requests} == {site.domain, the.other_site}
    record = run.records()[run.url(the.away_target)]
    assert record.http_status == 200
    assert record.storage_key  # stored, so an archive replays the redirect
    assert record.redirect_to == ""
    assert run.records()[run.url(the.away)].redirect_to == run.url(the.away_target)


def test_with_drop_an_off_scope_redirect_target_is_not_fetched(runs: dict[str, Run]) -> None:
    run = runs["prefix_drop"]
    the = cases(run)
    assert_clean(run)
    assert run.page_requests()[the.away] == 1
    assert [r for r in run.requests if r.site == the.other_site] == []
    assert run.url(the.away_target) not in run.records()
    skips = skipped_lines(run)
    assert {(s["url"], s["reason"]) for s in skips if s["type"] == "skip"} >= {
        (run.url(the.away_target), "scope")
    }


# -- 6. sitemaps ----------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["prefix_capture", "prefix_drop"])
def test_a_sitemaps_off_scope_entries_are_never_fetched(runs: dict[str, Run], name: str) -> None:
    run = runs[name]
    the = cases(run)
    assert_clean(run)
    fetched = run.page_requests()
    assert the.sitemap in {(r.host, r.path) for r in run.requests}
    assert fetched[the.listed_in_prefix] == 1  # only the sitemap leads there: it was read
    off_scope = {the.listed_out_of_prefix, the.listed_other_host, the.listed_other_site}
    assert off_scope & set(fetched) == set()
    skips = {s["url"]: s["reason"] for s in skipped_lines(run) if s["type"] == "skip"}
    assert skips[run.url(the.listed_out_of_prefix)] == "scope"
    assert skips[run.url(the.listed_other_host)] == "scope"


# -- 7. the skipped report ------------------------------------------------------------------


def skipped_lines(run: Run) -> list[dict[str, object]]:
    """`trawl skipped --data DIR --json`, read as JSON lines."""
    out = subprocess.run(
        [sys.executable, "-m", "trawl", "skipped", "--data", str(run.data), "--json"],
        capture_output=True, text=True, check=True, timeout=60,
    )  # fmt: skip
    return [json.loads(line) for line in out.stdout.splitlines()]


def test_the_skipped_report_matches_what_the_log_shows_was_not_fetched(
    runs: dict[str, Run], capsys: pytest.CaptureFixture[str]
) -> None:
    run = runs["exclude"]
    web = run.web.web
    site = site_of(web, run)
    excluded = re.compile(EXCLUDE)
    walk = scoped_walk(
        web, run.port, run.seed, on_site(site), excluded=lambda k: bool(excluded.search(k[1]))
    )
    assert main(["skipped", "--data", str(run.data), "--json"]) == 0
    lines = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    counts = {str(c["reason"]): c["count"] for c in lines if c["type"] == "count"}
    skips = [s for s in lines if s["type"] == "skip"]
    requested = {(r.host, r.path) for r in run.requests}
    for reason in ("scope", "exclude"):
        expected = {run.url(key) for key, why in walk.skipped.items() if why == reason}
        sampled = {str(s["url"]) for s in skips if s["reason"] == reason}
        assert expected, reason
        assert counts.get(reason) == len(expected), reason
        assert sampled == expected, reason  # every skip is kept: far fewer than 10,000
        assert {_key(url) for url in sampled} & requested == set(), reason
    assert all(s["referrer"] for s in skips)  # the page that linked it
    total = sum(int(str(n)) for n in counts.values())
    assert f"scope domain x1, 1 exclude; URLs not queued {total} " in run.stdout
    start = f"trawl: crawling into {run.data} from 1 seed; scope domain x1, 1 exclude\n"
    assert run.stderr.startswith(start), run.stderr[:300]  # the start-up line says it too
    rules = {str(s["rule"]) for s in skips if s["reason"] == "exclude"}
    assert rules == {f"exclude {EXCLUDE}"}


def _key(url: str) -> Key:
    parts = urlsplit(url)
    return (parts.hostname or "", parts.path + (f"?{parts.query}" if parts.query else ""))

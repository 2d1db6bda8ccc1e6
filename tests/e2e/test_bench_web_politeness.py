"""The short benchmark's web (nginx, one loopback IP per site) crawled at full speed.

Asserts only what cannot be flaky: no politeness violation in nginx's log and every page
fetched once (in one of its host spellings at least). Speed is measured by bench/speed.py,
never asserted here.
"""

from __future__ import annotations

import subprocess
import sys
from collections import Counter
from typing import TYPE_CHECKING

from bench.webfarm.accesslog import NGINX_TOLERANCE_S, read_access_log
from bench.webfarm.generate import generate_web
from bench.webfarm.nginx import Nginx
from trawl.store.records_sqlite import SqliteRecords
from trawl.store.sqlite_db import open_database
from trawl.testweb.politeness import check_politeness

if TYPE_CHECKING:
    from pathlib import Path


def test_fast_crawl_of_the_nginx_web_is_polite_and_complete(tmp_path: Path) -> None:
    spec = generate_web(tmp_path / "web", n_sites=80, pages_per_site=6)
    seeds = tmp_path / "seeds.txt"
    seeds.write_text("\n".join(spec.seeds) + "\n")
    access = tmp_path / "access.jsonl"
    with Nginx(spec.root, spec, access_log=access):
        subprocess.run(
            [
                sys.executable,
                "-m",
                "trawl",
                "crawl",
                "--seeds-file",
                str(seeds),
                "--data",
                str(tmp_path / "data"),
                "--hosts-file",
                str(spec.hosts_file),
                "--contact",
                "https://trawl.invalid/test",
                "--max-time",
                "120",
            ],
            check=True,
            capture_output=True,
            timeout=200,
        )
    records = read_access_log(access)
    violations = check_politeness(
        records, tolerance_s=NGINX_TOLERANCE_S, **spec.politeness_inputs()
    )
    assert violations == []
    pages = Counter(
        (r.host, r.path) for r in records if r.path not in ("/robots.txt", "/sitemap.xml")
    )
    assert [k for k, n in pages.items() if n > 1] == []
    # Complete: every page of every site, under at least one of the site's host names. A
    # page of the `www.` alias is an exact copy of the bare host's, and links found on a
    # same-site copy are not followed (issue 13): they are new spellings of known content.
    site_of_host = {h: site.host for site in spec.sites for h in (site.host, *site.aliases)}
    fetched = {(site_of_host[host], path) for host, path in pages}
    public = [p for p in spec.page_paths if not p.startswith("/private/")]
    assert fetched >= {(site.host, path) for site in spec.sites for path in public}
    assert len(pages) <= spec.expected_pages
    # A host alias is no trap: a site whose `www.` pages copy its bare host's is not contained.
    records = SqliteRecords(open_database(tmp_path / "data" / "trawl.db", readonly=True))
    contained = [s.host for s in spec.sites if _is_contained(records.get_host(s.host))]
    assert contained == []


def _is_contained(host_record: dict[str, object] | None) -> bool:
    assert host_record is not None
    containment = host_record.get("containment")
    return isinstance(containment, dict) and containment.get("contained") is True

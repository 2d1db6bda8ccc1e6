"""The short benchmark's web (nginx, one loopback IP per site) crawled at full speed.

Asserts only what cannot be flaky: no politeness violation in nginx's log and every page
fetched once. Speed is measured by bench/speed.py, never asserted here.
"""

from __future__ import annotations

import subprocess
import sys
from collections import Counter
from typing import TYPE_CHECKING

from bench.webfarm.accesslog import NGINX_TOLERANCE_S, read_access_log
from bench.webfarm.generate import generate_web
from bench.webfarm.nginx import Nginx
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
    assert len(pages) == spec.expected_pages

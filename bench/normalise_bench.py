"""Microseconds per `normalise_url` call on a realistic mix of links.

Run: `python bench/normalise_bench.py`. The mix is what a news page's links look like:
mostly relative paths, some absolute same-site and off-site links, a few with tracking
parameters, escapes or dot segments, and a few invalid ones (mailto:, javascript:).
The baseline is `urllib.parse.urljoin` alone, which does a small part of the work.
"""

from __future__ import annotations

import contextlib
import platform
import random
import subprocess
import sys
import timeit
from typing import TYPE_CHECKING
from urllib.parse import urljoin

from trawl.errors import InvalidUrl
from trawl.urls.normalise import normalise_url, url_hash

if TYPE_CHECKING:
    from collections.abc import Callable

BASES = [f"https://news{i}.example.com/section/{i}/article-{i * 7}.html" for i in range(20)]
SECTIONS = ["world", "politics", "business", "tech", "sport", "culture", "opinion", "video"]


def _links(rng: random.Random, n: int) -> list[str]:
    links: list[str] = []
    for _ in range(n):
        section = rng.choice(SECTIONS)
        slug = f"{section}-story-{rng.randrange(100000)}"
        kind = rng.random()
        if kind < 0.45:
            links.append(f"/{section}/2026/11/{slug}")
        elif kind < 0.60:
            links.append(f"{slug}.html")
        elif kind < 0.75:
            links.append(f"https://news{rng.randrange(20)}.example.com/{section}/{slug}")
        elif kind < 0.83:
            links.append(f"/{section}/{slug}?utm_source=home&utm_medium=web&page={kind:.2f}")
        elif kind < 0.88:
            links.append(f"https://www.Other{rng.randrange(500)}.org:443/a/../{slug}#top")
        elif kind < 0.92:
            links.append(f"../tags/caf%c3%a9 {section}/?b=2&a=1")
        elif kind < 0.95:
            links.append(f"//cdn.example.net/{section}/{slug}?fbclid=xyz")
        elif kind < 0.98:
            links.append(f"mailto:editor@news{rng.randrange(20)}.example.com")
        else:
            links.append("javascript:void(0)")
    return links


def _run(links: list[tuple[str, str]]) -> None:
    for href, base in links:
        with contextlib.suppress(InvalidUrl):
            normalise_url(href, base)


def _baseline(links: list[tuple[str, str]]) -> None:
    for href, base in links:
        urljoin(base, href)


def _per_call_us(
    fn: Callable[[list[tuple[str, str]]], None], links: list[tuple[str, str]]
) -> float:
    timer = timeit.Timer(lambda: fn(links))
    best = min(timer.repeat(repeat=5, number=1))
    return best / len(links) * 1e6


def main() -> None:
    rng = random.Random(7)
    mix = [(href, rng.choice(BASES)) for href in _links(rng, 50_000)]
    relative = [(f"/world/2026/11/story-{i}", BASES[i % 20]) for i in range(50_000)]
    hashes = [normalise_url(href, base) for href, base in relative[:10_000]]
    commit = subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, check=False
    ).stdout.strip()
    print(f"command: {' '.join(sys.argv)}  commit: {commit or '?'}  machine: {platform.machine()}")
    print(f"python {platform.python_version()} on {platform.platform()}")
    base_us = _per_call_us(_baseline, mix)
    mix_us = _per_call_us(_run, mix)
    rel_us = _per_call_us(_run, relative)
    hash_s = min(timeit.repeat(lambda: [url_hash(u) for u in hashes], number=1, repeat=5))
    print(f"urljoin only (baseline), mix : {base_us:6.2f} us/call")
    print(
        f"normalise_url, realistic mix : {mix_us:6.2f} us/call  ({mix_us / base_us:.2f}x urljoin)"
    )
    print(f"normalise_url, relative path : {rel_us:6.2f} us/call")
    print(f"url_hash                     : {hash_s / len(hashes) * 1e6:6.2f} us/call")


if __name__ == "__main__":
    main()

"""Microseconds per robots.txt check of one URL: protego (the baseline) vs trawl's parser.

Run: `python -m bench.robots_bench`. The check runs for every leased URL, so it must stay
cheap. Two files: a typical one (a `*` group and a trawl group of ~25 plain and wildcard
rules, a few other agents' groups) and a big one (600 rules). URLs are a mix of allowed
and disallowed paths, some with queries and escapes. Parsing is timed once per file too.
"""

from __future__ import annotations

import random
import sys
import timeit
from typing import TYPE_CHECKING

from protego import Protego

from bench.runinfo import describe_run
from trawl.politeness.robots_txt import RobotsTxt

if TYPE_CHECKING:
    from collections.abc import Callable

TYPICAL = """\
User-agent: Googlebot
Disallow: /search
Allow: /search/about

User-agent: *
Disallow: /admin/
Disallow: /cart
Disallow: /checkout/
Disallow: /*?sessionid=
Disallow: /*.json$
Allow: /admin/help
Crawl-delay: 1

User-agent: trawl
Disallow: /private/
Disallow: /tmp/
Disallow: /search?
Disallow: /*/print$
Disallow: /account
Allow: /account/signup
Disallow: /*?sort=
Disallow: /*&sort=
Disallow: /user/*/settings
Disallow: /api/
Allow: /api/public/
Disallow: /%E6%97%A5%E6%9C%AC/
Disallow: /feeds/*.xml$

Sitemap: https://example.com/sitemap.xml
"""


def _big(rng: random.Random) -> str:
    lines = ["User-agent: trawl"]
    for n in range(600):
        kind = rng.random()
        if kind < 0.7:
            lines.append(f"Disallow: /section{n}/page")
        elif kind < 0.9:
            lines.append(f"Allow: /section{n}/*.html$")
        else:
            lines.append(f"Disallow: /*?p{n}=")
    return "\n".join(lines) + "\n"


def _urls(rng: random.Random, n: int) -> list[str]:
    paths = [
        "/articles/{n}.html",
        "/private/{n}",
        "/search?q={n}",
        "/user/{n}/settings",
        "/news/{n}/print",
        "/shop/item-{n}?sort=price",
        "/api/public/{n}",
        "/section{n}/page.html",
        "/blog/2026/11/post-{n}",
        "/caf%C3%A9/{n}",
    ]
    return [
        f"https://example.com{rng.choice(paths).format(n=rng.randrange(700))}" for _ in range(n)
    ]


def _per_call_us(check: Callable[[str], bool], urls: list[str]) -> float:
    def run() -> None:
        for url in urls:
            check(url)

    run()  # warm caches (group choice, protego's rule index)
    best = min(timeit.repeat(run, number=5, repeat=5))
    return best / (5 * len(urls)) * 1e6


def main() -> int:
    rng = random.Random(13)
    urls = _urls(rng, 2000)
    print(describe_run())
    for name, text in (("typical", TYPICAL), ("big", _big(rng))):
        protego = Protego.parse(text)
        trawl = RobotsTxt.parse(text)
        disagree = [
            u for u in urls if protego.can_fetch(u, "trawl") != trawl.is_allowed(u, "trawl")
        ]
        base = _per_call_us(lambda u, p=protego: p.can_fetch(u, "trawl"), urls)
        ours = _per_call_us(lambda u, t=trawl: t.is_allowed(u, "trawl"), urls)
        parse_base = min(timeit.repeat(lambda t=text: Protego.parse(t), number=20, repeat=3)) / 20
        parse_ours = min(timeit.repeat(lambda t=text: RobotsTxt.parse(t), number=20, repeat=3)) / 20
        print(
            f"{name}: is_allowed protego {base:.2f} us, trawl {ours:.2f} us "
            f"(x{base / ours:.2f}); parse protego {parse_base * 1e3:.2f} ms, "
            f"trawl {parse_ours * 1e3:.2f} ms; answers differ on {len(disagree)}/{len(urls)} URLs"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""trawl's `normalise_url` against ada-url (a WHATWG URL parser in C++) on real links.

    python -m bench.ada_compare [--paths-per-site 2] [--rounds 3]

Issue 17 asked whether a compiled URL parser beats the normaliser. Takes the hrefs of the
first `--paths-per-site` pages of each of the bench.speed web's 2,000 sites (generated into
/tmp/trawl-bench-web or reused), resolves each against its page with `normalise_url` and
with `ada_url.join_url` (best of `--rounds`, `time.process_time()`), and counts the hrefs
whose answers differ. ada resolves and canonicalises only: trawl's own rules (tracking and
session parameters dropped, the query sorted, the fragment dropped) would still run in
Python after it. Needs the bench extra (`pip install -e '.[bench]'`).
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path
from typing import TYPE_CHECKING

import ada_url  # type: ignore[import-untyped]  # the bench extra; no stubs published

from bench.normalise_bench import bench_web_pages
from trawl.urls.normalise import normalise_url

if TYPE_CHECKING:
    from collections.abc import Callable


def _answer(fn: Callable[[str, str], str], href: str, base: str) -> str | None:
    try:
        return fn(href, base)
    except Exception:  # both refuse some hrefs (mailto:, bad hosts): None is the answer
        return None


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--paths-per-site", type=int, default=2)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    pages = bench_web_pages(Path("/tmp/trawl-bench-web"), 2000, 50, args.paths_per_site)
    pairs = [(href, base) for hrefs, base in pages for href in hrefs]
    contenders: dict[str, Callable[[str, str], str]] = {
        "trawl normalise_url": normalise_url,
        "ada_url.join_url": lambda href, base: str(ada_url.join_url(base, href)),
    }
    print(f"{len(pairs)} hrefs of {len(pages)} pages")
    for name, fn in contenders.items():
        best = float("inf")
        for _ in range(args.rounds):
            started = time.process_time()
            for href, base in pairs:
                _answer(fn, href, base)
            best = min(best, time.process_time() - started)
        print(f"{name}: {1e6 * best / len(pairs):.2f} µs an href")
    ours, ada = contenders.values()
    differ = [(h, b) for h, b in pairs if _answer(ours, h, b) != _answer(ada, h, b)]
    print(f"answers differ on {len(differ)} of {len(pairs)} hrefs, e.g.:")
    for href, base in differ[:3]:
        print(f"  {href!r} on {base}: {_answer(ours, href, base)} / {_answer(ada, href, base)}")


if __name__ == "__main__":
    main()

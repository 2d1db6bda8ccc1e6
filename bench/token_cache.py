"""The simhash's token cache on a real web's vocabulary: CPU a page as the cache fills.

Run: python -m bench.token_cache [--base /tmp/base17/src] [--pages 8000] [--rounds 3]

The bench web's pages (bench/webfarm) draw their prose from a few hundred words, so a page
worker's token cache (parse/fingerprint.py, up to `_CACHE_LIMIT` tokens) never holds more
than ~700 of them, and a cost that grows with the cache never shows in `bench.speed`. A real
web's vocabulary has no end (names, numbers, typos, other languages): a worker's cache
fills in a few thousand pages and then stays full, emptied and filled again. Here each page
is the simhash's input, ~3,072 characters of words drawn from a Zipf law (s = 1) over two
million made-up words, so ~75 % of a page's words are among the 50,000 most common.

Each tree (this checkout and `--base`) runs in a child process of its own; the rounds
alternate between them, and each round starts with the cache empty, as a fresh worker's.
Printed: `simhash_of_text`'s CPU a page over each `--segment` pages in order, median of the
rounds, and the base/new ratio; the two trees' outputs must be equal (a digest of them).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import platform
import random
import statistics
import subprocess
import sys
import time
from pathlib import Path

from bench.webfarm.vocabulary import zipf_words

_TEXT_CHARS = 3_072


def make_texts(n: int, seed: int = 1) -> list[str]:
    """`n` texts of ~`_TEXT_CHARS` characters, words Zipf-distributed over the vocabulary."""
    rng = random.Random(seed)
    return [" ".join(zipf_words(rng, _TEXT_CHARS // 6))[:_TEXT_CHARS] for _ in range(n)]


def _child(n_pages: int, segment: int) -> None:
    """Serve rounds on stdin/stdout: one JSON line of ms a page per segment for each "go"."""
    from trawl.parse import fingerprint

    texts = make_texts(n_pages)
    digest = hashlib.sha256(repr([fingerprint.simhash_of_text(t) for t in texts]).encode())
    print(json.dumps({"digest": digest.hexdigest()}), flush=True)
    for line in sys.stdin:
        if line.strip() != "go":
            break
        fingerprint._lanes_cache.clear()
        times = []
        for start in range(0, n_pages, segment):
            began = time.process_time()
            for text in texts[start : start + segment]:
                fingerprint.simhash_of_text(text)
            spent = time.process_time() - began
            times.append(spent * 1000 / len(texts[start : start + segment]))
        print(json.dumps({"ms": times, "cache": len(fingerprint._lanes_cache)}), flush=True)


def _start(src: str, pages: int, segment: int) -> subprocess.Popen[str]:
    env = dict(os.environ, PYTHONPATH=f"{src}{os.pathsep}{Path.cwd()}")
    command = [sys.executable, "-m", "bench.token_cache", "--child", str(pages), str(segment)]
    return subprocess.Popen(
        command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=env
    )


def _ask(child: subprocess.Popen[str], line: str | None) -> dict[str, object]:
    assert child.stdin is not None
    assert child.stdout is not None
    if line is not None:
        child.stdin.write(line + "\n")
        child.stdin.flush()
    answer: dict[str, object] = json.loads(child.stdout.readline())
    return answer


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--base", default="/tmp/base17/src")
    parser.add_argument("--pages", type=int, default=8000)
    parser.add_argument("--segment", type=int, default=1000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--child", type=int, nargs=2, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        _child(*args.child)
        return
    trees = {"base": args.base, "new": str(Path(__file__).resolve().parents[1] / "src")}
    children = {name: _start(src, args.pages, args.segment) for name, src in trees.items()}
    digests = {name: _ask(child, None)["digest"] for name, child in children.items()}
    rounds: dict[str, list[list[float]]] = {name: [] for name in trees}
    for _ in range(args.rounds):
        for name, child in children.items():
            answer = _ask(child, "go")
            rounds[name].append(list(answer["ms"]))  # type: ignore[call-overload]
    for child in children.values():
        _ask_stop(child)
    print(
        f"$ python -m bench.token_cache --base {args.base} --pages {args.pages}"
        f" --rounds {args.rounds}   # {platform.machine()}, {os.cpu_count()} CPUs"
    )
    print(f"outputs identical: {digests['base'] == digests['new']}")
    print(f"{'pages':>13}  {'base ms':>8}  {'new ms':>8}  ratio")
    for i in range(len(rounds["base"][0])):
        base = statistics.median(r[i] for r in rounds["base"])
        new = statistics.median(r[i] for r in rounds["new"])
        first = i * args.segment
        span = f"{first:,}-{min(first + args.segment, args.pages):,}"
        print(f"{span:>13}  {base:8.3f}  {new:8.3f}  {base / new:5.2f}")


def _ask_stop(child: subprocess.Popen[str]) -> None:
    assert child.stdin is not None
    child.stdin.write("stop\n")
    child.stdin.close()
    child.wait(timeout=60)


if __name__ == "__main__":
    main()

"""Write the benchmark web: thousands of static sites for nginx, and the spec that describes it.

    python -m bench.webfarm.generate ROOT [--sites 2000] [--pages 50] [--seed 1] [--quick]

Layout under ROOT: `www/<host>/...` (nginx serves `root ROOT/www/$host`), `hosts` (lines
`IP host`, for `--hosts-file`) and `spec.json` (written last, so its presence means the
web is complete; a spec with the same parameters makes generation a no-op).

How this works. Every site has the same page paths: `/` (home), a few section indexes
`/secK/` and articles `/secK/pJ.html`, so every site has `pages_per_site` pages. Each page
links to the next one in a ring, so a crawler that follows same-site links from the home
page reaches every page. The ~35 same-site links use the spellings a normaliser must fold
(relative, `./`, `../`, absolute path, absolute URL with an uppercase host or `:80`,
`#fragment`, `?utm_*`); the ~15 links to other sites pick their targets with Zipf-like
weights, so a few sites are linked to far more often than the rest. Page text is drawn at
random from a pool of pre-generated paragraphs: each page differs, and writing ~10 GB
costs little more than the disk. Sites are split between worker processes; each site has
its own random stream, so the output does not depend on the number of workers.

Sites (each on its own loopback IP `127.10.B.C`, never 127.0.0.1):
- robots.txt: ~73 % allow all, ~20 % `Disallow: /private/` (and link into /private/,
  where small pages exist, so an impolite crawler shows up in the log), ~2 % `Crawl-delay: 2`,
  ~5 % none (404);
- ~10 % (never crawl-delay ones) have a `www.` alias, a symlink to the same directory on
  the same IP: the same registered domain, so one site for politeness, but its own host.
  Its home page links to the alias, so a complete crawl fetches every page under both hosts.
"""

from __future__ import annotations

import argparse
import itertools
import json
import multiprocessing
import os
import random
import shutil
import sys
import time
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING

from bench.webfarm.vocabulary import zipf_paragraph
from trawl.testweb import text

if TYPE_CHECKING:
    from collections.abc import Sequence

    from trawl.testweb.politeness import PolitenessInputs

# Bump when the output changes, so a cached web from older code is regenerated.
GENERATOR_VERSION = 1
TLD = "bench"
SPEC_NAME = "spec.json"
QUICK_SITES, QUICK_PAGES = 200, 20
SAME_SITE_LINKS, CROSS_SITE_LINKS = 35, 15
PAGE_BYTES_RANGE = (35_000, 155_000)  # uniform; with markup and links ~100 KB a page
ZIPF_EXPONENT = 1.0  # with 2000 sites the most popular one gets ~12 % of cross-site links
PRIVATE_PATHS = ("/private/account.html", "/private/orders.html", "/private/")
UTM_QUERY = "?utm_source=x&amp;utm_medium=y"  # `&amp;`: this is HTML attribute text


class RobotsKind(StrEnum):
    ALLOW_ALL = "allow_all"
    DISALLOW_PRIVATE = "disallow_private"
    CRAWL_DELAY = "crawl_delay"  # Crawl-delay: 2
    MISSING = "missing"  # no file: nginx answers 404


ROBOTS_TEXT: dict[RobotsKind, str | None] = {
    RobotsKind.ALLOW_ALL: "User-agent: *\nAllow: /\n",
    RobotsKind.DISALLOW_PRIVATE: "User-agent: *\nDisallow: /private/\n",
    RobotsKind.CRAWL_DELAY: "User-agent: *\nCrawl-delay: 2\nAllow: /\n",
    RobotsKind.MISSING: None,
}
CRAWL_DELAY_S = 2.0


@dataclass(frozen=True, slots=True)
class SiteSpec:
    """One site: its canonical host, optional `www.` alias, loopback IP and robots.txt."""

    host: str
    aliases: tuple[str, ...]
    ip: str
    robots: RobotsKind

    @property
    def hosts(self) -> tuple[str, ...]:
        return (self.host, *self.aliases)

    def to_json(self) -> dict[str, object]:
        return {
            "host": self.host,
            "aliases": list(self.aliases),
            "ip": self.ip,
            "robots": self.robots.value,
        }

    @classmethod
    def from_json(cls, obj: dict[str, object]) -> SiteSpec:
        aliases = obj["aliases"]
        assert isinstance(aliases, list)
        return cls(
            str(obj["host"]),
            tuple(map(str, aliases)),
            str(obj["ip"]),
            RobotsKind(str(obj["robots"])),
        )


@dataclass(frozen=True, slots=True)
class WebSpec:
    """A generated web: where it is, its sites, and what a complete polite crawl fetches.

    `expected_pages` counts the distinct HTML pages (status 200) of a complete crawl that
    obeys robots.txt and folds the link spellings (utm_* dropped, fragments dropped,
    host case and `:80` folded): every path of every site under every host name. It
    excludes robots.txt requests and /private/ pages. `page_paths` are the same for
    every site. `generated_s` and `total_bytes` describe the run that wrote the files.
    """

    root: Path
    n_sites: int
    pages_per_site: int
    seed: int
    sites: tuple[SiteSpec, ...]
    page_paths: tuple[str, ...]
    expected_pages: int
    total_bytes: int
    generated_s: float
    vocabulary: str = "small"  # or "zipf": prose of a real web's vocabulary (vocabulary.py)

    @property
    def hosts_file(self) -> Path:
        return self.root / "hosts"

    @property
    def www_dir(self) -> Path:
        return self.root / "www"

    @property
    def seeds(self) -> list[str]:
        """The home page of every site's canonical host."""
        return [f"http://{site.host}/" for site in self.sites]

    def host_ips(self) -> dict[str, str]:
        return {host: site.ip for site in self.sites for host in site.hosts}

    def politeness_inputs(self) -> PolitenessInputs:
        """`crawl_delays` (by site) and `robots_txt` (by host) for `check_politeness`."""
        delays = {s.host: CRAWL_DELAY_S for s in self.sites if s.robots is RobotsKind.CRAWL_DELAY}
        robots = {
            host: robots_text
            for site in self.sites
            if (robots_text := ROBOTS_TEXT[site.robots]) is not None
            for host in site.hosts
        }
        return {"crawl_delays": delays, "robots_txt": robots}

    def params(self) -> dict[str, int | str]:
        return _params(self.n_sites, self.pages_per_site, self.seed, self.vocabulary)

    def to_json(self) -> dict[str, object]:
        return {
            "params": self.params(),
            "root": str(self.root),
            "hosts_file": str(self.hosts_file),
            "expected_pages": self.expected_pages,
            "total_bytes": self.total_bytes,
            "generated_s": self.generated_s,
            "page_paths": list(self.page_paths),
            "seeds": self.seeds,
            "sites": [site.to_json() for site in self.sites],
        }

    @classmethod
    def load(cls, root: Path) -> WebSpec:
        obj = json.loads((root / SPEC_NAME).read_text(encoding="utf-8"))
        params = obj["params"]
        return cls(
            root=root,
            n_sites=params["n_sites"],
            pages_per_site=params["pages_per_site"],
            seed=params["seed"],
            sites=tuple(SiteSpec.from_json(s) for s in obj["sites"]),
            page_paths=tuple(obj["page_paths"]),
            expected_pages=obj["expected_pages"],
            total_bytes=obj["total_bytes"],
            generated_s=obj["generated_s"],
            vocabulary=params.get("vocabulary", "small"),
        )


def _params(
    n_sites: int, pages_per_site: int, seed: int, vocabulary: str = "small"
) -> dict[str, int | str]:
    params: dict[str, int | str] = {
        "version": GENERATOR_VERSION,
        "n_sites": n_sites,
        "pages_per_site": pages_per_site,
        "seed": seed,
    }
    if vocabulary != "small":  # the default web's parameters as they always were
        params["vocabulary"] = vocabulary
    return params


# --- the plan: sites and paths, decided in the parent before any file is written ---


def site_ip(index: int) -> str:
    """127.10.B.C for site `index` (0-based): up to 65,535 sites, never 127.0.0.1."""
    n = index + 1
    if n > 0xFFFF:
        raise ValueError(f"site index {index} does not fit in 127.10.0.0/16")
    return f"127.10.{n >> 8}.{n & 0xFF}"


def page_paths(pages_per_site: int) -> tuple[str, ...]:
    """`/`, then section indexes `/secK/`, then articles `/secK/pJ.html`, round robin."""
    if pages_per_site < 1:
        raise ValueError(f"pages_per_site must be >= 1, not {pages_per_site}")
    n_sections = min(pages_per_site - 1, max(1, pages_per_site // 10))
    sections = [f"/sec{k}/" for k in range(n_sections)]
    n_articles = pages_per_site - 1 - n_sections
    articles = [f"/sec{j % n_sections}/p{j}.html" for j in range(n_articles)]
    return ("/", *sections, *articles)


def _plan_sites(n_sites: int, seed: int) -> tuple[SiteSpec, ...]:
    rng = random.Random(f"sites-{seed}")
    sites = []
    for i in range(n_sites):
        roll = rng.random()
        if roll < 0.05:
            robots = RobotsKind.MISSING
        elif roll < 0.07:
            robots = RobotsKind.CRAWL_DELAY
        elif roll < 0.27:
            robots = RobotsKind.DISALLOW_PRIVATE
        else:
            robots = RobotsKind.ALLOW_ALL
        host = f"s{i:05d}.{TLD}"
        # No alias on crawl-delay sites: that would double the slowest site's crawl time.
        has_alias = robots is not RobotsKind.CRAWL_DELAY and rng.random() < 0.10
        aliases = (f"www.{host}",) if has_alias else ()
        sites.append(SiteSpec(host, aliases, site_ip(i), robots))
    return tuple(sites)


def _zipf_cum_weights(n_sites: int, seed: int) -> tuple[list[int], list[float]]:
    """Sites in a shuffled popularity order and cumulative Zipf weights over that order."""
    order = list(range(n_sites))
    random.Random(f"popularity-{seed}").shuffle(order)
    weights = [1.0 / (rank + 1) ** ZIPF_EXPONENT for rank in range(n_sites)]
    return order, list(itertools.accumulate(weights))


# --- page rendering: the hot loop, kept to string joins and a few random draws per link ---


@dataclass(frozen=True, slots=True)
class _Pools:
    """Pre-generated text every page draws from (built once, inherited by the workers)."""

    paragraphs: tuple[str, ...]
    mean_paragraph_bytes: float
    anchors: tuple[str, ...]
    titles: tuple[str, ...]
    sentences: tuple[str, ...]


def _make_pools(seed: int, vocabulary: str = "small") -> _Pools:
    rng = random.Random(f"pools-{seed}")
    if vocabulary == "zipf":
        # 40,000 paragraphs, so that a crawl keeps meeting words it has not seen
        prose = random.Random(f"zipf-{seed}")
        paragraphs = tuple(f"<p>{zipf_paragraph(prose)}</p>\n" for _ in range(40_000))
    else:
        paragraphs = tuple(f"<p>{text.paragraph(rng)}</p>\n" for _ in range(4000))
    mean = sum(len(p) for p in paragraphs) / len(paragraphs)
    anchors = tuple(text.words(rng, rng.randint(2, 4)) for _ in range(2000))
    titles = tuple(text.title(rng) for _ in range(2000))
    sentences = tuple(text.sentence(rng) for _ in range(2000))
    return _Pools(paragraphs, mean, anchors, titles, sentences)


@dataclass(frozen=True, slots=True)
class _Web:
    """What a worker needs to render any site (pickled once per worker, or inherited)."""

    sites: tuple[SiteSpec, ...]
    paths: tuple[str, ...]
    popularity: list[int]
    cum_weights: list[float]
    pools: _Pools
    seed: int


def _relative(base_dir: str, target: str) -> str:
    """A relative reference from a page in `base_dir` to `target` (both at most one deep)."""
    if target.startswith(base_dir):
        return target[len(base_dir) :] or "./"
    return "../" * (base_dir.count("/") - 1) + target[1:]


def _same_site_href(rng: random.Random, host: str, base_dir: str, target: str) -> str:
    """`target` (a path on `host`) written in one of the spellings a normaliser must fold."""
    roll = rng.random()
    if roll < 0.35:
        url = _relative(base_dir, target)
        if roll < 0.10 and not url.startswith("."):
            url = "./" + url
    elif roll < 0.60:
        url = target
    elif roll < 0.72:
        url = f"http://{host.upper()}{target}"
    elif roll < 0.82:
        url = f"http://{host}:80{target}"
    else:
        url = f"http://{host}{target}"
    decoration = rng.random()
    if decoration < 0.12:
        url += f"#s{rng.randint(1, 9)}"
    elif decoration < 0.24:
        url += UTM_QUERY
    return url


def _link(href: str, anchor: str) -> str:
    return f'<a href="{href}">{anchor}</a>'


def _same_site_links(web: _Web, rng: random.Random, site: SiteSpec, i: int) -> list[str]:
    paths, anchors = web.paths, web.pools.anchors
    path = paths[i]
    base_dir = path[: path.rindex("/") + 1]
    # The ring link keeps every page reachable from the home page under either host name,
    # so it is always relative (an absolute URL would leave the `www.` alias).
    ring = _relative(base_dir, paths[(i + 1) % len(paths)])
    out = [_link(ring, "Next page"), _link(_relative(base_dir, "/"), "Home")]
    if site.robots is RobotsKind.DISALLOW_PRIVATE:
        out += [_link(p, "Your account") for p in rng.sample(PRIVATE_PATHS, 2)]
    for target in rng.choices(paths, k=SAME_SITE_LINKS - len(out)):
        out.append(_link(_same_site_href(rng, site.host, base_dir, target), rng.choice(anchors)))
    return out


def _cross_site_links(web: _Web, rng: random.Random, index: int) -> list[str]:
    picks = rng.choices(web.popularity, cum_weights=web.cum_weights, k=CROSS_SITE_LINKS)
    out = []
    for pick in picks:
        target = web.sites[pick if pick != index else (pick + 1) % len(web.sites)]
        host = target.aliases[0] if target.aliases and rng.random() < 0.3 else target.host
        roll = rng.random()
        if roll < 0.1:
            host = host.upper()
        path = "/" if roll < 0.5 else rng.choice(web.paths)
        prefix = "//" if 0.9 < roll < 0.95 else "http://"  # some scheme-relative links
        out.append(_link(f"{prefix}{host}{path}", rng.choice(web.pools.anchors)))
    return out


def _table(rng: random.Random, pools: _Pools) -> str:
    rows = "".join(
        f"<tr><td>{rng.choice(pools.titles)}</td><td>{rng.randint(1, 9999)}</td>"
        f"<td>{rng.random() * 100:.1f} %</td><td>{rng.choice(pools.anchors)}</td></tr>\n"
        for _ in range(rng.randint(5, 15))
    )
    head = "<tr><th>Name</th><th>Count</th><th>Share</th><th>Note</th></tr>\n"
    return "<table>\n" + head + rows + "</table>\n"


def _list(rng: random.Random, pools: _Pools) -> str:
    items = "".join(f"<li>{rng.choice(pools.sentences)}</li>\n" for _ in range(rng.randint(4, 10)))
    return "<ul>\n" + items + "</ul>\n"


def _article(web: _Web, rng: random.Random, links: list[str]) -> list[str]:
    """Paragraphs under headings, a list and a table, with `links` spread between them."""
    pools = web.pools
    target = rng.randint(*PAGE_BYTES_RANGE)
    paragraphs = rng.choices(pools.paragraphs, k=max(8, int(target / pools.mean_paragraph_bytes)))
    n_chunks = 8
    chunk, per_gap = -(-len(paragraphs) // n_chunks), -(-len(links) // n_chunks)
    out: list[str] = []
    for n in range(n_chunks):
        out.append(f'<h2 id="s{n + 1}">{rng.choice(pools.titles)}</h2>\n')
        out += paragraphs[n * chunk : (n + 1) * chunk]
        gap_links = links[n * per_gap : (n + 1) * per_gap]
        if gap_links:
            out.append("<p>See also " + ", ".join(gap_links) + ".</p>\n")
        if n == 2:
            out.append(_list(rng, pools))
        elif n == 4:
            out.append(_table(rng, pools))
    return out


def _render_page(web: _Web, rng: random.Random, index: int, i: int) -> bytes:
    site, pools = web.sites[index], web.pools
    title = rng.choice(pools.titles)
    links = _same_site_links(web, rng, site, i)
    nav, body_links = links[:2], links[2:] + _cross_site_links(web, rng, index)
    rng.shuffle(body_links)
    footer = ""
    if i == 0 and site.aliases:
        footer = " " + _link(f"http://{site.aliases[0]}/", "This site at www")
    parts = [
        '<!DOCTYPE html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n',
        f"<title>{title} | {site.host}</title>\n",
        f'<meta name="description" content="{rng.choice(pools.sentences)}">\n',
        '<meta name="viewport" content="width=device-width, initial-scale=1">\n',
        "<style>body{font-family:serif;max-width:48em;margin:auto}nav li{display:inline}</style>\n",
        "</head>\n<body>\n<header><nav><ul><li>",
        "</li><li>".join(nav),
        "</li></ul></nav></header>\n",
        f"<main><article>\n<h1>{title}</h1>\n",
        *_article(web, rng, body_links),
        "</article></main>\n",
        f"<footer><p>{rng.choice(pools.sentences)} &copy; {site.host}.{footer}</p></footer>\n",
        "</body>\n</html>\n",
    ]
    return "".join(parts).encode()


def _private_page(site: SiteSpec, path: str) -> bytes:
    return (
        f'<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8"><title>Private {path}'
        f'</title></head><body><p>Sign in to {site.host}.</p><a href="/">Home</a></body>'
        "</html>\n"
    ).encode()


def file_for(site_dir: Path, path: str) -> Path:
    """The file that serves `path` (a page path, "/..." ) in a site's directory."""
    return site_dir / (path[1:] + "index.html" if path.endswith("/") else path[1:])


def _write_site(web: _Web, index: int, www_dir: Path) -> int:
    """Write one site's files; returns the bytes written."""
    site = web.sites[index]
    rng = random.Random(web.seed * 1_000_003 + index)
    site_dir = www_dir / site.host
    for section in {p[: p.rindex("/") + 1] for p in web.paths}:
        (site_dir / section[1:]).mkdir(parents=True, exist_ok=True)
    written = 0
    for i, path in enumerate(web.paths):
        body = _render_page(web, rng, index, i)
        file_for(site_dir, path).write_bytes(body)
        written += len(body)
    if site.robots is RobotsKind.DISALLOW_PRIVATE:
        (site_dir / "private").mkdir()
        for path in PRIVATE_PATHS:
            file_for(site_dir, path).write_bytes(_private_page(site, path))
    robots_text = ROBOTS_TEXT[site.robots]
    if robots_text is not None:
        (site_dir / "robots.txt").write_text(robots_text, encoding="ascii")
    for alias in site.aliases:
        (www_dir / alias).symlink_to(site.host)  # relative: the web can be moved as a whole
    return written


# Set in the parent before the workers fork, so the pools are not pickled per task.
_WEB: _Web | None = None


def _write_sites(indexes: Sequence[int], www_dir: Path) -> int:
    assert _WEB is not None
    return sum(_write_site(_WEB, index, www_dir) for index in indexes)


def _write_all(web: _Web, www_dir: Path, workers: int) -> int:
    global _WEB
    _WEB = web
    # Interleaved batches, several per worker, so slow and fast stretches even out.
    n_tasks = min(len(web.sites), 16 * workers)
    tasks = [range(k, len(web.sites), n_tasks) for k in range(n_tasks)]
    if workers <= 1:
        return sum(_write_sites(t, www_dir) for t in tasks)
    with multiprocessing.get_context("fork").Pool(workers) as pool:
        return sum(pool.starmap(_write_sites, [(t, www_dir) for t in tasks]))


def _gzip_tree(site_dirs: Sequence[Path]) -> int:
    from isal import igzip

    written = 0
    for site_dir in site_dirs:
        for page in site_dir.rglob("*.html"):
            packed = page.with_name(page.name + ".gz")
            if not packed.exists():
                tmp = packed.with_name(packed.name + ".tmp")
                tmp.write_bytes(igzip.compress(page.read_bytes(), 3, mtime=0))
                tmp.rename(packed)  # a crash leaves no half-written copy to serve
                written += 1
    return written


def write_gzipped(spec: WebSpec, workers: int | None = None) -> int:
    """A gzipped copy (`page.html.gz`) beside every page of the web, for nginx's
    `gzip_static` (most of the web's HTML comes gzipped); made once, kept with the web.
    Returns how many were written now."""
    site_dirs = sorted(p for p in spec.www_dir.iterdir() if p.is_dir() and not p.is_symlink())
    workers = workers or os.cpu_count() or 1
    tasks = [site_dirs[k::workers] for k in range(workers)]
    with multiprocessing.get_context("fork").Pool(workers) as pool:
        return sum(pool.map(_gzip_tree, tasks))


def _write_hosts(spec_sites: Sequence[SiteSpec], path: Path) -> None:
    lines = [f"{site.ip} {host}\n" for site in spec_sites for host in site.hosts]
    path.write_text("".join(lines), encoding="ascii")


def generate_web(
    root: Path,
    *,
    n_sites: int = 2000,
    pages_per_site: int = 50,
    seed: int = 1,
    workers: int | None = None,
    vocabulary: str = "small",
) -> WebSpec:
    """Write the web under `root` (or reuse it if `root/spec.json` has the same parameters).

    Regenerating deletes `root/www` first. `workers` defaults to the CPU count.
    `vocabulary="zipf"`: the pages' prose drawn from a real web's vocabulary
    (bench/webfarm/vocabulary.py) instead of the test web's few hundred words.
    """
    if vocabulary not in ("small", "zipf"):
        raise ValueError(f"vocabulary is 'small' or 'zipf', not {vocabulary!r}")
    spec_path = root / SPEC_NAME
    if spec_path.exists():
        cached = WebSpec.load(root)
        if cached.params() == _params(n_sites, pages_per_site, seed, vocabulary):
            return cached
        spec_path.unlink()  # stale: no spec until the new web is complete
    started = time.perf_counter()
    www_dir = root / "www"
    if www_dir.exists():
        shutil.rmtree(www_dir)
    www_dir.mkdir(parents=True)
    sites = _plan_sites(n_sites, seed)
    paths = page_paths(pages_per_site)
    popularity, cum_weights = _zipf_cum_weights(n_sites, seed)
    web = _Web(sites, paths, popularity, cum_weights, _make_pools(seed, vocabulary), seed)
    total_bytes = _write_all(web, www_dir, workers or os.cpu_count() or 1)
    _write_hosts(sites, root / "hosts")
    n_hosts = sum(len(site.hosts) for site in sites)
    spec = WebSpec(
        root,
        n_sites,
        pages_per_site,
        seed,
        sites,
        paths,
        n_hosts * len(paths),
        total_bytes,
        round(time.perf_counter() - started, 1),
        vocabulary,
    )
    spec_path.write_text(json.dumps(spec.to_json(), indent=1), encoding="utf-8")
    return spec


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("root", type=Path)
    parser.add_argument("--sites", type=int, default=2000)
    parser.add_argument("--pages", type=int, default=50)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument(
        "--quick", action="store_true", help=f"{QUICK_SITES} sites x {QUICK_PAGES} pages"
    )
    parser.add_argument("--workers", type=int, default=None)
    args = parser.parse_args(argv)
    n_sites, pages = (QUICK_SITES, QUICK_PAGES) if args.quick else (args.sites, args.pages)
    started = time.perf_counter()
    spec = generate_web(
        args.root, n_sites=n_sites, pages_per_site=pages, seed=args.seed, workers=args.workers
    )
    took_s = time.perf_counter() - started
    kinds = {kind.value: sum(s.robots is kind for s in spec.sites) for kind in RobotsKind}
    aliases = sum(len(s.aliases) for s in spec.sites)
    print(
        f"{spec.root}: {spec.n_sites} sites (+{aliases} www aliases) x "
        f"{spec.pages_per_site} pages = {spec.expected_pages} expected pages; robots {kinds}"
    )
    print(
        f"{spec.total_bytes / 1e9:.2f} GB of pages, mean "
        f"{spec.total_bytes / (spec.n_sites * spec.pages_per_site) / 1e3:.1f} KB; generated in "
        f"{spec.generated_s:.1f} s (this run {took_s:.1f} s)"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())

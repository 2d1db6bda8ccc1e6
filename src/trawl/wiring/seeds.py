"""Seeds: read from the command line and a seeds file, normalised, and queued; and the
pages already due when a crawl starts."""

from __future__ import annotations

from typing import TYPE_CHECKING

from trawl.errors import ConfigError, InvalidUrl
from trawl.urls.normalise import NormaliseRules, normalise_url, url_hash
from trawl.urls.registered_domain import site_of

if TYPE_CHECKING:
    from pathlib import Path

    from trawl.config import Settings
    from trawl.frontier.scope import SeedScope
    from trawl.loop.context import CrawlContext


def read_seeds(urls: list[str], seeds_file: Path | None) -> list[tuple[str, str]]:
    """Seeds as (raw, where) pairs: command-line URLs and lines of the seeds file."""
    seeds = [(u, f"seed argument {u!r}") for u in urls]
    if seeds_file is not None:
        try:
            text = seeds_file.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise ConfigError(f"{seeds_file}: cannot read seeds file ({exc})") from None
        for n, line in enumerate(text.splitlines(), 1):
            line = line.strip()
            if line and not line.startswith("#"):
                seeds.append((line, f"{seeds_file}:{n}"))
    return seeds


def normalise_seeds(
    seeds: list[tuple[str, str]], rules: NormaliseRules
) -> list[tuple[str, str, str]]:
    """(url, urlHash, site) for each seed; a bad seed is a ConfigError naming where it was."""
    out = []
    for raw, where in seeds:
        try:
            url = normalise_url(raw, None, rules)
            site = site_of(url)
        except (InvalidUrl, ValueError) as exc:
            raise ConfigError(f"{where}: {raw!r} is not a crawlable http(s) URL ({exc})") from None
        out.append((url, url_hash(url), site))
    return out


def queue_all_due(ctx: CrawlContext) -> int:
    """Queue every page already due when a crawl starts (a continuous crawl then keeps
    queueing them as they come due; a one-shot crawl refreshes only these)."""
    total = 0
    while n := ctx.intake.add_due_pages(ctx.policy.due_batch):
        total += n
        if n < ctx.policy.due_batch:
            break
    ctx.durability.commit()
    return total


def seed_scopes(
    settings: Settings, seeds: list[tuple[str, str, str]], rules: NormaliseRules
) -> list[SeedScope]:
    """The crawl's seeds with their scopes: the config's `[[seeds]]` tables, then `seeds`
    (command line, seeds file) with the `[scope]` defaults. ConfigError naming the key."""
    return settings.seed_scopes(tuple(url for url, _, _ in seeds), rules)


def add_seeds(ctx: CrawlContext, seeds: list[SeedScope]) -> int:
    """Put the seeds' scopes in force and queue the seeds in the fast line through the
    exact seen set; returns how many were new."""
    ids = ctx.scope.add_seeds(seeds)
    scope = ctx.scope.current
    added = 0
    for seed, seed_id in zip(seeds, ids, strict=True):
        site = scope.seed_site(seed.url) or site_of(seed.url)
        added += ctx.intake.add_seed(seed.url, url_hash(seed.url), site, seed_id=seed_id)
    ctx.durability.commit()
    return added

"""The crawl's scope as it runs: the compiled scope in force, its changes, and its skips.

How this works (issue 16). `ScopeBook` holds the `CrawlScope` every decision reads
(`current`) and rebuilds it when the scope changes: seeds given on start or through the
API, crawl-wide excludes added or removed at run time. Every change is written through the
ScopeStore port in the crawl's open transaction, so a restarted crawl decides exactly as
before. Skips are noted here (`note`) and written with the crawl's commit (`flush`).

Rules:
- The crawl-wide excludes in force are the config's (`[scope] exclude`, fixed for the run)
  plus the run-time ones (stored); only run-time ones can be removed.
- A URL is noted as skipped once per `_NOTED_MEMORY` distinct URLs: most skipped links are
  site-wide navigation (a share button, a /tag/ cloud) found on every page, and noting each
  sighting would fill the sample with one URL and count links, not URLs. Counts are thus
  distinct URLs skipped (approximately: the memory is cleared when full).

No I/O but the store's; the event loop thread only.
"""

from __future__ import annotations

import dataclasses
from collections import Counter
from typing import TYPE_CHECKING

from trawl.errors import ConfigError
from trawl.frontier.scope import CrawlScope, ScopeType, SeedScope, seed_id_of
from trawl.frontier.scope_patterns import compile_patterns
from trawl.frontier.skips import SkipTally

if TYPE_CHECKING:
    from collections.abc import Callable, Iterable

    from trawl.frontier.scope import ScopeDecision
    from trawl.store.ports import ScopeStore, SkipLog

_NOTED_MEMORY = 200_000
_OPEN = SeedScope("")  # an `any` seed: today's crawl
MAX_EXCLUSIONS = 1_000  # run-time excludes: each costs every link a little


class _SeedTally:
    """What `ScopeBook.summary` says about the seeds, kept as seeds come and change: the
    crawl's summary was taken by walking every seed, and the API's snapshot takes it again
    after every change (a million seeds: a walk of ~0.4 s on the crawl loop a time)."""

    def __init__(self) -> None:
        self.types: Counter[str] = Counter()
        self.depths: Counter[int] = Counter()  # non-zero values only, as the others
        self.hops: Counter[int] = Counter()
        self.budgets: Counter[int] = Counter()
        self.includes = 0
        self.excludes = 0

    def count(self, seed: SeedScope, sign: int = 1) -> None:
        """Count `seed` in (sign 1) or out (-1)."""
        self.types[seed.type.value] += sign
        for tally, value in (
            (self.depths, seed.max_depth), (self.hops, seed.extra_hops),
            (self.budgets, seed.max_pages),
        ):  # fmt: skip
            if value:
                tally[value] += sign
        self.includes += sign * len(seed.include)
        self.excludes += sign * len(seed.exclude)

    @staticmethod
    def values(tally: Counter[int]) -> list[int]:
        return sorted(value for value, n in tally.items() if n > 0)


class ScopeBook:
    def __init__(
        self,
        *,
        store: ScopeStore,
        skip_log: SkipLog,
        config_exclude: tuple[str, ...] = (),
        defaults: SeedScope = _OPEN,
        capture_redirects: bool = True,
        sample_size: int | None = None,
    ) -> None:
        self._store = store
        self._skip_log = skip_log
        self._config_exclude = config_exclude
        self._capture = capture_redirects
        self._defaults = defaults
        self._open_fallback = defaults.type is ScopeType.ANY
        stored = store.seeds()
        self._seeds: list[SeedScope] = [seed for _, seed in stored]
        self._ids: list[int] = [seed_id for seed_id, _ in stored]
        self._position = {seed_id: n for n, seed_id in enumerate(self._ids)}
        self._tally = _SeedTally()
        for seed in self._seeds:
            self._tally.count(seed)
        self._runtime_exclude: list[str] = store.exclusions()
        self._pages: dict[int, int] = store.credits()  # URLs queued per seed id
        self._pages_changed: set[int] = set()
        counts, recent = skip_log.counts(), reversed(skip_log.recent(sample_size or 10_000))
        kwargs = {} if sample_size is None else {"sample_size": sample_size}
        self.skips = SkipTally(counts=counts, recent=recent, **kwargs)
        self._noted: set[str] = set()
        self.current = CrawlScope(
            self._seeds,
            self._excludes(),
            seed_ids=self._ids,
            capture_redirects=capture_redirects,
            open_fallback=self._open_fallback,
        )

    # -- what is in force -----------------------------------------------------------------
    @property
    def seeds(self) -> tuple[SeedScope, ...]:
        return tuple(self._seeds)

    @property
    def config_exclusions(self) -> tuple[str, ...]:
        return self._config_exclude

    @property
    def runtime_exclusions(self) -> tuple[str, ...]:
        return tuple(self._runtime_exclude)

    def describe(self, max_seeds: int | None = None) -> dict[str, object]:
        """The scope in force, as `GET /v1/scope` shows it: the first `max_seeds` seeds (all
        when None) and how many there are."""
        shown = len(self._seeds) if max_seeds is None else max_seeds
        return {
            "open": self.current.is_open,
            "offScopeRedirects": "capture" if self._capture else "drop",
            "defaultFollowsAll": self._open_fallback,
            "exclude": list(self._config_exclude),
            "exclusions": list(self._runtime_exclude),
            "seedsTotal": len(self._seeds),
            "seeds": [
                {**seed.to_json(), "queued": self._pages.get(seed_id, 0)}
                for seed_id, seed in zip(self._ids[:shown], self._seeds[:shown], strict=True)
            ],
        }

    def summary(self) -> str:
        """One line for the start-up line and the crawl summary."""
        tally = self._tally
        if not self._seeds:
            kinds = "any" if self._open_fallback else "none"
        else:
            counts = sorted((kind, n) for kind, n in tally.types.items() if n > 0)
            kinds = ", ".join(f"{kind} x{n}" for kind, n in counts)
        parts = [f"scope {kinds}"]
        for label, values in (
            ("max depth", tally.values(tally.depths)), ("extra hops", tally.values(tally.hops)),
            ("max pages", tally.values(tally.budgets)),
        ):  # fmt: skip
            if values:
                parts.append(f"{label} {','.join(map(str, values))}")
        if tally.includes:
            parts.append(_count(tally.includes, "include"))
        excludes = len(self._config_exclude) + len(self._runtime_exclude) + tally.excludes
        if excludes:
            parts.append(_count(excludes, "exclude"))
        if not self._capture:
            parts.append("off-scope redirects dropped")
        return ", ".join(parts)

    def default_seed(self, url: str) -> SeedScope:
        """A seed with the crawl's `[scope]` defaults (an API seed given no scope)."""
        return dataclasses.replace(self._defaults, url=url)

    # -- changes --------------------------------------------------------------------------
    def add_seeds(self, seeds: Iterable[SeedScope]) -> list[int]:
        """Put these seeds' scopes in force (a seed given again takes its new scope);
        their seed ids, in order."""
        given = list(seeds)
        if not given:
            return []
        position = self._position
        ids: list[int] = []
        rows: list[tuple[int, SeedScope]] = []
        for seed in given:
            seed_id = seed_id_of(seed.url)
            ids.append(seed_id)
            at = position.get(seed_id)
            if at is None:
                position[seed_id] = len(self._ids)
                self._ids.append(seed_id)
                self._seeds.append(seed)
            elif self._seeds[at] == seed:
                continue
            else:
                self._tally.count(self._seeds[at], -1)
                self._seeds[at] = seed
            self._tally.count(seed)
            rows.append((seed_id, seed))
        if rows:
            self._store.put_seeds(rows)
            self.current = self.current.with_seeds(rows)
        return ids

    def add_exclusion(self, pattern: str, at: float) -> bool:
        """A crawl-wide exclude from now on (ConfigError when RE2 refuses it); False when it
        was already in force."""
        compile_patterns((pattern,), "pattern")
        if pattern in self._runtime_exclude or pattern in self._config_exclude:
            return False
        if len(self._runtime_exclude) >= MAX_EXCLUSIONS:
            raise ConfigError(f"pattern: at most {MAX_EXCLUSIONS} run-time excludes")
        self._store.add_exclusion(pattern, at)
        self._runtime_exclude.append(pattern)
        self.current = self.current.with_exclusions(self._excludes())
        return True

    def remove_exclusion(self, pattern: str) -> bool:
        """Lift a run-time exclude; False when no run-time exclude is `pattern`."""
        if pattern not in self._runtime_exclude:
            return False
        self._store.remove_exclusion(pattern)
        self._runtime_exclude.remove(pattern)
        self.current = self.current.with_exclusions(self._excludes())
        return True

    @staticmethod
    def matches(pattern: str) -> Callable[[str], bool]:
        """Does `pattern` match a URL: what a new exclusion takes out of the queue."""
        patterns = compile_patterns((pattern,), "pattern")
        return lambda url: bool(patterns.matching(url))

    # -- skips ----------------------------------------------------------------------------
    def note(
        self, url: str, url_hash: str, reason: str, rule: str, referrer: str, at: float
    ) -> bool:
        """Note a skip unless this URL was noted lately; True when it was noted."""
        noted = self._noted
        if url_hash in noted:
            return False
        if len(noted) >= _NOTED_MEMORY:
            noted.clear()
        noted.add(url_hash)
        self.skips.note(url, reason, rule, referrer, at)
        return True

    def note_decision(
        self, url: str, url_hash: str, decision: ScopeDecision, referrer: str, at: float
    ) -> bool:
        if url_hash in self._noted:  # before explain(): that may run a pattern set again
            return False
        rule = self.current.explain(url, decision)
        return self.note(url, url_hash, decision.rule.value, rule, referrer, at)

    # -- page budgets ---------------------------------------------------------------------
    def take_page(self, seed_id: int) -> bool:
        """Count one more URL queued for `seed_id`; False (and not counted) when its
        `max_pages` is spent. Counted for every seed, so /v1/scope can show it."""
        pages = self._pages.get(seed_id, 0)
        budget = self.current.page_budget(seed_id)
        if budget and pages >= budget:
            return False
        self._pages[seed_id] = pages + 1
        self._pages_changed.add(seed_id)
        return True

    def pages(self, seed_id: int) -> int:
        return self._pages.get(seed_id, 0)

    def flush(self) -> None:
        """Write the skips noted and the pages counted since the last flush (in the open
        transaction)."""
        batch = self.skips.take_unflushed()
        if not batch.is_empty:
            self._skip_log.write(batch)
        if self._pages_changed:
            self._store.put_credits({s: self._pages[s] for s in self._pages_changed})
            self._pages_changed.clear()

    def _excludes(self) -> tuple[str, ...]:
        return (*self._config_exclude, *self._runtime_exclude)

    def __repr__(self) -> str:
        return f"<ScopeBook {self.current!r} runtime_excludes={len(self._runtime_exclude)}>"


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}{'' if n == 1 else 's'}"

"""Crawl scope: which discovered links are queued, credited to which seed, and why not.

How this works. Each seed has a scope (`SeedScope`): a type, include and exclude patterns,
`max_depth` (hops from the seed, 0 = no limit) and `extra_hops`. `CrawlScope` holds every
seed's scope plus the crawl-wide excludes, compiled once, and answers two questions:

- `decide(url, source)`: a link `url` (normalised) found on a page whose `Standing` is
  `source`: queue it or skip it, the rule that decided, the seed it is credited to, and the
  `Standing` the queued URL carries (what its own links are decided with);
- `check(url)`: is `url` in scope at all, by which rule, for which seed (the API's
  `POST /v1/scope/check`), with no source page and so no depth or hops.

The rules, in order:
1. a seed is always in scope (rule `seed`), credited to itself at depth 0;
2. a crawl-wide exclude wins over everything else (`exclude`);
3. a URL is in a seed's scope when the seed's type matches it (`scope`) or one of the seed's
   includes does (`include`), and none of the seed's own excludes does. Types: `page` (the
   seed URL only), `prefix` (the seed's directory, up to its last "/"), `host`, `domain` (the
   registered domain), `any` (everything: today's behaviour), `custom` (includes only). For
   `prefix` and `host`, http/https, a leading "www." and the port are ignored;
4. the crawl's scope is the union of its seeds': a URL in several seeds' scopes is credited
   to the source page's seed when that is one of them (the seed that found it), else to the
   lowest-numbered one, and carries depth source + 1 (the hop count from the seed is not
   known across seeds; this is the path the crawl took). A member seed whose `max_depth` is
   exceeded does not take it; when none can, the link is skipped by `max_depth`;
5. a link in no seed's scope that a seed's own exclude matched is skipped by `exclude`;
   otherwise it is followed while the source has off-scope hops left (its seed's
   `extra_hops`; `extra_hops`), else skipped (`scope`, or `extra_hops` when the seed allows
   some and they are spent). A link back into scope resets the off-scope hops to 0.

Nothing here does I/O or reads a clock; patterns run on RE2 (see scope_patterns).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum
from functools import lru_cache
from typing import TYPE_CHECKING

from trawl.errors import ConfigError
from trawl.frontier.scope_patterns import PatternSet, compile_patterns
from trawl.urls.normalise import url_hash
from trawl.urls.registered_domain import site_of, site_of_normalised

if TYPE_CHECKING:
    from collections.abc import Iterable, Sequence

__all__ = [
    "MAX_DEPTH_LIMIT",
    "MAX_EXTRA_HOPS",
    "CrawlScope",
    "ScopeCheck",
    "ScopeDecision",
    "ScopeRule",
    "ScopeType",
    "SeedScope",
    "Standing",
    "seed_id_of",
    "seed_of",
]

MAX_EXTRA_HOPS = 0xFF  # off-scope hops fit in 8 bits of a packed Standing
MAX_DEPTH_LIMIT = 0xFFFF  # depth fits in 16 bits; deeper links count as this deep
SEED_ID_BITS = 38  # with the leaf bit, depth and hops: 63 bits, one signed SQLite INTEGER


class ScopeType(StrEnum):
    PAGE = "page"
    PREFIX = "prefix"
    HOST = "host"
    DOMAIN = "domain"
    ANY = "any"
    CUSTOM = "custom"


class ScopeRule(StrEnum):
    """The rule that decided; the skipped report counts skips by it."""

    SEED = "seed"
    SCOPE = "scope"
    INCLUDE = "include"
    EXCLUDE = "exclude"
    MAX_DEPTH = "max_depth"
    EXTRA_HOPS = "extra_hops"
    CAPTURE = "capture"  # an off-scope redirect target, fetched once, its links not followed
    MAX_PAGES = "max_pages"  # the credited seed's page budget is spent (ScopeBook counts)


@dataclass(frozen=True, slots=True)
class SeedScope:
    """One seed (a normalised URL) and its scope, crawl defaults already merged in.

    `exclude` is the seed's own; crawl-wide excludes are given to CrawlScope. Raises
    ConfigError for a negative or too large depth or hop count.
    """

    url: str
    type: ScopeType = ScopeType.ANY
    include: tuple[str, ...] = ()
    exclude: tuple[str, ...] = ()
    max_depth: int = 0  # 0 = no limit
    extra_hops: int = 0
    max_pages: int = 0  # URLs credited to this seed that are queued; 0 = no limit

    def __post_init__(self) -> None:
        if self.max_pages < 0:
            raise ConfigError(f"max_pages = {self.max_pages}: must be >= 0")
        if not 0 <= self.max_depth <= MAX_DEPTH_LIMIT:
            raise ConfigError(f"max_depth = {self.max_depth}: must be 0..{MAX_DEPTH_LIMIT}")
        if not 0 <= self.extra_hops <= MAX_EXTRA_HOPS:
            raise ConfigError(f"extra_hops = {self.extra_hops}: must be 0..{MAX_EXTRA_HOPS}")

    def to_json(self) -> dict[str, object]:
        return {
            "url": self.url,
            "type": self.type.value,
            "include": list(self.include),
            "exclude": list(self.exclude),
            "maxDepth": self.max_depth,
            "extraHops": self.extra_hops,
            "maxPages": self.max_pages,
        }

    @classmethod
    def from_json(cls, raw: object, where: str) -> SeedScope:
        """A seed scope as `to_json` wrote it (or the API sent it: only `url` required);
        ConfigError naming `where` and the key for anything else."""
        if not isinstance(raw, dict) or not isinstance(raw.get("url"), str):
            raise ConfigError(f"{where}: a seed scope needs a 'url' string")
        known = {"url", "type", "include", "exclude", "maxDepth", "extraHops", "maxPages"}
        unknown = sorted(set(raw) - known)
        if unknown:
            raise ConfigError(f"{where}: unknown key {unknown[0]!r} (known: {sorted(known)})")
        kind = raw.get("type", "any")
        if kind not in {t.value for t in ScopeType}:
            raise ConfigError(f"{where}.type = {kind!r}: one of {[t.value for t in ScopeType]}")
        patterns = {}
        for key in ("include", "exclude"):
            value = raw.get(key, [])
            if not isinstance(value, list) or not all(isinstance(p, str) for p in value):
                raise ConfigError(f"{where}.{key}: must be a list of regular expressions")
            compile_patterns(tuple(value), f"{where}.{key}")
            patterns[key] = tuple(value)
        numbers = {}
        for key in ("maxDepth", "extraHops", "maxPages"):
            value = raw.get(key, 0)
            if isinstance(value, bool) or not isinstance(value, int):
                raise ConfigError(f"{where}.{key} = {value!r}: must be an integer")
            numbers[key] = value
        try:
            return cls(
                raw["url"], ScopeType(kind), patterns["include"], patterns["exclude"],
                numbers["maxDepth"], numbers["extraHops"], numbers["maxPages"],
            )  # fmt: skip
        except ConfigError as exc:
            raise ConfigError(f"{where}: {exc}") from None


def seed_id_of(url: str) -> int:
    """A seed's id: 38 bits of its normalised URL's hash. The same on every machine and in
    every run, whatever order seeds are given in (a queued URL's Standing names its seed by
    it); two seeds of a million share one with odds of about 1 in 2 (the first kept wins)."""
    return int(url_hash(url)[:10], 16) >> 2


def seed_of(packed: int) -> int:
    """The seed id of a packed Standing, without building one (the per-URL path)."""
    return (packed >> 25) & ((1 << SEED_ID_BITS) - 1)


@dataclass(frozen=True, slots=True)
class Standing:
    """Where a queued URL stands: its seed (a seed id), hops from that seed, consecutive
    hops spent out of scope, and `leaf`: fetched and stored but its links not followed (an
    off-scope redirect target captured). Packs into one SQLite INTEGER."""

    seed: int
    depth: int = 0
    off_hops: int = 0
    leaf: bool = False

    def __post_init__(self) -> None:
        if not 0 <= self.seed < 1 << SEED_ID_BITS or not 0 <= self.depth <= MAX_DEPTH_LIMIT:
            raise ValueError(f"bad standing {self!r}")
        if not 0 <= self.off_hops <= MAX_EXTRA_HOPS:
            raise ValueError(f"bad standing {self!r}")

    def pack(self) -> int:
        """seed << 25 | leaf << 24 | depth << 8 | off_hops: one integer column of the
        queue row."""
        return self.seed << 25 | self.leaf << 24 | self.depth << 8 | self.off_hops

    @classmethod
    def unpack(cls, packed: int) -> Standing:
        """The packed value back; garbage (a corrupt row) comes back as a valid Standing."""
        return cls(
            seed_of(packed),
            (packed >> 8) & MAX_DEPTH_LIMIT,
            packed & MAX_EXTRA_HOPS,
            bool(packed >> 24 & 1),
        )


@dataclass(frozen=True, slots=True)
class ScopeDecision:
    """Queue or skip a link; `standing` is set exactly when it is queued."""

    queue: bool
    rule: ScopeRule
    seed: int  # the credited seed (when skipped: the seed whose page linked it)
    standing: Standing | None = None


@dataclass(frozen=True, slots=True)
class ScopeCheck:
    """The answer of `POST /v1/scope/check`: in or out, the rule, the seed URL credited."""

    in_scope: bool
    rule: ScopeRule
    seed: str | None


@dataclass(frozen=True, slots=True)
class _Split:
    """A normalised URL's parts that scope types look at."""

    host_key: str  # the host without a leading "www."
    rest: str  # path and query
    site: str = ""  # the registered domain, when some seed is a `domain` one

    @classmethod
    def of(cls, url: str, *, with_site: bool = False, site: str | None = None) -> _Split:
        """`site`, when the caller knows it (a link from the page workers, which computed
        it): the Public Suffix lookup is the costliest step of a `domain` decision."""
        # Normalised URLs have no userinfo and a lowercase host (urls.normalise).
        start = url.find("//") + 2
        end = url.find("/", start)
        authority, rest = (url[start:end], url[end:]) if end >= 0 else (url[start:], "/")
        if authority.startswith("["):
            host = authority[: authority.find("]") + 1]
        else:
            host = authority.partition(":")[0]
        if site is None:
            site = site_of_normalised(url) if with_site else ""
        return cls(host[4:] if host.startswith("www.") else host, rest, site)


@dataclass(frozen=True, slots=True, eq=False)
class _CompiledSeed:
    index: int  # position in the crawl's seed list: the first of several members is credited
    id: int  # what a Standing names it by
    scope: SeedScope
    split: _Split
    prefix: str  # the seed's directory: its path up to the last "/"
    site: str  # the seed's registered domain
    include: PatternSet
    exclude: PatternSet
    # `any`, no excludes, no depth limit: every link it finds is queued, one hop further
    # (the default scope; decided without a call per link: `CrawlScope._decide`).
    open_and_unlimited: bool = field(init=False)

    def __post_init__(self) -> None:
        unlimited = self.is_open and self.scope.max_depth == 0
        object.__setattr__(self, "open_and_unlimited", unlimited)

    @property
    def is_open(self) -> bool:
        """Every URL is in this seed's scope (`any` with no excludes)."""
        return self.scope.type is ScopeType.ANY and not self.exclude

    def is_type_match(self, url: str, split: _Split) -> bool:
        kind = self.scope.type
        if kind is ScopeType.ANY:
            return True
        if kind is ScopeType.PAGE:
            return url == self.scope.url
        if kind in (ScopeType.HOST, ScopeType.PREFIX):
            same_host = split.host_key == self.split.host_key
            return same_host and (kind is ScopeType.HOST or split.rest.startswith(self.prefix))
        if kind is ScopeType.DOMAIN:
            return split.site == self.site
        return False  # custom: includes only


@dataclass(slots=True, eq=False)
class _SeedTables:
    """The lookup tables of some of a scope's seeds, in seed-list order. Seeds a URL can be
    in by its host, site or URL are found by that key (`indexed`); seeds with includes also
    by their include list (`include_groups`), searched once per URL however many seeds share
    it (the [scope] default: every seed's); only `any` and `custom` seeds (`wide`) are tried
    for every URL. Never changed once a scope holding it is made (`CrawlScope.with_seeds`
    adds to a copy)."""

    seeds: list[_CompiledSeed] = field(default_factory=list)
    by_url: dict[str, _CompiledSeed] = field(default_factory=dict)  # the first of a URL's
    by_id: dict[int, _CompiledSeed] = field(default_factory=dict)  # the first of an id's
    indexed: dict[str, list[_CompiledSeed]] = field(default_factory=dict)
    include_groups: dict[tuple[str, ...], tuple[PatternSet, list[_CompiledSeed]]] = field(
        default_factory=dict
    )
    wide: list[_CompiledSeed] = field(default_factory=list)
    sites: set[str] = field(default_factory=set)  # every seed's registered domain
    # The keys of `indexed` and `include_groups` whose lists this table made itself, which
    # `add` may grow in place; any other list is another table's too and is copied once
    # first. Copying it on every add made a bulk of seeds sharing an include list (the
    # [scope] default) quadratic: each add copied the group's whole member list.
    _own_lists: set[str] = field(default_factory=set)
    _own_groups: set[tuple[str, ...]] = field(default_factory=set)

    def copy(self) -> _SeedTables:
        """A copy whose tables may grow (its lists are copied as they first grow)."""
        return _SeedTables(
            list(self.seeds), dict(self.by_url), dict(self.by_id), dict(self.indexed),
            dict(self.include_groups), list(self.wide), set(self.sites),
        )  # fmt: skip

    def add(self, seed: _CompiledSeed) -> None:
        """Index `seed` after the others."""
        self.seeds.append(seed)
        self.by_url.setdefault(seed.scope.url, seed)
        self.by_id.setdefault(seed.id, seed)
        key = _index_key(seed)
        if key is None:
            self.wide.append(seed)
        else:
            found = self.indexed.get(key)
            if found is not None and key in self._own_lists:
                found.append(seed)
            else:
                self.indexed[key] = [*(found or ()), seed]
                self._own_lists.add(key)
        if seed.include and key is not None:
            patterns = seed.include.patterns
            group = self.include_groups.get(patterns)
            if group is not None and patterns in self._own_groups:
                group[1].append(seed)
            else:
                members = [] if group is None else group[1]
                self.include_groups[patterns] = (seed.include, [*members, seed])
                self._own_groups.add(patterns)
        self.sites.add(seed.site)


# Seeds added to a scope go into a second, small table (copied on each addition) until it
# holds this share of the first; then both are merged into one. A seed added through the
# API copied every table of the scope: 30-48 ms a call with 100,000 seeds, 430-490 ms with a
# million, on the crawl loop. Now a call copies the small table, and a merge (the old cost)
# comes once every len/_MERGE_SHARE additions.
_MERGE_SHARE = 32
_MERGE_MIN = 1_024

# Decisions about a link (one hop further from the seed) and a redirect target (the same
# page, moved: no hop).
_LINK, _REDIRECT = 1, 0


class CrawlScope:
    """Every seed's scope and the crawl-wide excludes, compiled once; immutable.

    `seed_ids` name the seeds in Standings (default: their positions, for tests; the crawl
    uses `seed_id_of`). A Standing naming no seed of this scope (a URL queued before scope
    existed, or by a seed since removed) is decided as if its seed were `any`:
    `open_fallback` says whether links it finds are followed (the crawl's `[scope]` type is
    `any`) or must be in some seed's scope. `capture_redirects`: an off-scope redirect
    target is fetched once as a leaf (True) or skipped.

    Raises ConfigError naming the key of a pattern RE2 refuses.
    """

    __slots__ = (
        "_capture",
        "_count",
        "_exclude",
        "_fallback_open",
        "_has_domain_seeds",
        "_limiting",
        "_more",
        "_patterns",
        "_tables",
    )

    def __init__(
        self,
        seeds: Sequence[SeedScope],
        exclude: tuple[str, ...] = (),
        *,
        seed_ids: Sequence[int] | None = None,
        capture_redirects: bool = True,
        open_fallback: bool = True,
    ) -> None:
        ids = list(range(len(seeds))) if seed_ids is None else list(seed_ids)
        if len(ids) != len(seeds):
            raise ValueError("one seed id per seed")
        self._patterns: dict[tuple[str, ...], PatternSet] = {}
        self._exclude = compile_patterns(exclude, "scope.exclude")
        self._capture = capture_redirects
        self._fallback_open = open_fallback
        self._index(tuple(self._compiled(n, ids[n], seed) for n, seed in enumerate(seeds)))

    def _compiled(self, index: int, seed_id: int, seed: SeedScope) -> _CompiledSeed:
        split = _Split.of(seed.url)
        return _CompiledSeed(
            index,
            seed_id,
            seed,
            split,
            _directory(split.rest),
            site_of(seed.url),
            self._pattern_set(seed.include, f"seeds[{index}].include"),
            self._pattern_set(seed.exclude, f"seeds[{index}].exclude"),
        )

    def _pattern_set(self, patterns: tuple[str, ...], key: str) -> PatternSet:
        # Seeds share pattern lists (the [scope] defaults): compiled once per scope lineage.
        found = self._patterns.get(patterns)
        if found is None:
            found = self._patterns[patterns] = compile_patterns(patterns, key)
        return found

    def _index(self, seeds: tuple[_CompiledSeed, ...]) -> None:
        self._tables = _SeedTables()
        self._more: _SeedTables | None = None  # seeds added since `_tables` was built
        self._count = 0
        self._has_domain_seeds = False
        self._limiting = 0  # seeds that are not `any` without limits (is_open: none)
        for seed in seeds:
            self._tables.add(seed)
            self._note_kind(seed)

    def _note_kind(self, seed: _CompiledSeed) -> None:
        self._count += 1
        if seed.scope.type is ScopeType.DOMAIN:
            self._has_domain_seeds = True
        if not seed.is_open or seed.scope.max_depth:
            self._limiting += 1

    def _layers(self) -> tuple[_SeedTables, ...]:
        return (self._tables,) if self._more is None else (self._tables, self._more)

    def _compiled_seeds(self) -> list[_CompiledSeed]:
        if self._more is None:
            return self._tables.seeds
        return [*self._tables.seeds, *self._more.seeds]

    def _seed_at(self, url: str) -> _CompiledSeed | None:
        """The seed whose URL `url` is (the first, if several are)."""
        seed = self._tables.by_url.get(url)
        if seed is None and self._more is not None:
            return self._more.by_url.get(url)
        return seed

    def _seed_named(self, seed_id: int) -> _CompiledSeed | None:
        seed = self._tables.by_id.get(seed_id)
        if seed is None and self._more is not None:
            return self._more.by_id.get(seed_id)
        return seed

    def seed_site(self, url: str) -> str | None:
        """The registered domain of the seed whose URL `url` is, None when no seed is: what
        the scope computed when the seed was added, so a caller queueing many seeds need not
        look each up in the Public Suffix List again."""
        seed = self._seed_at(url)
        return None if seed is None else seed.site

    @property
    def seeds(self) -> tuple[SeedScope, ...]:
        return tuple(seed.scope for seed in self._compiled_seeds())

    @property
    def seed_ids(self) -> tuple[int, ...]:
        return tuple(seed.id for seed in self._compiled_seeds())

    @property
    def is_open(self) -> bool:
        """Every link is followed: no seed limits anything and nothing is excluded."""
        return not self._exclude and self._fallback_open and not self._limiting

    # Run-time changes (the API) make a new scope from this one, compiling only what
    # changed: a crawl of 100,000 seeds must not stall its loop for seconds per change.
    def with_exclusions(self, exclude: tuple[str, ...]) -> CrawlScope:
        """The same seeds with these crawl-wide excludes."""
        new = self._copy()
        new._exclude = compile_patterns(exclude, "scope.exclude")
        return new

    def with_seeds(self, seeds: Iterable[tuple[int, SeedScope]]) -> CrawlScope:
        """This scope with more seeds (id, scope) after its own; a seed whose URL is
        already one takes the new scope in its place (which builds every table again)."""
        given = list(seeds)
        fresh: dict[str, tuple[int, SeedScope]] = {}  # URL -> the first new seed of it
        for seed_id, seed in given:
            known = self._seed_at(seed.url)
            first = fresh.setdefault(seed.url, (seed_id, seed)) if known is None else None
            if (known is not None and known.scope != seed) or (first and first[1] != seed):
                return self._rebuilt(given)
        new = self._copy()
        kept = self._more.seeds if self._more is not None else []
        if len(kept) + len(fresh) > max(_MERGE_MIN, len(self._tables.seeds) // _MERGE_SHARE):
            # Merged into one table: the kept seeds and the new ones go straight into a
            # copy of the first (a bulk of seeds, as at start-up, is indexed once, not
            # into the second table and then again into the first).
            new._tables, new._more = self._tables.copy(), None
            for compiled in kept:
                new._tables.add(compiled)
            target = new._tables
        else:
            new._more = target = _SeedTables() if self._more is None else self._more.copy()
        for seed_id, seed in fresh.values():
            compiled = self._compiled(new._count, seed_id, seed)
            target.add(compiled)
            new._note_kind(compiled)
        return new

    def _rebuilt(self, given: list[tuple[int, SeedScope]]) -> CrawlScope:
        """`with_seeds` when a seed's URL is one already: every table built again."""
        compiled = list(self._compiled_seeds())
        at = {seed.scope.url: seed.index for seed in reversed(compiled)}
        for seed_id, seed in given:
            index = at.get(seed.url)
            if index is not None:
                if compiled[index].scope != seed:
                    compiled[index] = self._compiled(index, compiled[index].id, seed)
                continue
            at[seed.url] = len(compiled)
            compiled.append(self._compiled(len(compiled), seed_id, seed))
        new = self._copy()
        new._index(tuple(compiled))
        return new

    def with_seed(self, seed: SeedScope, seed_id: int) -> CrawlScope:
        """This scope and one more seed (or a seed's new scope, if its URL is a seed)."""
        return self.with_seeds([(seed_id, seed)])

    def _copy(self) -> CrawlScope:
        new = object.__new__(CrawlScope)
        for name in self.__slots__:
            setattr(new, name, getattr(self, name))
        return new

    def may_hold(self, site: str) -> bool:
        """Could a URL of `site` (a registered domain) be in scope? False only when every
        seed's scope is tied to other sites (page, prefix, host, domain, no includes): then
        a site reached by an off-scope hop or a captured redirect has nothing to list."""
        if not self._count and self._fallback_open:
            return True
        layers = self._layers()
        if any(table.wide or table.include_groups for table in layers):
            return True
        return any(site in table.sites for table in layers)

    def seed_standing(self, url: str) -> Standing | None:
        """The standing of a seed URL (depth 0), or None if `url` is not a seed."""
        seed = self._seed_at(url)
        return None if seed is None else Standing(seed.id)

    def seed_url(self, seed_id: int) -> str | None:
        seed = self._seed_named(seed_id)
        return None if seed is None else seed.scope.url

    def page_budget(self, seed_id: int) -> int:
        """The seed's `max_pages` (0: none, or no such seed)."""
        seed = self._seed_named(seed_id)
        return 0 if seed is None else seed.scope.max_pages

    def is_excluded(self, url: str) -> bool:
        """A crawl-wide exclude matches `url` (a queued URL a run-time exclusion removes)."""
        return bool(self._exclude) and bool(self._exclude.matching(url))

    def decide(self, url: str, source: Standing, site: str | None = None) -> ScopeDecision:
        """Queue or skip the normalised link `url` found on a page standing at `source`;
        `site`, its registered domain, if known."""
        return self._decide(url, source, _LINK, site)

    def uniform_link_decision(self, source: Standing) -> ScopeDecision | None:
        """What `decide` answers for every link found on a page standing at `source` that
        is not a seed URL (`is_seed_url`), when that is one answer: the page's seed is
        `any` with no limits and no crawl-wide exclude exists (the default scope); else
        None, and each link is decided by `decide`. A page's ~50 links then cost one
        decision and a dict lookup each instead of three calls each (issue 17)."""
        if source.leaf or self._exclude:
            return None
        own = self._seed_named(source.seed)
        if own is None or not own.open_and_unlimited:
            return None
        return _queued_at(ScopeRule.SCOPE, own.id, min(source.depth + _LINK, MAX_DEPTH_LIMIT), 0)

    def is_seed_url(self, url: str) -> bool:
        # Called for every link: the second lookup only while seeds added at run time are
        # kept in a table of their own.
        return url in self._tables.by_url or (self._more is not None and url in self._more.by_url)

    def decide_redirect(self, url: str, source: Standing) -> ScopeDecision:
        """Queue or skip `url`, where the page standing at `source` redirected to: in scope
        (or on an off-scope hop still allowed) it is queued at the source's depth; else
        it is captured as a leaf (`capture_redirects`) or skipped. Excluded is skipped."""
        decision = self._decide(url, source, _REDIRECT)
        if decision.queue or decision.rule not in (ScopeRule.SCOPE, ScopeRule.EXTRA_HOPS):
            return decision
        if not self._capture:
            return decision
        standing = Standing(decision.seed, source.depth, source.off_hops, leaf=True)
        return ScopeDecision(True, ScopeRule.CAPTURE, decision.seed, standing)

    def decide_listed(self, url: str, depth: int) -> ScopeDecision:
        """Queue or skip `url`, which no page linked (a sitemap entry): it must be in some
        seed's scope, and is credited to it at `depth`."""
        seed = self._seed_at(url)
        if seed is not None:
            return _seed_url(seed.id)
        if self.is_excluded(url):
            return _skipped(ScopeRule.EXCLUDE, 0)
        excluded = False
        split = _Split.of(url, with_site=self._has_domain_seeds)
        for member, rule in self._members(url, split, skip=-1):
            if rule is ScopeRule.EXCLUDE:
                excluded = True
            elif member.scope.max_depth == 0 or depth <= member.scope.max_depth:
                return _queued_at(rule, member.id, min(depth, MAX_DEPTH_LIMIT), 0)
        if excluded:
            return _skipped(ScopeRule.EXCLUDE, 0)
        if not self._count and self._fallback_open:
            return _queued_at(ScopeRule.SCOPE, 0, min(depth, MAX_DEPTH_LIMIT), 0)
        return _skipped(ScopeRule.SCOPE, 0)

    def _decide(
        self, url: str, source: Standing, step: int, site: str | None = None
    ) -> ScopeDecision:
        # `_seed_at` and `_seed_named` inlined: this runs for every link (~60 ns a link).
        more = self._more
        seed_hit = self._tables.by_url.get(url)
        if seed_hit is None and more is not None:
            seed_hit = more.by_url.get(url)
        if seed_hit is not None:
            return _seed_url(seed_hit.id)
        if source.leaf:
            return _skipped(ScopeRule.CAPTURE, source.seed)
        if self.is_excluded(url):
            return _skipped(ScopeRule.EXCLUDE, source.seed)
        own = self._tables.by_id.get(source.seed)
        if own is None and more is not None:
            own = more.by_id.get(source.seed)
        if own is None:
            return self._unknown_seed(url, source, step)
        if own.open_and_unlimited:  # `any`, the default: the fastest path
            return _queued_at(ScopeRule.SCOPE, own.id, min(source.depth + step, MAX_DEPTH_LIMIT), 0)
        if own.is_open and _is_within_depth(own, source, step):  # `any`: the fast path
            return _queued(ScopeRule.SCOPE, own.id, source, step, off_scope=False)
        split = _Split.of(url, with_site=self._has_domain_seeds, site=site)
        rule = self._membership(own, url, split)  # the common case: the finder's own scope
        too_deep: list[_CompiledSeed] = []  # members whose max_depth the link exceeds
        if rule is ScopeRule.SCOPE or rule is ScopeRule.INCLUDE:
            if _is_within_depth(own, source, step):
                return _queued(rule, own.id, source, step, off_scope=False)
            too_deep.append(own)
        excluded = rule is ScopeRule.EXCLUDE
        for seed, seed_rule in self._members(url, split, skip=own.index):
            if seed_rule is ScopeRule.EXCLUDE:
                excluded = True
            elif _is_within_depth(seed, source, step):
                return _queued(seed_rule, seed.id, source, step, off_scope=False)
            else:
                too_deep.append(seed)
        if too_deep:
            return _skipped(ScopeRule.MAX_DEPTH, too_deep[0].id)
        if excluded:
            return _skipped(ScopeRule.EXCLUDE, source.seed)
        return self._off_scope(own, source, step)

    def _unknown_seed(self, url: str, source: Standing, step: int) -> ScopeDecision:
        """A source naming no seed: open crawls follow the link; others need it in scope."""
        if self._fallback_open:
            return _queued(ScopeRule.SCOPE, source.seed, source, step, off_scope=False)
        split = _Split.of(url, with_site=self._has_domain_seeds)
        for seed, rule in self._members(url, split, skip=-1):
            if rule is not ScopeRule.EXCLUDE and _is_within_depth(seed, source, step):
                return _queued(rule, seed.id, source, step, off_scope=False)
        return _skipped(ScopeRule.SCOPE, source.seed)

    def check(self, url: str) -> ScopeCheck:
        """Is the normalised `url` in the crawl's scope, by which rule, for which seed URL."""
        seed_hit = self._seed_at(url)
        if seed_hit is not None:
            return ScopeCheck(True, ScopeRule.SEED, url)
        if self.is_excluded(url):
            return ScopeCheck(False, ScopeRule.EXCLUDE, None)
        excluded_by: str | None = None
        split = _Split.of(url, with_site=self._has_domain_seeds)
        for seed, rule in self._members(url, split, skip=-1):
            if rule is not ScopeRule.EXCLUDE:
                return ScopeCheck(True, rule, seed.scope.url)
            excluded_by = excluded_by or seed.scope.url
        if excluded_by is not None:
            return ScopeCheck(False, ScopeRule.EXCLUDE, excluded_by)
        if not self._count and self._fallback_open:
            return ScopeCheck(True, ScopeRule.SCOPE, None)
        return ScopeCheck(False, ScopeRule.SCOPE, None)

    def explain(self, url: str, decision: ScopeDecision) -> str:
        """The rule behind a skip, for the skipped report: the pattern, limit or seed."""
        rule = decision.rule
        if rule is ScopeRule.EXCLUDE and self._exclude:
            found = self._exclude.matching(url)
            if found:
                return f"exclude {self._exclude.patterns[found[0]]}"
        seed = self._seed_named(decision.seed)
        if seed is None:
            return rule.value
        return _seed_rule(rule, seed.scope)

    def _off_scope(self, own: _CompiledSeed, source: Standing, step: int) -> ScopeDecision:
        if step == _REDIRECT and source.off_hops:  # the same off-scope hop, moved
            return _queued_at(ScopeRule.EXTRA_HOPS, own.id, source.depth, source.off_hops)
        hops = own.scope.extra_hops
        if source.off_hops >= hops:
            rule = ScopeRule.EXTRA_HOPS if hops else ScopeRule.SCOPE
            return _skipped(rule, own.id)
        if not _is_within_depth(own, source, step):
            return _skipped(ScopeRule.MAX_DEPTH, own.id)
        return _queued(ScopeRule.EXTRA_HOPS, own.id, source, step, off_scope=True)

    def _members(
        self, url: str, split: _Split, *, skip: int
    ) -> Iterable[tuple[_CompiledSeed, ScopeRule]]:
        """Seeds whose type or includes match `url`, first in the seed list first, with the
        rule (EXCLUDE when the seed's own exclude then removes it); position `skip` is left
        out."""
        keys = [url, split.host_key]
        if self._has_domain_seeds:
            keys.append(_SITE + split.site)
        candidates: dict[int, _CompiledSeed] = {}
        for table in self._layers():
            for seed in table.wide:
                candidates[seed.index] = seed
            for key in keys:
                for seed in table.indexed.get(key, ()):
                    candidates[seed.index] = seed
            for patterns, members in table.include_groups.values():
                if patterns.matching(url):
                    for seed in members:
                        candidates[seed.index] = seed
        candidates.pop(skip, None)
        for index in sorted(candidates):
            seed = candidates[index]
            rule = self._membership(seed, url, split)
            if rule is not None:
                yield seed, rule

    @staticmethod
    def _membership(seed: _CompiledSeed, url: str, split: _Split) -> ScopeRule | None:
        if seed.is_type_match(url, split):
            rule = ScopeRule.SCOPE
        elif seed.include and seed.include.matching(url):
            rule = ScopeRule.INCLUDE
        else:
            return None
        if seed.exclude and seed.exclude.matching(url):
            return ScopeRule.EXCLUDE
        return rule

    def __repr__(self) -> str:
        kinds = sorted({seed.scope.type.value for seed in self._compiled_seeds()})
        return (
            f"<CrawlScope seeds={self._count} types={','.join(kinds)}"
            f" excludes={len(self._exclude.patterns)}>"
        )


@lru_cache(maxsize=4096)
def _seed_rule(rule: ScopeRule, seed: SeedScope) -> str:
    if rule is ScopeRule.MAX_DEPTH:
        return f"max_depth {seed.max_depth} of {seed.url}"
    if rule is ScopeRule.EXTRA_HOPS:
        return f"extra_hops {seed.extra_hops} of {seed.url}"
    if rule is ScopeRule.EXCLUDE:
        return f"exclude of {seed.url}"
    if rule is ScopeRule.CAPTURE:
        return f"links of a captured off-scope redirect ({seed.url})"
    if rule is ScopeRule.MAX_PAGES:
        return f"max_pages {seed.max_pages} of {seed.url}"
    return f"{rule.value} {seed.type.value} of {seed.url}"


def _directory(rest: str) -> str:
    path = rest.partition("?")[0]
    return path[: path.rfind("/") + 1] or "/"


# Site keys are kept apart from host keys so a domain seed and a host seed never collide.
_SITE = "site:"


def _index_key(seed: _CompiledSeed) -> str | None:
    kind = seed.scope.type
    if kind is ScopeType.PAGE:
        return seed.scope.url
    if kind in (ScopeType.HOST, ScopeType.PREFIX):
        return seed.split.host_key
    if kind is ScopeType.DOMAIN:
        return _SITE + seed.site
    return None


def _is_within_depth(seed: _CompiledSeed, source: Standing, step: int) -> bool:
    limit = seed.scope.max_depth
    return limit == 0 or source.depth + step <= limit


def _queued(
    rule: ScopeRule, seed: int, source: Standing, step: int, *, off_scope: bool
) -> ScopeDecision:
    depth = min(source.depth + step, MAX_DEPTH_LIMIT)
    return _queued_at(rule, seed, depth, source.off_hops + 1 if off_scope else 0)


@lru_cache(maxsize=4096)
def _skipped(rule: ScopeRule, seed: int) -> ScopeDecision:
    return ScopeDecision(False, rule, seed)


@lru_cache(maxsize=65536)
def _seed_url(seed: int) -> ScopeDecision:
    # Sites link their seed URL (a home page) from most pages: one value, not two objects.
    return ScopeDecision(True, ScopeRule.SEED, seed, Standing(seed))


@lru_cache(maxsize=65536)
def _queued_at(rule: ScopeRule, seed: int, depth: int, off_hops: int) -> ScopeDecision:
    # Decisions are values and repeat a lot (same seed, same depth): building two frozen
    # dataclasses per link was half the cost of an `any` decision.
    return ScopeDecision(True, rule, seed, Standing(seed, depth, off_hops))

"""One typed Settings tree, read from TOML once and validated.

Every tunable lives here with its default; `docs/CONFIG.md` documents each key and a test
checks that the two agree. Unknown keys and wrong types are errors (a typo in a politeness
setting must not silently fall back to a default).
"""

from __future__ import annotations

import dataclasses
import math
import tomllib
import types
from dataclasses import dataclass, field, fields
from typing import TYPE_CHECKING, Any, get_args, get_origin, get_type_hints

from trawl.errors import ConfigError
from trawl.fetch.ssrf import parse_networks

if TYPE_CHECKING:
    from pathlib import Path

    from trawl.frontier.scope import CrawlScope, SeedScope
    from trawl.urls.normalise import NormaliseRules

MiB = 1024 * 1024


class Duration(float):
    """Seconds, written in the config as a number or a string like "2s", "5m", "1.5h", "30d"."""

    UNITS: dict[str, float] = {"s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0}  # noqa: RUF012

    @classmethod
    def parse(cls, text: str) -> Duration:
        """'5m' -> 300.0; raises ValueError with the accepted forms."""
        raw = text.strip().lower()
        unit = cls.UNITS.get(raw[-1:]) if raw else None
        number = raw[:-1] if unit is not None else raw
        try:
            value = float(number) * (unit or 1.0)
        except ValueError:
            value = -1.0
        if not (value >= 0 and value != float("inf")):
            forms = '30, "2s", "5m", "1h", "30d"'
            raise ValueError(f"{text!r} is not a duration (use e.g. {forms})")
        return cls(value)


@dataclass(frozen=True, slots=True)
class CrawlSettings:
    contact_url: str = ""  # required (CLI --contact or config); goes into the User-Agent
    user_agent: str = ""  # full override; must still name trawl/ and a contact URL
    max_pages: int = 0  # 0 = unlimited; robots.txt fetches are not counted
    max_time_s: float = 0.0  # 0 = unlimited
    concurrency: int = 500  # fetch workers (open connections) at most
    checkpoint_interval_s: float = 60.0
    commit_interval_s: float = 0.5  # page records and events are committed in batches
    continuous: bool = False  # keep crawling and recrawling when the frontier empties
    # A one-shot crawl does not stay open for a site whose next request is further away
    # (a long Retry-After, a backoff, a parked site): its URLs wait for the next run.
    max_site_wait_s: float = 300.0
    # A site's state (clock, robots rules, trap counters) leaves memory after this long with
    # no request and no use, and is read back from its host record when next needed.
    site_idle_s: float = 600.0


@dataclass(frozen=True, slots=True)
class PolitenessSettings:
    min_delay_s: float = 1.0  # never less than 1 s between starts on one site
    slow_factor: float = 10.0  # gap >= slow_factor x last response time
    per_ip_max_in_flight: int = 2
    per_ip_min_gap_s: float = 0.25
    robots_cache_s: float = 86400.0
    robots_max_bytes: int = 512_000
    robots_retry_base_s: float = 60.0
    robots_retry_max_s: float = 3600.0
    backoff_max_s: float = 3600.0
    park_after_failures: int = 20
    park_s: float = 6 * 3600.0


@dataclass(frozen=True, slots=True)
class FetchSettings:
    total_timeout_s: float = 10.0
    max_body_bytes: int = 10 * MiB
    max_decoded_bytes: int = 50 * MiB
    stored_types: tuple[str, ...] = ("text/html", "application/xhtml+xml")
    # Above the hosts a crawl revisits within a connection's idle time (15 s), so that their
    # keep-alive connections are reused: at 2,000 the full bench web's 2,205 hosts opened
    # 17-19 % of their requests on a new connection, at 4,096 4-5 % (one per host).
    max_connections: int = 4096
    dns_ttl_s: float = 300.0
    max_attempts: int = 3  # fetches of one URL that end in 429/503/5xx/timeout/reset
    max_redirects: int = 10  # hops of one redirect chain followed, across queued hops


@dataclass(frozen=True, slots=True)
class FrontierSettings:
    lease_s: float = 300.0
    fast_share: float = 0.8  # share of hand-outs that prefer the fast line when both wait
    max_links_per_page: int = 5_000  # the first distinct hrefs of a page followed (parse.links)


@dataclass(frozen=True, slots=True)
class TrapSettings:
    """Crawler-trap defences (frontier.traps.TrapPolicy); each has a counter in the stats."""

    max_depth: int = 50
    max_url_length: int = 1024
    max_query_params: int = 12
    max_path_segments: int = 30
    max_repeats: int = 3
    daily_page_cap: int = 5000
    max_importance: float = 10.0
    similarity_window: int = 50
    similarity_threshold: int = 3
    similarity_alarm_share: float = 0.8
    similarity_min_pages: int = 10
    similarity_clear_share: float = 0.4
    flagged_cap_factor: float = 0.1
    contain_window: int = 5
    contain_pages: int = 3
    contain_clear_after: int = 3
    contained_interval_s: float = 3600.0
    contained_daily_cap: int = 24
    vouched_depth: int = 1


@dataclass(frozen=True, slots=True)
class RecrawlSettings:
    """When known pages are fetched again (recrawl.schedule) and how fetch slots are shared."""

    min_interval: Duration = Duration(300.0)  # noqa: RUF009  # an immutable float
    max_interval: Duration = Duration(30 * 86400.0)  # noqa: RUF009
    refresh_share: float = 0.6  # of hand-outs go to due pages when discovery also waits
    target_change_probability: float = 0.5
    history_visits: int = 16  # visits kept per page for the change-rate estimate
    copy_heavy_share: float = 0.5  # near-copies among a site's pages that make it copy-heavy
    copy_heavy_factor: float = 4.0  # recrawl intervals of a copy-heavy site are this much longer
    due_batch: int = 2000  # due pages moved to the frontier per scheduler tick


@dataclass(frozen=True, slots=True)
class SitemapSettings:
    enabled: bool = True
    max_urls_per_site: int = 50_000  # sitemap entries taken from one site per day
    max_files_per_site: int = 50  # sitemap files (indexes and children) fetched per site per day
    max_bytes: int = 50 * MiB  # uncompressed, per file (sitemaps.org limit)


@dataclass(frozen=True, slots=True)
class DedupSettings:
    near_max_distance: int = 3  # simhash bits; at most 3 (the index is built for it)
    near_min_tokens: int = 50  # pages with less main text are not matched as near-copies


RENDER_MODES = ("auto", "off")


@dataclass(frozen=True, slots=True)
class RenderSettings:
    """Selective JavaScript rendering (issue 18): the browser's limits, then the rules of
    render.policy (which flagged pages are rendered; `RenderRules.from_settings`)."""

    mode: str = "auto"  # auto: render when Chromium is found; off: plain fetches only
    chromium: str = ""  # "" = chromium, chromium-browser or google-chrome on the PATH
    concurrency: int = 1  # pages rendered at once (bench/RESULTS.md: 2 lag the crawl loop)
    page_timeout_s: float = 15.0  # wall-clock cap on one render
    max_subrequests: int = 60  # requests the browser may make for one page
    max_subresource_bytes: int = 8 * MiB  # bytes those requests may bring, per page
    recycle_after_pages: int = 100  # a fresh browser after this many renders
    max_browser_rss_mb: int = 1024  # ... or once the browser's memory exceeds this
    max_queued: int = 10_000  # pages waiting for a browser; candidates past it are not queued
    cpu_share: float = 0.25  # cores' worth of CPU the browser may use on average
    site_share: float = 0.2  # of a site's plain HTML pages that may be rendered
    site_min_pages: int = 3  # renders of a site allowed before site_share applies
    overall_share: float = 0.05  # of all plain HTML pages that may be rendered
    overall_min: int = 20  # renders allowed before overall_share applies
    learn_after: int = 5  # fruitless renders in a row that make a site unproductive
    recheck_every: int = 20  # an unproductive site still renders 1 candidate in this many
    min_text_gain_chars: int = 200  # a render that gains this much visible text pays ...
    min_links_gained: int = 1  # ... or this many new links
    force_on: tuple[str, ...] = ()  # host names or RE2 patterns: always render
    force_off: tuple[str, ...] = ()  # never render; wins over force_on


@dataclass(frozen=True, slots=True)
class SeenSettings:
    expected_urls: int = 10_000_000
    false_positive_rate: float = 0.01


@dataclass(frozen=True, slots=True)
class UrlSettings:
    tracking_params: tuple[str, ...] = (
        "gclid", "fbclid", "dclid", "msclkid", "yclid", "mc_cid", "mc_eid", "_ga", "igshid",
    )  # fmt: skip
    tracking_prefixes: tuple[str, ...] = ("utm_",)
    session_params: tuple[str, ...] = (
        "jsessionid", "phpsessid", "sid", "sessionid", "session_id", "aspsessionid",
        "cfid", "cftoken",
    )  # fmt: skip
    max_url_length: int = 2048


@dataclass(frozen=True, slots=True)
class StorageSettings:
    warc_max_file_bytes: int = 1_000_000_000
    warc_compress_level: int = -1  # -1 = the WARC encoder's measured default


@dataclass(frozen=True, slots=True)
class NetworkSettings:
    resolve: tuple[str, ...] = ()
    hosts_file: str = ""
    dns_server: str = ""
    allow_private: bool = False
    allow_networks: tuple[str, ...] = ()  # CIDRs; when set, no other address is connected to


@dataclass(frozen=True, slots=True)
class NodeSettings:
    """A cluster node's timing (`trawl node`); cluster.ownership_shell.ClusterTiming checks
    that the values work together."""

    member_ttl_s: float = 4.0  # a node is gone this long after its last heartbeat
    lease_ttl_s: float = 5.0  # how long a crashed node's partitions stay unfetched
    margin_s: float = 1.5  # stop fetching (requests in flight cut) this long before expiry
    renew_after_s: float = 1.5
    retry_s: float = 0.5
    request_timeout_s: float = 1.0
    checkpoint_interval_s: float = 180.0  # each changed partition is checkpointed this often


SCOPE_TYPES = ("page", "prefix", "host", "domain", "any", "custom")  # frontier.scope.ScopeType
OFF_SCOPE_REDIRECTS = ("capture", "drop")


@dataclass(frozen=True, slots=True)
class ScopeSettings:
    """What to crawl (frontier.scope): the defaults of every seed, and crawl-wide excludes."""

    type: str = "any"  # page, prefix, host, domain, any (follow every link), custom
    include: tuple[str, ...] = ()  # RE2 patterns over the normalised URL; widen the type
    exclude: tuple[str, ...] = ()  # crawl-wide; an exclude always wins
    max_depth: int = 0  # hops from the seed; 0 = no limit
    extra_hops: int = 0  # off-scope hops followed
    max_pages: int = 0  # URLs queued for each seed (credited to it); 0 = no limit
    off_scope_redirects: str = "capture"  # capture (fetch once, follow no links) or drop


@dataclass(frozen=True, slots=True)
class SeedSettings:
    """A `[[seeds]]` table: a seed URL and the scope keys it overrides (None = [scope]'s)."""

    url: str
    type: str | None = None
    include: tuple[str, ...] | None = None
    exclude: tuple[str, ...] | None = None  # the seed's own, besides the crawl-wide ones
    max_depth: int | None = None
    extra_hops: int | None = None
    max_pages: int | None = None


@dataclass(frozen=True, slots=True)
class Settings:
    crawl: CrawlSettings = field(default_factory=CrawlSettings)
    politeness: PolitenessSettings = field(default_factory=PolitenessSettings)
    fetch: FetchSettings = field(default_factory=FetchSettings)
    frontier: FrontierSettings = field(default_factory=FrontierSettings)
    traps: TrapSettings = field(default_factory=TrapSettings)
    recrawl: RecrawlSettings = field(default_factory=RecrawlSettings)
    sitemaps: SitemapSettings = field(default_factory=SitemapSettings)
    dedup: DedupSettings = field(default_factory=DedupSettings)
    render: RenderSettings = field(default_factory=RenderSettings)
    seen: SeenSettings = field(default_factory=SeenSettings)
    urls: UrlSettings = field(default_factory=UrlSettings)
    storage: StorageSettings = field(default_factory=StorageSettings)
    network: NetworkSettings = field(default_factory=NetworkSettings)
    node: NodeSettings = field(default_factory=NodeSettings)
    scope: ScopeSettings = field(default_factory=ScopeSettings)
    seeds: tuple[SeedSettings, ...] = ()

    def validate(self) -> Settings:
        """Check cross-field rules; returns self so calls chain."""
        p = self.politeness
        if p.min_delay_s < 1.0:
            raise ConfigError(f"politeness.min_delay_s = {p.min_delay_s}: must be >= 1.0 s")
        if p.per_ip_max_in_flight < 1:
            raise ConfigError("politeness.per_ip_max_in_flight must be >= 1")
        _require_positive("crawl.concurrency", self.crawl.concurrency)
        _require_positive("crawl.max_site_wait_s", self.crawl.max_site_wait_s)
        _require_positive("crawl.site_idle_s", self.crawl.site_idle_s)
        _require_positive("fetch.total_timeout_s", self.fetch.total_timeout_s)
        _require_positive("fetch.max_body_bytes", self.fetch.max_body_bytes)
        if self.fetch.max_redirects < 0:
            raise ConfigError(f"fetch.max_redirects = {self.fetch.max_redirects}: must be >= 0")
        _require_positive("seen.expected_urls", self.seen.expected_urls)
        if not 0 < self.seen.false_positive_rate < 1:
            raise ConfigError("seen.false_positive_rate must be between 0 and 1")
        if not 0 <= self.frontier.fast_share <= 1:
            raise ConfigError("frontier.fast_share must be between 0 and 1")
        _require_positive("frontier.max_links_per_page", self.frontier.max_links_per_page)
        r = self.recrawl
        if not 0 < r.min_interval <= r.max_interval:
            raise ConfigError(
                f"recrawl: need 0 < min_interval ({r.min_interval:g} s)"
                f" <= max_interval ({r.max_interval:g} s)"
            )
        if not 0 <= r.refresh_share <= 1:
            raise ConfigError("recrawl.refresh_share must be between 0 and 1")
        if not 0 < r.target_change_probability < 1:
            raise ConfigError("recrawl.target_change_probability must be between 0 and 1")
        _require_positive("recrawl.history_visits", r.history_visits)
        _require_positive("recrawl.due_batch", r.due_batch)
        if not 0 <= self.dedup.near_max_distance <= 3:
            raise ConfigError("dedup.near_max_distance must be between 0 and 3")
        if not -1 <= self.storage.warc_compress_level <= 3:
            raise ConfigError("storage.warc_compress_level must be -1 (default) or 0..3 (ISA-L)")
        parse_networks(self.network.allow_networks, "network.allow_networks")
        _require_positive("node.checkpoint_interval_s", self.node.checkpoint_interval_s)
        _check_render(self.render)
        if self.scope != ScopeSettings() or self.seeds:
            # Every settings load validates (twice per command: file, then overrides); the
            # default scope has nothing to compile, and its check would import RE2 and the
            # scope core for nothing.
            self.crawl_scope()
        return self

    def crawl_scope(
        self, more_seeds: tuple[str, ...] = (), rules: NormaliseRules | None = None
    ) -> CrawlScope:
        """`seed_scopes`, compiled with the crawl-wide excludes. ConfigError naming the key."""
        # Imported here: the scope core brings the public suffix list and RE2 (~60 ms), which
        # commands that only read the config must not pay for (tests/integration/
        # test_cli_startup.py).
        from trawl.frontier.scope import CrawlScope

        return CrawlScope(self.seed_scopes(more_seeds, rules), self.scope.exclude)

    def seed_scopes(
        self, more_seeds: tuple[str, ...] = (), rules: NormaliseRules | None = None
    ) -> list[SeedScope]:
        """The `[[seeds]]` tables' scopes (their URLs normalised by `rules`), then
        `more_seeds` (normalised URLs: the seeds file, the command line) with the `[scope]`
        defaults. Raises ConfigError naming the key."""
        defaults = self.default_seed_scope()
        tables = [
            _seed_scope(self.scope, seed, f"seeds[{n}]", rules) for n, seed in enumerate(self.seeds)
        ]
        return [*tables, *(dataclasses.replace(defaults, url=url) for url in more_seeds)]

    def default_seed_scope(self) -> SeedScope:
        """The scope a seed with no table of its own takes (`url` empty), checked."""
        from trawl.frontier.scope_patterns import compile_patterns

        s = self.scope
        if s.off_scope_redirects not in OFF_SCOPE_REDIRECTS:
            raise ConfigError(
                f"scope.off_scope_redirects = {s.off_scope_redirects!r}: must be capture or drop"
            )
        compile_patterns(s.include, "scope.include")  # named here, not as the first seed's
        checked = _seed_scope(s, SeedSettings("http://example.invalid/"), "scope")
        return dataclasses.replace(checked, url="")


def _seed_scope(
    defaults: ScopeSettings, seed: SeedSettings, key: str, rules: NormaliseRules | None = None
) -> SeedScope:
    from trawl.errors import InvalidUrl
    from trawl.frontier.scope import MAX_DEPTH_LIMIT, MAX_EXTRA_HOPS, ScopeType, SeedScope
    from trawl.urls.normalise import normalise_url

    def pick(name: str) -> Any:
        own = getattr(seed, name)
        return getattr(defaults, name) if own is None else own

    kind = pick("type")
    if kind not in SCOPE_TYPES:
        raise ConfigError(
            f"{_source_of(seed, key, 'type')}.type = {kind!r}: one of {', '.join(SCOPE_TYPES)}"
        )
    for name, limit in (("max_depth", MAX_DEPTH_LIMIT), ("extra_hops", MAX_EXTRA_HOPS)):
        if not 0 <= pick(name) <= limit:
            raise ConfigError(
                f"{_source_of(seed, key, name)}.{name} = {pick(name)}: must be 0..{limit}"
            )
    if pick("max_pages") < 0:
        name = "max_pages"
        raise ConfigError(f"{_source_of(seed, key, name)}.{name} = {pick(name)}: must be >= 0")
    try:
        url = normalise_url(seed.url) if rules is None else normalise_url(seed.url, None, rules)
    except InvalidUrl as exc:
        raise ConfigError(f"{key}.url: {exc}") from None
    return SeedScope(
        url,
        ScopeType(kind),
        pick("include"),
        seed.exclude or (),
        pick("max_depth"),
        pick("extra_hops"),
        pick("max_pages"),
    )


def _source_of(seed: SeedSettings, key: str, name: str) -> str:
    """Which table a merged scope value came from: the seed's own, or [scope]."""
    return key if getattr(seed, name) is not None else "scope"


def _require_positive(name: str, value: float) -> None:
    if value <= 0:
        raise ConfigError(f"{name} = {value}: must be > 0")


def _check_render(r: RenderSettings) -> None:
    """The `[render]` keys; the rules' own checks are render.policy.RenderRules's."""
    if r.mode not in RENDER_MODES:
        raise ConfigError(f"render.mode = {r.mode!r}: must be auto or off")
    if any(c in r.chromium for c in "\x00\r\n"):
        raise ConfigError(f"render.chromium = {r.chromium!r}: not a file path")
    if not 0 < r.page_timeout_s < math.inf:
        raise ConfigError(f"render.page_timeout_s = {r.page_timeout_s}: must be > 0 and finite")
    if not 0 < r.cpu_share < math.inf:
        raise ConfigError(f"render.cpu_share = {r.cpu_share}: must be > 0 and finite")
    for name in ("concurrency", "recycle_after_pages", "max_browser_rss_mb", "max_queued"):
        _require_positive(f"render.{name}", getattr(r, name))
    for name in ("max_subrequests", "max_subresource_bytes"):
        if getattr(r, name) < 0:
            raise ConfigError(f"render.{name} = {getattr(r, name)}: must be >= 0")
    if r != RenderSettings():
        # The defaults are RenderRules's own; checking them would import RE2 for nothing
        # (see the scope check in `Settings.validate`).
        from trawl.render.policy import RenderRules

        try:
            RenderRules.from_settings(r)
        except ValueError as exc:
            raise ConfigError(f"render.{exc}") from None


def load_settings(path: Path | None) -> Settings:
    """Read a TOML config file (or defaults when path is None) into validated Settings."""
    if path is None:
        return Settings().validate()
    try:
        raw = tomllib.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ConfigError(f"{path}: config file not found") from None
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{path}: not valid TOML: {exc}") from None
    return settings_from_dict(raw, source=str(path)).validate()


def settings_from_dict(raw: dict[str, Any], *, source: str = "config") -> Settings:
    sections: dict[str, Any] = {}
    hints = get_type_hints(Settings)
    for key, value in raw.items():
        if key == "seeds":
            sections[key] = _build_seeds(value, source)
            continue
        if key not in hints:
            known = ", ".join(sorted(hints))
            raise ConfigError(f"{source}: unknown section [{key}] (known: {known})")
        if not isinstance(value, dict):
            raise ConfigError(f"{source}: [{key}] must be a table")
        sections[key] = _build_section(hints[key], value, f"{source}: [{key}]")
    return Settings(**sections)


def _build_seeds(tables: Any, source: str) -> tuple[SeedSettings, ...]:
    """`[[seeds]]` tables: each needs `url`; the others are [scope] keys (not redirects)."""
    if not isinstance(tables, list) or not all(isinstance(t, dict) for t in tables):
        raise ConfigError(f"{source}: seeds must be [[seeds]] tables")
    hints = get_type_hints(ScopeSettings)
    out: list[SeedSettings] = []
    for n, table in enumerate(tables):
        where = f"{source}: seeds[{n}]"
        if "url" not in table:
            raise ConfigError(f"{where}: missing key 'url'")
        known = {f.name for f in fields(SeedSettings)}
        kwargs: dict[str, Any] = {}
        for key, value in table.items():
            if key not in known:
                raise ConfigError(
                    f"{where} unknown key {key!r} (known: {', '.join(sorted(known))})"
                )
            kwargs[key] = _coerce(str if key == "url" else hints[key], value, f"{where}.{key}")
        out.append(SeedSettings(**kwargs))
    return tuple(out)


def _build_section(cls: type[Any], values: dict[str, Any], where: str) -> Any:
    hints = get_type_hints(cls)
    kwargs: dict[str, Any] = {}
    for key, value in values.items():
        if key not in hints:
            known = ", ".join(sorted(hints))
            raise ConfigError(f"{where} unknown key {key!r} (known: {known})")
        kwargs[key] = _coerce(hints[key], value, f"{where} {key}")
    return cls(**kwargs)


def _coerce(hint: Any, value: Any, where: str) -> Any:
    origin = get_origin(hint)
    if origin is tuple:
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise ConfigError(f"{where}: expected a list of strings, got {value!r}")
        return tuple(value)
    if hint is Duration:
        if isinstance(value, int | float) and not isinstance(value, bool) and value >= 0:
            return Duration(value)
        try:
            return Duration.parse(value) if isinstance(value, str) else Duration.parse(repr(value))
        except ValueError as exc:
            raise ConfigError(f"{where}: {exc}") from None
    if hint is bool:
        if not isinstance(value, bool):
            raise ConfigError(f"{where}: expected true or false, got {value!r}")
        return value
    if hint is float:
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise ConfigError(f"{where}: expected a number, got {value!r}")
        return float(value)
    if hint is int:
        if isinstance(value, bool) or not isinstance(value, int):
            raise ConfigError(f"{where}: expected an integer, got {value!r}")
        return value
    if hint is str:
        if not isinstance(value, str):
            raise ConfigError(f"{where}: expected a string, got {value!r}")
        return value
    if isinstance(hint, types.UnionType) or origin is not None:
        raise ConfigError(f"{where}: unsupported setting type {get_args(hint)}")
    raise ConfigError(f"{where}: unsupported setting type {hint!r}")


def with_overrides(settings: Settings, **sections: dict[str, Any]) -> Settings:
    """Return settings with some keys replaced (CLI flags beat the config file)."""
    updated: dict[str, Any] = {}
    for name, changes in sections.items():
        present = {k: v for k, v in changes.items() if v is not None}
        if present:
            updated[name] = dataclasses.replace(getattr(settings, name), **present)
    return dataclasses.replace(settings, **updated).validate()


def documented_keys() -> list[str]:
    """Every `section.key` name, for the docs test."""
    out: list[str] = []
    for section in fields(Settings):
        cls = SeedSettings if section.name == "seeds" else get_type_hints(Settings)[section.name]
        out.extend(f"{section.name}.{f.name}" for f in fields(cls))
    return out

"""A robots.txt file read as RFC 9309 says: its groups, and which one binds a product token.

How this works: `RobotsTxt.parse(text)` splits the file into records (`key: value` lines,
comments dropped), gathers them into groups, and keeps the Sitemap lines. `group_for(token)`
picks the rules a crawler with that product token obeys and caches them as a `RuleGroup`,
whose `is_allowed(url)` is the per-URL check. Pure: no I/O, no clock.

Rules (section numbers are RFC 9309's):
- Lines end at CR, LF or CRLF (2.2). A `#` starts a comment (2.2.3). Keys are
  case-insensitive (2.1). Values are trimmed.
- A group is one or more user-agent lines followed by rules; the next user-agent line
  *after a rule* starts a new group, so consecutive user-agent lines share their rules,
  and blank lines do not end a group (2.1). Rules before the first user-agent line belong
  to no group and are ignored. Lines that are not user-agent, allow or disallow ("other
  records", 2.2.4: Sitemap, Crawl-delay, unknown keys) never end a group.
- The product token of a user-agent line is its value up to the first character that is
  not a letter, `_` or `-` (2.2.1 allows only those in a product token), so
  `User-agent: trawl/1.0` and `User-agent: trawl bot` name `trawl`, as in Google's parser.
  A group applies to trawl only when that token *equals* `trawl`, case-insensitively
  (2.2.1): `trawlbot`, `mytrawl`, `trawl-extra` and `traw` do not. `*` (alone, or followed
  by whitespace) is the fallback group. A token of no valid characters matches nothing.
- Every group naming the token is merged into one (2.2.1); with none, every `*` group is
  merged; with no `*` group either, nothing is disallowed.
- Allow/Disallow (2.2.2): the longest matching pattern (in octets, after the encoding
  below) wins; an allow and a disallow of equal length: allow wins. An empty value is no
  rule. `*` matches any run of characters; `$` at the end anchors at the URL's end (2.2.3).
  Patterns match the URL's path, params and query (no fragment), case-sensitively.
- Before comparing, both pattern and URL are put in one spelling (2.2.2): escapes of
  unreserved characters (letters, digits, `-._~`) are decoded, other escapes get
  upper-case hex, and non-ASCII characters (UTF-8), spaces and ASCII characters a URI
  cannot hold raw are percent-encoded. Reserved characters stay as written.
- Extensions trawl also reads (not in RFC 9309): Crawl-delay and Request-rate of the
  chosen groups (the largest delay wins), Sitemap lines anywhere in the file; and, like
  Google's parser (and protego before it), a missing colon (`Disallow /x`) and the
  frequent misspellings of user-agent and disallow. Each leniency can only make trawl obey
  a rule the site plainly meant; RFC 9309 never obliges a crawler to fetch anything.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field

# Keys as Google's parser accepts them (robots.cc KeyIs*): misspellings seen in the wild.
_USER_AGENT_KEYS = frozenset({"user-agent", "useragent", "user agent"})
_DISALLOW_KEYS = frozenset({"disallow", "dissallow", "dissalow", "disalow", "diasllow", "disallaw"})
_ALLOW_KEYS = frozenset({"allow"})
_SITEMAP_KEYS = frozenset({"sitemap", "site-map"})
_CRAWL_DELAY_KEYS = frozenset({"crawl-delay"})
_REQUEST_RATE_KEYS = frozenset({"request-rate"})
_KNOWN_KEYS = (
    _USER_AGENT_KEYS
    | _DISALLOW_KEYS
    | _ALLOW_KEYS
    | _SITEMAP_KEYS
    | _CRAWL_DELAY_KEYS
    | _REQUEST_RATE_KEYS
)

USER_AGENT = "user-agent"
ALLOW = "allow"
DISALLOW = "disallow"
SITEMAP = "sitemap"
CRAWL_DELAY = "crawl-delay"
REQUEST_RATE = "request-rate"

_LINE_BREAKS = re.compile(r"\r\n|\r|\n")
_TOKEN = re.compile(r"[A-Za-z_-]*")
_UNRESERVED = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~")
_HEX = frozenset("0123456789abcdefABCDEF")
# ASCII that a URI holds as it is: unreserved, reserved (RFC 3986 2.2) and "%".
_URI_ASCII = _UNRESERVED | frozenset(":/?#[]@!$&'()*+,;=%")
# A string of only these needs no re-spelling (the common case, checked by one regex).
_PLAIN = re.compile(r"[A-Za-z0-9\-._~:/?\[\]@!$&'()*+,;=]*")
_RATE_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400}
_RATE = re.compile(r"([0-9]{1,9})/([0-9]{1,9})([smhdSMHD]?)(?:\s|$)")


def product_token(value: str) -> str:
    """The product token a user-agent value names: its leading run of letters, `_` and
    `-` (RFC 9309 2.2.1), lower-cased; "" when it starts with anything else."""
    match = _TOKEN.match(value)
    return match.group().lower() if match else ""


def is_valid_product_token(value: str) -> bool:
    """True for a non-empty value made only of letters, `_` and `-` (RFC 9309 2.2.1)."""
    return bool(value) and _TOKEN.fullmatch(value) is not None


def canonical(text: str) -> str:
    """`text` (a URL path or a rule pattern) in the one spelling rules are compared in.

    See the module rules: unreserved escapes decoded, other escapes upper-cased, raw
    non-ASCII and URI-illegal ASCII percent-encoded; `*` and `$` are kept as they are.
    """
    if _PLAIN.fullmatch(text):
        return text
    out: list[str] = []
    i, n = 0, len(text)
    while i < n:
        char = text[i]
        if char == "%" and i + 2 < n and text[i + 1] in _HEX and text[i + 2] in _HEX:
            decoded = chr(int(text[i + 1 : i + 3], 16))
            out.append(decoded if decoded in _UNRESERVED else "%" + text[i + 1 : i + 3].upper())
            i += 3
            continue
        if char in _URI_ASCII:
            out.append(char)
        else:
            out.extend(f"%{byte:02X}" for byte in char.encode("utf-8", "surrogatepass"))
        i += 1
    return "".join(out)


def path_of(url: str) -> str:
    """The path, params and query of `url`, without fragment; always starts with "/".

    Accepts an absolute URL, a scheme-less one ("example.com/a") or a bare path, as
    Google's GetPathParamsQuery does; "/" when there is no path.
    """
    start = 2 if url.startswith("//") else 0
    authority = url.find("://", start)
    early = _find_any(url, "/?;", start)
    if authority < 0 or (early >= 0 and early < authority):
        authority = start
    else:
        authority += 3
    path_start = _find_any(url, "/?;", authority)
    if path_start < 0:
        return "/"
    hash_at = url.find("#", start)
    if 0 <= hash_at < path_start:
        return "/"
    path = url[path_start : hash_at if hash_at >= 0 else len(url)]
    return path if path.startswith("/") else "/" + path


def _find_any(text: str, chars: str, start: int) -> int:
    found = [i for c in chars if (i := text.find(c, start)) >= 0]
    return min(found) if found else -1


@dataclass(frozen=True, slots=True)
class Record:
    """One `key: value` line; `key` is the canonical key name, or the lower-cased key as
    written for a key trawl does not know."""

    line: int  # 1-based
    key: str
    value: str


def parse_records(text: str) -> list[Record]:
    """Every `key: value` line of `text`, in order (comments, blank and unreadable lines
    left out). A UTF-8 byte order mark at the start is skipped."""
    text = text.removeprefix("\ufeff")
    out: list[Record] = []
    for number, raw in enumerate(_LINE_BREAKS.split(text), start=1):
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        record = _record(number, line)
        if record is not None:
            out.append(record)
    return out


def _record(number: int, line: str) -> Record | None:
    key, colon, value = line.partition(":")
    if not colon:
        # Google's leniency: "Disallow /x" is read as "Disallow: /x", but only for
        # exactly two words (three could be "user agent foo" or prose).
        words = line.split()
        if len(words) == 2 and words[0].lower() in _KNOWN_KEYS:
            key, value = words
        elif len(words) == 3 and f"{words[0]} {words[1]}".lower() in _KNOWN_KEYS:
            key, value = f"{words[0]} {words[1]}", words[2]
        else:
            return None
    key = " ".join(key.split()).lower()
    if not key:
        return None
    return Record(number, _canonical_key(key), value.strip())


def _canonical_key(key: str) -> str:
    if key in _USER_AGENT_KEYS:
        return USER_AGENT
    if key in _DISALLOW_KEYS:
        return DISALLOW
    if key in _SITEMAP_KEYS:
        return SITEMAP
    return key  # allow, crawl-delay, request-rate, or unknown


@dataclass(frozen=True, slots=True)
class Rule:
    """One Allow or Disallow pattern, in canonical spelling."""

    allow: bool
    pattern: str
    # Literal parts between `*`s, and whether the pattern ends with the `$` anchor.
    parts: tuple[str, ...] = field(init=False, repr=False)
    anchored: bool = field(init=False, repr=False)

    def __post_init__(self) -> None:
        body = self.pattern
        anchored = body.endswith("$")
        if anchored:
            body = body[:-1]
        object.__setattr__(self, "anchored", anchored)
        object.__setattr__(self, "parts", tuple(body.split("*")))

    @property
    def is_plain(self) -> bool:
        """A prefix match only: no `*`, no `$` anchor."""
        return len(self.parts) == 1 and not self.anchored

    def matches(self, path: str) -> bool:
        """Does the pattern match canonical `path`? Linear time: each literal part is
        placed leftmost, which finds a match whenever one exists."""
        parts = self.parts
        first = parts[0]
        if len(parts) == 1:
            return path == first if self.anchored else path.startswith(first)
        if not path.startswith(first):
            return False
        at = len(first)
        for part in parts[1:-1]:
            found = path.find(part, at)
            if found < 0:
                return False
            at = found + len(part)
        last = parts[-1]
        if self.anchored:
            return len(path) - len(last) >= at and path.endswith(last)
        return path.find(last, at) >= 0


@dataclass(frozen=True, slots=True)
class RuleGroup:
    """The rules one crawler obeys (its merged groups, or `*`'s), ready for matching."""

    rules: tuple[Rule, ...]  # longest pattern first; allow before disallow at equal length
    crawl_delay_s: float | None = None
    request_rate: tuple[int, int] | None = None  # (requests, seconds)
    _plain: tuple[str, ...] = field(init=False, repr=False)
    _special: tuple[Rule, ...] = field(init=False, repr=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "_plain", tuple(r.pattern for r in self.rules if r.is_plain))
        object.__setattr__(self, "_special", tuple(r for r in self.rules if not r.is_plain))

    def is_allowed(self, url: str) -> bool:
        """May `url` (absolute, or a path) be fetched under these rules?"""
        if not self.rules:
            return True
        path = canonical(path_of(url))
        # One C-level startswith rules out every plain pattern at once (most URLs).
        candidates = self.rules if path.startswith(self._plain) else self._special
        for rule in candidates:
            if rule.matches(path):
                return rule.allow
        return True


_NO_RULES = RuleGroup(())


@dataclass(slots=True)
class _Group:
    tokens: list[str] = field(default_factory=list)  # product tokens, "*" for the fallback
    rules: list[Rule] = field(default_factory=list)
    crawl_delays: list[float] = field(default_factory=list)
    rates: list[tuple[int, int]] = field(default_factory=list)


class RobotsTxt:
    """A parsed robots.txt. `group_for` results are cached: one object per file's text,
    read by one event loop thread."""

    __slots__ = ("_cache", "_groups", "sitemaps")

    def __init__(self, groups: list[_Group], sitemaps: tuple[str, ...]) -> None:
        self._groups = groups
        self._cache: dict[str, RuleGroup] = {}
        self.sitemaps = sitemaps  # URLs as written, in file order (2.2.4)

    def __repr__(self) -> str:
        return f"<RobotsTxt groups={len(self._groups)} sitemaps={len(self.sitemaps)}>"

    @classmethod
    def parse(cls, text: str) -> RobotsTxt:
        groups: list[_Group] = []
        current: _Group | None = None
        sitemaps: list[str] = []
        in_agents = False  # the previous group line was a user-agent line
        for record in parse_records(text):
            key, value = record.key, record.value
            if key == USER_AGENT:
                if current is None or not in_agents:
                    current = _Group()
                    groups.append(current)
                current.tokens.append(_agent_token(value))
                in_agents = True
            elif key in (ALLOW, DISALLOW):
                in_agents = False
                if current is not None and value:
                    current.rules.append(Rule(key == ALLOW, canonical(value)))
            elif key == SITEMAP:
                if value:
                    sitemaps.append(value)
            elif key == CRAWL_DELAY and current is not None:
                delay = _delay(value)
                if delay is not None:
                    current.crawl_delays.append(delay)
            elif key == REQUEST_RATE and current is not None:
                rate = _rate(value)
                if rate is not None:
                    current.rates.append(rate)
        return cls(groups, tuple(sitemaps))

    def group_for(self, agent_token: str) -> RuleGroup:
        """The rules `agent_token` obeys: every group naming it, merged; else every `*`
        group, merged; else none (RFC 9309 2.2.1)."""
        wanted = agent_token.lower()
        cached = self._cache.get(wanted)
        if cached is None:
            chosen = [g for g in self._groups if wanted and wanted in g.tokens]
            if not chosen:
                chosen = [g for g in self._groups if "*" in g.tokens]
            cached = self._cache[wanted] = _merged(chosen)
        return cached

    def is_allowed(self, url: str, agent_token: str) -> bool:
        return self.group_for(agent_token).is_allowed(url)


def _agent_token(value: str) -> str:
    # Google's reading: "*" followed by whitespace and more is still the fallback.
    if value == "*" or (value.startswith("*") and value[1:2].isspace()):
        return "*"
    return product_token(value)


def _merged(groups: list[_Group]) -> RuleGroup:
    if not groups:
        return _NO_RULES
    rules = sorted(
        (rule for g in groups for rule in g.rules),
        key=lambda r: (-len(r.pattern), not r.allow),
    )
    delays = [d for g in groups for d in g.crawl_delays]
    rates = [r for g in groups for r in g.rates]
    return RuleGroup(
        tuple(rules),
        max(delays) if delays else None,
        max(rates, key=lambda r: r[1] / r[0]) if rates else None,
    )


def _delay(value: str) -> float | None:
    try:
        delay = float(value)
    except ValueError:
        return None
    return delay if math.isfinite(delay) and delay >= 0.0 else None


def _rate(value: str) -> tuple[int, int] | None:
    """ "1/10", "1/10s", "3/2m" (an optional time window after it is ignored)."""
    match = _RATE.match(value)
    if match is None:
        return None
    count = int(match[1])
    seconds = int(match[2]) * _RATE_UNITS[(match[3] or "s").lower()]
    return (count, seconds) if count > 0 and seconds > 0 else None

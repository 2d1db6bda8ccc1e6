"""robots.txt state for one origin (scheme, host, port), per RFC 9309.

How this works: the async shell fetches `robots_url(origin)`, following redirects as
`robots_redirect_target` decides, and hands the final status and body to
`robots_from_response`, which returns a frozen `RobotsRules`. The shell asks
`rules.is_allowed(url, "trawl")` before handing out each URL of that origin and refetches
once `rules.is_fresh(now)` turns False. Parsing, group choice and matching are
`politeness.robots_txt`'s (RFC 9309 2.2, checked against Google's parser's tests).

Rules (section numbers are RFC 9309's):
- 2xx: the body is parsed, at most `max_bytes` of it (2.5: parse at least 500 KiB).
- 3xx: followed up to 5 hops, to other hosts and sites too (2.3.1.2); the final answer's
  rules (and Crawl-delay and Sitemaps) are the original origin's. The shell decides how
  a hop to another site is made politely (`robots_hop`).
- 3xx left after the redirect limit: "unavailable", crawl everything (2.3.1.2).
- 4xx except 429: "unavailable", crawl everything (2.3.1.3).
- 429, 5xx, timeout, connection error: "unreachable", crawl nothing (2.3.1.4) and
  retry robots.txt with an exponential backoff. 429 is a 4xx, but it says "slow down",
  not "no file here": reading it as allow-all would answer a throttle with a full crawl,
  so we treat it as unreachable (stricter than 2.3.1.3; Google does the same).
- Any other status (1xx, >= 600): unreachable too; the RFC does not cover it, and
  crawling nothing is the side that cannot be impolite.
- Cached for `cache_s` (2.4: SHOULD NOT use a cached copy for more than 24 hours).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from enum import Enum
from urllib.parse import urljoin, urlsplit, urlunsplit

from trawl.errors import DataError
from trawl.politeness.robots_txt import RobotsTxt, RuleGroup, path_of

DEFAULT_CACHE_S = 86_400.0
DEFAULT_MAX_BYTES = 512_000  # 500 KiB, the minimum RFC 9309 2.5 asks parsers to read
MAX_REDIRECT_HOPS = 5  # RFC 9309 2.3.1.2: follow at least five consecutive redirects
# A Crawl-delay beyond one robots lifetime means "hardly ever"; capping it keeps a hostile
# value such as 1e308 from overflowing schedules while still being very slow.
MAX_CRAWL_DELAY_S = 86_400.0
_REDIRECT_STATUSES = frozenset({301, 302, 303, 307, 308})
_DEFAULT_PORTS = {"http": 80, "https": 443}


class RobotsStatus(Enum):
    """What the last robots.txt fetch of an origin told us."""

    RULES = "rules"  # 2xx: follow the parsed rules (2.3.1.1)
    ALLOW_ALL = "allow_all"  # unavailable (4xx but 429, too many redirects): no rules
    UNREACHABLE = "unreachable"  # 429, 5xx, network error: crawl nothing until retry_at


@dataclass(frozen=True, slots=True)
class _Read:
    """What one product token needs of a parsed file: the rules it obeys and the file's
    Sitemap lines. The other crawlers' groups are not kept: a 23 KB file of 31 groups held
    ~216 KB parsed, its `*` group ~10 KB, and every site in memory holds its rules."""

    token: str
    group: RuleGroup
    sitemaps: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class RobotsRules:
    """The robots.txt decision for one origin, valid until `expires_at`.

    `text` is the robots body actually parsed (already capped); it is empty unless
    `status` is RULES. `retry_at` is set only when UNREACHABLE, and `failures` counts
    consecutive unreachable fetches (0 after any answer).
    """

    origin: str
    status: RobotsStatus
    fetched_at: float
    expires_at: float
    text: str = field(default="", repr=False)  # up to 500 KiB: kept out of logs
    retry_at: float | None = None
    failures: int = 0
    # Parsed lazily on first use, for one product token; a cache, so not part of equality,
    # hash or repr.
    _read: _Read | None = field(default=None, init=False, compare=False, repr=False)

    def _for(self, agent_token: str) -> _Read:
        read = self._read
        if read is None or read.token != agent_token:
            parsed = RobotsTxt.parse(self.text)
            read = _Read(agent_token, parsed.group_for(agent_token), parsed.sitemaps)
            # Frozen dataclass: the cache is the one field we fill after construction.
            object.__setattr__(self, "_read", read)
        return read

    def prepare(self, agent_token: str) -> RobotsRules:
        """Parse now and return self; run it in an executor, since a hostile 500 KiB file
        takes a few hundred ms to parse, which would stall the event loop on first use."""
        if self.status is RobotsStatus.RULES:
            self._for(agent_token)
        return self

    def is_prepared(self, agent_token: str) -> bool:
        """Is nothing left to parse before `agent_token`'s questions are answered?"""
        read = self._read
        return self.status is not RobotsStatus.RULES or (
            read is not None and read.token == agent_token
        )

    def is_allowed(self, url: str, agent_token: str) -> bool:
        """May `agent_token` (the product token, e.g. "trawl") fetch `url` of this origin?

        The caller passes URLs of this origin only; the rules are not checked against it.
        """
        if self.status is RobotsStatus.UNREACHABLE:
            return False
        if self.status is RobotsStatus.ALLOW_ALL:
            return True
        # RFC 9309 2.2.2: /robots.txt itself is implicitly allowed.
        if path_of(url) == "/robots.txt":
            return True
        # RFC 9309 2.2.1: the groups naming our product token, else `*` (robots_txt).
        return self._for(agent_token).group.is_allowed(url)

    def crawl_delay(self, agent_token: str) -> float | None:
        """Seconds between requests asked by Crawl-delay (or Request-rate), or None.

        Both are extensions outside RFC 9309; the larger of the two wins. Non-finite or
        negative values are ignored; the result is capped at MAX_CRAWL_DELAY_S.
        """
        if self.status is not RobotsStatus.RULES:
            return None
        group = self._for(agent_token).group
        delays: list[float] = []
        if group.crawl_delay_s is not None:
            delays.append(group.crawl_delay_s)
        if group.request_rate is not None:
            requests, seconds = group.request_rate
            delays.append(seconds / requests)
        sane = [d for d in delays if math.isfinite(d) and d >= 0.0]
        if not sane:
            return None
        return min(max(sane), MAX_CRAWL_DELAY_S)

    def sitemaps(self) -> list[str]:
        """Sitemap URLs listed in the file, as written (RFC 9309 2.2.4)."""
        if self.status is not RobotsStatus.RULES:
            return []
        read = self._read
        return list(read.sitemaps if read is not None else RobotsTxt.parse(self.text).sitemaps)

    def is_fresh(self, now: float) -> bool:
        """True until `expires_at`; after that the shell should fetch robots.txt again."""
        return now < self.expires_at

    def to_json(self) -> dict[str, object]:
        """The host record's `robotsRules` value (camelCase, JSON-safe)."""
        return {
            "origin": self.origin,
            "status": self.status.value,
            "fetchedAt": self.fetched_at,
            "expiresAt": self.expires_at,
            "text": self.text,
            "retryAt": self.retry_at,
            "failures": self.failures,
        }

    @classmethod
    def from_json(cls, data: dict[str, object]) -> RobotsRules:
        """Inverse of `to_json`; raises DataError naming the bad field."""
        try:
            status = RobotsStatus(data["status"])
            retry_at = data.get("retryAt")
            failures = data.get("failures", 0)
            text = data.get("text", "")
            if not isinstance(failures, int) or isinstance(failures, bool):
                raise TypeError(f"failures {failures!r}")
            if not isinstance(text, str):
                raise TypeError(f"text {type(text).__name__}")
            return cls(
                origin=_as_str(data["origin"]),
                status=status,
                fetched_at=_as_float(data["fetchedAt"]),
                expires_at=_as_float(data["expiresAt"]),
                text=text,
                retry_at=None if retry_at is None else _as_float(retry_at),
                failures=failures,
            )
        except (KeyError, TypeError, ValueError) as exc:
            raise DataError(f"robotsRules record is damaged: {exc!s}") from exc


def _as_float(value: object) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise TypeError(f"expected a number, got {value!r}")
    return float(value)


def _as_str(value: object) -> str:
    if not isinstance(value, str):
        raise TypeError(f"expected a string, got {value!r}")
    return value


def robots_url(origin: str) -> str:
    """The robots.txt URL of an origin such as "https://example.com:8443" (RFC 9309 2.3)."""
    return origin.rstrip("/") + "/robots.txt"


def robots_redirect_target(
    origin_url: str, status: int, location: str | None, hops: int, max_hops: int = MAX_REDIRECT_HOPS
) -> str | None:
    """The absolute URL to fetch next for robots.txt, or None to stop following.

    `origin_url` is the URL that answered with `status` (the robots URL on the first hop);
    `hops` counts redirects already followed. Redirects may cross authorities
    (RFC 9309 2.3.1.2); the shell must still apply its SSRF guard to the target.
    When this returns None for a 3xx, pass that 3xx to `robots_from_response`.
    """
    if status not in _REDIRECT_STATUSES or location is None or hops >= max_hops:
        return None
    location = location.strip()
    if not location:
        return None
    try:
        target = urlsplit(urljoin(origin_url, location))
    except ValueError:  # e.g. a malformed IPv6 literal in Location
        return None
    if target.scheme not in _DEFAULT_PORTS or not target.netloc:
        return None
    return urlunsplit(target._replace(fragment=""))


class HopAction(Enum):
    """What to do with a robots.txt redirect to another site (RFC 9309 2.3.1.2)."""

    FOLLOW = "follow"  # the target site is held: wait for its clock, then ask it
    RETRY_NEXT_TURN = "retry_next_turn"  # leave the origin's rules as they are; ask again
    UNREACHABLE = "unreachable"  # record the origin's robots.txt as unreachable (2.3.1.4)


@dataclass(frozen=True, slots=True)
class RobotsHop:
    action: HopAction
    # RETRY_NEXT_TURN: the origin's next turn comes no earlier (None: its own gap decides).
    not_before: float | None = None


def robots_hop(
    *, may_fetch: bool, held: bool, paused: bool, ready_at: float, gap_s: float, now: float
) -> RobotsHop:
    """Whether a robots.txt redirect to another site is followed in this turn.

    A request to another site keeps *that* site's politeness: the shell first asks
    `may_fetch` (cluster mode: the site's partition is this machine's), then tries to
    hold it as a turn would (`held`: no turn of its own is running), then reads its
    clock: `ready_at` (its next allowed start) and `gap_s` (its normal gap).

    - Not ours to fetch (another machine's partition), or paused by the operator: the
      origin's robots.txt is unreachable for now and is retried with the usual robots
      backoff. Waiting turn after turn could last as long as the cause, with a request
      to the origin's robots.txt each time; 2.3.1.4 lets an unreachable file mean
      "crawl nothing" meanwhile.
    - Held by a running turn, or its clock more than one normal gap away (it is backing
      off or has a Retry-After): give up this turn, rules unchanged, and ask again at the
      origin's next turn, which comes no sooner than the target's clock allows.
    - Otherwise hold it and wait at most one gap for its clock, as its own turn would.
    """
    if not may_fetch or (held and paused):
        return RobotsHop(HopAction.UNREACHABLE)
    if not held:
        return RobotsHop(HopAction.RETRY_NEXT_TURN)
    if ready_at - now > gap_s:
        return RobotsHop(HopAction.RETRY_NEXT_TURN, not_before=ready_at)
    return RobotsHop(HopAction.FOLLOW)


def robots_from_response(
    origin: str,
    status: int | None,
    body: bytes | None,
    now: float,
    *,
    previous_failures: int = 0,
    cache_s: float = DEFAULT_CACHE_S,
    retry_base_s: float = 60.0,
    retry_max_s: float = 3600.0,
    max_bytes: int = DEFAULT_MAX_BYTES,
) -> RobotsRules:
    """Turn the final answer to a robots.txt fetch into rules for `origin`.

    `status` None means no HTTP answer (timeout, connection or DNS error).
    `previous_failures` is the `failures` of the rules this replaces; an unreachable
    answer waits `retry_base_s * 2**previous_failures`, capped at `retry_max_s`.
    """
    if status is not None and 200 <= status < 300:
        # 2.3.1.1: successful access, follow the parseable rules.
        return RobotsRules(
            origin=origin,
            status=RobotsStatus.RULES,
            fetched_at=now,
            expires_at=now + cache_s,
            text=_decode_capped(body or b"", max_bytes),
        )
    if status is not None and (300 <= status < 400 or (400 <= status < 500 and status != 429)):
        # 2.3.1.2: more than five redirects MAY be read as unavailable; 2.3.1.3: on
        # "unavailable" (4xx) the crawler MAY access any resource.
        return RobotsRules(
            origin=origin, status=RobotsStatus.ALLOW_ALL, fetched_at=now, expires_at=now + cache_s
        )
    # 2.3.1.4: unreachable (5xx, network error; 429 and odd statuses, see module doc):
    # MUST assume complete disallow. We retry sooner than the cache lifetime so a short
    # outage does not stop the site for a day.
    exponent = min(previous_failures, 64)  # 2.0**64 dwarfs any cap; avoids OverflowError
    wait_s = min(retry_max_s, retry_base_s * 2.0**exponent)
    return RobotsRules(
        origin=origin,
        status=RobotsStatus.UNREACHABLE,
        fetched_at=now,
        expires_at=now + wait_s,
        retry_at=now + wait_s,
        failures=previous_failures + 1,
    )


def _decode_capped(body: bytes, max_bytes: int) -> str:
    """UTF-8 text of at most `max_bytes` of `body` (RFC 9309 2.2: robots.txt is UTF-8).

    When the body is cut, the last partial line is dropped too: a cut "Allow: /a/b" would
    read as "Allow: /a", allowing more than the site said.
    """
    # A byte order mark, whole or cut short, is no part of line one (Google's parser
    # skips partial ones too; utf-8-sig below only knows the whole one).
    for bom in (b"\xef\xbb\xbf", b"\xef\xbb", b"\xef"):
        if body.startswith(bom):
            body = body[len(bom) :]
            break
    if len(body) > max_bytes:
        body = body[:max_bytes]
        cut = max(body.rfind(b"\n"), body.rfind(b"\r"))
        body = body[: cut + 1] if cut >= 0 else b""
    return body.decode("utf-8", errors="replace")

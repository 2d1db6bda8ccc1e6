"""One site's politeness clock: when may the next request to this registered domain start?

How this works: the shell asks `is_ready(now)`, calls `start(now)` just before sending a
request and `finish(now, ...)` when the exchange ends. `finish` moves `next_allowed_at`
forward; the gap is measured from the end of the previous request, so request starts are
always at least that far apart.

Rules (the hard politeness rule lives here):
- One request in flight per site; `start` on a clock that is not ready raises, since
  that is a bug in the caller, never a web condition.
- Normal gap = max(min_delay_s, robots Crawl-delay, slow_factor x last response time),
  where an operator override (politeness.site_limits) takes min_delay_s's place but never
  goes under the hard floor of 1 s (or a test configuration's lower min_delay_s).
- THROTTLED (429/503), SERVER_ERROR (other 5xx) and NETWORK_ERROR widen the gap
  exponentially: min(backoff_max_s, gap x backoff_factor**failures), never below the
  normal gap. A Retry-After is obeyed exactly (RFC 9110 10.2.3). Any OK answer resets.
- URL_ERROR (an answer this URL will give every time: oversized or too many headers, a
  malformed status line, a body over the cap) says nothing about the site's load: the gap
  stays what it was (the normal gap, or the current backoff, not widened; issue 13).
- ORIGIN_ERROR (one origin of the site refused or did not resolve while another answers,
  see politeness.origin_health) takes one backoff step, never more: the failing origin
  backs off on its own, the site's other origins keep their pace.
- After `park_after_failures` failures in a row the site is parked for `park_s`; one
  probe follows, and each further failure parks it again.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from enum import Enum

from trawl.errors import ConfigError, DataError

_EWMA_WEIGHT = 0.2  # weight of the newest sample in avg_response_ms
_MAX_EXPONENT = 64  # backoff_factor**64 exceeds any sane cap; keeps floats finite


class FetchOutcome(Enum):
    """How an exchange went, as far as the site's clock cares."""

    OK = "ok"  # any normal HTTP answer, including 3xx and 4xx
    THROTTLED = "throttled"  # 429 or 503: the site asks us to slow down
    SERVER_ERROR = "server_error"  # other 5xx
    NETWORK_ERROR = "network_error"  # timeout, reset, DNS or connect failure
    URL_ERROR = "url_error"  # the site answered; this URL's answer is unusable, every time
    ORIGIN_ERROR = "origin_error"  # one origin failed while another origin of the site answers


# Error kinds (fetch.fetcher) that a URL repeats deterministically and that say nothing about
# the site's load: "protocol" (status line or headers unparsable, oversized or too many
# headers, bad chunk framing), "too_big" and "decode" (the body), "invalid_url",
# "blocked_address" (an address we refuse). Recorded at once, never retried, no backoff.
DETERMINISTIC_ERRORS = frozenset(
    {"protocol", "too_big", "decode", "invalid_url", "blocked_address"}
)


def classify_result(status: int, error_kind: str | None) -> FetchOutcome:
    """Sort one exchange for the clock: a deterministic error is the URL's, not the site's;
    any other failure without an HTTP answer is a NETWORK_ERROR; else `classify_status`."""
    if error_kind in DETERMINISTIC_ERRORS:
        return FetchOutcome.URL_ERROR
    return classify_status(0 if error_kind else status)


def classify_status(status: int | None) -> FetchOutcome:
    """Sort an HTTP status for the clock; None or 0 (no answer) is a NETWORK_ERROR.

    Statuses >= 600 are non-standard block signals (e.g. 999) and count as THROTTLED.
    """
    if status is None or status <= 0:
        return FetchOutcome.NETWORK_ERROR
    if status in (429, 503) or status >= 600:
        return FetchOutcome.THROTTLED
    if 500 <= status < 600:
        return FetchOutcome.SERVER_ERROR
    return FetchOutcome.OK


@dataclass(frozen=True, slots=True)
class ClockPolicy:
    """Tunable politeness numbers, shared by all site clocks.

    The defaults are the crawler's hard rule; config may raise them, and should only
    lower `min_delay_s` for tests against our own servers.

    min_delay_s: smallest gap between requests to one site (1 s).
    slow_factor: gap is at least this times the last response time (10x).
    backoff_factor: gap multiplier per consecutive failure (2x: doubling).
    backoff_max_s: cap on the backoff gap (1 h); Crawl-delay and Retry-After may exceed it.
    park_after_failures: consecutive failures before the site is parked (20).
    park_s: how long a parked site rests before one probe (6 h).
    """

    min_delay_s: float = 1.0
    slow_factor: float = 10.0
    backoff_factor: float = 2.0
    backoff_max_s: float = 3600.0
    park_after_failures: int = 20
    park_s: float = 6 * 3600.0

    def __post_init__(self) -> None:
        checks = (
            ("min_delay_s", self.min_delay_s, self.min_delay_s > 0.0),
            ("slow_factor", self.slow_factor, self.slow_factor >= 0.0),
            ("backoff_factor", self.backoff_factor, 1.0 <= self.backoff_factor <= 10.0),
            ("backoff_max_s", self.backoff_max_s, self.backoff_max_s >= self.min_delay_s),
            ("park_after_failures", self.park_after_failures, self.park_after_failures >= 1),
            ("park_s", self.park_s, self.park_s >= 0.0),
        )
        for name, value, ok in checks:
            if not ok or not math.isfinite(value):
                raise ConfigError(f"politeness {name} = {value!r} is out of range")


DEFAULT_POLICY = ClockPolicy()


@dataclass(frozen=True, slots=True)
class SiteClockStats:
    """A snapshot of one site's clock for the API and the progress line."""

    next_allowed_at: float
    in_flight: bool
    crawl_delay_s: float | None
    avg_response_ms: float
    consecutive_failures: int
    error_count: int
    parked_until: float | None


def is_parked(parked_until: float | None, now: float) -> bool:
    """Is a site parked at `now`, by its clock's (or a stats copy's) `parked_until`?"""
    return parked_until is not None and now < parked_until


# Mutable: each SiteClock is owned by the one shell task that holds its site (the site's
# owning machine); it alone writes, and it reads the clock only between its own awaits.
# The API's thread reads it too, field by field, and never writes (api.crawl_view).
@dataclass(slots=True)
class SiteClock:
    """The politeness clock of one registered domain."""

    next_allowed_at: float = 0.0
    in_flight: bool = False
    crawl_delay_s: float | None = None  # from robots.txt, set by the shell
    last_response_s: float | None = None
    avg_response_ms: float = 0.0  # EWMA of response times, for the host record
    consecutive_failures: int = 0
    error_count: int = 0  # failures ever, for the host record's errorCount
    override_delay_s: float | None = None  # operator's per-site gap (site_limits)
    parked_until: float | None = None
    last_finished_at: float | None = None  # end of the last exchange: a new gap's origin

    def is_ready(self, now: float) -> bool:
        """May a request to this site start at `now`?"""
        if self.in_flight or now < self.next_allowed_at:
            return False
        return not is_parked(self.parked_until, now)

    def start(self, now: float) -> None:
        """Mark a request as started; raises RuntimeError if the clock is not ready."""
        if not self.is_ready(now):
            raise RuntimeError(f"politeness violated: request started at {now!r} on {self!r}")
        self.in_flight = True

    def hold_until(self, at: float) -> None:
        """No request before `at` (a rest, a robots.txt retry, a restart gap); never sooner
        than the clock already said."""
        self.next_allowed_at = max(self.next_allowed_at, at)

    def gap_s(self, policy: ClockPolicy) -> float:
        """The normal gap between requests, before any backoff."""
        base = policy.min_delay_s
        if self.override_delay_s is not None:
            base = max(self.override_delay_s, min(1.0, policy.min_delay_s))
        return max(
            base,
            self.crawl_delay_s or 0.0,
            policy.slow_factor * (self.last_response_s or 0.0),
        )

    def regap(self, policy: ClockPolicy, restarted_at: float | None = None) -> None:
        """Apply a changed gap (an operator override) to the very next request.

        A longer gap moves `next_allowed_at` out at once. A shorter one shortens the current
        wait only when nothing else set it (a backoff, a park): then the wait was exactly
        the old gap from the last exchange's end, and becomes the new one.
        """
        if self.last_finished_at is None:
            return
        gap = self.gap_s(policy)
        earliest = self.last_finished_at + gap
        if restarted_at is not None:  # a request may have followed the last checkpoint
            earliest = max(earliest, restarted_at + gap)
        if self.consecutive_failures == 0 and self.parked_until is None:
            self.next_allowed_at = earliest
        else:
            self.next_allowed_at = max(self.next_allowed_at, earliest)

    def finish(
        self,
        now: float,
        response_s: float,
        outcome: FetchOutcome,
        *,
        policy: ClockPolicy,
        retry_after_s: float | None = None,
    ) -> None:
        """Mark the request as ended at `now` and move the clock forward.

        `response_s` is how long the exchange took (to the timeout for a timeout);
        `retry_after_s` is a parsed Retry-After, seconds from `now`, obeyed exactly.
        Raises RuntimeError if no request was in flight, ValueError on a non-finite time.
        """
        if not self.in_flight:
            raise RuntimeError(f"finish without start on {self!r}")
        if not (math.isfinite(response_s) and math.isfinite(now)):
            raise ValueError(f"finish needs finite times, got now={now!r} {response_s=!r}")
        response_s = max(0.0, response_s)
        self.in_flight = False
        self.last_finished_at = now
        self._record_response(response_s)
        gap = self.gap_s(policy)
        if outcome is FetchOutcome.OK:
            self.consecutive_failures = 0
            self.parked_until = None
        elif outcome is FetchOutcome.URL_ERROR:
            self.error_count += 1
            gap = max(gap, _backoff(gap, self.consecutive_failures, policy))
        elif outcome is FetchOutcome.ORIGIN_ERROR:
            self.error_count += 1
            gap = max(gap, _backoff(gap, max(1, self.consecutive_failures), policy))
        else:
            self.consecutive_failures += 1
            self.error_count += 1
            gap = max(gap, _backoff(gap, self.consecutive_failures, policy))
            if self.consecutive_failures >= policy.park_after_failures:
                self.parked_until = now + policy.park_s
                gap = max(gap, policy.park_s)
        if retry_after_s is not None and math.isfinite(retry_after_s):
            gap = max(gap, retry_after_s)
        self.next_allowed_at = now + gap

    def _record_response(self, response_s: float) -> None:
        self.last_response_s = response_s
        sample_ms = response_s * 1000.0
        if self.avg_response_ms == 0.0:
            self.avg_response_ms = sample_ms
        else:
            self.avg_response_ms += _EWMA_WEIGHT * (sample_ms - self.avg_response_ms)

    def stats(self) -> SiteClockStats:
        return SiteClockStats(
            next_allowed_at=self.next_allowed_at,
            in_flight=self.in_flight,
            crawl_delay_s=self.crawl_delay_s,
            avg_response_ms=self.avg_response_ms,
            consecutive_failures=self.consecutive_failures,
            error_count=self.error_count,
            parked_until=self.parked_until,
        )

    def to_json(self) -> dict[str, object]:
        """Checkpoint form; `in_flight` is not kept (see `from_json`)."""
        return {
            "next_allowed_at": self.next_allowed_at,
            "crawl_delay_s": self.crawl_delay_s,
            "last_response_s": self.last_response_s,
            "avg_response_ms": self.avg_response_ms,
            "consecutive_failures": self.consecutive_failures,
            "error_count": self.error_count,
            "override_delay_s": self.override_delay_s,
            "parked_until": self.parked_until,
            "last_finished_at": self.last_finished_at,
        }

    @classmethod
    def from_json(cls, data: dict[str, object]) -> SiteClock:
        """Restore a checkpoint; raises DataError naming the bad field.

        A request in flight at checkpoint time died with the process, so the clock comes
        back idle; `next_allowed_at` still holds the gap of the request before it.
        """
        try:
            return cls(
                next_allowed_at=_number(data, "next_allowed_at"),
                crawl_delay_s=_optional_number(data, "crawl_delay_s"),
                last_response_s=_optional_number(data, "last_response_s"),
                avg_response_ms=_number(data, "avg_response_ms"),
                consecutive_failures=_integer(data, "consecutive_failures"),
                error_count=_integer(data, "error_count"),
                override_delay_s=_optional_number(data, "override_delay_s"),
                parked_until=_optional_number(data, "parked_until"),
                last_finished_at=_optional_number(data, "last_finished_at"),
            )
        except (KeyError, TypeError) as exc:
            raise DataError(f"site clock checkpoint is damaged: {exc!s}") from exc


def _backoff(gap: float, failures: int, policy: ClockPolicy) -> float:
    """The gap after `failures` failures in a row (the normal gap for none)."""
    if failures <= 0:
        return gap
    exponent = min(failures, _MAX_EXPONENT)
    return min(policy.backoff_max_s, gap * policy.backoff_factor**exponent)


def _number(data: dict[str, object], key: str) -> float:
    value = data[key]
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise TypeError(f"{key} = {value!r} is not a number")
    return float(value)


def _optional_number(data: dict[str, object], key: str) -> float | None:
    return None if data.get(key) is None else _number(data, key)


def _integer(data: dict[str, object], key: str) -> int:
    value = data[key]
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{key} = {value!r} is not an integer")
    return value

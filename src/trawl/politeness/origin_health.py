"""Which origins of one site fail on their own, and until when their URLs wait.

How this works: the site clock is per registered domain, one request at a time to the whole
site. A site may have several origins (scheme, host and port: RFC 6454 §4), and one of them
may be down alone: a closed port, a host name that does not resolve. Backing the whole site
off for that would let one dead origin hold the live ones back, so the shell reports every
exchange here (`note`) and gets back the outcome the site clock should take.

Rules (issue 13):
- A connection failure ("connect", "dns") on an origin while another origin of the site
  gave an HTTP answer (any status) is that origin's fault: the site clock takes one backoff
  step (ORIGIN_ERROR) and the origin gets a backoff of its own, doubling with each failure
  in a row (capped like the site's); its URLs wait for it (`held_until`), while the site's
  other origins keep their pace.
- With no other origin answering, the failure is the site's: the outcome is returned as
  it came, and the site clock escalates as it always did (a dead site stays backed off).
- An HTTP answer from an origin clears its failures.

Nothing here reads a clock: `now` comes in. Kept in the site's host record (`origins`,
`to_json`), so a site whose origin fails can leave memory when idle and come back with its
origins' failures counted; a record written before this field reads as no failures, and
then the first failure is treated as the site's (the cautious side).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from trawl.politeness.site_clock import ClockPolicy, FetchOutcome

# Error kinds (fetch.fetcher) that are a property of one origin (its host or port), not of
# the site's load.
ORIGIN_ERRORS = frozenset({"connect", "dns"})


@dataclass(frozen=True, slots=True)
class OriginFailure:
    failures: int  # connection failures in a row
    retry_at: float  # its URLs wait until then (epoch seconds)


# Mutable: owned with its SiteState by the one task holding the site.
# Both empty and shared until needed: a set and a dict made for every site cost ~280 bytes,
# and most sites in memory are only linked to (loop.idle_sites).
@dataclass(slots=True)
class OriginHealth:
    answering: frozenset[str] = frozenset()  # origins whose last exchange answered
    failing: dict[str, OriginFailure] | None = None

    def note(
        self,
        origin: str,
        now: float,
        outcome: FetchOutcome,
        error_kind: str | None,
        *,
        gap_s: float,
        policy: ClockPolicy,
    ) -> FetchOutcome:
        """Record one exchange with `origin`; returns the outcome for the site clock.

        `gap_s` is the site's normal gap, the base of the origin's own backoff.
        """
        if error_kind not in ORIGIN_ERRORS:
            if outcome is not FetchOutcome.NETWORK_ERROR:  # an HTTP answer (or the URL's)
                if origin not in self.answering:
                    self.answering |= {origin}
                if self.failing:
                    self.failing.pop(origin, None)
            return outcome
        if origin in self.answering:
            self.answering -= {origin}
        if not self.others_answer(origin):
            return outcome
        failing = self.failing
        if failing is None:
            failing = self.failing = {}
        previous = failing.get(origin)
        failures = 1 if previous is None else previous.failures + 1
        exponent = min(failures, 64)
        wait_s = min(policy.backoff_max_s, gap_s * policy.backoff_factor**exponent)
        if not math.isfinite(wait_s):
            wait_s = policy.backoff_max_s
        failing[origin] = OriginFailure(failures, now + max(gap_s, wait_s))
        return FetchOutcome.ORIGIN_ERROR

    def others_answer(self, origin: str) -> bool:
        """Did another origin of the site answer its last exchange?"""
        return any(o != origin for o in self.answering)

    def held_until(self, origin: str) -> float:
        """When `origin`'s URLs may be fetched again (0.0: no hold)."""
        failure = self.failing.get(origin) if self.failing else None
        return 0.0 if failure is None else failure.retry_at

    def holds_after(self, now: float) -> bool:
        """Does some origin's hold still run at `now`?"""
        failing = self.failing  # None for nearly every site: the sweep asks them all
        return failing is not None and any(f.retry_at > now for f in failing.values())

    def to_json(self) -> dict[str, object]:
        failing = self.failing or {}
        return {
            "answering": sorted(self.answering),
            "failing": {
                origin: {"failures": f.failures, "retryAt": f.retry_at}
                for origin, f in sorted(failing.items())
            },
        }

    @classmethod
    def from_json(cls, data: object) -> OriginHealth:
        """`to_json`'s value back (None: a record from before it, no failures); TypeError or
        ValueError when it is damaged."""
        if data is None:
            return cls()
        if not isinstance(data, dict):
            raise TypeError("origins is not an object")
        answering = data.get("answering", [])
        failing = data.get("failing", {})
        if not isinstance(answering, list) or not all(isinstance(o, str) for o in answering):
            raise TypeError("origins.answering is not a list of origins")
        if not isinstance(failing, dict):
            raise TypeError("origins.failing is not an object")
        failures_by_origin: dict[str, OriginFailure] = {}
        for origin, failure in failing.items():
            if not isinstance(failure, dict):
                raise TypeError(f"origins.failing[{origin!r}] is not an object")
            failures, retry_at = failure.get("failures"), failure.get("retryAt")
            if not isinstance(failures, int) or isinstance(failures, bool) or failures < 1:
                raise ValueError(f"origins.failing[{origin!r}].failures is not a count")
            if not isinstance(retry_at, int | float) or not math.isfinite(retry_at):
                raise ValueError(f"origins.failing[{origin!r}].retryAt is not a time")
            failures_by_origin[origin] = OriginFailure(failures, float(retry_at))
        # None, not an empty dict, when nothing fails: the shared empty state (see the class).
        return cls(frozenset(answering), failures_by_origin or None)

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

Nothing here reads a clock: `now` comes in. Not persisted: a restart forgets it, and the
first failure after a restart is treated as the site's (the cautious side).
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

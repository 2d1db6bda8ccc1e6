"""Which failed fetches get another try, and when the retried URL competes again (pure).

A transient failure — 429, a 5xx, a timeout, a reset, a refused connection, a DNS failure —
with attempts left goes back in line (outcome `retry`); the site clock's backoff and
Retry-After decide when the site's next request may go (politeness.site_clock). Errors the
URL would repeat every time ("protocol", "too_big", "decode", "blocked_address") are final.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from trawl.politeness.site_clock import ClockPolicy
    from trawl.politeness.site_state import SiteState

RETRIABLE_ERRORS = frozenset({"timeout", "reset", "connect", "dns"})


def retry_cause(
    status: int, error_kind: str | None, attempts: int, max_attempts: int
) -> str | None:
    """The cause to count the retry under ("503", "timeout"), or None when the fetch's
    outcome is final: not transient, or its `attempts`-th try (this one included) was the
    last of `max_attempts`."""
    transient = (status == 429 or 500 <= status < 600) if status else error_kind in RETRIABLE_ERRORS
    if not transient or attempts >= max_attempts:
        return None
    return str(status) if status else str(error_kind)


def retry_not_before(state: SiteState, attempts: int, policy: ClockPolicy) -> float:
    """When a URL sent back for its `attempts`-th retry competes with the site's other ready
    URLs again: after the site's next turn, one normal gap more per attempt. Until then they
    go first, so one failing URL cannot keep a healthy page of its site waiting (issue 13)."""
    return state.clock.next_allowed_at + state.clock.gap_s(policy) * attempts

"""Parse an HTTP Retry-After header into seconds from now (RFC 9110 10.2.3).

The field is either delay-seconds (1*DIGIT) or an HTTP-date. We also accept a decimal
fraction ("1.5"), which some servers send; anything else is garbage and yields None,
so the caller falls back to its own backoff.
"""

from __future__ import annotations

import math
import re
from datetime import UTC
from email.utils import parsedate_to_datetime

_SECONDS = re.compile(r"[0-9]+(?:\.[0-9]+)?")  # ASCII only: str.isdigit accepts "²"


def parse_retry_after(value: str | None, now: float, *, max_s: float = 86_400.0) -> float | None:
    """Seconds from `now` the server asks us to wait, or None if absent or unparsable.

    A date in the past gives 0.0; every answer is capped at `max_s`, so a hostile
    server cannot park a site for years.
    """
    if value is None:
        return None
    value = value.strip()
    if not value:
        return None
    if _SECONDS.fullmatch(value):
        # float() of a 400-digit string is inf, never an error; min() caps it.
        return min(float(value), max_s)
    try:
        when = parsedate_to_datetime(value)
    except (TypeError, ValueError, IndexError, OverflowError):
        return None
    if when.tzinfo is None:  # "-0000" zone: HTTP-dates are always GMT (RFC 9110 5.6.7)
        when = when.replace(tzinfo=UTC)
    try:
        delay_s = when.timestamp() - now
    except (OverflowError, ValueError, OSError):
        return None
    if not math.isfinite(delay_s):
        return None
    return min(max(0.0, delay_s), max_s)

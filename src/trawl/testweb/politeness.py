"""Judge a crawl's politeness from the test web's request log (the server's view, not ours).

Rules, each reported as its own `ViolationKind`:
- per site (registered domain): requests never overlap (a start before the previous end),
  and successive starts are at least max(`min_gap_s`, the site's crawl delay) apart;
- per IP address: at most `per_ip_max_in_flight` requests at once, and successive starts
  at least `per_ip_min_gap_s` apart;
- per host: the first request is /robots.txt (one made while following another site's
  robots.txt redirect counts: it is this host's file, and it counts against this site's
  gap like any request), and no request is for a path its robots.txt disallows for
  `agent_token` (RFC 9309 as trawl's parser reads it; Google's parser's test cases hold
  that parser to the RFC, tests/unit/test_robots_google.py);
- every User-Agent names `<agent_token>/` and a contact URL `(+http...)`;
- per site: after an answer carrying Retry-After R (the log's `retry_after`), no later
  request to the site starts before that answer's `t_end + R` (RFC 9110 §10.2.3).
Times compare with `tolerance_s` of slack, for clock rounding in the log. Pure: no I/O.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from enum import StrEnum
from itertools import pairwise
from typing import TYPE_CHECKING, TypedDict

from trawl.politeness.robots_txt import RobotsTxt

if TYPE_CHECKING:
    from collections.abc import Callable, Mapping, Sequence

    from trawl.testweb.request_log import RequestLogRecord

ROBOTS_PATH = "/robots.txt"


class ViolationKind(StrEnum):
    SITE_OVERLAP = "site_overlap"
    SITE_TOO_SOON = "site_too_soon"
    IP_IN_FLIGHT = "ip_in_flight"
    IP_TOO_SOON = "ip_too_soon"
    ROBOTS_NOT_FIRST = "robots_not_first"
    DISALLOWED = "disallowed"
    BAD_USER_AGENT = "bad_user_agent"
    RETRY_AFTER_IGNORED = "retry_after_ignored"


class PolitenessInputs(TypedDict):
    """Keyword arguments for `check_politeness` that describe one test web."""

    crawl_delays: dict[str, float]
    robots_txt: dict[str, str]


@dataclass(frozen=True, slots=True)
class Violation:
    kind: ViolationKind
    subject: str  # the site, IP address or hostname the broken rule is about
    detail: str


def check_politeness(
    records: Sequence[RequestLogRecord],
    *,
    min_gap_s: float = 1.0,
    crawl_delays: Mapping[str, float] | None = None,
    per_ip_max_in_flight: int = 2,
    per_ip_min_gap_s: float = 0.25,
    robots_txt: Mapping[str, str] | None = None,
    agent_token: str = "trawl",
    tolerance_s: float = 0.005,
) -> list[Violation]:
    """Every broken rule in `records`; an empty list means the crawl was polite.

    `crawl_delays` maps site -> seconds; `robots_txt` maps hostname -> the robots.txt text
    the crawler must obey (hosts not in it are not checked for disallowed paths).
    """
    delays = crawl_delays or {}
    out: list[Violation] = []
    for site, recs in _grouped(records, lambda r: r.site).items():
        gap_s = max(min_gap_s, delays.get(site, 0.0))
        out += _site_violations(site, recs, gap_s, tolerance_s)
        out += _retry_after_violations(site, recs, tolerance_s)
    for ip, recs in _grouped(records, lambda r: r.ip).items():
        out += _ip_violations(ip, recs, per_ip_max_in_flight, per_ip_min_gap_s, tolerance_s)
    rules = {host: RobotsTxt.parse(text) for host, text in (robots_txt or {}).items()}
    for host, recs in _grouped(records, lambda r: r.host).items():
        out += _host_violations(host, recs, rules.get(host), agent_token)
    return out


def _grouped(
    records: Sequence[RequestLogRecord], key: Callable[[RequestLogRecord], str]
) -> dict[str, list[RequestLogRecord]]:
    groups: dict[str, list[RequestLogRecord]] = defaultdict(list)
    for record in sorted(records, key=lambda r: (r.t_start, r.t_end)):
        groups[key(record)].append(record)
    return dict(sorted(groups.items()))


def _site_violations(
    site: str, recs: list[RequestLogRecord], gap_s: float, tolerance_s: float
) -> list[Violation]:
    out = []
    for prev, cur in pairwise(recs):
        if cur.t_start < prev.t_end - tolerance_s:
            detail = f"{cur.host}{cur.path} started {prev.t_end - cur.t_start:.3f}s before "
            detail += f"{prev.host}{prev.path} ended"
            out.append(Violation(ViolationKind.SITE_OVERLAP, site, detail))
        if cur.t_start - prev.t_start < gap_s - tolerance_s:
            detail = f"{cur.host}{cur.path} started {cur.t_start - prev.t_start:.3f}s after "
            detail += f"{prev.host}{prev.path}; needs {gap_s:.3f}s"
            out.append(Violation(ViolationKind.SITE_TOO_SOON, site, detail))
    return out


def _retry_after_violations(
    site: str, recs: list[RequestLogRecord], tolerance_s: float
) -> list[Violation]:
    out = []
    waits = [r for r in recs if r.retry_after_s is not None]
    for cur in recs:
        # Only answers that ended before `cur` started could have told it to wait.
        for told in waits:
            assert told.retry_after_s is not None
            if told is cur:
                continue  # an answer cannot tell its own request to wait
            until = told.t_end + told.retry_after_s
            if told.t_end <= cur.t_start + tolerance_s and cur.t_start < until - tolerance_s:
                detail = f"{cur.host}{cur.path} started {until - cur.t_start:.3f}s before "
                detail += f"the Retry-After {told.retry_after_s:g}s of {told.host}{told.path} ended"
                out.append(Violation(ViolationKind.RETRY_AFTER_IGNORED, site, detail))
                break
    return out


def _ip_violations(
    ip: str, recs: list[RequestLogRecord], max_in_flight: int, gap_s: float, tolerance_s: float
) -> list[Violation]:
    out = []
    # Sweep starts and ends in time order; at equal times ends come first (-1 < +1), and
    # ends are pulled back by the tolerance so back-to-back requests do not count as overlap.
    events = sorted(
        [(r.t_start, 1, r) for r in recs] + [(r.t_end - tolerance_s, -1, r) for r in recs],
        key=lambda e: (e[0], e[1]),
    )
    in_flight = 0
    for _, delta, record in events:
        in_flight += delta
        if delta > 0 and in_flight > max_in_flight:
            detail = f"{in_flight} requests in flight at {record.host}{record.path}"
            out.append(Violation(ViolationKind.IP_IN_FLIGHT, ip, detail + f"; max {max_in_flight}"))
    for prev, cur in pairwise(recs):
        if cur.t_start - prev.t_start < gap_s - tolerance_s:
            detail = f"{cur.host}{cur.path} started {cur.t_start - prev.t_start:.3f}s after "
            detail += f"{prev.host}{prev.path}; needs {gap_s:.3f}s"
            out.append(Violation(ViolationKind.IP_TOO_SOON, ip, detail))
    return out


def _host_violations(
    host: str, recs: list[RequestLogRecord], rules: RobotsTxt | None, agent_token: str
) -> list[Violation]:
    out = []
    first_path = recs[0].path.split("?", 1)[0]
    if first_path != ROBOTS_PATH:
        detail = f"first request was {recs[0].path!r}, not {ROBOTS_PATH}"
        out.append(Violation(ViolationKind.ROBOTS_NOT_FIRST, host, detail))
    for record in recs:
        path = record.path.split("?", 1)[0]
        if (
            rules is not None
            and path != ROBOTS_PATH
            and not rules.is_allowed(f"http://{host}{record.path}", agent_token)
        ):
            detail = f"{record.path!r} is disallowed for {agent_token!r}"
            out.append(Violation(ViolationKind.DISALLOWED, host, detail))
        if f"{agent_token}/" not in record.ua or "(+http" not in record.ua:
            detail = f"User-Agent {record.ua!r} lacks '{agent_token}/' or a '(+http' contact URL"
            out.append(Violation(ViolationKind.BAD_USER_AGENT, host, detail))
    return out

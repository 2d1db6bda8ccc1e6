"""A small synchronous client of `trawl serve`'s API, for `trawl seed` and `trawl events --api`.

How this works:
- One request at a time over the stdlib's urllib: a command that exits after a few requests
  needs no pool and no event loop. Proxy variables are ignored (like the fetcher's
  `trust_env=False`), so an API on loopback is never sent through a proxy.
- Every failure becomes one UsageError line naming the request: unreachable, a refused
  token (401: none given; 403: a wrong one, or write endpoints off), the server's own message
  for a 422, an answer that is not JSON.
- `follow_events` long-polls `GET /v1/events?from=N&limit=K&wait=S` and resumes from the
  answer's `next`. Once the API has answered, a dropped connection or a 502/503/504 while
  following is retried with a doubling delay capped at `RETRY_MAX_S`, a note on stderr for
  each; it gives up after `GIVE_UP_S` without an answer. The first request is never retried:
  an API that was never reached is more likely a wrong --api than a restart.
"""

from __future__ import annotations

import http.client
import json
import sys
import time
import urllib.error
import urllib.parse
import urllib.request
from typing import TYPE_CHECKING, Any

from trawl.errors import UsageError

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator, Sequence

SEEDS_PER_REQUEST = 10_000  # the API's own limit per POST /v1/seeds
EVENTS_PER_REQUEST = 1000  # the API's largest `limit`
WAIT_S = 20.0  # long-poll wait while following (the API allows up to 60)
RETRY_MIN_S = 0.5
RETRY_MAX_S = 8.0
GIVE_UP_S = 120.0
_ANSWER_SLACK_S = 10.0  # socket timeout beyond the long-poll wait
_TRANSIENT_STATUSES = frozenset({502, 503, 504})  # a proxy in front of a restarting API

# The failures of a request that never got an HTTP answer (HTTPError is caught before).
_UNREACHABLE = (urllib.error.URLError, http.client.HTTPException, OSError)

_OPENER = urllib.request.build_opener(urllib.request.ProxyHandler({}))


class _Transient(Exception):
    """Internal: the API could not be reached, or a proxy said it is briefly away."""


def api_base(api: str) -> str:
    """The --api value without a trailing slash; UsageError unless it is an http(s) URL."""
    text = api.strip()
    parts = urllib.parse.urlsplit(text)
    if parts.scheme not in ("http", "https") or not parts.hostname or parts.query:
        raise _bad_api(api)
    try:
        _ = parts.port  # ValueError for a port that is not a number in 0..65535
    except ValueError:
        raise _bad_api(api) from None
    return text.rstrip("/")


def _bad_api(api: str) -> UsageError:
    return UsageError(f"--api {api!r}: expected the API's http(s) URL, e.g. http://127.0.0.1:8700")


def error_message(status: int, body: bytes, *, token_given: bool) -> str:
    """One line for an error answer of the API: what went wrong, in the server's words."""
    detail = _detail(body)
    if status == 401 and not token_given:
        return f"401 {detail}: give --token-file F or set TRAWL_API_TOKEN"
    if status == 403:
        return f"403 forbidden: {detail}"
    if status == 422:
        return f"422 the API refused the request: {detail}"
    return f"HTTP {status}: {detail}"


def _detail(body: bytes) -> str:
    """FastAPI's `detail`: a string, or a list of validation errors with a place and message."""
    try:
        detail = json.loads(body)["detail"]
    except (ValueError, TypeError, KeyError):
        return " ".join(body.decode("utf-8", "replace").split())[:200] or "no message"
    if isinstance(detail, list):
        return "; ".join(_validation_error(item) for item in detail) or "no message"
    return str(detail)


def _validation_error(item: object) -> str:
    if not isinstance(item, dict):
        return str(item)
    place = ".".join(str(part) for part in item.get("loc", ()) if part != "body")
    message = str(item.get("msg", item))
    return f"{place}: {message}" if place else message


def _where(request: urllib.request.Request) -> str:
    return f"{request.get_method()} {request.full_url}"


def _send(request: urllib.request.Request, timeout_s: float) -> tuple[int, bytes]:
    """(status, body) of one exchange; raises _Transient when there was no usable answer."""
    try:
        with _OPENER.open(request, timeout=timeout_s) as response:
            return int(response.status), response.read()
    except urllib.error.HTTPError as exc:
        try:
            status, body = exc.code, exc.read() if exc.fp is not None else b""
        finally:
            exc.close()
    except _UNREACHABLE as exc:
        reason = exc.reason if isinstance(exc, urllib.error.URLError) else exc
        raise _Transient(f"cannot reach the API ({reason or type(exc).__name__})") from None
    if status in _TRANSIENT_STATUSES:
        raise _Transient(f"HTTP {status}: {_detail(body)}")
    return status, body


def _decode(request: urllib.request.Request, status: int, body: bytes, token_given: bool) -> Any:
    """The JSON answer of a successful exchange; UsageError for an error or a non-JSON one."""
    if not 200 <= status < 300:
        message = error_message(status, body, token_given=token_given)
        raise UsageError(f"{_where(request)}: {message}")
    try:
        return json.loads(body)
    except ValueError:
        raise UsageError(
            f"{_where(request)}: the answer is not JSON (is this trawl's API?)"
        ) from None


def _call(request: urllib.request.Request, timeout_s: float, *, token_given: bool) -> Any:
    try:
        status, body = _send(request, timeout_s)
    except _Transient as exc:
        raise UsageError(f"{_where(request)}: {exc}") from None
    return _decode(request, status, body, token_given)


def post_seeds(
    api: str, urls: Sequence[str], priority: str, token: str | None, *, timeout_s: float = 30.0
) -> dict[str, Any]:
    """POST the URLs to /v1/seeds (in requests of at most SEEDS_PER_REQUEST) and merge the
    answers: `{"queued": n, "rejected": [{"url": ..., "reason": ...}, ...]}`.

    Raises UsageError; if an earlier request of a long list was accepted, the message says
    how many URLs were queued before the failure.
    """
    base = api_base(api)
    headers = {"Content-Type": "application/json", "Accept": "application/json"}
    if token is not None:
        headers["Authorization"] = f"Bearer {token}"
    merged: dict[str, Any] = {"queued": 0, "rejected": []}
    for start in range(0, len(urls), SEEDS_PER_REQUEST):
        body = json.dumps(
            {"urls": list(urls[start : start + SEEDS_PER_REQUEST]), "priority": priority}
        )
        request = urllib.request.Request(
            base + "/v1/seeds", data=body.encode(), headers=headers, method="POST"
        )
        try:
            answer = _call(request, timeout_s, token_given=token is not None)
        except UsageError as exc:
            if start == 0:
                raise
            raise UsageError(f"{exc} (after {merged['queued']} URLs were queued)") from None
        merged["queued"] += _expect(answer, "queued", int, request)
        merged["rejected"].extend(_expect(answer, "rejected", list, request))
    return merged


def _expect(answer: Any, key: str, kind: type, request: urllib.request.Request) -> Any:
    value = answer.get(key) if isinstance(answer, dict) else None
    if not isinstance(value, kind):
        raise UsageError(f"{_where(request)}: the answer has no {key!r} (is this trawl's API?)")
    return value


def _events_request(base: str, offset: int, wait_s: float) -> urllib.request.Request:
    query = urllib.parse.urlencode({"from": offset, "limit": EVENTS_PER_REQUEST, "wait": wait_s})
    return urllib.request.Request(
        f"{base}/v1/events?{query}", headers={"Accept": "application/json"}
    )


def _read_events(base: str, offset: int, wait_s: float) -> tuple[list[dict[str, Any]], int]:
    """(events, next offset) from one GET /v1/events; raises _Transient or UsageError."""
    request = _events_request(base, offset, wait_s)
    status, body = _send(request, wait_s + _ANSWER_SLACK_S)
    answer = _decode(request, status, body, token_given=False)
    return _expect(answer, "events", list, request), _expect(answer, "next", int, request)


def retry_delay_s(failures: int) -> float:
    """Wait before the next try after `failures` (>= 1) failed ones in a row: doubling, capped."""
    return min(RETRY_MIN_S * 2.0 ** (failures - 1), RETRY_MAX_S)


def _note_on_stderr(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


def follow_events(
    api: str,
    from_offset: int,
    follow: bool,
    *,
    note: Callable[[str], None] = _note_on_stderr,
    sleep: Callable[[float], None] = time.sleep,
    clock: Callable[[], float] = time.monotonic,
) -> Iterator[dict[str, Any]]:
    """page.fetched events from `from_offset` on, as the API's JSON objects, in offset order.

    Without `follow` it stops at the end of the outbox; with it, it waits for new events
    forever (retrying a briefly unreachable API, see the module docstring). Raises UsageError.
    """
    base = api_base(api)
    offset, reached, failures, failing_since = from_offset, False, 0, 0.0
    while True:
        try:
            events, offset = _read_events(base, offset, WAIT_S if follow else 0.0)
        except _Transient as exc:
            if not (follow and reached):
                raise UsageError(f"{base}: {exc}") from None
            failures += 1
            failing_since = failing_since if failures > 1 else clock()
            if clock() - failing_since >= GIVE_UP_S:
                raise UsageError(f"{base}: {exc}; gave up after {GIVE_UP_S:g} s") from None
            delay = retry_delay_s(failures)
            note(f"trawl: {base}: {exc}; retrying from offset {offset} in {delay:g} s")
            sleep(delay)
            continue
        reached, failures = True, 0
        yield from events
        if not events and not follow:
            return

"""The API client's pure parts: --api values, error lines and the retry schedule."""

from __future__ import annotations

import json

import pytest

from trawl.api.client import RETRY_MAX_S, api_base, error_message, retry_delay_s
from trawl.errors import UsageError


@pytest.mark.parametrize(
    ("api", "base"),
    [
        ("http://127.0.0.1:8700", "http://127.0.0.1:8700"),
        (" http://127.0.0.1:8700/ ", "http://127.0.0.1:8700"),
        ("https://crawler.example.org/trawl/", "https://crawler.example.org/trawl"),
        ("http://[::1]:8700", "http://[::1]:8700"),
    ],
)
def test_api_base(api: str, base: str) -> None:
    assert api_base(api) == base


@pytest.mark.parametrize(
    "api",
    ["127.0.0.1:8700", "ftp://x/", "http://", "http://x:port", "http://x:70000", "http://x/?a=1"],
)
def test_api_base_refuses_what_is_not_an_http_url(api: str) -> None:
    with pytest.raises(UsageError, match=r"^--api .*: expected the API's http\(s\) URL"):
        api_base(api)


def _detail(detail: object) -> bytes:
    return json.dumps({"detail": detail}).encode()


def test_missing_token_says_where_to_give_it() -> None:
    message = error_message(401, _detail("missing operator token"), token_given=False)
    assert message == "401 missing operator token: give --token-file F or set TRAWL_API_TOKEN"


def test_forbidden_repeats_the_server_reason() -> None:
    assert error_message(403, _detail("wrong operator token"), token_given=True) == (
        "403 forbidden: wrong operator token"
    )
    off = "write endpoints are off: start with --token-file or TRAWL_API_TOKEN"
    assert error_message(403, _detail(off), token_given=False) == f"403 forbidden: {off}"


def test_validation_errors_name_the_field() -> None:
    detail = [
        {"type": "literal_error", "loc": ["body", "priority"], "msg": "Input should be 'high'"},
        {"type": "too_short", "loc": ["body", "urls"], "msg": "List should have at least 1 item"},
        {"type": "json_invalid", "loc": ["body", 1], "msg": "JSON decode error"},
    ]
    assert error_message(422, _detail(detail), token_given=True) == (
        "422 the API refused the request: priority: Input should be 'high'; "
        "urls: List should have at least 1 item; 1: JSON decode error"
    )
    assert error_message(422, _detail("not a crawlable URL: x"), token_given=False) == (
        "422 the API refused the request: not a crawlable URL: x"
    )


def test_other_answers_keep_one_line_of_the_body() -> None:
    assert error_message(500, b"Internal\nServer Error", token_given=False) == (
        "HTTP 500: Internal Server Error"
    )
    assert error_message(404, b"", token_given=False) == "HTTP 404: no message"
    assert len(error_message(502, b"x" * 10_000, token_given=False)) < 220


def test_retry_delay_doubles_up_to_a_cap() -> None:
    delays = [retry_delay_s(n) for n in range(1, 10)]
    assert delays[:4] == [0.5, 1.0, 2.0, 4.0]
    assert max(delays) == RETRY_MAX_S == delays[-1]

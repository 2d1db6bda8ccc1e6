"""The one URL normaliser: five spellings of one page become one string.

How this works. `normalise_url` cleans the raw text the way a browser does (WHATWG URL:
strip C0 controls and spaces around it, drop tabs and newlines inside, read `\\` as `/`),
resolves it against `base` (RFC 3986 §5.2), then rebuilds it from normalised parts:

- scheme: http or https only, lowercase (RFC 3986 §6.2.2.1);
- host: lowercase, IDNA (UTS #46, non-transitional) to punycode, trailing dot dropped,
  IPv4 and [IPv6] literals in canonical form; userinfo dropped; default port dropped
  (§6.2.3). Host work is cached per (scheme, authority): links repeat hosts a lot;
- path: empty becomes "/", percent-escapes in uppercase hex with unreserved characters
  decoded and everything that must be escaped escaped as UTF-8 (§6.2.2.1-2), session-id
  path parameters (`;jsessionid=...`) dropped, then dot segments removed (§5.2.4);
- query: escapes as for the path, tracking and session-id parameters dropped, the rest
  sorted by name then text, an empty query dropped;
- fragment: dropped.

Every step maps its own output to itself, so the function is idempotent. It is on the hot
path (~40k calls/s), so each step has a fast check that skips the work for the common case.
The workers' link memo (urls/link_memo.py) avoids most calls: `base_need`, `base_scopes`
and `without_fragment` say, from the href alone, what of it and of the base an answer reads.
"""

from __future__ import annotations

import hashlib
import importlib
import ipaddress
import re
from dataclasses import dataclass, field
from enum import IntEnum
from functools import lru_cache
from typing import TYPE_CHECKING, Protocol
from urllib.parse import unquote, urlsplit

from trawl.errors import InvalidUrl

if TYPE_CHECKING:
    from collections.abc import Callable, Iterable

try:
    import idna

    _HAS_IDNA = True
except ImportError:  # pragma: no cover - idna comes with aiohttp (via yarl)
    _HAS_IDNA = False  # fall back to the stdlib codec, which knows only IDNA 2003

__all__ = [
    "DEFAULT_RULES",
    "BaseNeed",
    "NormaliseRules",
    "base_need",
    "base_scopes",
    "normalise_url",
    "url_hash",
    "without_fragment",
]

_DEFAULT_TRACKING = (
    "gclid", "gclsrc", "dclid", "gbraid", "wbraid", "fbclid", "msclkid", "yclid", "twclid",
    "ttclid", "li_fat_id", "mc_cid", "mc_eid", "_ga", "_gl", "_hsenc", "_hsmi", "igshid",
    "ref_src", "ref_url", "mkt_tok", "vero_id", "oly_anon_id", "oly_enc_id", "rb_clickid",
    "s_cid", "wickedid", "spm",
)  # fmt: skip
_DEFAULT_SESSION = (
    "jsessionid", "phpsessid", "sid", "sessionid", "session_id", "aspsessionid",
    "asp.net_sessionid", "cfid", "cftoken", "zenid", "oscsid", "sessid",
)  # fmt: skip


def _lowered(names: Iterable[str]) -> frozenset[str]:
    return frozenset(name.lower() for name in names)


@dataclass(frozen=True, slots=True)
class NormaliseRules:
    """Which query parameters to strip, and the longest URL kept.

    Parameter names are compared case-insensitively (they are stored lowercase).
    """

    tracking_params: frozenset[str] = field(default_factory=lambda: _lowered(_DEFAULT_TRACKING))
    tracking_prefixes: tuple[str, ...] = ("utm_",)
    session_params: frozenset[str] = field(default_factory=lambda: _lowered(_DEFAULT_SESSION))
    max_length: int = 2048

    def __post_init__(self) -> None:
        # Lowercase here so that every way of building rules compares the same way.
        object.__setattr__(self, "tracking_params", _lowered(self.tracking_params))
        object.__setattr__(self, "session_params", _lowered(self.session_params))
        prefixes = tuple(prefix.lower() for prefix in self.tracking_prefixes)
        object.__setattr__(self, "tracking_prefixes", prefixes)
        if self.max_length < 16:
            raise ValueError(f"max_length must be >= 16, got {self.max_length}")

    @classmethod
    def from_config(
        cls,
        tracking_params: Iterable[str] | None = None,
        tracking_prefixes: Iterable[str] | None = None,
        session_params: Iterable[str] | None = None,
        max_length: int = 2048,
    ) -> NormaliseRules:
        """Build rules from config lists; a list left as None keeps the default."""
        tracking = _DEFAULT_TRACKING if tracking_params is None else tracking_params
        prefixes = ("utm_",) if tracking_prefixes is None else tracking_prefixes
        session = _DEFAULT_SESSION if session_params is None else session_params
        return cls(
            tracking_params=_lowered(tracking),
            tracking_prefixes=tuple(prefixes),
            session_params=_lowered(session),
            max_length=max_length,
        )

    def is_dropped(self, name: str) -> bool:
        """True if a query or path parameter called `name` is tracking or a session id."""
        lname = name.lower()
        return (
            lname in self.tracking_params
            or lname in self.session_params
            or lname.startswith(self.tracking_prefixes)
        )


DEFAULT_RULES = NormaliseRules()

_DEFAULT_PORTS = {"http": 80, "https": 443}
# WHATWG URL: "C0 control or space" is stripped around a URL; tab and newline anywhere.
_C0_AND_SPACE = "".join(chr(c) for c in range(0x21))
_TAB_NEWLINE = str.maketrans("", "", "\t\n\r")

# RFC 3986 §2.3 unreserved, plus what may stand bare in a path (§3.3) or query (§3.4).
_UNRESERVED = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~")
_PATH_SAFE = r"A-Za-z0-9\-._~!$&'()*+,;=:@/"
# Anything outside the safe set, including '%', needs a look; the usual link has none.
_PATH_NEEDS_WORK = re.compile(f"[^{_PATH_SAFE}]")
_QUERY_NEEDS_WORK = re.compile(f"[^{_PATH_SAFE}?]")
_PATH_FIX = re.compile(f"%[0-9A-Fa-f]{{2}}|[^{_PATH_SAFE}]")
_QUERY_FIX = re.compile(f"%[0-9A-Fa-f]{{2}}|[^{_PATH_SAFE}?]")
_HOST_OK = re.compile(r"[a-z0-9_-]+(?:\.[a-z0-9_-]+)*\Z")


def _fix_escape(match: re.Match[str]) -> str:
    text = match.group()
    if len(text) == 3:  # a valid %XX escape: decode unreserved, else uppercase the hex
        char = chr(int(text[1:], 16))
        return char if char in _UNRESERVED else text.upper()
    # A bare '%' or a character that must be escaped: escape its UTF-8 bytes. Lone
    # surrogates (only from arbitrary text, never from decoded pages) pass through as bytes.
    return "".join(f"%{byte:02X}" for byte in text.encode("utf-8", "surrogatepass"))


def _fix_path_escapes(path: str) -> str:
    if _PATH_NEEDS_WORK.search(path) is None:
        return path
    return _PATH_FIX.sub(_fix_escape, path)


def _fix_query_escapes(query: str) -> str:
    if _QUERY_NEEDS_WORK.search(query) is None:
        return query
    return _QUERY_FIX.sub(_fix_escape, query)


def _remove_dot_segments(path: str) -> str:
    """RFC 3986 §5.2.4 for a path starting with '/'."""
    segments = path.split("/")
    out: list[str] = []
    for segment in segments[1:]:
        if segment == "..":
            if out:
                out.pop()
        elif segment != ".":
            out.append(segment)
    if segments[-1] in (".", ".."):
        out.append("")  # "/a/b/.." names the directory "/a/", not the file "/a"
    return "/" + "/".join(out)


def _strip_path_params(path: str, rules: NormaliseRules) -> str:
    """Drop `;name=value` session-id parameters from each path segment."""
    segments = path.split("/")
    for i, segment in enumerate(segments):
        if ";" in segment:
            head, *params = segment.split(";")
            kept = [p for p in params if not rules.is_dropped(p.partition("=")[0])]
            segments[i] = ";".join([head, *kept])
    return "/".join(segments)


def _normalise_query(query: str, rules: NormaliseRules) -> str:
    query = _fix_query_escapes(query)
    pairs: list[tuple[str, str]] = []
    for param in query.split("&"):
        if not param:
            continue  # "a=1&&b=2": an empty parameter says nothing
        name = param.partition("=")[0]
        if not rules.is_dropped(name):
            pairs.append((name, param))
    # Sort by name, then by the whole text so "a" and "a=" stay distinct and ordered.
    pairs.sort()
    return "&".join(param for _, param in pairs)


def _ascii_host(host: str, raw: str) -> str:
    if host.endswith("."):
        host = host[:-1]
    if not host:
        raise InvalidUrl(f"{raw!r} has no host")
    host = host.lower() if host.isascii() else _idna_encode(host, raw)
    if _HOST_OK.match(host) is None or len(host) > 253:
        raise InvalidUrl(f"{raw!r} has an invalid host {host!r}")
    if max(len(label) for label in host.split(".")) > 63:
        raise InvalidUrl(f"{raw!r} has a host label over 63 characters")
    last = host.rpartition(".")[2]
    if last.isdigit():  # WHATWG: a host ending in a number must be an IPv4 address
        try:
            return str(ipaddress.IPv4Address(host))
        except ValueError:
            raise InvalidUrl(f"{raw!r} has an invalid IPv4 host {host!r}") from None
    return host


def _idna_encode(host: str, raw: str) -> str:
    try:
        if _HAS_IDNA:
            encoded = idna.encode(host, uts46=True, transitional=False)
        else:  # pragma: no cover
            encoded = host.encode("idna")
    except ValueError as exc:  # idna.IDNAError and the codec's errors are ValueErrors
        raise InvalidUrl(f"{raw!r} has a host that IDNA rejects: {exc}") from None
    host = encoded.decode("ascii").lower()
    return host[:-1] if host.endswith(".") else host


def _ipv6_host(literal: str, raw: str) -> str:
    try:
        return f"[{ipaddress.IPv6Address(literal).compressed}]"
    except ValueError:
        raise InvalidUrl(f"{raw!r} has an invalid IPv6 host [{literal}]") from None


@lru_cache(maxsize=8192)
def _authority(scheme: str, netloc: str) -> str:
    """Normalised "host[:port]" for an authority; raises InvalidUrl."""
    hostport = netloc.rpartition("@")[2]  # userinfo is never kept
    if hostport.startswith("["):
        literal, sep, after = hostport[1:].partition("]")
        if not sep or (after and not after.startswith(":")):
            raise InvalidUrl(f"{netloc!r} has a malformed IPv6 host")
        host = _ipv6_host(literal, netloc)
        port_text = after[1:]
    else:
        host, _, port_text = hostport.partition(":")
        if ":" in port_text:
            raise InvalidUrl(f"{netloc!r} has an unbracketed IPv6 host or several ports")
        if "%" in host:
            try:
                host = unquote(host, errors="strict")
            except UnicodeDecodeError:
                raise InvalidUrl(f"{netloc!r} has a host that is not UTF-8") from None
        host = _ascii_host(host, netloc)
    if not port_text:
        return host
    if not (port_text.isascii() and port_text.isdigit()) or int(port_text) > 65535:
        raise InvalidUrl(f"Invalid port: {port_text!r} in {netloc!r}")
    port = int(port_text)
    return host if port == _DEFAULT_PORTS[scheme] else f"{host}:{port}"


def _clean(raw: str) -> str:
    text = raw.strip(_C0_AND_SPACE)
    if "\t" in text or "\n" in text or "\r" in text:
        text = text.translate(_TAB_NEWLINE)
    if "\\" in text:
        # WHATWG: in http(s) URLs a backslash before the query is a slash.
        cut = min((i for i in (text.find("?"), text.find("#")) if i >= 0), default=len(text))
        text = text[:cut].replace("\\", "/") + text[cut:]
    return text


@lru_cache(maxsize=512)
def _split_base(base: str) -> tuple[str, str, str, str]:
    """(scheme, netloc, path, query) of an absolute http(s) base URL; cached for the page."""
    scheme, netloc, path, query, _ = _split(_clean(base), base)
    if scheme not in _DEFAULT_PORTS or not netloc:
        raise InvalidUrl(f"base {base!r} is not an absolute http(s) URL")
    return scheme, netloc, path or "/", query


# urlsplit's parse of a text `_clean` has already stripped, in one match: the scheme is the
# text before the first ":" if that is a letter then scheme characters; then "//" and the
# netloc up to "/", "?" or "#"; the path up to "?" or "#"; the query up to "#"; the rest.
_SPLIT = re.compile(
    r"(?:([A-Za-z][A-Za-z0-9+.\-]*):)?(?://([^/?#]*))?([^?#]*)(?:\?([^#]*))?(?:#(.*))?\Z", re.S
)


def _split(text: str, raw: str) -> tuple[str, str, str, str, str]:
    """`urlsplit(text)` for a cleaned text, ~4x as fast when the netloc is plain ASCII."""
    match = _SPLIT.match(text)
    assert match is not None  # every group is optional and the path takes any other text
    scheme, netloc, path, query, fragment = match.groups("")
    if netloc.isascii() and "[" not in netloc and "]" not in netloc:
        return scheme.lower(), netloc, path, query, fragment
    try:  # urlsplit checks IPv6 brackets and NFKC tricks in the netloc: let it
        return urlsplit(text)
    except ValueError as exc:
        raise InvalidUrl(f"{raw!r} is not a valid URL: {exc}") from None


def _resolve(
    text: str, ref: tuple[str, str, str, str, str], base: str
) -> tuple[str, str, str, str]:
    """RFC 3986 §5.2.2 (without dot removal, which the caller does after unescaping)."""
    b_scheme, b_netloc, b_path, b_query = _split_base(base)
    _, netloc, path, query, _ = ref
    if text.startswith("//"):  # a network-path reference brings its own authority
        return b_scheme, netloc, path, query
    if not path:
        # "" or "#x" keep the base query; "?" alone (defined but empty) replaces it.
        has_query = "?" in text.partition("#")[0]
        return b_scheme, b_netloc, b_path, query if has_query else b_query
    if not path.startswith("/"):
        path = b_path[: b_path.rfind("/") + 1] + path
    return b_scheme, b_netloc, path, query


# A plain path's characters: none that the escape or path-parameter rules change (a path
# of only these skips them: `_rebuilt`'s `plain_path`).
_PLAIN_PATH_CHARS = r"[A-Za-z0-9\-._~/]*"

# The usual link, read in one match (`normalise_url`'s fast path): an absolute URL with a
# lowercase http(s) scheme and a plain host[:port], or a relative path that is not a
# network-path reference; a path and a query of characters that need no escaping and no
# cleaning; any fragment (dropped). Nothing that `_clean` would change matches, except
# inside the fragment.
_PLAIN = re.compile(
    r"(?:(https?)://([A-Za-z0-9.\-]+(?::[0-9]*)?)(?=[/?#]|\Z))?"
    rf"((?!//){_PLAIN_PATH_CHARS})"
    r"(?:\?([A-Za-z0-9\-._~=&]*))?"
    r"(?:#.*)?\Z",
    re.S,
)


def normalise_url(raw: str, base: str | None = None, rules: NormaliseRules = DEFAULT_RULES) -> str:
    """Normalise `raw` (resolved against `base` when relative) into one canonical http(s) URL.

    Raises InvalidUrl, naming the value, for other schemes, a missing or bad host or port,
    a relative URL without a usable base, or a result longer than `rules.max_length`.
    """
    plain = _PLAIN.match(raw) if len(raw) <= 4 * rules.max_length else None
    if plain is not None:
        scheme, netloc, path, query = plain.groups("")
        if scheme:
            return _rebuilt(raw, scheme, netloc, path, query, rules, plain_path=True)
        if path and base is not None:
            # `_resolve` for a relative path with no scheme or authority of its own.
            scheme, netloc, b_path, _ = _split_base(base)
            plain_path = True
            if not path.startswith("/"):
                path = b_path[: b_path.rfind("/") + 1] + path
                plain_path = _is_plain_path(b_path)  # the page's own path: any text
            return _rebuilt(raw, scheme, netloc, path, query, rules, plain_path=plain_path)
    return _normalise_any(raw, base, rules)


_PLAIN_PATH = re.compile(_PLAIN_PATH_CHARS)


@lru_cache(maxsize=512)
def _is_plain_path(path: str) -> bool:
    """Is `path` of `_PLAIN`'s path characters only? (Cached: a page's hrefs share a base.)"""
    return _PLAIN_PATH.fullmatch(path) is not None


def _normalise_any(raw: str, base: str | None, rules: NormaliseRules) -> str:
    """`normalise_url` for any text: cleaned and split in full."""
    text = _clean(raw)
    if len(text) > 4 * rules.max_length:
        # Normalising never shrinks a URL this much; refuse before doing any work on it.
        raise InvalidUrl(f"{raw[:80]!r}... is over {rules.max_length} characters")
    parts = _split(text, raw)
    scheme, netloc, path, query, _ = parts
    if base is not None and (
        not scheme or (not netloc and scheme in _DEFAULT_PORTS and scheme == _split_base(base)[0])
    ):
        # "http:foo" against an http base is relative, as in browsers (RFC 3986 §5.2.2 note).
        if scheme:
            text = text[len(scheme) + 1 :]
            parts = _split(text, raw)
        scheme, netloc, path, query = _resolve(text, parts, base)
    elif scheme not in _DEFAULT_PORTS:
        what = f"scheme {scheme!r}" if scheme else "no scheme"
        raise InvalidUrl(f"{raw!r} is not an http(s) URL ({what})")
    if not netloc:
        raise InvalidUrl(f"{raw!r} has no host")
    return _rebuilt(raw, scheme, netloc, path, query, rules)


def _rebuilt(
    raw: str,
    scheme: str,
    netloc: str,
    path: str,
    query: str,
    rules: NormaliseRules,
    *,
    plain_path: bool = False,
) -> str:
    """The URL from its resolved parts, each normalised (see the module docstring).

    `plain_path`: the path is of `_PLAIN`'s characters only (no "%", no ";"), which the
    escape and parameter rules leave as it is, so they are skipped (~0.4 us an href)."""
    try:
        authority = _authority(scheme, netloc)
    except InvalidUrl as exc:
        raise InvalidUrl(f"{raw!r}: {exc}") from None
    if not path:
        path = "/"
    elif not plain_path:
        path = _fix_path_escapes(path)
        if ";" in path:
            path = _strip_path_params(path, rules)
    if "/." in path:
        path = _remove_dot_segments(path)
    url = f"{scheme}://{authority}{path}"
    if query:
        query = _normalise_query(query, rules)
        if query:
            url = f"{url}?{query}"
    if len(url) > rules.max_length:
        raise InvalidUrl(f"{url[:80]!r}... is over {rules.max_length} characters")
    return url


def url_hash(normalised_url: str) -> str:
    """First 32 hex digits of the SHA-256 of the URL's UTF-8 bytes (the page record key)."""
    return _short_sha256(normalised_url.encode("utf-8")).hexdigest()[:32]


class _Sha256(Protocol):
    def hexdigest(self) -> str: ...


def _sha256_for_short_inputs() -> Callable[[bytes], _Sha256]:
    """CPython's own sha256 (`_sha2` from 3.12, `_sha256` before), else hashlib's.

    hashlib's is OpenSSL's, whose set-up of each call outweighs hashing a URL's few dozen
    bytes: 1.66 against 0.88 us a URL here (issue 17; a page's ~50 links are hashed in the
    page worker). OpenSSL's stays for page bodies, where its SHA-NI code is the faster."""
    for name in ("_sha2", "_sha256"):
        try:
            sha256: Callable[[bytes], _Sha256] = importlib.import_module(name).sha256
        except (ImportError, AttributeError):
            continue
        return sha256
    return hashlib.sha256  # pragma: no cover - every CPython build has one of the two


_short_sha256 = _sha256_for_short_inputs()


class BaseNeed(IntEnum):
    """How much of the base URL `normalise_url(href, base)` reads, judged from `href` alone.

    Memos of normalised links key on it (see urls/link_memo.py), so each value promises:
    two bases with the same part named here give the same answer (URL or InvalidUrl).
    """

    NOTHING = 0  # "http(s)://h...", or another scheme ("mailto:"), which is refused anyway
    ORIGIN = 1  # "/path", "//h/path": the base's scheme and authority (`base_scopes[0]`)
    DIRECTORY = 2  # "path", "../path": also its path up to the last "/" (`base_scopes[1]`)
    WHOLE = 3  # anything else: "?q", "#f", "http:x", odd spacing, ...


# A scheme as urlsplit reads one: a letter, then scheme characters up to the first ":".
_SCHEME = re.compile(r"[A-Za-z][A-Za-z0-9+.\-]*:")


def base_need(href: str) -> BaseNeed:
    """Which part of the base `href` resolves against (conservative: WHOLE when unsure).

    The checks mirror `_clean` (which strips nothing before "h" or "/" and removes no letter,
    digit or "."), `urlsplit` (no ":", no scheme) and `_resolve`:
    - "http://" or "https://": a host of its own, or none, and then InvalidUrl whatever the
      base says ("http:///x" read against an http base is "//" + "/x", still without a host);
    - another scheme ("mailto:", "javascript:"; no tab inside, which `_clean` would drop):
      InvalidUrl whatever the base says;
    - "/": path-absolute, or network-path ("//h", "/\\h") which reads only the scheme;
    - a letter, digit or "." and no ":" anywhere: a relative path, never empty, so the base's
      query (which "", "?q" and "#f" would keep) is not read.
    """
    first = href[:1]
    if first == "/":
        return BaseNeed.ORIGIN
    if ":" in href:
        if href.startswith(("http://", "https://")):
            return BaseNeed.NOTHING
        scheme = _SCHEME.match(href)
        if scheme is not None and scheme.group().lower() not in ("http:", "https:"):
            return BaseNeed.NOTHING
        return BaseNeed.WHOLE
    if first.isalnum() or first == ".":
        return BaseNeed.DIRECTORY
    return BaseNeed.WHOLE


def base_scopes(base: str) -> tuple[str, str]:
    """(origin, directory) of `base` as `_resolve` reads them, unnormalised.

    "http://h:80/a/b?q" gives ("http://h:80", "http://h:80/a/"); distinct (scheme, authority)
    or (scheme, authority, directory) give distinct strings, since an authority has no "/".
    Raises InvalidUrl if `base` is not an absolute http(s) URL.
    """
    scheme, netloc, path, _ = _split_base(base)
    origin = f"{scheme}://{netloc}"
    return origin, origin + path[: path.rfind("/") + 1]


def without_fragment(href: str, rules: NormaliseRules = DEFAULT_RULES) -> str:
    """`href` cut before its "#" when that cannot change `normalise_url`'s answer, else `href`.

    The fragment is dropped anyway; the cut is unsafe only for a lone "#f" (whose empty path
    keeps the base's query), when a space would end up last and be stripped ("a #f" keeps
    "a%20"), or for a text long enough that the fragment decides the length check.
    """
    cut = href.find("#")
    if cut <= 0 or href[cut - 1] <= " " or len(href) > 4 * rules.max_length:
        return href
    return href[:cut]

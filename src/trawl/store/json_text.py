"""Compact JSON text for the records written once a page (pure).

Why not `json.dumps`: a site's host record (~2 KB: its clock, robots rules, trap
referrers) and a page's record and event are encoded for every page stored, and the
stdlib's encoder took ~55 + ~20 µs a page for them; orjson takes a tenth of that
(bench/RESULTS.md, twenty-eighth session). The text is the same JSON, with differences
a JSON reader does not see or that records never meet:
- characters past ASCII are written as UTF-8, not as `\\u` escapes;
- a float with an exponent is spelled orjson's way (`1e-7`, not `1e-07`);
- a NaN or an infinity is written as `null` (as JavaScript's `JSON.stringify` does);
  records hold none: the PostgreSQL store refuses them.
What orjson refuses (an integer past 64 bits, a lone surrogate, a key that is not a
string) goes to the stdlib's encoder instead, which writes it as before.
"""

from __future__ import annotations

import json

import orjson

__all__ = ["compact_json"]


def compact_json(data: object) -> str:
    """`json.dumps(data, separators=(",", ":"))`, in the form described above."""
    try:
        return orjson.dumps(data).decode()
    except orjson.JSONEncodeError:
        return json.dumps(data, separators=(",", ":"))

"""compact_json: the records' JSON text reads back as the stdlib's, whatever the record."""

from __future__ import annotations

import json
import math

from hypothesis import given
from hypothesis import strategies as st

from trawl.store.json_text import compact_json

_scalars = (
    st.none()
    | st.booleans()
    | st.integers()  # past 64 bits too: orjson refuses those, the stdlib writes them
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text()  # lone surrogates too: orjson refuses those
)
_json = st.recursive(
    _scalars,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4),
    max_leaves=20,
)


@given(_json)
def test_the_text_reads_back_as_the_stdlibs_text_does(data: object):
    text = compact_json(data)
    assert json.loads(text) == json.loads(json.dumps(data, separators=(",", ":")))


def test_ascii_records_are_the_stdlibs_text_byte_for_byte():
    record = {
        "url": "http://a.test/?q=1",
        "n": 3,
        "at": 1796533082.0326107,
        "x": None,
        "nested": {"list": [1.5, True, ""], "empty": {}},
    }
    assert compact_json(record) == json.dumps(record, separators=(",", ":"))


def test_what_orjson_refuses_is_written_by_the_stdlib():
    assert compact_json({"big": 2**70}) == '{"big":1180591620717411303424}'
    assert compact_json({"s": "\ud800"}) == '{"s":"\\ud800"}'
    assert compact_json({1: "a"}) == '{"1":"a"}'


def test_past_ascii_is_utf8_and_non_finite_numbers_are_null():
    assert compact_json({"title": "Café ☕"}) == '{"title":"Café ☕"}'
    assert json.loads(compact_json({"a": math.nan, "b": -math.inf})) == {"a": None, "b": None}

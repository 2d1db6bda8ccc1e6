from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from trawl.histogram import Histogram


def test_observations_land_in_the_first_bucket_that_holds_them() -> None:
    h = Histogram((0.1, 1.0))
    for value in (0.05, 0.1, 0.5, 1.0, 3.0, math.nan):
        h.observe(value)
    assert h.cumulative() == [(0.1, 2), (1.0, 4), (math.inf, 5)]
    assert h.count == 5
    assert h.sum == pytest.approx(4.65)
    assert h.quantile(0.5) == 1.0
    assert Histogram().quantile(0.5) is None


def test_bounds_must_increase() -> None:
    with pytest.raises(ValueError, match="increasing"):
        Histogram((1.0, 0.5))
    with pytest.raises(ValueError, match="finite"):
        Histogram((1.0, math.inf))


@given(st.lists(st.floats(0, 120, allow_nan=False), max_size=200))
def test_cumulative_counts_never_fall_and_end_at_the_count(values: list[float]) -> None:
    h = Histogram()
    for v in values:
        h.observe(v)
    counts = [n for _, n in h.cumulative()]
    assert counts == sorted(counts)
    assert counts[-1] == h.count == len(values)
    assert all(n == sum(v <= b for v in values) for b, n in h.cumulative())

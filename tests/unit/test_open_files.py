"""The open-files plan (fetch/open_files.py): pure, limits passed in."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from trawl.fetch.open_files import RESERVED_FDS, plan_open_files


def test_the_soft_limit_is_raised_for_the_cap_and_the_crawls_own_files() -> None:
    plan = plan_open_files(1024, 1_048_576, 2000)
    assert (plan.soft_limit, plan.max_connections, plan.lowered) == (
        2000 + RESERVED_FDS,
        2000,
        False,
    )


def test_a_hard_limit_too_low_lowers_the_cap_and_says_so() -> None:
    plan = plan_open_files(1024, 1024, 2000)
    assert (plan.soft_limit, plan.max_connections, plan.lowered) == (
        1024,
        1024 - RESERVED_FDS,
        True,
    )


def test_a_tiny_limit_keeps_half_for_the_crawls_own_files() -> None:
    assert plan_open_files(128, 128, 2000).max_connections == 64
    assert plan_open_files(1, 1, 2000).max_connections == 1


def test_a_higher_soft_limit_is_never_lowered() -> None:
    plan = plan_open_files(50_000, 50_000, 2000)
    assert (plan.soft_limit, plan.max_connections, plan.lowered) == (50_000, 2000, False)


def test_no_cap_asked_takes_what_the_hard_limit_allows() -> None:
    plan = plan_open_files(1024, 8192, 0)
    assert (plan.soft_limit, plan.max_connections, plan.lowered) == (
        8192,
        8192 - RESERVED_FDS,
        False,
    )
    assert plan_open_files(1024, None, 0).soft_limit == 1 << 20


@given(
    soft=st.integers(1, 1 << 20),
    extra=st.one_of(st.none(), st.integers(0, 1 << 20)),
    wanted=st.integers(0, 100_000),
)
def test_the_plan_stays_within_the_limits(soft: int, extra: int | None, wanted: int) -> None:
    hard = None if extra is None else soft + extra
    plan = plan_open_files(soft, hard, wanted)
    assert soft <= plan.soft_limit <= (1 << 20 if hard is None else max(hard, soft))
    assert (
        1
        <= plan.max_connections
        <= max(1, plan.soft_limit - min(RESERVED_FDS, plan.soft_limit // 2))
    )
    if wanted:
        assert plan.max_connections <= wanted
        assert plan.lowered == (plan.max_connections < wanted)

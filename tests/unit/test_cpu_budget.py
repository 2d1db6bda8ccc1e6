"""The browser's CPU budget (render/cpu_budget.py, issue 18): pure arithmetic."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from trawl.render.cpu_budget import CpuBudget


def test_a_render_holds_the_budget_for_its_cpu_over_the_share() -> None:
    budget = CpuBudget(share=0.25)
    assert budget.may_start(0.0)
    budget.charge(started_at=10.0, cpu_s=1.9)  # 1.9 CPU-s at a quarter core: 7.6 s
    assert not budget.may_start(17.5)
    assert budget.may_start(17.6)


def test_a_render_cheaper_than_its_wall_time_leaves_the_budget_free() -> None:
    budget = CpuBudget(share=1.0)
    budget.charge(started_at=10.0, cpu_s=0.5)
    assert budget.may_start(10.5)


def test_renders_at_once_add_up() -> None:
    budget = CpuBudget(share=0.5)
    budget.charge(started_at=0.0, cpu_s=1.0)  # free at 2.0
    budget.charge(started_at=0.5, cpu_s=1.0)  # started inside the first's: free at 4.0
    assert not budget.may_start(3.9)
    assert budget.may_start(4.0)


def test_a_negative_count_charges_nothing_and_a_share_must_be_positive() -> None:
    budget = CpuBudget(share=0.25)
    budget.charge(started_at=5.0, cpu_s=-3.0)  # a browser recycled under the render
    assert budget.may_start(5.0)
    for share in (0.0, -1.0, float("nan")):
        with pytest.raises(ValueError, match="cpu_share"):
            CpuBudget(share=share)


@given(
    st.floats(0.01, 4.0),
    st.lists(st.tuples(st.floats(0, 1e4), st.floats(0, 30)), min_size=1, max_size=30),
)
def test_the_browser_never_gets_more_than_its_share_over_the_renders_span(
    share: float, renders: list[tuple[float, float]]
) -> None:
    """Renders started only when the budget allowed used at most `share` cores over the
    span from the first start to the budget's next free time."""
    budget = CpuBudget(share=share)
    now, first, used = 0.0, None, 0.0
    for gap, cpu_s in renders:
        now = max(now + gap, budget.free_at)  # the runner waits for the budget
        assert budget.may_start(now)
        first = now if first is None else first
        budget.charge(now, cpu_s)
        used += cpu_s
    assert first is not None
    assert used <= share * (budget.free_at - first) + 1e-6 * max(1.0, used)

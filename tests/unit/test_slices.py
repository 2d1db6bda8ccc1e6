"""loop.slices: long intakes in slices, the event loop turning between two."""

from __future__ import annotations

import asyncio

from hypothesis import given
from hypothesis import strategies as st

from trawl.loop.slices import in_slices


def _sliced(items: list[int], size: int) -> tuple[list[list[int]], list[int]]:
    """The slices taken, and how many callbacks had run at each take."""

    async def main() -> tuple[list[list[int]], list[int]]:
        taken: list[list[int]] = []
        turns_seen: list[int] = []
        turns = [0]

        def tick() -> None:
            turns[0] += 1

        def take(part: object) -> None:
            taken.append(list(part))  # type: ignore[call-overload]
            turns_seen.append(turns[0])
            asyncio.get_running_loop().call_soon(tick)  # runs at the loop's next turn

        await in_slices(items, take, size)
        return taken, turns_seen

    return asyncio.run(main())


@given(st.lists(st.integers(), max_size=50), st.integers(1, 12))
def test_every_item_once_in_order_in_slices_of_at_most_size(items: list[int], size: int) -> None:
    taken, turns_seen = _sliced(items, size)
    assert [x for part in taken for x in part] == items
    assert all(len(part) == size for part in taken[:-1])
    assert all(0 < len(part) <= size for part in taken)
    # The loop turned before each slice after the first (a callback queued at the previous
    # take had run), and never before the first.
    assert turns_seen == list(range(len(taken)))


def test_one_slice_takes_no_turn() -> None:
    taken, turns_seen = _sliced([1, 2, 3], 3)
    assert taken == [[1, 2, 3]]
    assert turns_seen == [0]

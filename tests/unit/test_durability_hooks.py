"""loop.durability: the hook the WAL checkpoints call back keeps no strong reference."""

from __future__ import annotations

import gc
import weakref

from trawl.loop.durability import _weakly


class _Owner:
    def __init__(self) -> None:
        self.calls = 0
        self.hook = _weakly(self.commit)  # the owner holds its own hook, as Durability does

    def commit(self) -> None:
        self.calls += 1


def test_the_hook_calls_its_owner_while_it_lives() -> None:
    owner = _Owner()
    owner.hook()
    owner.hook()
    assert owner.calls == 2


def test_an_owner_holding_its_own_hook_is_freed_without_the_collector() -> None:
    gc.disable()  # freed by reference counting alone: no cycle through the hook
    try:
        owner = _Owner()
        hook = owner.hook
        ref = weakref.ref(owner)
        del owner
        assert ref() is None
        hook()  # a call after the owner is gone does nothing
    finally:
        gc.enable()

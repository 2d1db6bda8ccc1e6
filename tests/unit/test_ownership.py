"""Partition leases as pure state (cluster mode, issue 7), on a fake clock.

The last tests run two members against one lease store in a pure discrete-event simulation
that behaves as Redis does: a lease expires `ttl_s` after the server *received* the acquire
or renew. Requests and answers are delayed, lost or delivered after the shell gave up.
"""

from __future__ import annotations

import heapq
import itertools
import random
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, TypeVar

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from trawl.cluster.ownership import (
    Acquire,
    Checkpoint,
    LeaseState,
    LeaseTiming,
    Ownership,
    OwnershipStats,
    Release,
    Renew,
)

if TYPE_CHECKING:
    from collections.abc import Callable

    from trawl.cluster.ownership import Action, Request

A = TypeVar("A", Acquire, Renew, Release, Checkpoint)
TIMING = LeaseTiming(ttl_s=30.0, margin_s=10.0, renew_after_s=10.0, retry_s=2.0)


def only(actions: list[Action], kind: type[A]) -> A:
    """The one action `due` returned, which must be a `kind`."""
    assert len(actions) == 1, actions
    assert isinstance(actions[0], kind), actions
    return actions[0]


def owned(partition: int = 0, token: int = 7, at: float = 0.0) -> tuple[Ownership, Acquire]:
    """An Ownership that acquired `partition` with a request sent at `at`."""
    ownership = Ownership(TIMING)
    ownership.assign({partition}, now=at)
    request = only(ownership.due(at), Acquire)
    ownership.acquired(request, token, now=at + 0.5)
    return ownership, request


# -- one member, fake clock --------------------------------------------------------------------
def test_never_fetches_before_the_lease_is_confirmed() -> None:
    ownership = Ownership(TIMING)
    ownership.assign({3}, now=100.0)
    assert not ownership.may_fetch(3, 100.0)
    request = only(ownership.due(100.0), Acquire)
    assert request == Acquire(3, sent_at=100.0, seq=request.seq)
    assert ownership.state(3) is LeaseState.ACQUIRING
    assert ownership.due(100.0) == []  # one request in flight per partition
    assert not ownership.may_fetch(3, 100.1)
    ownership.acquired(request, None, now=100.2)  # another member holds it
    assert not ownership.may_fetch(3, 100.2)
    assert ownership.state(3) is LeaseState.WANTED
    assert ownership.due(102.1) == []
    retry = only(ownership.due(102.2), Acquire)  # retry_s after the refusal
    ownership.acquired(retry, 8, now=102.3)
    assert ownership.may_fetch(3, 102.3)
    assert ownership.fetch_until(3) == 102.2 + 30.0 - 10.0


def test_stale_and_unknown_answers_grant_nothing() -> None:
    ownership = Ownership(TIMING)
    ownership.assign({0}, now=0.0)
    first = only(ownership.due(0.0), Acquire)
    ownership.failed(first, now=1.0)  # the shell timed out; the answer may still come
    ownership.acquired(first, 5, now=1.5)  # ...and does: too late, ignored
    assert not ownership.may_fetch(0, 1.5)
    ownership.acquired(Acquire(9, 0.0, 999), 6, now=1.5)  # never asked
    assert ownership.fetchable(1.5) == frozenset()
    assert ownership.state(9) is None


def test_failing_renewals_stop_fetching_before_ttl_from_the_last_good_send() -> None:
    ownership, _ = owned(at=0.0)
    renew = only(ownership.due(10.0), Renew)
    ownership.renewed(renew, True, now=14.0)  # slow answer: the deadline counts from 10.0
    assert ownership.fetch_until(0) == 10.0 + 30.0 - 10.0
    now = 20.0
    while now < 40.0:  # Redis unreachable from here on: every renew times out
        for action in ownership.due(now):
            assert isinstance(action, Renew)
            ownership.failed(action, now=now + 1.0)
        assert ownership.may_fetch(0, now) == (now < 30.0)
        now += 0.5
    assert ownership.may_fetch(0, 29.999)
    assert not ownership.may_fetch(0, 30.0)  # 10 s before the server could expire it at 40
    assert ownership.state(0) is LeaseState.OWNED  # still holds the token to renew with


def test_a_late_renewal_that_succeeds_restores_fetching() -> None:
    ownership, _ = owned(at=0.0)
    late = only(ownership.due(25.0), Renew)  # the shell was stalled past renew_after_s
    assert not ownership.may_fetch(0, 25.0)
    ownership.renewed(late, True, now=25.1)
    assert ownership.may_fetch(0, 25.1)
    assert ownership.fetch_until(0) == 45.0


def test_a_refused_renewal_stops_fetching_at_once() -> None:
    ownership, _ = owned(at=0.0)
    renew = only(ownership.due(10.0), Renew)
    ownership.renewed(renew, False, now=10.1)
    assert not ownership.may_fetch(0, 10.1)
    assert ownership.state(0) is LeaseState.WANTED
    only(ownership.due(10.1), Acquire)


def test_hand_over_stops_checkpoints_then_releases() -> None:
    ownership, _ = owned(token=7, at=0.0)
    ownership.assign(set(), now=5.0)
    assert not ownership.may_fetch(0, 5.0)  # stopped before anything else happens
    assert ownership.due(5.0) == [Checkpoint(0, 7)]
    assert ownership.due(6.0) == []  # asked once; the renewal is not due yet
    renew = only(ownership.due(10.0), Renew)  # the lease is kept while the checkpoint runs
    ownership.checkpointed(0, now=11.0)
    assert ownership.state(0) is LeaseState.RELEASING
    assert ownership.due(11.0) == []  # the renewal is still out
    ownership.renewed(renew, True, now=11.5)
    release = only(ownership.due(11.5), Release)
    assert release == Release(0, 7, sent_at=11.5, seq=release.seq)
    ownership.released(release, now=11.6)
    assert ownership.state(0) is None
    assert repr(ownership) == "<Ownership assigned=0 idle>"


def test_hand_over_called_off_keeps_the_lease() -> None:
    ownership, _ = owned(at=0.0)
    ownership.assign(set(), now=5.0)
    assert ownership.due(5.0) == [Checkpoint(0, 7)]
    ownership.assign({0}, now=6.0)
    assert ownership.may_fetch(0, 6.0)
    ownership.checkpointed(0, now=7.0)  # the checkpoint ends after all: no release
    assert ownership.state(0) is LeaseState.OWNED


def test_lease_lost_during_hand_over_is_not_released() -> None:
    ownership, _ = owned(at=0.0)
    ownership.assign(set(), now=5.0)
    assert ownership.due(5.0) == [Checkpoint(0, 7)]
    renew = only(ownership.due(10.0), Renew)
    ownership.renewed(renew, False, now=10.5)
    assert ownership.due(20.0) == []
    assert ownership.next_due_at() == float("inf")  # only the checkpoint can move it on
    ownership.checkpointed(0, now=21.0)
    assert ownership.state(0) is None


def test_acquired_after_being_assigned_away_is_released_without_fetching() -> None:
    ownership = Ownership(TIMING)
    ownership.assign({0}, now=0.0)
    request = only(ownership.due(0.0), Acquire)
    ownership.assign(set(), now=0.1)
    ownership.acquired(request, 4, now=0.2)
    assert not ownership.may_fetch(0, 0.2)
    release = only(ownership.due(0.2), Release)
    assert release.token == 4
    ownership.failed(release, now=1.2)  # no answer: release again after retry_s
    assert ownership.due(3.1) == []
    again = only(ownership.due(3.2), Release)
    ownership.released(again, now=3.3)
    assert ownership.state(0) is None


def test_stats_repr_and_next_due() -> None:
    ownership, _ = owned(partition=1, at=0.0)
    ownership.assign({1, 2}, now=1.0)
    assert ownership.next_due_at() == 1.0
    assert ownership.stats(1.0) == OwnershipStats(1, 0, 1, 0, 0, fetchable=1)
    assert repr(ownership) == "<Ownership assigned=2 wanted=1 owned=1>"
    only(ownership.due(1.0), Acquire)
    assert ownership.next_due_at() == 10.0  # partition 1's renewal


@pytest.mark.parametrize(
    ("timing", "message"),
    [
        ({"margin_s": 0.0}, "margin_s"),
        ({"margin_s": 30.0}, "margin_s"),
        ({"renew_after_s": 20.0}, "renew_after_s"),
        ({"retry_s": 0.0}, "retry_s"),
    ],
)
def test_bad_timing_is_refused(timing: dict[str, float], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        LeaseTiming(**timing)


# -- two members, one lease store: a pure simulation -------------------------------------------
@dataclass
class SimStore:
    """One lease per partition, kept as Redis keeps it (expiry from the receive time)."""

    ttl_s: float
    leases: dict[int, tuple[str, int, float]] = field(default_factory=dict)  # member, token, exp
    tokens: int = 0

    def holder(self, partition: int, t: float) -> str | None:
        lease = self.leases.get(partition)
        return lease[0] if lease is not None and t < lease[2] else None

    def apply(self, member: str, request: Request, t: float) -> int | bool | None:
        lease = self.leases.get(request.partition)
        live = lease is not None and t < lease[2]
        if isinstance(request, Acquire):
            if live:
                return None
            self.tokens += 1
            self.leases[request.partition] = (member, self.tokens, t + self.ttl_s)
            return self.tokens
        if not (live and lease is not None and lease[1] == request.token):
            return False
        if isinstance(request, Renew):
            self.leases[request.partition] = (member, request.token, t + self.ttl_s)
        else:
            del self.leases[request.partition]
        return True


@dataclass
class SimMember:
    name: str
    ownership: Ownership
    clock_offset: float  # monotonic clocks have arbitrary origins...
    clock_rate: float  # ...and run at slightly different rates

    def now(self, t: float) -> float:
        return self.clock_offset + t * self.clock_rate


class Simulation:
    """Members tick every `tick_s`; each request goes up, is applied, and its answer comes down.

    `network(t)` draws (up_delay, down_delay) in seconds; None for a lost message. The shell
    gives up after `timeout_s` and reports `failed`; a late request is still applied.
    """

    def __init__(
        self, rng: random.Random, lossy_until: float, checkpoint_s: float, slow: bool = True
    ) -> None:
        self.store = SimStore(TIMING.ttl_s)
        self.rng, self.lossy_until, self.checkpoint_s = rng, lossy_until, checkpoint_s
        self.slow = slow  # before lossy_until: losses, and delays beyond the shell's timeout
        self.timeout_s, self.tick_s = 3.0, 0.5
        self.events: list[tuple[float, int, Callable[[float], None]]] = []
        self.order = itertools.count()
        self.first_fetch: dict[tuple[str, int], float] = {}
        self.checkpointed_at: dict[tuple[str, int], float] = {}

    def at(self, t: float, action: Callable[[float], None]) -> None:
        heapq.heappush(self.events, (t, next(self.order), action))

    def delay(self, t: float) -> float | None:
        if t >= self.lossy_until or not self.slow:  # healed: fast and reliable
            return 0.01
        if self.rng.random() < 0.2:
            return None
        return self.rng.choice([0.001, 0.01, 0.2, 1.0, self.rng.uniform(0, 6.0)])

    def send(self, member: SimMember, request: Request, t: float) -> None:
        answered = [False]

        def give_up(t: float) -> None:
            if not answered[0]:
                answered[0] = True
                member.ownership.failed(request, member.now(t))

        def deliver(answer: int | bool | None) -> Callable[[float], None]:
            def arrive(t: float) -> None:
                if not answered[0]:
                    answered[0] = True
                    self.answer(member, request, answer, member.now(t))

            return arrive

        def apply(t: float) -> None:
            answer = self.store.apply(member.name, request, t)
            if (lease := self.store.leases.get(request.partition)) is not None:
                self.at(lease[2], self.check)  # look again the moment it could expire
            if (down := self.delay(t)) is not None:
                self.at(t + down, deliver(answer))

        if (up := self.delay(t)) is not None:
            self.at(t + up, apply)
        self.at(t + self.timeout_s, give_up)

    @staticmethod
    def answer(member: SimMember, request: Request, answer: int | bool | None, now: float) -> None:
        if isinstance(request, Acquire):
            assert not isinstance(answer, bool)
            member.ownership.acquired(request, answer, now)
        elif isinstance(request, Renew):
            member.ownership.renewed(request, bool(answer), now)
        else:
            member.ownership.released(request, now)

    def tick(self, member: SimMember) -> Callable[[float], None]:
        def run(t: float) -> None:
            for action in member.ownership.due(member.now(t)):
                if isinstance(action, Checkpoint):
                    done = self.checkpoint_done(member, action.partition)
                    self.at(t + self.checkpoint_s, done)
                else:
                    self.send(member, action, t)
            self.at(t + self.tick_s, run)

        return run

    def checkpoint_done(self, member: SimMember, partition: int) -> Callable[[float], None]:
        def done(t: float) -> None:
            self.checkpointed_at[member.name, partition] = t
            member.ownership.checkpointed(partition, member.now(t))

        return done

    def check(self, t: float) -> None:
        """Whoever may fetch holds the lease on the server at this very instant."""
        for member in self.members:
            for partition in member.ownership.fetchable(member.now(t)):
                assert self.store.holder(partition, t) == member.name, (t, partition)
                self.first_fetch.setdefault((member.name, partition), t)

    def run(self, members: list[SimMember], until: float) -> None:
        self.members = members
        for member in members:
            self.at(0.0, self.tick(member))
        t = 0.0
        while self.events and t < until:
            t, _, action = heapq.heappop(self.events)
            self.check(t)  # just before the event (states only change at events or deadlines)
            action(t)
            self.check(t)


def member(name: str, rng: random.Random) -> SimMember:
    return SimMember(name, Ownership(TIMING), rng.uniform(-1e3, 1e3), 1 + rng.uniform(-1e-3, 1e-3))


def assigner(who: SimMember, partitions: set[int]) -> Callable[[float], None]:
    return lambda t: who.ownership.assign(partitions, who.now(t))


@settings(max_examples=60, deadline=None)
@given(rng=st.randoms(use_true_random=False), moves=st.integers(1, 8))
def test_two_members_never_fetch_one_partition_at_once(rng: random.Random, moves: int) -> None:
    """Assignments disagree at random (membership news reaches members at different times),
    the network delays and drops; at no instant does a member fetch without holding the lease,
    so two never fetch one partition at once. Once the network heals, the final owners fetch.
    """
    sim = Simulation(rng, lossy_until=150.0, checkpoint_s=rng.choice([0.0, 1.0, 15.0]))
    a, b = member("a", rng), member("b", rng)
    for _ in range(moves):
        for who in (a, b):
            subset = {p for p in range(3) if rng.random() < 0.5}
            sim.at(rng.uniform(0, 100), assigner(who, subset))
    sim.at(110.0, assigner(a, {0}))
    sim.at(110.0, assigner(b, {1, 2}))
    sim.run([a, b], until=300.0)
    assert a.ownership.fetchable(a.now(300.0)) == {0}
    assert b.ownership.fetchable(b.now(300.0)) == {1, 2}


def test_hand_over_new_owner_starts_only_after_the_old_one_checkpointed() -> None:
    rng = random.Random(7)
    sim = Simulation(rng, lossy_until=0.0, checkpoint_s=15.0, slow=False)  # 15 > renew_after_s
    a, b = member("a", rng), member("b", rng)
    sim.at(0.0, assigner(a, {0}))
    sim.at(20.0, assigner(b, {0}))  # b learns of the new assignment first...
    sim.at(25.0, assigner(a, set()))  # ...and a a bit later
    sim.run([a, b], until=120.0)
    assert sim.first_fetch["a", 0] < 25.0
    assert sim.checkpointed_at["a", 0] >= 25.0 + 15.0
    assert sim.first_fetch["b", 0] > sim.checkpointed_at["a", 0]
    assert sim.first_fetch["b", 0] < sim.checkpointed_at["a", 0] + 15.0  # prompt, not ttl-late

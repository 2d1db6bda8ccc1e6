"""Partition leases as pure state: whether this member may fetch a partition, and what to send.

How this works:
- The shell says which partitions the assignment gives this member (`assign`), asks what to
  send (`due(now)`), sends those requests to the lease store and reports each answer
  (`acquired`, `renewed`, `released`, or `failed` for no answer). A `Checkpoint` action asks
  the shell to make the partition's frontier and stream position durable and then call
  `checkpointed`. `now` is this machine's monotonic clock; nothing here reads a clock.
- One partition moves through these states (a partition in none of them has no slot):

      WANTED ──acquire sent──▶ ACQUIRING ──token──▶ OWNED ◀─┐ renew (every renew_after_s)
        ▲                         │                   │     │
        └──── no token / failed ──┘   assigned away ──┤─────┘
        ▲                                             ▼
        └──── renew refused (the lease is gone) ── HANDING_OVER: no fetching, renews go on,
                                                      │         Checkpoint asked once
                                                      ▼ checkpointed
                                                 RELEASING ──released──▶ gone (or WANTED)

- The timing rule. The server expires a lease `ttl_s` after it *received* the acquire or the
  last renew, which is no earlier than when this member *sent* it. So, whatever the network
  delay, the lease is surely still ours until `sent_at + ttl_s` of the last successful request,
  and `may_fetch` is true only in OWNED and before `sent_at + ttl_s - margin_s`. The margin
  covers the rate difference between the two clocks and how late the shell cuts a request
  still on the wire at the deadline (cluster/lease_cuts.py). `sent_at` is the `now` given to
  the `due` call that returned the request, so the shell must send after that call.
- Renewing past the local deadline is safe: tokens are never reused, so a renew that finds our
  token proves the lease was ours without a break, and its own `sent_at` starts a new deadline.
- A new owner can't start early: acquiring is `SET NX`, so it succeeds only once the old owner
  released (after it stopped fetching and checkpointed) or its lease expired on the server
  (after its local deadline). If the old owner's renewals fail during a hand-over, the lease
  can expire before its checkpoint is done: the new owner then starts from the previous
  checkpoint, and links in the streams are kept until a checkpoint covers them.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Iterable


class LeaseState(Enum):
    WANTED = "wanted"  # assigned to us, no lease: acquire when due
    ACQUIRING = "acquiring"  # acquire sent, no answer yet
    OWNED = "owned"  # lease held: fetch until the local deadline, renew on schedule
    HANDING_OVER = "handing_over"  # assigned away: not fetching, lease kept until checkpointed
    RELEASING = "releasing"  # checkpointed (or never fetched): release due or sent


@dataclass(frozen=True, slots=True)
class LeaseTiming:
    """Lease durations in seconds; see the module docstring for how they relate.

    The shell cuts requests still on the wire at the local deadline, so `margin_s` covers
    only how late that cut runs and the clocks' rates. `ttl_s` is also how long a crashed
    member's partitions stay unfetched.
    """

    ttl_s: float = 5.0  # lease time the server grants per acquire or renew
    margin_s: float = 1.5  # stop fetching this long before the server could expire the lease
    renew_after_s: float = 1.5  # renew this long after the last successful request was sent
    retry_s: float = 0.5  # wait after a refused acquire or a request without an answer

    def __post_init__(self) -> None:
        if not 0 < self.margin_s < self.ttl_s:
            raise ValueError(f"margin_s must be in (0, ttl_s={self.ttl_s}), got {self.margin_s}")
        if not 0 < self.renew_after_s < self.ttl_s - self.margin_s:
            raise ValueError(
                f"renew_after_s must be in (0, ttl_s - margin_s = {self.ttl_s - self.margin_s}),"
                f" got {self.renew_after_s}: renewals must come before the fetch deadline"
            )
        if self.retry_s <= 0:
            raise ValueError(f"retry_s must be > 0, got {self.retry_s}")


@dataclass(frozen=True, slots=True)
class Acquire:
    partition: int
    sent_at: float
    seq: int


@dataclass(frozen=True, slots=True)
class Renew:
    partition: int
    token: int
    sent_at: float
    seq: int


@dataclass(frozen=True, slots=True)
class Release:
    partition: int
    token: int
    sent_at: float
    seq: int


@dataclass(frozen=True, slots=True)
class Checkpoint:
    """Make the partition durable, then call `Ownership.checkpointed` (not a lease request)."""

    partition: int
    token: int | None


HANDING = LeaseState.HANDING_OVER
Request = Acquire | Renew | Release
Action = Acquire | Renew | Release | Checkpoint


@dataclass(frozen=True, slots=True)
class OwnershipStats:
    wanted: int
    acquiring: int
    owned: int
    handing_over: int
    releasing: int
    fetchable: int


@dataclass(slots=True)
class _Slot:
    state: LeaseState
    next_at: float  # when the next lease request for this partition is due
    token: int | None = None  # None: we hold no lease (or learnt it is gone)
    fetch_until: float = float("-inf")  # local deadline: fetch only before it, and in OWNED
    pending: Request | None = None  # the request in flight: at most one per partition
    checkpoint_asked: bool = False


class Ownership:
    """This member's partition leases. Written and read by the one ownership shell task."""

    def __init__(self, timing: LeaseTiming) -> None:
        self.timing = timing
        self._wanted: frozenset[int] = frozenset()
        self._slots: dict[int, _Slot] = {}
        self._seq = 0

    # -- questions ---------------------------------------------------------------------------
    def may_fetch(self, partition: int, now: float) -> bool:
        """True only while we hold a confirmed lease and are before its local deadline."""
        slot = self._slots.get(partition)
        return slot is not None and slot.state is LeaseState.OWNED and now < slot.fetch_until

    def fetchable(self, now: float) -> frozenset[int]:
        return frozenset(p for p in self._slots if self.may_fetch(p, now))

    def fetch_until(self, partition: int) -> float:
        """The local deadline of the partition's lease; -inf when we hold none."""
        slot = self._slots.get(partition)
        return slot.fetch_until if slot is not None and slot.token is not None else float("-inf")

    def state(self, partition: int) -> LeaseState | None:
        slot = self._slots.get(partition)
        return slot.state if slot is not None else None

    def next_due_at(self) -> float:
        """When `due` has something to send at the earliest (inf: only answers can change it)."""
        waiting = [s.next_at for s in self._slots.values() if self._has_request(s)]
        return min(waiting, default=float("inf"))

    def stats(self, now: float) -> OwnershipStats:
        states = [slot.state for slot in self._slots.values()]
        return OwnershipStats(
            wanted=states.count(LeaseState.WANTED),
            acquiring=states.count(LeaseState.ACQUIRING),
            owned=states.count(LeaseState.OWNED),
            handing_over=states.count(LeaseState.HANDING_OVER),
            releasing=states.count(LeaseState.RELEASING),
            fetchable=len(self.fetchable(now)),
        )

    def __repr__(self) -> str:
        counts = {state.value: 0 for state in LeaseState}
        for slot in self._slots.values():
            counts[slot.state.value] += 1
        shown = " ".join(f"{name}={n}" for name, n in counts.items() if n)
        return f"<Ownership assigned={len(self._wanted)} {shown or 'idle'}>"

    # -- inputs ------------------------------------------------------------------------------
    def assign(self, partitions: Iterable[int], now: float) -> None:
        """The partitions the current assignment gives this member (after a member change)."""
        self._wanted = frozenset(partitions)
        for partition in self._wanted - self._slots.keys():
            self._slots[partition] = _Slot(LeaseState.WANTED, next_at=now)
        for partition, slot in list(self._slots.items()):
            wanted = partition in self._wanted
            if slot.state is LeaseState.OWNED and not wanted:
                slot.state, slot.checkpoint_asked = LeaseState.HANDING_OVER, False
            elif slot.state is LeaseState.HANDING_OVER and wanted and slot.token is not None:
                slot.state = LeaseState.OWNED  # still ours: the hand-over is called off
            elif slot.state is LeaseState.WANTED and not wanted:
                del self._slots[partition]

    def due(self, now: float) -> list[Action]:
        """What to send now, in partition order; requests are in flight from this call on."""
        actions: list[Action] = []
        for partition in sorted(self._slots):
            actions.extend(self._due_for(partition, self._slots[partition], now))
        return actions

    def acquired(self, request: Acquire, token: int | None, now: float) -> None:
        """The answer to an acquire: a fencing token, or None when another member holds it."""
        slot = self._answered(request)
        if slot is None:
            return
        if token is None:
            self._lose(request.partition, slot, now + self.timing.retry_s)
        elif request.partition in self._wanted:
            slot.state, slot.token = LeaseState.OWNED, token
            self._extend(slot, request.sent_at)
        else:  # assigned away while acquiring: never fetched, so nothing to checkpoint
            slot.state, slot.token, slot.next_at = LeaseState.RELEASING, token, now

    def renewed(self, request: Renew, ok: bool, now: float) -> None:
        """The answer to a renew: ok, or False when the lease is no longer ours."""
        slot = self._answered(request)
        if slot is None:
            return
        if ok:
            self._extend(slot, request.sent_at)
            if slot.state is LeaseState.RELEASING:
                slot.next_at = now  # checkpointed while this renew was out: release now
        elif slot.state is LeaseState.OWNED:
            self._lose(request.partition, slot, now)
        else:  # handing over or releasing: the lease is gone, so there is nothing to release
            slot.token, slot.fetch_until = None, float("-inf")
            if slot.state is LeaseState.RELEASING:
                self._lose(request.partition, slot, now)

    def released(self, request: Release, now: float) -> None:
        """The answer to a release, whether or not the lease was still ours to delete."""
        slot = self._answered(request)
        if slot is not None:
            self._lose(request.partition, slot, now)

    def failed(self, request: Request, now: float) -> None:
        """No answer (timeout, connection lost): the request may or may not have been applied.

        A lost acquire may have granted us a lease we don't know the token of: acquiring then
        fails until it expires on the server, so it costs up to ttl_s, never safety.
        """
        slot = self._answered(request)
        if slot is None:
            return
        if isinstance(request, Acquire):
            self._lose(request.partition, slot, now + self.timing.retry_s)
        else:
            slot.next_at = now + self.timing.retry_s

    def checkpointed(self, partition: int, now: float) -> None:
        """The shell made a handed-over partition durable: the lease may now be released."""
        slot = self._slots.get(partition)
        if slot is None or slot.state is not LeaseState.HANDING_OVER:
            return  # the hand-over was called off meanwhile
        if slot.token is None:
            self._lose(partition, slot, now)
        else:
            slot.state, slot.next_at = LeaseState.RELEASING, now

    # -- transitions -------------------------------------------------------------------------
    def _due_for(self, partition: int, slot: _Slot, now: float) -> list[Action]:
        actions: list[Action] = []
        if slot.state is LeaseState.HANDING_OVER and not slot.checkpoint_asked:
            slot.checkpoint_asked = True
            actions.append(Checkpoint(partition, slot.token))
        if not self._has_request(slot) or now < slot.next_at:
            return actions
        slot.pending = self._request_for(partition, slot, now)
        actions.append(slot.pending)
        return actions

    @staticmethod
    def _has_request(slot: _Slot) -> bool:
        """Whether a request will be due at `slot.next_at` (not: one in flight, or a hand-over
        of a lease we learnt is gone, which waits for `checkpointed` only)."""
        return slot.pending is None and (slot.token is not None or slot.state is not HANDING)

    def _request_for(self, partition: int, slot: _Slot, now: float) -> Request:
        self._seq += 1
        if slot.state is LeaseState.WANTED:
            slot.state = LeaseState.ACQUIRING
            return Acquire(partition, now, self._seq)
        if slot.token is None:  # only WANTED and a hand-over of a lost lease have none
            raise AssertionError(f"partition {partition}: {slot.state} without a token")
        if slot.state is LeaseState.RELEASING:
            return Release(partition, slot.token, now, self._seq)
        return Renew(partition, slot.token, now, self._seq)

    def _answered(self, request: Request) -> _Slot | None:
        """The slot waiting for this answer; None for a stale one (superseded or unknown)."""
        slot = self._slots.get(request.partition)
        if slot is None or slot.pending != request:
            return None
        slot.pending = None
        return slot

    def _extend(self, slot: _Slot, sent_at: float) -> None:
        slot.fetch_until = max(slot.fetch_until, sent_at + self.timing.ttl_s - self.timing.margin_s)
        slot.next_at = sent_at + self.timing.renew_after_s

    def _lose(self, partition: int, slot: _Slot, next_at: float) -> None:
        """Drop our lease on a partition; acquire it again (at `next_at`) if still assigned."""
        if partition not in self._wanted:
            del self._slots[partition]
            return
        slot.state, slot.token, slot.fetch_until = LeaseState.WANTED, None, float("-inf")
        slot.next_at, slot.checkpoint_asked = next_at, False

"""The async shell around `ownership.Ownership`: one member's heartbeats, leases and hand-overs.

How this works:
- `run(handler)` is one task of this member. Inside it, one loop heartbeats the member every
  `member_ttl_s / 3` and reads the live member list (sooner when another member's entry is
  about to expire: a crashed member is seen gone at once); when the list changes it recomputes
  `partitions.assign` and gives this member's share to the pure core. A second loop asks the
  core what is due (`due(now)`), starts one task per action and sleeps until `next_due_at()`
  or until an answer or a member change wakes it.
- What one `due` call returns goes out as one pipeline per kind (acquires, renewals,
  releases), each in its own task under `asyncio.timeout(request_timeout_s)`, so a
  hung Redis delays nothing else; a timeout is reported as `failed`, and the core stops
  fetching at its local deadline whatever Redis does. When Redis answers again, renewals
  that find our token go on; refused ones make the core acquire again.
- Callbacks (the `PartitionHandler` given to `run`, so the shell can be built before the
  node whose lease questions it answers): `on_acquired(partition, token)` runs after a
  lease is won and before `may_fetch` says yes (the crawler loads the checkpoint and
  replays the link stream); `on_handover(partition, token)` runs for a partition assigned
  away (the crawler stops, checkpoints, returns) and only then is the lease released. Both
  run one at a time per partition, so a hand-over never overlaps the acquisition it
  follows. `token` is None in a hand-over when the lease was lost meanwhile.
- `stop()` deregisters first (the others start asking for our partitions at once and retry
  every `retry_s` until we release), then hands every partition over and releases it.
- Time is `monotonic()` (injected): leases are measured on this machine's monotonic clock;
  the server's clock is only ever compared with itself.

Shared state: the core, `_tokens` and `_ready` are written by this shell's tasks, all on one
event loop and never across an await, and read by the crawler's `may_fetch`/`owned` calls.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections import defaultdict
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol, TypeVar

from trawl.cluster.lease_cuts import LeaseCuts
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
from trawl.cluster.partitions import assign, owned_by
from trawl.cluster.redis_coord import CoordinatorUnavailable
from trawl.errors import ConfigError

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable, Coroutine, Mapping

    from trawl.cluster.redis_leases import RedisLeases
    from trawl.cluster.redis_members import RedisMembers

T = TypeVar("T")
log = logging.getLogger(__name__)
# No answer in time, or none at all: the request may or may not have been applied.
_NO_ANSWER = (CoordinatorUnavailable, TimeoutError)
EXPIRY_SLACK_S = 0.05  # look again this long after another member's entry should expire
OUTAGE_LOG_S = 10.0  # at most one "lease requests failing" line this often
MIN_MARGIN_S = 0.5  # see ClusterTiming: the cut's lateness under load, plus clock rates


class PartitionHandler(Protocol):
    """What a member does when it wins a partition's lease and before it lets one go."""

    async def on_acquired(self, partition: int, token: int) -> None:
        """Load the partition; `may_fetch` says yes only after this returns."""

    async def on_handover(self, partition: int, token: int | None) -> None:
        """Stop, checkpoint (`token` is None when the lease was lost meanwhile: no fence to
        write with) and forget the partition; the lease is released after this returns."""


@dataclass(frozen=True, slots=True)
class ClusterTiming:
    """Membership and lease durations in seconds, checked together on construction.

    The defaults make a crashed member's sites fetchable elsewhere within seconds: its
    members entry expires after `member_ttl_s` (the others then want its partitions) and its
    leases `lease_ttl_s` after their last renewal (the others may then take them). A lease
    can be shorter than the longest fetch because requests are cut at its local deadline
    (`LeaseCuts`). Raises ConfigError naming the keys when they can't work together.
    """

    member_ttl_s: float = 4.0  # a silent member counts as gone this long after its heartbeat
    lease_ttl_s: float = 5.0  # how long a crashed member's partitions stay unfetched
    margin_s: float = 1.5  # stop fetching this long before the server could expire a lease
    renew_after_s: float = 1.5  # renew this long after the last successful request was sent
    retry_s: float = 0.5  # wait after a refused acquire or a request without an answer
    request_timeout_s: float = 1.0  # a lease request or heartbeat without an answer by then failed

    def __post_init__(self) -> None:
        try:
            self.lease_timing()
        except ValueError as error:
            raise ConfigError(f"cluster: {error}") from error
        if self.margin_s < MIN_MARGIN_S:
            raise ConfigError(
                f"cluster.margin_s={self.margin_s} must be at least {MIN_MARGIN_S}: a request"
                " cut at the local deadline must be off the wire before the lease can expire,"
                " however late a loaded event loop runs the cut"
            )
        self._check_timeouts()

    def _check_timeouts(self) -> None:
        # A renew that times out must leave time for one retry before the local deadline.
        slack_s = self.lease_ttl_s - self.margin_s - self.renew_after_s
        if not 0 < self.request_timeout_s <= slack_s - self.retry_s:
            raise ConfigError(
                f"cluster.request_timeout_s={self.request_timeout_s} must be in (0,"
                f" lease_ttl_s - margin_s - renew_after_s - retry_s = {slack_s - self.retry_s}]"
            )
        if not 0 < self.request_timeout_s < self.heartbeat_s:
            raise ConfigError(
                f"cluster.member_ttl_s={self.member_ttl_s} must exceed 3 times"
                f" request_timeout_s={self.request_timeout_s}: a member heartbeats every third"
                " of it"
            )

    @property
    def heartbeat_s(self) -> float:
        """Heartbeat and member-list period: two heartbeats may fail before a member expires."""
        return self.member_ttl_s / 3

    def lease_timing(self) -> LeaseTiming:
        """The pure core's timing (raises ValueError when it doesn't hold together)."""
        return LeaseTiming(self.lease_ttl_s, self.margin_s, self.renew_after_s, self.retry_s)


@dataclass(frozen=True, slots=True)
class OwnershipShellStats:
    member_id: str
    live_members: int
    fetchable: int  # partitions `may_fetch` says yes to now
    leases: OwnershipStats


class OwnershipShell:
    """One member's partition ownership on Redis, run as one asyncio task (`run`)."""

    def __init__(
        self,
        *,
        member_id: str,
        partitions: int,
        members: RedisMembers,
        leases: RedisLeases,
        timing: ClusterTiming,
        info: Mapping[str, str] | None = None,
        live_info: Callable[[], Mapping[str, str]] | None = None,
        cuts: LeaseCuts | None = None,
        monotonic: Callable[[], float] = time.monotonic,
    ) -> None:
        self.member_id = member_id
        self.cuts = cuts or LeaseCuts(monotonic)  # told every move of a local deadline
        self._partitions = partitions
        self._members, self._leases = members, leases
        self._timing = timing
        self._info = dict(info or {})
        self._live_info = live_info  # read at each heartbeat: what changes (store outages)
        self._now = monotonic
        self.core = Ownership(timing.lease_timing())
        self._live: list[str] = []
        self._tokens: dict[int, int] = {}  # the token of each partition's last won lease
        self._ready: dict[int, int] = {}  # partition → token whose on_acquired has returned
        self._callback_locks: defaultdict[int, asyncio.Lock] = defaultdict(asyncio.Lock)
        self._wake = asyncio.Event()
        self._stopping = asyncio.Event()
        self._finished = asyncio.Event()
        self._drain_until: float | None = None  # set once deregistered: stop driving then
        self._tasks: asyncio.TaskGroup | None = None
        self._handler: PartitionHandler | None = None  # run()'s: callbacks run inside it
        # For `_note_answer`'s log lines, not one per retry. Event loop only.
        self._failing_since: float | None = None  # when requests began failing; None: answered
        self._outage_logged_at: float | None = None
        self._failures = 0

    # -- questions (the crawler's) -------------------------------------------------------------
    def may_fetch(self, partition: int) -> bool:
        """True while the lease is confirmed, before its local deadline, and loaded."""
        token = self._ready.get(partition)
        return (
            token is not None
            and token == self._tokens.get(partition)
            and self.core.may_fetch(partition, self._now())
        )

    def token(self, partition: int) -> int | None:
        """The fencing token of the partition's lease while it is loaded here."""
        return self._ready.get(partition)

    def owned(self) -> set[int]:
        """The partitions this member may fetch now."""
        return {p for p in self.core.fetchable(self._now()) if self.may_fetch(p)}

    def live_members(self) -> list[str]:
        """The member list the current assignment was computed from."""
        return list(self._live)

    def stats(self) -> OwnershipShellStats:
        now = self._now()
        return OwnershipShellStats(
            self.member_id, len(self._live), len(self.owned()), self.core.stats(now)
        )

    def __repr__(self) -> str:
        state = "stopping" if self._stopping.is_set() else "running"
        return (
            f"<OwnershipShell {self.member_id} {state} members={len(self._live)}"
            f" fetchable={len(self.owned())} {self.core!r}>"
        )

    # -- lifecycle -----------------------------------------------------------------------------
    async def run(self, handler: PartitionHandler) -> None:
        """Heartbeat, follow the members and hold leases until `stop()` has handed over,
        calling `handler` as partitions come and go.

        Cancelling this task is a crash as far as the cluster can tell: nothing is released,
        the others take the partitions once the member and its leases expire.
        """
        try:
            async with asyncio.TaskGroup() as tasks:
                self._tasks, self._handler = tasks, handler
                tasks.create_task(self._follow_members())
                await self._drive()
        finally:
            self._finished.set()

    async def stop(self) -> None:
        """Deregister, hand every partition over (callback, release); return when `run` has."""
        self._stopping.set()
        await self._finished.wait()

    # -- members -------------------------------------------------------------------------------
    async def _follow_members(self) -> None:
        while not self._stopping.is_set():
            wait_s = self._timing.heartbeat_s
            try:
                wait_s = min(wait_s, await self._refresh_members() + EXPIRY_SLACK_S)
                self._note_answer(None)
            except _NO_ANSWER as exc:  # a missed heartbeat is retried next period
                self._note_answer(exc)
            await _wait(self._stopping, wait_s)
        await self._leave()

    async def _refresh_members(self) -> float:
        """Heartbeat and follow the member list; returns the seconds until another live
        member expires unless it heartbeats first, so a silent one is seen gone as soon as
        it is, not up to a heartbeat period later (its partitions wait for that)."""
        async with asyncio.timeout(self._timing.request_timeout_s):
            ttl_s = self._timing.member_ttl_s
            info = self._info if self._live_info is None else {**self._info, **self._live_info()}
            await self._members.heartbeat(self.member_id, info, ttl_s)
            members = await self._members.members()
        live = [m.member_id for m in members if m.is_live]
        if live and live != self._live:  # empty: our own heartbeat expired at once; wait
            self._live = live
            mine = owned_by(assign(self._partitions, live), self.member_id)
            self.core.assign(mine, self._now())
            self._wake.set()
        others = [m.expires_in_s for m in members if m.is_live and m.member_id != self.member_id]
        return min(others, default=float("inf"))

    async def _leave(self) -> None:
        # Deregister before handing over: the others compute their new share now and take
        # each partition as soon as it is released. If Redis is down the entry just expires.
        with contextlib.suppress(*_NO_ANSWER):
            async with asyncio.timeout(self._timing.request_timeout_s):
                await self._members.leave(self.member_id)
        now = self._now()
        self.core.assign((), now)
        # Past this, every lease we held has expired on the server whatever happened.
        self._drain_until = now + self._timing.lease_ttl_s + self._timing.request_timeout_s
        self._wake.set()

    # -- leases --------------------------------------------------------------------------------
    async def _drive(self) -> None:
        """Send what the core says is due, until stopped and every lease is released."""
        while not self._is_drained():
            self._wake.clear()  # before `due`, so an answer arriving from here on wakes us
            now = self._now()
            actions = self.core.due(now)
            # One pipeline each for all acquires and all renewals: per-lease round trips
            # don't scale to 1,024, and renewals must never queue behind acquires.
            renews = [action for action in actions if isinstance(action, Renew)]
            if renews:
                self._spawn(self._renew_many(renews))
            acquires = [action for action in actions if isinstance(action, Acquire)]
            if acquires:
                self._spawn(self._acquire_many(acquires))
            releases = [action for action in actions if isinstance(action, Release)]
            if releases:
                self._spawn(self._release_many(releases))
            for action in actions:
                if isinstance(action, Checkpoint):
                    self._spawn(self._hand_over(action.partition, action.token))
            wait_s = min(self.core.next_due_at(), self._drain_until or float("inf")) - now
            await _wait(self._wake, wait_s)

    def _is_drained(self) -> bool:
        if self._drain_until is None:
            return False
        now = self._now()
        leases = self.core.stats(now)
        held = leases.acquiring + leases.owned + leases.handing_over + leases.releasing
        return held + leases.wanted == 0 or now >= self._drain_until

    def _spawn(self, work: Coroutine[None, None, None]) -> None:
        if self._tasks is None:
            raise AssertionError("OwnershipShell: a task spawned outside run()")
        self._tasks.create_task(work)

    def _running_handler(self) -> PartitionHandler:
        if self._handler is None:
            raise AssertionError("OwnershipShell: a callback outside run()")
        return self._handler

    async def _request(self, send: Callable[[], Awaitable[T]]) -> tuple[bool, T | None]:
        """(answered, answer). Each kind of request goes out as one pipeline per `due`
        call (all acquires, all renewals, all releases), so none waits behind another's
        queue: per-lease round trips don't scale to 1,024, and a renewal stuck behind a
        thousand acquires would lose its lease."""
        try:
            async with asyncio.timeout(self._timing.request_timeout_s):
                answer = await send()
        except _NO_ANSWER as exc:
            self._note_answer(exc)
            return False, None
        self._note_answer(None)
        return True, answer

    def _note_answer(self, error: BaseException | None) -> None:
        """Log when lease requests and heartbeats start failing and when they are answered
        again (each lease still stops fetching at its own deadline meanwhile): at most one
        failure line per `OUTAGE_LOG_S`, however often they fail or flip back and forth."""
        now = self._now()
        if error is None:
            logged = self._outage_logged_at
            if (
                self._failing_since is not None
                and logged is not None
                and logged >= self._failing_since
            ):
                log.warning("lease requests answered again after %.1f s", now - self._failing_since)
            self._failing_since = None
            return
        self._failures += 1
        if self._failing_since is None:
            self._failing_since = now
        if self._outage_logged_at is None or now - self._outage_logged_at >= OUTAGE_LOG_S:
            self._outage_logged_at = now
            what = str(error) or f"no answer in {self._timing.request_timeout_s} s"
            log.warning(
                "lease requests failing (%d so far), will retry; fetching stops at each"
                " lease's deadline until they are answered: %s",
                self._failures,
                what,
            )

    async def _acquire_many(self, requests: list[Acquire]) -> None:
        partitions, ttl_s = [r.partition for r in requests], self._timing.lease_ttl_s
        answered, tokens = await self._request(
            lambda: self._leases.acquire_many(partitions, self.member_id, ttl_s)
        )
        now = self._now()
        for i, request in enumerate(requests):
            partition = request.partition
            if not answered or tokens is None:
                self.core.failed(request, now)
            else:
                self.core.acquired(request, tokens[i], now)
            self._tell_deadline(partition)
            token = self._ready_token(partition, tokens[i] if tokens is not None else None)
            if token is not None:
                self._tokens[partition] = token
                self._spawn(self._load(partition, token))
        self._wake.set()

    def _ready_token(self, partition: int, token: int | None) -> int | None:
        """The token won, if the partition is ours to load now."""
        owned = self.core.state(partition) is LeaseState.OWNED
        return token if owned and token is not None else None

    async def _renew_many(self, requests: list[Renew]) -> None:
        ttl_s = self._timing.lease_ttl_s
        leases = [(r.partition, r.token) for r in requests]
        answered, oks = await self._request(lambda: self._leases.renew_many(leases, ttl_s))
        now = self._now()
        for i, request in enumerate(requests):
            ok = oks[i] if answered and oks is not None else None
            if ok is None:  # no answer, or its Redis node's replica did not confirm it
                self.core.failed(request, now)
            else:
                self.core.renewed(request, ok, now)
            self._tell_deadline(request.partition)
        self._wake.set()

    async def _release_many(self, requests: list[Release]) -> None:
        leases = [(r.partition, r.token) for r in requests]
        answered, _ = await self._request(lambda: self._leases.release_many(leases))
        now = self._now()
        for request in requests:
            if answered:
                self.core.released(request, now)
            else:
                self.core.failed(request, now)
            self._tell_deadline(request.partition)
        self._wake.set()

    def _tell_deadline(self, partition: int) -> None:
        """Requests in flight to the partition's sites end at its deadline as it is now."""
        self.cuts.deadline(partition, self.core.fetch_until(partition))

    # -- callbacks -----------------------------------------------------------------------------
    async def _load(self, partition: int, token: int) -> None:
        async with self._callback_locks[partition]:
            if self.core.state(partition) is not LeaseState.OWNED or (
                self._tokens.get(partition) != token
            ):
                return  # assigned away, or lost (and won again), while a callback ran
            await self._running_handler().on_acquired(partition, token)
            self._ready[partition] = token

    async def _hand_over(self, partition: int, token: int | None) -> None:
        async with self._callback_locks[partition]:
            self._ready.pop(partition, None)
            await self._running_handler().on_handover(partition, token)
        self.core.checkpointed(partition, self._now())
        self._tell_deadline(partition)
        called_off = self.core.state(partition) is LeaseState.OWNED
        if called_off and token is not None and self._tokens.get(partition) == token:
            await self._load(partition, token)  # assigned back meanwhile: load what we saved
        self._wake.set()


async def _wait(event: asyncio.Event, timeout_s: float) -> None:
    """Until `event` is set or `timeout_s` passed (inf: no timeout)."""
    if timeout_s <= 0:
        return
    with contextlib.suppress(TimeoutError):
        async with asyncio.timeout(None if timeout_s == float("inf") else timeout_s):
            await event.wait()

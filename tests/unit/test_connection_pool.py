"""The keep-alive pool's decisions (fetch/pool.py): pure, with `now` passed in."""

from __future__ import annotations

from dataclasses import dataclass

from hypothesis import given, settings
from hypothesis import strategies as st

from trawl.fetch.pool import ConnectionPool

IDLE_S = 15.0


@dataclass(eq=False)
class Conn:
    key: str
    name: str = ""
    idle_since: float = 0.0


def pool_of(*idle: tuple[Conn, float]) -> ConnectionPool[Conn]:
    """A pool with room for 10, holding `idle` (connection, idle since) in that order."""
    pool: ConnectionPool[Conn] = ConnectionPool(10, IDLE_S)
    for conn, at in idle:
        pool.put(conn, at)
    return pool


def test_take_reuses_the_newest_idle_connection_of_its_key() -> None:
    old, new, other = Conn("a", "old"), Conn("a", "new"), Conn("b", "other")
    pool = pool_of((old, 100.0), (other, 101.0), (new, 102.0))
    assert pool.idle == 3
    assert pool.take("a") is new
    assert pool.take("a") is old
    assert pool.take("a") is None
    assert pool.take("c") is None
    assert pool.idle == 1


def test_reserve_holds_to_the_cap_until_a_slot_is_released() -> None:
    pool: ConnectionPool[Conn] = ConnectionPool(2, IDLE_S)
    assert pool.reserve()
    assert pool.reserve()
    assert not pool.reserve()
    assert pool.open == 2
    pool.release_slot()
    assert pool.reserve()
    assert repr(pool) == "<ConnectionPool open=2/2 idle=0>"


def test_no_cap_when_max_connections_is_zero() -> None:
    pool: ConnectionPool[Conn] = ConnectionPool(0, IDLE_S)
    assert all(pool.reserve() for _ in range(10_000))


def test_oldest_is_the_least_recently_used_of_all_keys() -> None:
    first, second, third = Conn("a", "1"), Conn("b", "2"), Conn("a", "3")
    pool = pool_of((first, 100.0), (second, 101.0), (third, 102.0))
    assert pool.oldest() is first
    assert pool.oldest() is second
    assert pool.oldest() is third
    assert pool.oldest() is None
    assert pool.idle == 0


def test_expired_hands_back_connections_idle_for_idle_s() -> None:
    early, late, other = Conn("a", "early"), Conn("a", "late"), Conn("b", "other")
    pool = pool_of((early, 100.0), (other, 103.0), (late, 110.0))
    assert pool.next_expiry() == 115.0
    assert pool.expired(114.9) == []
    assert pool.expired(118.0) == [early, other]
    assert pool.idle == 1
    assert pool.next_expiry() == 125.0
    assert pool.expired(125.0) == [late]
    assert (pool.idle, pool.next_expiry(), pool.take("a")) == (0, None, None)


def test_discard_takes_a_closed_connection_out_of_the_idle_lists() -> None:
    kept, closed = Conn("a", "kept"), Conn("a", "closed")
    pool = pool_of((kept, 100.0), (closed, 101.0))
    pool.discard(closed)
    pool.discard(closed)  # again, or a connection that never idled: nothing happens
    pool.discard(Conn("z"))
    assert pool.idle == 1
    assert pool.take("a") is kept


def test_drain_empties_the_pool() -> None:
    conns = [Conn("a"), Conn("b"), Conn("a")]
    pool = pool_of(*((conn, 100.0) for conn in conns))
    assert sorted(map(id, pool.drain())) == sorted(map(id, conns))
    assert (pool.idle, pool.take("a"), pool.oldest()) == (0, None, None)


class _Model:
    """The pool's rules spelled out on one list of idle connections in `put` order."""

    def __init__(self) -> None:
        self.idle: list[Conn] = []

    def take(self, key: str) -> Conn | None:
        mine = [conn for conn in self.idle if conn.key == key]
        return self._out(mine[-1]) if mine else None

    def oldest(self) -> Conn | None:
        return self._out(self.idle[0]) if self.idle else None

    def expired(self, now: float) -> list[Conn]:
        gone = [conn for conn in self.idle if conn.idle_since <= now - IDLE_S]
        return [self._out(conn) for conn in gone]

    def _out(self, conn: Conn) -> Conn:
        self.idle.remove(conn)
        return conn


@settings(max_examples=300, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.sampled_from(["put", "take", "discard", "oldest", "expired"]),
            st.sampled_from("abc"),
            st.sampled_from([0.0, 0.5, 5.0, 15.0]),  # exact ties with `idle_s` too
        ),
        max_size=60,
    )
)
def test_the_pool_follows_its_rules_under_any_sequence_of_calls(
    calls: list[tuple[str, str, float]],
) -> None:
    pool: ConnectionPool[Conn] = ConnectionPool(0, IDLE_S)
    model = _Model()
    now = 0.0
    made: list[Conn] = []
    for what, key, step in calls:
        now += step  # the shell's clock is monotonic
        if what == "put":
            conn = Conn(key, str(len(made)))
            made.append(conn)
            pool.put(conn, now)
            model.idle.append(conn)
        elif what == "take":
            assert pool.take(key) is model.take(key)
        elif what == "discard" and made:
            conn = made[len(made) * 7 // 10]  # idle, taken or discarded before
            pool.discard(conn)
            if conn in model.idle:
                model.idle.remove(conn)
        elif what == "oldest":
            assert pool.oldest() is model.oldest()
        elif what == "expired":
            assert pool.expired(now) == model.expired(now)
        assert pool.idle == len(model.idle)
        first = model.idle[0].idle_since + IDLE_S if model.idle else None
        assert pool.next_expiry() == first
    assert pool.drain() == model.idle

"""The per-IP gate on fake times."""

from __future__ import annotations

import pytest

from trawl.errors import ConfigError
from trawl.politeness.ip_gate import IpGate, IpGateStats

IP = "203.0.113.7"
OTHER = "2001:db8::1"
T0 = 500.0


def start(gate: IpGate, ip: str, now: float) -> float | None:
    """try_acquire, and when admitted the request goes out at once."""
    answer = gate.try_acquire(ip, now)
    if answer is None:
        gate.note_sent(ip, now)
    return answer


def test_first_acquire_succeeds() -> None:
    gate = IpGate()
    assert gate.try_acquire(IP, T0) is None
    assert gate.in_flight(IP) == 1
    assert gate.in_flight(OTHER) == 0


def test_starts_at_least_quarter_second_apart() -> None:
    gate = IpGate()
    assert start(gate, IP, T0) is None
    assert start(gate, IP, T0 + 0.125) == T0 + 0.25
    assert gate.in_flight(IP) == 1
    assert start(gate, IP, T0 + 0.25) is None
    assert gate.in_flight(IP) == 2


def test_at_most_two_in_flight_until_release() -> None:
    gate = IpGate()
    assert start(gate, IP, T0) is None
    assert start(gate, IP, T0 + 0.5) is None
    # Full: the answer is a polling hint, one gap from now.
    assert start(gate, IP, T0 + 10.0) == T0 + 10.25
    assert gate.in_flight(IP) == 2
    gate.release(IP, T0 + 11.0, sent=True)
    assert gate.in_flight(IP) == 1
    assert start(gate, IP, T0 + 11.0) is None
    assert gate.in_flight(IP) == 2


def test_ips_are_independent() -> None:
    gate = IpGate()
    assert gate.try_acquire(IP, T0) is None
    assert gate.try_acquire(OTHER, T0) is None
    assert gate.stats() == IpGateStats(ips_tracked=2, in_flight=2)


def test_custom_limits() -> None:
    gate = IpGate(max_in_flight=1, min_gap_s=2.0)
    assert start(gate, IP, T0) is None
    assert start(gate, IP, T0 + 5.0) == T0 + 7.0
    gate.release(IP, T0 + 5.0, sent=True)
    assert start(gate, IP, T0 + 5.0) is None


def test_release_without_acquire_raises() -> None:
    gate = IpGate()
    with pytest.raises(RuntimeError, match="without a matching acquire"):
        gate.release(IP, T0, sent=False)
    assert gate.try_acquire(IP, T0) is None
    gate.release(IP, T0 + 1.0, sent=False)
    with pytest.raises(RuntimeError, match="without a matching acquire"):
        gate.release(IP, T0 + 1.0, sent=True)


def test_release_forgets_ip_once_gap_has_passed() -> None:
    gate = IpGate()
    assert start(gate, IP, T0) is None
    gate.release(IP, T0 + 1.0, sent=True)
    assert gate.stats() == IpGateStats(ips_tracked=0, in_flight=0)


def test_quick_release_keeps_gap_until_swept() -> None:
    gate = IpGate()
    assert start(gate, IP, T0) is None
    gate.release(IP, T0 + 0.125, sent=True)
    # Still remembered: the 0.25 s start gap holds after a quick answer.
    assert start(gate, IP, T0 + 0.125) == T0 + 0.25
    assert gate.forget_idle(T0 + 0.2) == 0
    assert gate.forget_idle(T0 + 0.25) == 1
    assert gate.stats().ips_tracked == 0
    assert start(gate, IP, T0 + 0.25) is None


def test_forget_idle_keeps_busy_ips() -> None:
    gate = IpGate()
    assert gate.try_acquire(IP, T0) is None
    assert gate.forget_idle(T0 + 3600.0) == 0
    assert gate.in_flight(IP) == 1


def test_memory_stays_bounded_over_many_ips() -> None:
    gate = IpGate()
    now = T0
    for n in range(10_000):
        ip = f"10.{n // 65536}.{n // 256 % 256}.{n % 256}"
        assert start(gate, ip, now) is None
        gate.release(ip, now + 0.5, sent=True)
        now += 0.001
    assert gate.stats().ips_tracked == 0


def test_repr_shows_state() -> None:
    gate = IpGate()
    assert gate.try_acquire(IP, T0) is None
    assert repr(gate) == "<IpGate max_in_flight=2 min_gap_s=0.25 ips_tracked=1 in_flight=1>"


@pytest.mark.parametrize(("max_in_flight", "min_gap_s"), [(0, 0.25), (2, -1.0), (2, float("nan"))])
def test_bad_limits_are_refused(max_in_flight: int, min_gap_s: float) -> None:
    with pytest.raises(ConfigError, match="per-IP"):
        IpGate(max_in_flight, min_gap_s)


def test_issue_13_the_gap_runs_from_the_real_send() -> None:
    """A request admitted at T0 but sent 0.1 s later (connection set-up, a loaded loop):
    the next start waits for a gap after the send, as the server measures it."""
    gate = IpGate()
    assert gate.try_acquire(IP, T0) is None
    gate.note_sent(IP, T0 + 0.1)
    assert gate.try_acquire(IP, T0 + 0.25) == T0 + 0.35
    assert gate.try_acquire(IP, T0 + 0.35) is None
    gate.note_sent(IP, T0 + 0.3)  # never moves a start back
    gate.release(IP, T0 + 0.4, sent=True)
    assert gate.try_acquire(IP, T0 + 0.5) == T0 + 0.6
    gate.note_sent(OTHER, T0)  # unknown or idle IPs are left alone
    assert gate.in_flight(OTHER) == 0


def test_issue_14_a_restart_counts_as_a_start_on_every_ip() -> None:
    # The previous process may have sent to any IP just before it died: the first request
    # to each waits a full gap from the restart, later ones run as usual.
    gate = IpGate(min_gap_s=0.25, restarted_at=T0)
    assert start(gate, IP, T0 + 0.1) == T0 + 0.25
    assert start(gate, OTHER, T0 + 0.25) is None
    assert start(gate, IP, T0 + 0.25) is None
    assert start(gate, IP, T0 + 0.3) == T0 + 0.5
    # Long after the restart a new IP goes at once.
    assert gate.try_acquire("192.0.2.9", T0 + 60.0) is None


def test_an_admitted_request_not_yet_sent_holds_the_next_one_back() -> None:
    """Admitted at T0 but still connecting when the gap from T0 has passed: it will go out
    at some moment from now on, so the next start waits a gap from now, and then a gap
    from the real send (a cluster member's 15 ms of set-up once put two requests 0.235 s
    apart under a 0.25 s gap)."""
    gate = IpGate()
    assert gate.try_acquire(IP, T0) is None
    assert gate.try_acquire(IP, T0 + 0.3) == pytest.approx(T0 + 0.55)
    gate.note_sent(IP, T0 + 0.31)
    assert gate.try_acquire(IP, T0 + 0.4) == pytest.approx(T0 + 0.56)
    assert gate.try_acquire(IP, T0 + 0.56) is None


def test_a_request_released_unsent_no_longer_holds_the_ip() -> None:
    # Its connection failed, or the turn gave the slot back: nothing reached the server.
    gate = IpGate()
    assert gate.try_acquire(IP, T0) is None
    gate.release(IP, T0 + 0.3, sent=False)
    assert gate.try_acquire(IP, T0 + 0.3) is None
    # A sent request's release leaves another's unsent mark alone.
    gate.note_sent(IP, T0 + 0.3)
    assert gate.try_acquire(IP, T0 + 0.6) is None
    gate.release(IP, T0 + 0.61, sent=True)
    assert gate.try_acquire(IP, T0 + 0.9) == pytest.approx(T0 + 1.15)  # still unsent
    gate.note_sent(IP, T0 + 0.95)
    assert gate.try_acquire(IP, T0 + 1.2) is None

"""SiteBook's host record writes: in shares, longest-waiting first (write_changed); the
per-site state other steps keep in them (keep_part; issue 18's render policy); and idle
sites leaving memory, written first (forget_idle)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from trawl.frontier.traps import TrapPolicy
from trawl.politeness.robots import robots_from_response
from trawl.politeness.site_book import SiteBook
from trawl.politeness.site_clock import ClockPolicy, FetchOutcome
from trawl.render.policy import RenderBook, RenderRules

if TYPE_CHECKING:
    from collections.abc import Iterator


class HostLog:
    """A HostRecords that remembers the order of writes."""

    def __init__(self) -> None:
        self.written: list[str] = []
        self.records: dict[str, dict[str, object]] = {}

    def put_host(self, site: str, record: dict[str, object]) -> None:
        self.written.append(site)
        self.records[site] = record

    def get_host(self, site: str) -> dict[str, object] | None:
        return self.records.get(site)

    def iter_hosts(self) -> Iterator[tuple[str, dict[str, object]]]:
        return iter(self.records.items())


class Now:
    def __init__(self, at: float = 1_000.0) -> None:
        self.at = at

    def __call__(self) -> float:
        return self.at


POLICY = ClockPolicy(min_delay_s=1.0)


def book(log: HostLog | None = None, now: Now | None = None) -> tuple[SiteBook, HostLog]:
    log = log or HostLog()
    sites = SiteBook(
        log,
        clock_policy=POLICY,
        trap_policy=TrapPolicy(),
        restarted_at=lambda site: None,
        owner="test",
        now=now or Now(),
    )
    return sites, log


def test_a_share_writes_the_longest_waiting_sites_and_keeps_the_rest() -> None:
    sites, log = book()
    for name in ("a.test", "b.test", "c.test", "d.test"):
        sites.state(name)
        sites.mark_changed(name)
    sites.mark_changed("a.test")  # changed again: still waiting since its first change
    sites.write_changed(2)
    assert log.written == ["a.test", "b.test"]
    assert sites.changed == 2
    sites.mark_changed("a.test")  # changed after its write: waits behind c and d
    sites.write_changed(2)
    assert log.written[2:] == ["c.test", "d.test"]
    sites.write_changed()
    assert log.written[4:] == ["a.test"]
    assert sites.changed == 0


def test_no_limit_writes_every_changed_site() -> None:
    sites, log = book()
    for name in ("a.test", "b.test", "c.test"):
        sites.state(name)
        sites.mark_changed(name)
    sites.write_changed(10)
    assert sorted(log.written) == ["a.test", "b.test", "c.test"]
    assert sites.changed == 0


def _unproductive(renders: RenderBook, site: str) -> None:
    for _ in range(renders.rules.learn_after):
        renders.note_plain_page(site)
        renders.note_render(site, text_gained_chars=0, links_gained=0)


def test_a_parts_state_is_written_with_the_site_and_read_back_at_its_load() -> None:
    sites, log = book()
    renders = RenderBook(RenderRules())
    sites.keep_part(renders)
    sites.state("app.test")
    _unproductive(renders, "app.test")
    sites.state("plain.test")  # the book holds nothing of it: no field
    sites.mark_changed("app.test")
    sites.mark_changed("plain.test")
    sites.write_changed()
    assert log.records["app.test"]["render"] == renders.site_state("app.test")
    assert "render" not in log.records["plain.test"]
    # A restart: a new book and a new render policy over the same host records.
    again, fresh = book(log)[0], RenderBook(RenderRules())
    again.keep_part(fresh)
    assert not fresh.is_unproductive("app.test")
    again.state("app.test")
    assert fresh.is_unproductive("app.test")
    assert fresh.site_state("app.test") == renders.site_state("app.test")


def test_a_damaged_part_starts_afresh_and_the_sites_politeness_is_kept() -> None:
    sites, log = book()
    sites.state("app.test").clock.hold_until(5_000.0)
    sites.write("app.test")
    log.records["app.test"]["render"] = {"renders": "many"}
    again = book(log)[0]
    renders = RenderBook(RenderRules())
    again.keep_part(renders)
    state = again.state("app.test")
    assert state.clock.next_allowed_at == 5_000.0
    assert renders.site_state("app.test") == RenderBook(RenderRules()).site_state("x.test")


IDLE_S = 600.0


def fetched(sites: SiteBook, site: str, at: float) -> None:
    clock = sites.state(site).clock
    clock.start(at)
    clock.finish(at + 0.2, 0.2, FetchOutcome.OK, policy=POLICY)
    sites.mark_changed(site)


def never_busy(site: str) -> bool:
    return False


def test_an_idle_site_is_written_then_dropped_and_read_back_the_same() -> None:
    now = Now(1_000.0)
    sites, log = book(now=now)
    fetched(sites, "idle.test", 1_000.0)
    sites.state("idle.test").set_robots(
        robots_from_response("http://idle.test", 200, b"User-agent: *\nCrawl-delay: 7\n", 999.0),
        "trawl",
    )
    sites.note_referrer("idle.test", "fan.test")  # not marked changed: a soft signal
    before = sites.state("idle.test").to_host_record("test")
    fetched(sites, "active.test", 1_000.0)
    now.at = 1_500.0
    fetched(sites, "active.test", 1_500.0)
    assert sites.forget_idle(list(sites), 1_601.0, IDLE_S, never_busy) == 1
    assert "idle.test" not in sites
    assert "active.test" in sites
    assert log.records["idle.test"] == before  # the referrer too, though never marked
    assert sites.changed == 1  # active.test's change still waits for its share
    now.at = 1_700.0
    again = sites.state("idle.test")
    assert again.to_host_record("test") == before
    assert again.loaded_at == 1_700.0
    assert again.clock.gap_s(POLICY) == 7.0
    assert again.traps.referring_sites() == 1


def test_a_busy_or_recently_loaded_site_stays() -> None:
    now = Now(1_000.0)
    sites, _ = book(now=now)
    fetched(sites, "held.test", 1_000.0)
    now.at = 1_500.0
    sites.note_referrer("linked.test", "fan.test")  # loaded now, never fetched
    assert sites.forget_idle(list(sites), 1_601.0, IDLE_S, lambda s: s == "held.test") == 0
    assert sites.forget_idle(list(sites), 2_101.0, IDLE_S, never_busy) == 2
    assert len(sites) == 0


def test_a_site_forgotten_is_skipped_and_unknown_names_are_ignored() -> None:
    sites, log = book()
    fetched(sites, "a.test", 1_000.0)
    names = list(sites)
    assert sites.forget_idle(names, 2_000.0, IDLE_S, never_busy) == 1
    writes = len(log.written)
    assert sites.forget_idle([*names, "never.test"], 2_000.0, IDLE_S, never_busy) == 0
    assert len(log.written) == writes
    assert "never.test" not in sites


def test_a_forgotten_sites_render_part_comes_back_with_it() -> None:
    now = Now(1_000.0)
    sites, log = book(now=now)
    renders = RenderBook(RenderRules())
    sites.keep_part(renders)
    fetched(sites, "app.test", 1_000.0)
    _unproductive(renders, "app.test")
    learnt = renders.site_state("app.test")
    before = renders.stats()
    assert sites.forget_idle(list(sites), 2_000.0, IDLE_S, never_busy) == 1
    assert log.records["app.test"]["render"] == learnt
    now.at = 2_100.0
    sites.state("app.test")
    assert renders.site_state("app.test") == learnt
    assert renders.stats() == before  # read back, not counted twice in the crawl's sums

"""SiteBook's host record writes: in shares, longest-waiting first (write_changed); and
the per-site state other steps keep in them (keep_part; issue 18's render policy)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from trawl.frontier.traps import TrapPolicy
from trawl.politeness.site_book import SiteBook
from trawl.politeness.site_clock import ClockPolicy
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


def book(log: HostLog | None = None) -> tuple[SiteBook, HostLog]:
    log = log or HostLog()
    sites = SiteBook(
        log,
        clock_policy=ClockPolicy(min_delay_s=1.0),
        trap_policy=TrapPolicy(),
        restarted_at=lambda site: None,
        owner="test",
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

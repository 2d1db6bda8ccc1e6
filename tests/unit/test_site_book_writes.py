"""SiteBook.write_changed: host records are written in shares, longest-waiting first."""

from __future__ import annotations

from typing import TYPE_CHECKING

from trawl.frontier.traps import TrapPolicy
from trawl.politeness.site_book import SiteBook
from trawl.politeness.site_clock import ClockPolicy

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


def book() -> tuple[SiteBook, HostLog]:
    log = HostLog()
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

"""Leases on handed-out URLs, as pure state: a URL not done in time goes back in line."""

from __future__ import annotations

from trawl.model import CrawlUrl, Lease


class LeaseBook:
    """Open leases by id. Written by the frontier shell only."""

    def __init__(self, lease_s: float) -> None:
        self._lease_s = lease_s
        self._open: dict[int, Lease] = {}

    def grant(self, lease_id: int, item: CrawlUrl, now: float) -> Lease:
        if lease_id in self._open:
            raise ValueError(f"lease {lease_id} is already open")
        lease = Lease(lease_id=lease_id, item=item, expires_at=now + self._lease_s)
        self._open[lease_id] = lease
        return lease

    def complete(self, lease_id: int) -> bool:
        """Close a lease; False when it had already expired and been returned."""
        return self._open.pop(lease_id, None) is not None

    def expired(self, now: float) -> list[Lease]:
        """Leases past their time, removed from the book: the shell puts them back in line."""
        gone = [lease for lease in self._open.values() if lease.expires_at <= now]
        for lease in gone:
            del self._open[lease.lease_id]
        return gone

    def __len__(self) -> int:
        return len(self._open)

    def __repr__(self) -> str:
        return f"<LeaseBook open={len(self._open)} lease_s={self._lease_s}>"

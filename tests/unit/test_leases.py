from __future__ import annotations

import pytest

from trawl.frontier.leases import LeaseBook
from trawl.model import CrawlUrl, Line

ITEM = CrawlUrl("http://a.test/", "0" * 32, "a.test", 0, Line.FAST, 0.0)


def test_lease_expires_after_lease_time_and_only_once() -> None:
    book = LeaseBook(lease_s=300.0)
    lease = book.grant(7, ITEM, now=100.0)
    assert lease.expires_at == 400.0
    assert book.expired(399.9) == []
    assert book.expired(400.0) == [lease]
    assert book.expired(1000.0) == []
    assert not book.complete(7)  # already returned to line


def test_completed_lease_never_expires() -> None:
    book = LeaseBook(lease_s=1.0)
    book.grant(1, ITEM, now=0.0)
    assert book.complete(1)
    assert book.expired(10.0) == []
    assert len(book) == 0


def test_double_grant_is_a_bug() -> None:
    book = LeaseBook(lease_s=1.0)
    book.grant(1, ITEM, now=0.0)
    with pytest.raises(ValueError, match="already open"):
        book.grant(1, ITEM, now=0.0)

"""Which of two near copies is the main copy (store.main_copy): canonical names first,
then link depth, the main copy keeping its place on ties."""

from __future__ import annotations

import pytest

from trawl.store.main_copy import PageCopy, takes_over

SOURCE = "https://news.example/story"
REPRINT = "https://reprints.example/a/story"


def test_issue_15_a_copy_naming_the_main_copy_canonical_never_takes_over() -> None:
    main = PageCopy(SOURCE, depth=3)
    assert not takes_over(PageCopy(REPRINT, depth=0, canonical=SOURCE), main)


def test_a_main_copy_naming_the_new_copy_canonical_is_taken_over() -> None:
    main = PageCopy(REPRINT, depth=0, canonical=SOURCE)
    assert takes_over(PageCopy(SOURCE, depth=5), main)


def test_when_both_name_each_other_the_main_copy_stays() -> None:
    main = PageCopy(SOURCE, depth=2, canonical=REPRINT)
    assert not takes_over(PageCopy(REPRINT, depth=1, canonical=SOURCE), main)


@pytest.mark.parametrize(
    ("new_depth", "main_depth", "expected"),
    [(1, 2, True), (0, 9, True), (2, 2, False), (3, 2, False)],
)
def test_without_canonical_names_the_copy_closer_to_the_seeds_is_the_main_copy(
    new_depth: int, main_depth: int, expected: bool
) -> None:
    new = PageCopy(REPRINT, depth=new_depth)
    assert takes_over(new, PageCopy(SOURCE, depth=main_depth)) is expected


def test_canonical_names_of_third_pages_leave_the_depth_to_decide() -> None:
    elsewhere = "https://third.example/story"
    new = PageCopy(REPRINT, depth=1, canonical=elsewhere)
    assert takes_over(new, PageCopy(SOURCE, depth=2, canonical=elsewhere))
    assert not takes_over(PageCopy(REPRINT, depth=2, canonical=elsewhere), PageCopy(SOURCE, 1))

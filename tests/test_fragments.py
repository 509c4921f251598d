"""A link's #fragment against its target's anchors: the HTML standard's indicated part."""

from __future__ import annotations

import pytest

from minicrawl.html.fragments import fragment_of, names_a_part

ANCHORS = frozenset({"intro", "café", "a b", "Mixed"})


@pytest.mark.parametrize(("fragment", "found"), [
    ("", True),  # page.html#: the top
    ("intro", True), ("caf%C3%A9", True), ("café", True), ("a%20b", True),
    ("top", True), ("TOP", True),  # the top of the page, any case
    ("Mixed", True), ("mixed", False),  # ids are case-sensitive
    ("missing", False), ("%ZZ", False), ("caf%E9", False),  # not UTF-8: U+FFFD, no match
])
def test_a_fragment_names_a_part_as_a_browser_finds_it(fragment: str, found: bool) -> None:
    assert names_a_part(fragment, ANCHORS) is found


def test_the_fragment_of_an_href_is_after_its_first_hash() -> None:
    assert fragment_of("/a.html#x#y") == "x#y"
    assert fragment_of("/a.html#") == ""
    assert fragment_of("/a.html") is None

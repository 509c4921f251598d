"""Links resolved for a page: slicing the page's directory gives what RFC 3986 resolution gives,
and the verdicts are shared across pages where resolution does not depend on the page."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from minicrawl.options import Options
from minicrawl.resolve import LinkResolver, _Folders
from minicrawl.scope import Scope
from minicrawl.urls import BadURL, absolute

HREF_PIECES = st.sampled_from(["../", "../", "./", "..", ".", "a", "b.html", "/", "//", "?q=1",
                               "#f", ":", "x:y", "\\", " ", "\t", "%2e", "é", ".hidden", "...",
                               "http://h/", "https:", "~u", "a b"])
BASES = st.sampled_from([
    "http://example.com/", "http://example.com/a/b/c.html", "https://example.com:8443/a/",
    "http://example.com/a//b/c", "http://example.com/a/b?x=/y/z", "http://[::1]/d/e/",
    "http://example.com/a/./b", "http://example.com", "http://u@example.com/a/b/"])


@settings(max_examples=3000, deadline=None)
@given(st.lists(HREF_PIECES, max_size=8).map("".join), BASES)
def test_slicing_the_directory_agrees_with_resolution(href, base):
    target = _Folders(base).resolve(href)
    if target is not None:  # where slicing answers, it answers as absolute() does
        try:
            expected = absolute(href, base)
        except BadURL:  # pragma: no cover - would be a disagreement
            expected = None
        assert target == expected


def test_plain_relative_paths_are_sliced_the_others_are_not():
    folders = _Folders("http://example.com/api/java.base/java/util/List.html?x=1")
    assert folders.resolve("Map.html") == "http://example.com/api/java.base/java/util/Map.html"
    assert folders.resolve("../../../index.html") == "http://example.com/api/index.html"
    assert folders.resolve("../" * 9 + "top.html") == "http://example.com/top.html"
    assert folders.resolve("../") == "http://example.com/api/java.base/java/"
    for general in ("", "?q", "/abs", "//host/x", "./x", "a/../b", "a/./b", ".x", "x:y",
                    "a\\b", " a", "http://h/", "x#f"):
        assert folders.resolve(general) is None, general
    assert _Folders("http://example.com/a/./b").resolve("x") is None  # not a canonical base


def test_an_absolute_link_is_resolved_once_for_every_page():
    resolver = LinkResolver(Options(), Scope(["http://example.com/"]))
    for page in ("http://example.com/a/1.html", "http://example.com/b/c/2.html"):
        links, rejected = resolver.resolve(["https://other.org/x", "y.html"], page, {})
        assert list(links) == ["https://other.org/x", page.rsplit("/", 1)[0] + "/y.html"]
        assert links["https://other.org/x"] == "out_of_scope" and not rejected
    assert ("", "https://other.org/x") in resolver._by_href.data
    assert len(resolver._by_href) == 3  # one entry for the absolute link, one per y.html

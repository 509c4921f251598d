"""Links resolved for a page: slicing the page's directory gives what RFC 3986 resolution gives."""

from __future__ import annotations

from hypothesis import example, given, settings
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
    "http://example.com/a/./b", "http://example.com", "http://u@example.com/a/b/",
    "http://example.com/a//b", "http://example.com//b", "http://example.com?a=/b/c"])


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


def test_a_page_in_a_folder_after_a_double_slash_resolves_x_and_dot_x_alike():
    resolver = LinkResolver(Options(), [Scope(["http://example.com/"])])
    links, _ = resolver.resolve(["x", "./x", "../y", "./../y"], "http://example.com/a//b", {})
    assert list(links) == ["http://example.com/a//x", "http://example.com/a/y"]


PAGES = st.sampled_from([
    "http://example.com/a/1.html", "http://example.com/a/2.html?q=1", "https://example.com/b/",
    "https://other.org/a/1.html", "http://example.com/a//b", "http://example.com/"])
HREFS = st.one_of(
    st.lists(HREF_PIECES, max_size=6).map("".join),
    st.sampled_from(["http://example.com/x;", "https://example.com/x?", "http://\t",
                     "http://h/a/../b", "https://other.org", "HTTP://example.com/y"]))


@settings(max_examples=400, deadline=None)
@given(st.lists(st.tuples(PAGES, HREFS), min_size=1, max_size=12))
@example([("http://example.com/a/1.html", "  "), ("http://example.com/a/2.html?q=1", "  ")])
@example([("http://example.com/a/1.html", "http://example.com/x;"),
          ("https://example.com/b/", "http://example.com/x;")])
def test_a_cached_answer_is_the_answer_a_fresh_resolver_gives(visits):
    """Pages resolved one after another by one resolver (its caches shared between pages)
    get exactly what a resolver with nothing cached gives each page."""
    shared = LinkResolver(Options(), [Scope(["http://example.com/"])])
    for page, href in visits:
        fresh = LinkResolver(Options(), [Scope(["http://example.com/"])])
        assert shared.resolve([href], page, {}) == fresh.resolve([href], page, {})

"""run.py's LinkResolver: every answer is the core's, whatever its caches hold."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from minicrawl.core.urls import resolve
from minicrawl.options import Options
from minicrawl.resolve import LinkResolver, canonical_url
from minicrawl.scope import Scope

WPT_FILE = Path(__file__).parent / "data" / "urltestdata.json"


def _fresh(page: str, href: str, encoding: str = "utf-8",
           options: Options | None = None) -> tuple[str | None, str]:
    opts = options or Options()
    return canonical_url(href, page, encoding, sort_query=opts.sort_query,
                         max_length=opts.max_url_length)


def _resolved(resolver: LinkResolver, page: str, href: str,
              encoding: str = "utf-8") -> tuple[str | None, str]:
    """What ``resolver`` answers for one href: (URL, "") or (None, why it is no URL)."""
    links, rejected = resolver.resolve([href], page, {}, encoding)
    return (next(iter(links)), "") if links else (None, rejected[0][1])


def _http_base(base: str | None) -> bool:
    return base is not None and re.match(r"https?://", base) is not None


def test_cached_answers_are_the_cores_on_every_url_standard_case() -> None:
    """Every case of web-platform-tests' urltestdata.json with an http(s) page as base, each
    asked of one resolver twice (the second answer from its caches) and alongside the case on
    a page of the same folder and on a page of another, whose answers fill the same caches."""
    cases = [(case["input"], case["base"]) for case in json.loads(WPT_FILE.read_text("utf-8"))
             if isinstance(case, dict) and _http_base(case.get("base"))]
    assert len(cases) > 150
    resolver = LinkResolver(Options(), [Scope(["http://example.org/"])])
    for _ in range(2):
        for href, base in cases:
            for page in (base, base.split("#")[0] + "#x", base + "?other",
                         re.sub(r"[^/]*$", "sibling.html", base), "https://other.test/a/b"):
                assert _resolved(resolver, page, href) == _fresh(page, href), (page, href)
                assert _resolved(resolver, page, href)[0] == resolve(page, href)


def test_links_and_rejections_are_counted_and_kept_in_page_order() -> None:
    resolver = LinkResolver(Options(), [Scope(["http://example.com/"])])
    counts: dict[str, int] = {}
    links, rejected = resolver.resolve(
        ["b.html", "mailto:x@example.com", "http://a b/", "http://other.org/", "a.html#x",
         "b.html#y"], "http://example.com/d/p.html", counts)
    assert list(links.items()) == [("http://example.com/d/b.html", None),
                                   ("http://other.org/", "out_of_scope"),
                                   ("http://example.com/d/a.html", None)]
    assert rejected == [("mailto:x@example.com", "not http(s)"),
                        ("http://a b/", "invalid host or port")]
    assert counts == {"links_not_http": 1, "links_malformed": 1}


def test_the_pages_encoding_is_the_cores_and_part_of_the_cache_key() -> None:
    resolver = LinkResolver(Options(), [Scope(["http://h.test/"])])
    for encoding, query in (("utf-8", "%E6%97%A5"), ("shift_jis", "%93%FA"),
                            ("euc-jp", "%C6%FC"), ("utf-8", "%E6%97%A5")):
        for href in ("?q=日", "x?q=日", "http://h.test/x?q=日"):
            url = _resolved(resolver, "http://h.test/d/p.html", href, encoding)[0]
            assert url is not None and url.endswith("?q=" + query)


def test_run_pys_options_apply_after_the_cores_answer() -> None:
    opts = Options(sort_query=True, max_url_length=40)
    resolver = LinkResolver(opts, [Scope(["http://h.test/"])])
    assert _resolved(resolver, "http://h.test/d/p.html", "x?b=2&a=1") == \
        ("http://h.test/d/x?a=1&b=2", "")
    assert _resolved(resolver, "http://h.test/d/p.html", "x" * 40) == (None, "too long")


HREF_PIECES = st.sampled_from(["../", "../", "../", "./", "..", ".", "a", "b.html", "/", "//",
                               "?q=1",
                               "#f", ":", "x:y", "\\", " ", "\t", "%2e", "é", ".hidden", "...",
                               "http://h/", "https:", "http:", "~u", "a b", "?", "\x01"])
PAGES = st.sampled_from([
    "http://example.com/a/1.html", "http://example.com/a/2.html?q=1", "https://example.com/b/",
    "https://other.org/a/1.html", "http://example.com/a//b", "http://example.com/",
    "http://u@example.com/a/1.html", "http://example.com/a/1.html?q=/x/y",
    # Sibling and nested folders: an href climbing with ../ shares an entry on the folder it
    # climbs to (resolve._climbed), with pages there and in the other folders under it.
    "http://example.com/a/c/3.html", "http://example.com/b/c/d/4.html", "http://example.com/b/5",
    "http://example.com/a", "http://example.com/a/c/#x/y", "http://example.com//c/6.html",
    # Bases as a library caller may write them, not canonical: their folders as written are
    # not the parser's (a "\\" is a "/", "." and ".." segments go, the host is lower-cased).
    "http://example.com/a\\c/3.html", "HTTP://Example.COM:80/a/./c/3.html",
    "http://example.com/b/%2e%2e/a/1.html", "http://example.com/a/c/../1.html#x"])
HREFS = st.one_of(
    st.lists(HREF_PIECES, max_size=6).map("".join),
    st.sampled_from(["http://example.com/x;", "https://example.com/x?", "http://\t",
                     "http://h/a/../b", "https://other.org", "HTTP://example.com/y", "http:?x",
                     " ?x", "\t#f", "http:#f", "https:?x", "?é", "x?é"]))


@settings(max_examples=500, deadline=None)
@given(st.lists(st.tuples(PAGES, HREFS, st.sampled_from(["utf-8", "shift_jis", "latin-1"])),
                min_size=1, max_size=12))
@example([("http://example.com/a/1.html", "  ", "utf-8"),
          ("http://example.com/a/2.html?q=1", "  ", "utf-8")])
@example([("http://example.com/a/1.html", "http:", "utf-8"),
          ("http://example.com/a/2.html?q=1", "http:", "utf-8")])
@example([("http://example.com/a/1.html", "../../x", "utf-8"),  # climbs past the root
          ("http://u@example.com/a/1.html", "../../x", "utf-8")])
@example([("http://example.com/a/c/3.html", "../../", "utf-8"),  # nothing left: the folder
          ("http://example.com/a", "", "utf-8")])
@example([("http://example.com/a/1.html", "?é", "utf-8"),
          ("http://example.com/a/2.html", "?é", "latin-1")])
@example([("http://example.com/a\\c/3.html", "../x", "utf-8"),  # climbs /a/c/, not "a\\c"
          ("http://example.com/", "x", "utf-8")])
@example([("http://example.com/a/c/#x/y", "//.. ../../", "utf-8"),  # no URL: an http page's
          ("HTTP://Example.COM:80/a/./c/3.html", "//.. ../../", "utf-8")])  # host, any case
def test_a_cached_answer_is_the_answer_a_fresh_resolver_gives(visits) -> None:
    """Pages resolved one after another by one resolver (its caches shared between pages)
    get exactly what the core answers for each."""
    shared = LinkResolver(Options(), [Scope(["http://example.com/"])])
    for page, href, encoding in visits:
        assert _resolved(shared, page, href, encoding) == _fresh(page, href, encoding)


def test_the_caches_stay_within_their_bytes_on_many_distinct_hrefs(monkeypatch) -> None:
    """40,000 distinct hrefs on 4,000 pages of distinct folders (the endless tree's links): the
    caches hold at most their bytes, as estimated and as tracemalloc measures them, and every
    answer, early or late, cached or forgotten, is still the core's."""
    import tracemalloc

    from minicrawl import resolve as module

    monkeypatch.setattr(module, "HREF_BYTES", 384 << 10)
    monkeypatch.setattr(module, "TARGET_BYTES", 128 << 10)
    budget = (384 + 128) << 10
    _resolved(LinkResolver(Options(), []), "http://tree.test/", "x/")  # imports, parser state
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        resolver = LinkResolver(Options(), [Scope(["http://tree.test/"])])
        for n in range(4000):
            folder = "/" + "/".join(str(n)) + "/"
            resolver.resolve([f"{folder}{i}/" for i in range(10)],
                             f"http://tree.test{folder}", {})
            assert resolver._by_href.held <= 384 << 10 and resolver._by_target.held <= 128 << 10
        held = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    assert len(resolver._by_href) > 500  # the caches hold entries, not nothing
    assert held <= budget, held  # 200,000 entries a cache would hold ~12 MB here
    for page, href in (("http://tree.test/0/", "/0/3/"), ("http://tree.test/3/9/9/9/", "9"),
                       ("http://tree.test/3/9/9/9/", "/3/9/9/9/9/"), ("http://tree.test/", "")):
        assert _resolved(resolver, page, href) == _fresh(page, href)


def test_a_small_crawls_links_are_worked_out_once_each() -> None:
    """bench/manyhosts.py's sites: 8 of 400 pages, each page linking 40 of its site's at random,
    spelled three ways (relative, root-relative, absolute: 9,600 hrefs, 3,200 URLs), resolved
    page by page as a crawl does, Visited holding the pages so far: the memories forget none
    of them (a third of Visited is 1,066 entries at most: at a floor of 1,024 they forgot and
    worked out again 2 of 3, at 8,192 about 1 in 6)."""
    import random

    rnd = random.Random(7)
    sites = [f"http://127.0.0.{n}:8080" for n in range(2, 10)]
    resolver = LinkResolver(Options(), [Scope([site + "/" for site in sites])],
                            budget=lambda: visited)
    visited = 0
    for page in range(400):
        for site in sites:
            visited += 1
            spell = (lambda j: f"p{j}.html", lambda j: f"/p{j}.html",
                     lambda j: f"{site}/p{j}.html")  # noqa: B023 (used at once)
            hrefs = [spell[k % 3](rnd.randrange(400)) for k in range(40)]
            if page == 399:  # (the last pages: every spelling of every page, once)
                hrefs += [spell[k](j) for j in range(400) for k in range(3)]
            links, _ = resolver.resolve(dict.fromkeys(hrefs), f"{site}/p{page}.html", {})
            assert all(url.startswith(site + "/p") for url in links)
    assert len(resolver._by_href) == 9600 and len(resolver._by_target) == 3200


PLAIN_SEGMENTS = st.sampled_from(["a", "B.html", "p-1_x~y", "!$&'()*+,;=@", "...", ".a", "a.",
                                  ".", "..", "", "%2e", "a:b", "é", "a b", "?q", "\\"])
CANONICAL_PAGES = st.sampled_from([
    "http://127.1/a/b.html", "http://[::1]:8080/x/", "https://faß.de/a/b", "http://h.test/",
    "HTTP://Example.COM:80/a/./c/3.html?q=/x/y", "http://u:p@h.test/a/b/c", "http://h.test/%7ea/b",
    "http://h.test/{x}/y", "http://h.test/a//b", "http://h.test/a?", "http://h.test/a/b#f/g"])


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(CANONICAL_PAGES, st.lists(PLAIN_SEGMENTS, max_size=4).map("/".join)),
                min_size=1, max_size=8))
def test_a_plain_href_is_joined_to_its_folder_as_the_core_joins_it(visits) -> None:
    """An href of characters the URL parser's path keeps as they are, with no dot segment, is
    its page's folder, "/", the href, without asking the core (~2.5 µs an href): the same URL
    as the core's, on pages whose URL the parser rewrites (the host, the port, escapes, "." and
    ".." segments). Any other href is the core's to answer."""
    import minicrawl.resolve as module

    asked: list[str] = []

    def counted(href: str, *args: object, **kwargs: object) -> tuple[str | None, str]:
        asked.append(href)
        return canonical_url(href, *args, **kwargs)  # type: ignore[arg-type]

    resolver = LinkResolver(Options(), [Scope(["http://h.test/"])])
    for page, href in visits:
        asked.clear()
        with pytest.MonkeyPatch.context() as patch:
            patch.setattr(module, "canonical_url", counted)
            answer = _resolved(resolver, page, href)
        assert answer == _fresh(page, href), (page, href)
        segments = href.split("/")
        plain = href and not href.startswith("/") and all(
            re.fullmatch(r"[A-Za-z0-9\-._~!$&'()*+,;=@]*", s) and s not in (".", "..")
            for s in segments)
        if plain:
            assert href not in asked, (page, href)


ABSOLUTE = st.tuples(
    st.sampled_from(["http://", "https://", "HTTP://", "ftp://", "file:///", "mailto:",
                     "java\tscript:", "http:", "https:/"]),
    st.sampled_from(["h.test", "a.b-c.test", "127.1", "1.2.3.4", "0x7f.1", "a.0x", "a.0xg",
                     "1.2.3.04", "01.2.3.4", "1.2.3.256", "0.0.0.0", "255.255.255.255", "1.2.3",
                     "1.2.3.4.5", "a.1.2.3", "1.2.0x3.4", "127.0.0.1:8080",
                     "xn--fa-hia.de", "xn--a.test", "a.xn--b", "A.test", "a_b.test", "a..b",
                     "a.b.", "-a-.test", "faß.de", "h.test:80", "h.test:443", "h.test:8080",
                     "h.test:080", "h.test:0", "h.test:65535", "h.test:65536", "u@h.test",
                     "h.test:"]),
    st.sampled_from(["", "/", "/a/b", "/./", "/a/../b", "/a/.", "/a/..", "/%2e/x", "/a'b",
                     "/a b", "/é", "/a\\b", "/.a/..b", "/a:b@c", "//x"]),
    st.sampled_from(["", "?", "?a=1", "?a'b", "?b=2&a=1", "?/?:@", "?a b", "?é", "#f", "?q#f"]),
).map("".join)


@settings(max_examples=400, deadline=None)
@given(st.lists(st.tuples(CANONICAL_PAGES, ABSOLUTE, st.booleans()), min_size=1, max_size=8))
@example([("http://h.test/", href, False) for href in (
    "http://h.test/?a'b", "http://h.test:80/x", "https://h.test:443/x", "http://127.1/x",
    "http://a.0x/x", "http://a.0xg/x", "http://h.test/a/./b", "http://h.test/a/..",
    "http://1.2.3.04/x", "http://127.0.0.1:8080/x", "http://1.2.3.256/x", "http://a.1.2.3/x",
    "http://H.test/x", "http://h.test:65536/x", "http://h.test/?", "mailto:x@h.test")])
@example([("http://h.test/", "http://h.test/x?b=2&a=1", True)])
def test_an_absolute_url_the_parser_keeps_is_itself_and_another_scheme_no_url(visits) -> None:
    """An http(s) URL the parser would write as it is (lower-case host, no punycode or number
    last, no default port, no dot segment, no character to escape) is that URL, and an href of
    another scheme is "not http(s)", without asking the core (--sort-query too); the rest are
    the core's answers."""
    import minicrawl.resolve as module

    asked: list[str] = []

    def counted(href: str, *args: object, **kwargs: object) -> tuple[str | None, str]:
        asked.append(href)
        return canonical_url(href, *args, **kwargs)  # type: ignore[arg-type]

    resolvers = {sort: LinkResolver(Options(sort_query=sort), [Scope(["http://h.test/"])])
                 for sort in (False, True)}
    for page, href, sort in visits:
        asked.clear()
        with pytest.MonkeyPatch.context() as patch:
            patch.setattr(module, "canonical_url", counted)
            answer = _resolved(resolvers[sort], page, href)
        assert answer == _fresh(page, href, options=Options(sort_query=sort)), (page, href)
        kept = href.partition("#")[0]
        # (only a host of lower-case labels and a port not starting with 0: a host ending in a
        # number is an IPv4 address, kept only as four numbers of 0-255 written plainly; a
        # punycode label is checked, "_"…: the parser may rewrite or refuse such, so they are
        # asked even when it does not)
        host, _, port = kept.partition("://")[2].partition("/")[0].partition(":")
        ipv4 = re.fullmatch(r"(?:(?:25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])\.){3}"
                            r"(?:25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])", host)
        plain = re.fullmatch(r"[a-z0-9-]+(\.[a-z0-9-]+)*", host) is not None \
            and not port.startswith("0") \
            and (ipv4 is not None
                 or re.fullmatch(r"[0-9]+|0x[0-9a-f]*", host.rpartition(".")[2]) is None) \
            and "xn--" not in host
        if answer[0] == kept and plain and not (sort and "?" in kept) \
                or answer[1] == "not http(s)":
            assert kept not in asked, (page, href, answer)

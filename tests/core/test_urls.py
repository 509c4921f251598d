"""urls: one canonical spelling per page, links made absolute against their page, and the
per-folder cache of resolve, which must never answer other than a fresh urljoin would."""

from __future__ import annotations

from urllib.parse import urljoin

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from minicrawl.core import urls
from minicrawl.core.urls import MAX_LENGTH, canonicalize, origin, resolve


@pytest.mark.parametrize(("url", "expected"), [
    # scheme and host lower-cased
    ("HTTP://Example.ORG/A", "http://example.org/A"),
    ("HtTpS://WWW.Example.org/", "https://www.example.org/"),
    # the default port dropped, any other kept; an empty port is no port
    ("http://example.org:80/a", "http://example.org/a"),
    ("https://example.org:443/a", "https://example.org/a"),
    ("http://example.org:443/a", "http://example.org:443/a"),
    ("https://example.org:80/a", "https://example.org:80/a"),
    ("http://example.org:8080/a", "http://example.org:8080/a"),
    ("http://example.org:/a", "http://example.org/a"),
    # the fragment and the userinfo dropped
    ("http://example.org/a#top", "http://example.org/a"),
    ("http://example.org/a?q=1#top", "http://example.org/a?q=1"),
    ("http://user:pass@example.org/a", "http://example.org/a"),
    ("http://user@Example.org:8080/", "http://example.org:8080/"),
    # IDNA hosts
    ("http://bücher.de/", "http://xn--bcher-kva.de/"),
    ("http://BÜCHER.de/x", "http://xn--bcher-kva.de/x"),
    ("http://xn--bcher-kva.de/", "http://xn--bcher-kva.de/"),
    # IPv6: brackets kept, port as for any host
    ("http://[::1]:8080/x", "http://[::1]:8080/x"),
    ("http://[::1]:80/x", "http://[::1]/x"),
    ("https://[FE80::1]:8443/", "https://[fe80::1]:8443/"),
    # dot segments removed, never above the root; dots in a query are not segments
    ("http://h.test/a/./b/../c", "http://h.test/a/c"),
    ("http://h.test/a/b/..", "http://h.test/a/"),
    ("http://h.test/a/b/.", "http://h.test/a/b/"),
    ("http://h.test/a/..", "http://h.test/"),
    ("http://h.test/..", "http://h.test/"),
    ("http://h.test/.", "http://h.test/"),
    ("http://h.test/../../x", "http://h.test/x"),
    ("http://h.test/a/%2e%2E/b", "http://h.test/b"),
    ("http://h.test/a/%2E%2e", "http://h.test/"),
    ("http://h.test/a/..b/.c/", "http://h.test/a/..b/.c/"),
    ("http://h.test/a?p=/../x/.", "http://h.test/a?p=/../x/."),
    # an empty path is "/"
    ("http://h.test", "http://h.test/"),
    ("http://h.test?q=1", "http://h.test/?q=1"),
    ("http://h.test#f", "http://h.test/"),
    # characters a URL may not hold percent-encoded (UTF-8); reserved ones left alone
    ("http://h.test/a b", "http://h.test/a%20b"),
    ("http://h.test/café", "http://h.test/caf%C3%A9"),
    ('http://h.test/"<>`{}|^\\', "http://h.test/%22%3C%3E%60%7B%7D%7C%5E%5C"),
    ("http://h.test/?q=a b&r=é", "http://h.test/?q=a%20b&r=%C3%A9"),
    ("http://h.test/a:b@c!$&'()*+,;=?x=/?:@", "http://h.test/a:b@c!$&'()*+,;=?x=/?:@"),
    # escapes of unreserved characters decoded, the others' hex digits upper-cased
    ("http://h.test/%7Euser/%41%62%2d%2E%5f", "http://h.test/~user/Ab-._"),
    ("http://h.test/a%2fb%3a%3F", "http://h.test/a%2Fb%3A%3F"),
    ("http://h.test/%e2%82%ac", "http://h.test/%E2%82%AC"),
    ("http://h.test/?q=%7e%2f%41", "http://h.test/?q=~%2FA"),
    # a '%' that starts no escape is itself escaped
    ("http://h.test/100%", "http://h.test/100%25"),
    ("http://h.test/%zz", "http://h.test/%25zz"),
    ("http://h.test/%4", "http://h.test/%254"),
    ("http://h.test/%%41", "http://h.test/%25A"),
    ("http://h.test/?p=50%&x=%", "http://h.test/?p=50%25&x=%25"),
    # blanks around the whole URL are not part of it
    ("  http://h.test/a \n", "http://h.test/a"),
])
def test_canonical_forms(url: str, expected: str) -> None:
    assert canonicalize(url) == expected
    assert canonicalize(expected) == expected


@pytest.mark.parametrize("url", [
    "http://", "https://", "http://?q", "http:///a", "http:/a", "http:a",  # no host
    "mailto:someone@h.test", "javascript:alert(1)", "ftp://h.test/", "file:///etc/passwd",
    "data:text/html,<a href=x>", "ws://h.test/",  # only http and https
    "h.test/a", "//h.test/a", "/a", "",  # not absolute
    "http://h.test:port/", "http://h.test:99999/", "http://h.test:-1/", "http://h.test:8 0/",
    "http://[::1/", "http://[zzz]/",  # a broken IPv6 address
    "http://" + "ü" * 64 + ".de/",  # a label IDNA refuses (over 63 characters)
])
def test_not_crawlable_is_none(url: str) -> None:
    assert canonicalize(url) is None


def test_max_length() -> None:
    prefix = "http://h.test/"
    at_limit = prefix + "a" * (MAX_LENGTH - len(prefix))
    assert MAX_LENGTH == 2048
    assert canonicalize(at_limit) == at_limit
    assert canonicalize(at_limit + "a") is None
    # the canonical form is what counts: 400 short characters, each six once encoded
    assert canonicalize(prefix + "é" * 400) is None


@pytest.mark.parametrize(("url", "expected"), [
    ("http://h.test/", "http://h.test/"),
    ("http://h.test/a/b?c=/d/e", "http://h.test/"),
    ("https://h.test:8443/a", "https://h.test:8443/"),
    ("http://[::1]:8080/x?y=/z", "http://[::1]:8080/"),
])
def test_origin(url: str, expected: str) -> None:
    assert origin(url) == expected


PAGE = "http://h.test/d/p.html?q=1"


@pytest.mark.parametrize(("href", "expected"), [
    ("q.html", "http://h.test/d/q.html"),
    ("./", "http://h.test/d/"),
    ("../up.html", "http://h.test/up.html"),
    ("../../../../x", "http://h.test/x"),
    ("/abs?z", "http://h.test/abs?z"),
    ("%2e%2e/x", "http://h.test/x"),
    ("a b.html#f", "http://h.test/d/a%20b.html"),
    ("", "http://h.test/d/p.html?q=1"),
    ("#top", "http://h.test/d/p.html?q=1"),
    ("?x=2", "http://h.test/d/p.html?x=2"),
    ("?x=2#top", "http://h.test/d/p.html?x=2"),
    ("  /padded\n", "http://h.test/padded"),
    ("\t?x\n", "http://h.test/d/p.html?x"),
    ("//Other.test/x", "http://other.test/x"),
    ("HTTPS://Other.test:443/x", "https://other.test/x"),
    ("http:q.html", "http://h.test/d/q.html"),  # the page's scheme: relative, as urljoin has it
    ("http:", "http://h.test/d/p.html?q=1"),
    ("http:?x", "http://h.test/d/p.html?x"),
    ("https:q.html", None),  # another scheme: absolute, and it has no host
    ("mailto:a@h.test", None),
    ("javascript:void(0)", None),
    ("//[", None),  # urljoin raises on these: one broken link is no link, not an error
    ("http://[::1", None),
    ("http://[zzz]/", None),
    ("http://[::1]@]", None),  # found by hypothesis: the host ']' (was 'http://]/', not idempotent)
    ("http://a b/", None),  # a host may not hold a blank, '%', '^', '|', …
    ("http://x|y.test/", None),
])
def test_resolve(href: str, expected: str | None) -> None:
    assert resolve(PAGE, href) == expected


def test_resolve_shares_one_answer_per_folder() -> None:
    """Pages of one folder share the answer for a folder-relative href: computed once."""
    href = "../shared/menu-test-resolve-folder.html"
    before = urls._resolve_in_folder.cache_info()
    first = resolve("http://cache.test/f/one.html", href)
    second = resolve("http://cache.test/f/two.html?x=/y", href)
    after = urls._resolve_in_folder.cache_info()
    assert first == second == "http://cache.test/shared/menu-test-resolve-folder.html"
    assert after.misses == before.misses + 1
    assert after.hits == before.hits + 1


@pytest.mark.parametrize(("href", "answers"), [
    ("", ("http://cache.test/g/one.html", "http://cache.test/g/two.html?a=/b")),
    ("?x", ("http://cache.test/g/one.html?x", "http://cache.test/g/two.html?x")),
    ("#y", ("http://cache.test/g/one.html", "http://cache.test/g/two.html?a=/b")),
    ("http:", ("http://cache.test/g/one.html", "http://cache.test/g/two.html?a=/b")),
    ("//", ("http://cache.test/g/one.html", "http://cache.test/g/two.html?a=/b")),
    (";?x", ("http://cache.test/g/one.html?x", "http://cache.test/g/two.html?x")),
])
def test_page_dependent_hrefs_get_each_page_its_answer(href: str, answers: tuple) -> None:
    pages = ("http://cache.test/g/one.html", "http://cache.test/g/two.html?a=/b")
    for _ in range(2):  # the second round would meet a cached answer, if there were one
        assert tuple(resolve(page, href) for page in pages) == answers
        assert tuple(resolve(page, href) for page in reversed(pages)) == answers[::-1]


# --- properties -------------------------------------------------------------------------------

_SEGMENT = st.sampled_from(["a", "b", "", "x;p=1", "c%2Fd", "é", "a b", "%41", "~u", "i.html"])
_QUERY = st.sampled_from(["", "?", "?q=1", "?p=/a/b", "?x=../y&z=/", "?a?b"])


@st.composite
def canonical_pages(draw: st.DrawFn) -> str:
    """A canonical page URL: either scheme, a port or none, folders of any depth (empty
    segments make '//'), ';' in a segment, a query that may hold '/'."""
    scheme = draw(st.sampled_from(["http", "https"]))
    host = draw(st.sampled_from(["h.test", "Other.TEST", "[::1]", "127.0.0.1", "bücher.de"]))
    port = draw(st.sampled_from(["", ":80", ":443", ":8080"]))
    path = "/".join(draw(st.lists(_SEGMENT, max_size=5)))
    page = canonicalize(f"{scheme}://{host}{port}/{path}{draw(_QUERY)}")
    assert page is not None
    return page


_RELATIVE = st.lists(st.sampled_from(["..", ".", "a", "b;q", "", "x.html", "%2e%2e", "é"]),
                     min_size=1, max_size=6).map("/".join)
_ABSOLUTE = st.sampled_from(["http://h.test/x", "https://h.test/x", "HTTP://h.test:80/a/../b",
                             "http://other.test", "https://h.test:8443/d/", "mailto:x@h.test",
                             "ftp://h.test/"])
_ODD = st.sampled_from(["http:x", "http:", "https:x", "https:", "HTTP:x/../y", "http:?q",
                        "http:/x", "https:/x", "http://", "http://?q", "//", "///x", "//?q",
                        "//h.test", "//other.test/x", ";p", ";", ";?q", "?", "#", "//[",
                        "http://[::1"])
_HREF_CORE = st.one_of(
    _RELATIVE,
    _RELATIVE.map(lambda r: "/" + r),
    _RELATIVE.map(lambda r: "//other.test/" + r),
    _QUERY.map(lambda q: q or "?q"),
    st.just(""),
    _ABSOLUTE,
    _ODD,
)
_BLANK = st.sampled_from(["", " ", "\t", "\n", " \r\n ", "\x00", "\x01", "\x0c", "\xa0"])


@st.composite
def hrefs(draw: st.DrawFn) -> str:
    """An href as a page may spell it: any kind of reference, maybe a query or a fragment
    after it (with a blank before the '#'), blanks around."""
    href = draw(_HREF_CORE)
    href += draw(st.sampled_from(["", "?k=/v", "?k=v/../w"]))
    href += draw(st.sampled_from(["", "#f", " #f", "#f/../g"]))
    return draw(_BLANK) + href + draw(_BLANK)


def _fresh(page: str, href: str) -> str | None:
    try:
        return canonicalize(urljoin(page, href))
    except ValueError:  # urljoin's own complaint ('//['): the link is no URL
        return None


@settings(max_examples=3000, deadline=None)
@given(canonical_pages(), hrefs(), st.sampled_from(["", "other.html", "p.html?x=/y", "sub/"]))
@example("http://h.test/d/p.html?q=1", "http:", "")
@example("http://h.test/d/p.html?q=1", "//", "")
@example("http://h.test/d/p.html?q=1", "x #f", "")
@example("http://h.test/d/p.html?q=1", "\x01?q", "")
@example("http://h.test/d/p.html?q=1", "\xa0x", "")
@example("http://h.test/d/p.html?q=1", ";", "")
def test_resolve_is_urljoin_then_canonicalize(page: str, href: str, sibling: str) -> None:
    """Whatever the cache holds, the answer is the one a fresh urljoin gives. A sibling page of
    the same folder (or a page one folder down) answers first, to fill the cache."""
    folder = page.split("?", 1)[0]
    folder = folder[: folder.rfind("/") + 1]
    resolve(folder + sibling, href)
    assert resolve(page, href) == _fresh(page, href)
    assert resolve(folder + sibling, href) == _fresh(folder + sibling, href)


_URL_TEXT = st.lists(
    st.sampled_from(list("aAzZ09/.-_~%:@!$&'()*+,;=?# \"<>[]{}|\\^`\t\n") +
                    ["%2e", "%2E", "%41", "%2f", "%7e", "%zz", "..", "é", "€", "\xa0"]),
    max_size=40).map("".join)


@st.composite
def raw_urls(draw: st.DrawFn) -> str:
    scheme = draw(st.sampled_from(["http", "https", "HTTP", "HttpS", "ftp", "mailto", ""]))
    sep = draw(st.sampled_from(["://", ":", ":/", "//"]))
    user = draw(st.sampled_from(["", "u@", "u:p@", "@"]))
    host = draw(st.sampled_from(["h.test", "H.Test", "bücher.de", "[::1]", "[FE80::A]",
                                 "127.0.0.1", "", "a..b", "h.test."]))
    port = draw(st.sampled_from(["", ":", ":80", ":443", ":8080", ":0", ":x", ":99999"]))
    return scheme + sep + user + host + port + draw(_URL_TEXT)


@settings(max_examples=3000, deadline=None)
@given(raw_urls())
def test_canonicalize_is_idempotent(url: str) -> None:
    once = canonicalize(url)
    if once is not None:
        assert canonicalize(once) == once
        assert once.isascii() and len(once) <= MAX_LENGTH
        assert once.startswith(("http://", "https://"))
        assert origin(once) == canonicalize(origin(once))

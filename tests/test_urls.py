"""Canonicalization: one spelling per page, a clear reason for every bad link."""

from __future__ import annotations

import re

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from minicrawl.urls import (
    BadURL,
    absolute,
    canonicalize,
    host_of,
    join,
    origin_of,
    remove_dot_segments,
    repeated_segments,
)

BASE = "http://example.com/a/b/c.html"


@pytest.mark.parametrize(("href", "expected"), [
    ("HTTP://Example.COM/x", "http://example.com/x"),
    ("http://example.com:80/x", "http://example.com/x"),
    ("https://example.com:443/x", "https://example.com/x"),
    ("http://example.com:8080/x", "http://example.com:8080/x"),
    ("https://example.com:80/x", "https://example.com:80/x"),
    ("http://example.com", "http://example.com/"),
    ("d.html", "http://example.com/a/b/d.html"),
    ("../d.html", "http://example.com/a/d.html"),
    ("../../../../d.html", "http://example.com/d.html"),
    ("./", "http://example.com/a/b/"),
    ("/x/./y/../z", "http://example.com/x/z"),
    ("?q=1", "http://example.com/a/b/c.html?q=1"),
    ("#frag", "http://example.com/a/b/c.html"),
    ("/p#frag", "http://example.com/p"),
    ("//other.org/p", "http://other.org/p"),
    ("/%7Euser/%41%62", "http://example.com/~user/Ab"),
    ("/a%2fb", "http://example.com/a%2Fb"),
    ("/%2e%2e/x", "http://example.com/x"),
    ("/caf\u00e9", "http://example.com/caf%C3%A9"),
    ("/a b", "http://example.com/a%20b"),
    ("/100%", "http://example.com/100%25"),
    ("/q?b=2&a=1", "http://example.com/q?b=2&a=1"),
    ("  /padded\n  ", "http://example.com/padded"),
    ("/ta\tb", "http://example.com/tab"),
    ("http://b\u00fccher.de/", "http://xn--bcher-kva.de/"),
    ("http://[::1]:8080/", "http://[::1]:8080/"),
    ("http://[0:0::1]/", "http://[::1]/"),
    ("http://example.com./x", "http://example.com/x"),
    ("http://us er:p@ss@host/x", "http://us%20er:p%40ss@host/x"),  # userinfo escaped too
    ("http://xn--bcher-kva.de/", "http://xn--bcher-kva.de/"),
])
def test_canonical_forms(href, expected):
    assert canonicalize(href, BASE) == expected


def test_sort_query_is_optional():
    assert canonicalize("/q?b=2&a=1", BASE, sort_query=True) == "http://example.com/q?a=1&b=2"


@pytest.mark.parametrize(("href", "reason"), [
    ("javascript:void(0)", "not http(s)"),
    ("mailto:a@b.c", "not http(s)"),
    ("ftp://example.com/", "not http(s)"),
    ("data:text/html,hi", "not http(s)"),
    ("http://example.com:99999/", "invalid port"),
    ("http://example.com:abc/", "invalid port"),
    ("http://[::1/", "unparsable"),
    ("http://[zz::1]/", "unparsable"),
    ("http://[1:2:3:4:5:6:7:8:9]/", "unparsable"),
    ("http://exa mple.com/", "invalid host"),
    ("http://:80/", "no host"),
    ("/a\x00b", "control character"),
    ("/a\x7fb", "control character"),
    ("/" + "a" * 2100, "too long"),
    ("http://" + "a" * 64 + ".com/", "invalid host"),
    ("http://" + "\u00e9" * 64 + ".com/", "host not valid IDNA"),
    ("http://a\u0000b\u00e9.com/", "control character"),
    ("http://example.com:\u00b2/", "invalid port"),  # a digit to isdigit(), not to int()
    ("http://example.com:\u0661\u0662/", "invalid port"),
    ("http://xn--a.com/", "host not valid IDNA"),  # claims punycode, is not
])
def test_bad_links_have_a_reason(href, reason):
    with pytest.raises(BadURL) as info:
        canonicalize(href, BASE)
    assert info.value.reason == reason


def test_relative_without_base_is_bad():
    with pytest.raises(BadURL):
        canonicalize("/just/a/path")


def test_repeated_segments_and_a_configurable_length_cap():
    assert repeated_segments("http://h/a/a/a/a/") == 4
    assert repeated_segments("http://h/x/a/y/a/a/a?q=a/a/a/a/a") == 4  # the query is not path
    assert repeated_segments("http://h/") == 0 and repeated_segments("http://h/a/b/c") == 1
    with pytest.raises(BadURL, match="too long"):
        canonicalize("/" + "a" * 100, BASE, max_length=64)


def test_helpers():
    assert host_of("http://example.com:8080/x") == "example.com"
    assert host_of("http://[::1]:8080/x") == "[::1]"
    # userinfo first: the host of an IPv6 address with credentials is still the address
    assert host_of("http://user:pw@[::1]:8080/x") == "[::1]"
    assert host_of("http://user:pw@example.com:8080/x") == "example.com"
    assert origin_of("https://example.com:8443/x?y") == "https://example.com:8443"
    assert remove_dot_segments("/a/b/../../..") == "/"
    assert remove_dot_segments("/a/./b/.") == "/a/b/"


@settings(max_examples=400, deadline=None)
@given(st.text(max_size=80))
def test_any_text_is_a_canonical_url_or_a_bad_url(href):
    try:
        url = canonicalize(href, BASE)
    except BadURL:
        return
    assert url.startswith(("http://", "https://"))
    assert canonicalize(url) == url  # canonical forms are fixed points
    assert "#" not in url and " " not in url and url.isascii()


ORIGINS = ["http://example.com", "HTTP://Example.COM", "http://example.com:80",
           "https://example.com:8443", "http://example.com.", "http://u:p@example.com",
           "http://0x7f.1", "http://[::1]:8080", "http://xn--nxasmq6b.com", "http://ex%41.com",
           "http:/example.com", "https://", "http://exa mple.com"]
PATHS = st.lists(st.sampled_from(["/", "a", ".", "..", "%41", "%2e", "~", ":", "@", "!", "é",
                                  " ", "\t", "?", "#", "//", "\\", ";", "+"]),
                 max_size=8).map("".join)


@settings(max_examples=1500, deadline=None)
@given(st.sampled_from(ORIGINS), PATHS)
def test_the_shortcut_for_plain_urls_agrees_with_the_full_canonicalization(origin, path):
    """canonicalize() returns a plain URL under a canonical origin as it is, without parsing
    it: that must be exactly what the full path gives, or the same BadURL reason."""
    from minicrawl import urls

    def outcome(do):
        try:
            return do()
        except BadURL as e:
            return e.reason

    url = origin + path
    full = outcome(lambda: urls._canonicalize(url, None, False, urls.MAX_URL_LENGTH))
    assert outcome(lambda: canonicalize(url)) == full
    if urls._plainly_canonical(url):  # the shortcut applies only where it changes nothing
        assert full == url


BASES = ["http://example.com/a/b/c.html", "http://example.com/a/b/", "http://example.com",
         "https://example.com:8443/x?y=1", "http://example.com/a/b/c.html?q=/s/t"]
HREF_PARTS = st.sampled_from(["", "/", "//", ".", "..", "./", "../", "a", "b/", "x.html", "?",
                              "q=1", "#", "f", "%2e", "%41", ":", "http:", "HTTP://other.org",
                              "//h.org", "é", "%20", "@"])
# No ";": urljoin splits RFC 2396 ";params" off path segments (".;p" → ";p"); RFC 3986 and
# browsers keep ".;p" as a segment, as join() does.


@settings(max_examples=1500, deadline=None)
@given(st.sampled_from(BASES), st.lists(HREF_PARTS, max_size=6).map("".join))
def test_the_fast_join_agrees_with_urljoin(base, href):
    """join() slices strings for speed; whatever it returns must canonicalize like urljoin's."""
    from urllib.parse import urljoin

    def canonical_or_reason(make):
        try:
            return canonicalize(make())
        except (BadURL, ValueError) as e:
            return getattr(e, "reason", "unparsable")

    cleaned = absolute(href)  # the browser-style trimming, no base yet
    # urljoin drops empty segments of relative paths ("a//b" → "a/b"); RFC 3986 and browsers
    # keep them, and so does join(): those cases are not comparable.
    assume("//" not in cleaned.split("?", 1)[0][1:])
    # urljoin reads "?" (an empty query) as no query and keeps the base's; RFC 3986 does not.
    assume(cleaned.split("#", 1)[0] != "?")
    # urljoin takes the page's host for an empty one ("//", "http://?q"); join() refuses it, as
    # the URL Standard does (test_a_link_with_an_empty_host_is_no_url_not_the_page_itself).
    assume(not re.match(r"(?:https?:)?//(?:[?#]|$)", cleaned, re.IGNORECASE))
    assert canonical_or_reason(lambda: join(base, cleaned)) == \
        canonical_or_reason(lambda: urljoin(base, cleaned))


# -- The WHATWG URL Standard (https://url.spec.whatwg.org/), for http(s) ---------------------
# Each case follows one rule of the standard's basic URL parser, written from the rule; the
# result is then canonical as above (no default port, no trailing dot, lower case).
PAGE = "http://example.org/foo/bar"


@pytest.mark.parametrize(("href", "base", "expected"), [
    # "\" is "/" in special URLs, everywhere before the query (path, authority, slashes)
    ("\\x", PAGE, "http://example.org/x"),
    ("a\\b", PAGE, "http://example.org/foo/a/b"),
    ("\\\\server\\file", PAGE, "http://server/file"),
    ("/\\other.test/p", PAGE, "http://other.test/p"),
    ("http:\\\\h\\p", None, "http://h/p"),
    ("/a?b\\c", PAGE, "http://example.org/a?b%5Cc"),  # not in the query: escaped as today
    # special authority (ignore) slashes: any run of slashes starts the authority
    ("https:example.com/", PAGE, "https://example.com/"),
    ("https:/example.com/", PAGE, "https://example.com/"),
    ("https:example.com/", None, "https://example.com/"),
    ("HTTPS:///h", None, "https://h/"),
    ("http:////h/p", None, "http://h/p"),
    ("///example.org/p", "http://other.test/x", "http://example.org/p"),
    ("////h//p", PAGE, "http://h//p"),
    # the same scheme as the base: the rest is relative (special relative or authority state)
    ("http:example.com/", PAGE, "http://example.org/foo/example.com/"),
    ("http:/example.com/", PAGE, "http://example.org/example.com/"),
    ("http:", PAGE, "http://example.org/foo/bar"),
    ("http:?q", PAGE, "http://example.org/foo/bar?q"),
    ("http:a:b", PAGE, "http://example.org/foo/a:b"),
    # the IPv4 parser: 1-4 parts, each decimal, 0x hex or 0 octal; the last fills the rest
    ("http://127.1/", None, "http://127.0.0.1/"),
    ("http://0x7f.1/", None, "http://127.0.0.1/"),
    ("http://0177.0.0.1/", None, "http://127.0.0.1/"),
    ("http://2130706433/", None, "http://127.0.0.1/"),
    ("http://0x7F000001/", None, "http://127.0.0.1/"),
    ("http://4294967295/", None, "http://255.255.255.255/"),
    ("http://1.65535/", None, "http://1.0.255.255/"),
    ("http://0xc0.0250.01/", None, "http://192.168.0.1/"),
    ("http://0x/", None, "http://0.0.0.0/"),
    ("http://127.0.0.1./", None, "http://127.0.0.1/"),
    ("http://\uff10\uff38\uff43\uff10\uff0e\uff10\uff12\uff15\uff10\uff0e\uff10\uff11/", None,
     "http://192.168.0.1/"),  # full-width digits map to ASCII first (UTS-46)
    ("http://www.0xdeadbeef.com/", None, "http://www.0xdeadbeef.com/"),  # ends in a name
    ("http://1.2.3.com/", None, "http://1.2.3.com/"),
    # credentials: an empty password is no password, an empty userinfo none at all
    ("https://u:@h/", None, "https://u@h/"),
    ("https://:@h/", None, "https://h/"),
    ("https://@h/", None, "https://h/"),
    ("https://:p@h/", None, "https://:p@h/"),
    ("http://a@b@c/", None, "http://a%40b@c/"),  # the last "@" ends the userinfo
    # hosts: percent-decoded, then UTS-46 non-transitional ToASCII (ß, ς, ZWJ kept)
    ("http://fa\u00df.example/", None, "http://xn--fa-hia.example/"),
    ("http://FA\u00df.EXAMPLE/", None, "http://xn--fa-hia.example/"),
    ("http://\u03c2.example/", None, "http://xn--3xa.example/"),  # not σ's xn--4xa
    ("http://\u0915\u094d\u200d\u0937.example/", None, "http://xn--11b2ezcw70k.example/"),
    ("http://xn--fa-hia.example/", None, "http://xn--fa-hia.example/"),
    ("http://XN--FA-HIA.example/", None, "http://xn--fa-hia.example/"),
    ("http://%65xample.com/", None, "http://example.com/"),
    ("http://f%C3%A4.example/", None, "http://xn--f-0fa.example/"),
    ("http://example\u3002com/", None, "http://example.com/"),  # ideographic full stop
    ("http://a_b.example/", None, "http://a_b.example/"),
    ("http://[::ffff:1.2.3.4]/", None, "http://[::ffff:102:304]/"),
])
def test_hrefs_resolve_as_the_url_standard_says(href, base, expected):
    assert canonicalize(href, base) == expected


@pytest.mark.parametrize(("href", "reason"), [
    ("http://192.168.0.257/", "invalid IPv4 address"),  # of four parts the last must be < 256
    ("http://4294967296/", "invalid IPv4 address"),  # 2**32
    ("http://256.0.0.1/", "invalid IPv4 address"),
    ("http://1.2.3.4.5/", "invalid IPv4 address"),  # more than four parts
    ("http://1.2.3.08/", "invalid IPv4 address"),  # 8 is no octal digit
    ("http://0x100000000/", "invalid IPv4 address"),
    ("http://1..2/", "invalid IPv4 address"),  # an empty part
    ("http://foo.09/", "invalid IPv4 address"),  # ends in a number: must be an address
    ("http://foo.123/", "invalid IPv4 address"),
    ("http://xn--zz.example/", "host not valid IDNA"),  # not punycode
    ("http://a\u200db.example/", "host not valid IDNA"),  # ZWJ out of its context (CONTEXTJ)
    ("http://ex%00ample.org/", "invalid host"),  # decoded into a forbidden code point
    ("http://ex%ffample.org/", "invalid host"),  # not UTF-8
    ("http://exa<mple.org/", "invalid host"),
    ("http://[::1%25lo]/", "invalid IPv6 host"),  # zone ids are no part of a URL
    ("http://u@/", "no host"),
])
def test_hosts_the_url_standard_rejects(href, reason):
    with pytest.raises(BadURL) as info:
        canonicalize(href, PAGE)
    assert info.value.reason == reason


def test_idna2003_would_map_to_another_registrants_domain():
    """Python's "idna" codec (IDNA2003) maps ß to ss: a different name, someone else's."""
    assert "fa\u00df.example".encode("idna") == b"fass.example"
    assert canonicalize("http://fa\u00df.example/") != "http://fass.example/"


@pytest.mark.parametrize("href", ["http://", "http://\t", "https:// ", "http://?q=1", "//",
                                  "//?q", "HTTP://#top"])
def test_a_link_with_an_empty_host_is_no_url_not_the_page_itself(href):
    with pytest.raises(BadURL) as e:
        canonicalize(href, "http://example.com/a/b.html")
    assert e.value.reason == "no host"


def test_a_base_whose_last_folder_follows_a_double_slash_keeps_its_path():
    # RFC 3986 and browsers: only "http://host" has no path; "/a//b" is in folder "/a//".
    assert absolute("x", "http://example.com/a//b") == "http://example.com/a//x"
    assert absolute("../x", "http://example.com/a//b") == "http://example.com/a/x"
    assert absolute("x", "http://example.com//b") == "http://example.com//x"
    assert absolute("x", "http://example.com") == "http://example.com/x"
    assert absolute("x", "http://example.com?q=/a/b") == "http://example.com/x"

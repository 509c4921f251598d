"""urls: links read as browsers read them (the WHATWG URL Standard), then one canonical spelling
per page; web-platform-tests' own cases say what the standard answers."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from minicrawl.core.urls import MAX_LENGTH, canonical, canonicalize, resolve
from minicrawl.origins import origin_of

DATA = Path(__file__).parent.parent / "data"
UNRESERVED = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~")


def our_choices(whatwg_href: str | None) -> str | None:
    """The standard's answer with the choices core/urls.py's docstring names, written again from
    its words: only http(s), no fragment, no empty query, in the path and query escaped unreserved
    characters decoded and other escapes upper-cased, characters outside RFC 3986's escaped, a
    stray "%" as "%25", at most MAX_LENGTH characters."""
    if whatwg_href is None or not whatwg_href.startswith(("http://", "https://")):
        return None
    url = whatwg_href.split("#", 1)[0]
    if url.endswith("?") and url.count("?") == 1:
        url = url[:-1]
    origin, slash, target = url.partition("://")[2].partition("/")
    allowed = UNRESERVED | set("!$&'()*+,;=:@/?")
    out = []
    for i, c in enumerate(target):
        if c == "%" and re.fullmatch("[0-9A-Fa-f]{2}", target[i + 1:i + 3]):
            out.append(c)
        elif c == "%" or c not in allowed:
            out.append(f"%{ord(c):02X}")
        else:
            out.append(c)
    target = re.sub("%[0-9A-Fa-f]{2}", lambda m: chr(int(m[0][1:], 16))
                    if chr(int(m[0][1:], 16)) in UNRESERVED else m[0].upper(), "".join(out))
    url = url.partition("://")[0] + "://" + origin + slash + target
    return url if len(url) <= MAX_LENGTH else None


def _http(text: str | None) -> bool:
    return text is not None and re.match(r"[\x00-\x20]*https?:", text, re.IGNORECASE) is not None


# Every case of web-platform-tests' url/resources/urltestdata.json about http(s): a base or an
# answer in http(s), or an http(s) URL the standard refuses.
WPT = [case for case in json.loads((DATA / "urltestdata.json").read_text("utf-8"))
       if isinstance(case, dict) and (_http(case.get("base")) or _http(case.get("href"))
                                      or case.get("failure") and _http(case["input"]))]
KNOWN_EXCEPTIONS: list[str] = []  # none: the parser is the standard's


def test_every_http_case_of_the_url_standards_tests_is_answered_as_the_standard_says() -> None:
    wrong = []
    for case in WPT:
        expected = None if case.get("failure") else our_choices(case["href"])
        got = canonical(case["input"], case.get("base"))[0]
        if got != expected:
            wrong.append(f"{case['input']!r} on {case.get('base')!r}: {got!r}, not {expected!r}")
    print(f"WPT urltestdata.json, http(s) cases: {len(WPT) - len(wrong)}/{len(WPT)} "
          f"({100 * (len(WPT) - len(wrong)) / len(WPT):.1f} %)")
    assert len(WPT) >= 480  # the file is there and read whole
    assert wrong == KNOWN_EXCEPTIONS


@pytest.mark.parametrize("case", WPT[::7], ids=lambda case: repr(case["input"])[:40])
def test_canonical_urls_are_fixed_points_and_refusals_say_why(case: dict) -> None:
    url, why = canonical(case["input"], case.get("base"))
    if url is None:
        assert why in ("not http(s)", "invalid host or port", "no scheme")
    else:
        assert why == "" and canonical(url) == (url, "") and url.isascii()


PAGE = "https://example.org/dir/page.html?x=1"


@pytest.mark.parametrize(("href", "expected"), [
    # where run.py's old canonicalizer answered otherwise: the host mapped by UTS-46 as browsers
    # map it (IDNA 2003 made faß fass, another registrant's name), the IPv4 parser, backslashes,
    # slashes, a scheme like the page's or not, escapes in a host, userinfo, a trailing dot
    ("http://faß.example/", "http://xn--fa-hia.example/"),
    ("http://127.1/", "http://127.0.0.1/"),
    ("\\\\other.org\\x", "https://other.org/x"),
    ("///other.org/y", "https://other.org/y"),
    ("http:other.org/z", "http://other.org/z"),  # another scheme than the page's: absolute
    ("https:other.org/z", "https://example.org/dir/other.org/z"),  # the page's: relative
    ("http://%65xample.org/", "http://example.org/"),
    ("http://user:pass@example.org/", "http://user:pass@example.org/"),
    ("http://example.org./", "http://example.org./"),
    # and where it did not
    ("faß.example", "https://example.org/dir/fa%C3%9F.example"),
    ("HTTP://EXAMPLE.org:80/a/../b", "http://example.org/b"),
    ("https://example.org:443/", "https://example.org/"),
    ("http://example.org:8080/", "http://example.org:8080/"),
    ("../../up", "https://example.org/up"),
    ("/a/./b/../c", "https://example.org/a/c"),
    ("/a/%2e%2E/b", "https://example.org/b"),
    ("?q=1#f", "https://example.org/dir/page.html?q=1"),
    ("#top", PAGE),
    ("", PAGE),
    ("/p?", "https://example.org/p"),
    ("  /sp ace\t\n", "https://example.org/sp%20ace"),
    ("/a%7eb/%2f%zz", "https://example.org/a~b/%2F%25zz"),
    ("//Other.ORG", "https://other.org/"),
    ("http://[0:0::1]:8080/", "http://[::1]:8080/"),
    ("http://0x7f.0.0.1/", "http://127.0.0.1/"),
    ("https://bücher.de/", "https://xn--bcher-kva.de/"),
    ("/é?é", "https://example.org/%C3%A9?%C3%A9"),
    ("http://ex\tample.org/", "http://example.org/"),
    ("mailto:a@example.org", None),
    ("javascript:void(0)", None),
    ("http://a b/", None),
    ("http://example.org:99999/", None),
    ("//", None),
])
def test_tricky_hrefs_resolve_as_browsers_resolve_them(href: str, expected: str | None) -> None:
    assert resolve(PAGE, href) == expected


@pytest.mark.parametrize(("href", "base", "why"), [
    ("mailto:a@example.org", PAGE, "not http(s)"),
    ("ftp://example.org/", None, "not http(s)"),
    ("HT\tTP://a b/", None, "invalid host or port"),  # tabs and newlines are no part of a URL
    ("http://example.org:abc/", None, "invalid host or port"),
    ("http://[::1/", None, "invalid host or port"),
    ("http://", None, "invalid host or port"),
    ("//[", PAGE, "invalid host or port"),
    ("example.org/a", None, "no scheme"),
    ("x", "mailto:a@example.org", "no scheme"),  # a base that is no folder
    ("http://example.org/" + "a" * MAX_LENGTH, None, "too long"),
])
def test_a_refusal_says_why(href: str, base: str | None, why: str) -> None:
    assert canonical(href, base) == (None, why)


def test_max_length() -> None:
    prefix = "http://h.test/"
    at_limit = prefix + "a" * (MAX_LENGTH - len(prefix))
    assert MAX_LENGTH == 2048
    assert canonicalize(at_limit) == at_limit
    assert canonicalize(at_limit + "a") is None
    # the canonical form is what counts: 400 short characters, each six once encoded
    assert canonical(prefix + "é" * 400) == (None, "too long")
    assert canonical(prefix + "a" * 100, max_length=64) == (None, "too long")
    assert canonical(at_limit + "a", max_length=4096)[0] == at_limit + "a"


# A link's query in its page's encoding, as browsers send it; the path is UTF-8 whatever it is.
@pytest.mark.parametrize(("href", "encoding", "expected"), [
    ("?q=日本", "shift_jis", "?q=%93%FA%96%7B"),  # the second byte of 本 is "{" (RFC 3986: escaped)
    ("/日本?q=日本", "shift_jis", "/%E6%97%A5%E6%9C%AC?q=%93%FA%96%7B"),
    ("?q=日本#f", "euc-jp", "?q=%C6%FC%CB%DC"),
    ("?q=€", "windows-1252", "?q=%80"),
    ("?q=€", "iso-8859-1", "?q=%80"),  # a label of windows-1252 (the Encoding Standard's)
    ("?q=日", "windows-1252", "?q=%26%2326085%3B"),  # not in it: "&#26085;", escaped
    ("?q=\x81", "windows-1252", "?q=%81"),  # the standard's windows-1252 has byte 81 for U+0081
    ("?q=\u0e01", "windows-874", "?q=%A1"),  # a name Python's codecs do not know (cp874)
    ("?q=€", "gbk", "?q=%80"), ("?q=€", "gb2312", "?q=%80"),  # the standard's GBK, not gb18030's
    ("?q=€", "gb18030", "?q=%A2%E3"),
    ("?q=¥‾日", "shift_jis", "?q=%5C~%93%FA"),  # the standard's Shift_JIS (cp932 has neither)
    ("?q=é", "utf-16", "?q=%C3%A9"),  # a URL is never UTF-16: UTF-8
    ("?q=é", "UTF-16LE", "?q=%C3%A9"),
    ("?q=é", "no-such-encoding", "?q=%C3%A9"),
    ("?q=a b", "shift_jis", "?q=a%20b"),  # ASCII: as in UTF-8
    ("#?日本", "shift_jis", "?x=1"),  # a fragment, not a query
])
def test_a_links_query_is_encoded_in_its_pages_encoding(href: str, encoding: str,
                                                        expected: str) -> None:
    assert resolve("http://h.test/d/p.html?x=1", href, encoding) == \
        "http://h.test" + (expected if expected.startswith("/") else "/d/p.html" + expected)


# web-platform-tests' url/resources/percent-encoding.json: a query character in an encoding,
# every one as the standard says (an ISO-2022-JP page's SO, SI or ESC, though ASCII, goes to its
# encoder, which refuses it: "&#65533;", not "%0E").
PERCENT_EXCEPTIONS: set[tuple[str, str]] = set()


def test_query_characters_in_other_encodings_as_web_platform_tests_expect() -> None:
    cases = [(case["input"], encoding, expected) for case in
             json.loads((DATA / "percent-encoding.json").read_text("utf-8"))
             if isinstance(case, dict) for encoding, expected in case["output"].items()]
    wrong = {(text, encoding) for text, encoding, expected in cases
             if resolve("https://doesnotmatter.invalid/", "?" + text, encoding)
             != our_choices("https://doesnotmatter.invalid/?" + expected)}
    assert len(cases) == 16 and wrong == PERCENT_EXCEPTIONS


# --- properties -------------------------------------------------------------------------------

_URL_TEXT = st.lists(
    st.sampled_from(list("aAzZ09/.-_~%:@!$&'()*+,;=?# \"<>[]{}|\\^`\t\n") +
                    ["%2e", "%2E", "%41", "%2f", "%7e", "%zz", "..", "é", "€", "\xa0", "日"]),
    max_size=40).map("".join)


@st.composite
def raw_urls(draw: st.DrawFn) -> str:
    scheme = draw(st.sampled_from(["http", "https", "HTTP", "HttpS", "ftp", "mailto", ""]))
    sep = draw(st.sampled_from(["://", ":", ":/", "//", ":\\\\"]))
    user = draw(st.sampled_from(["", "u@", "u:p@", "@", "%41:%7e@"]))
    host = draw(st.sampled_from(["h.test", "H.Test", "bücher.de", "[::1]", "[FE80::A]",
                                 "127.0.0.1", "0x7f.1", "", "a..b", "h.test.", "%68.test"]))
    port = draw(st.sampled_from(["", ":", ":80", ":443", ":8080", ":0", ":x", ":99999"]))
    return scheme + sep + user + host + port + draw(_URL_TEXT)


@settings(max_examples=3000, deadline=None)
@given(raw_urls(), st.sampled_from(["utf-8", "shift_jis", "iso-8859-1"]))
def test_a_canonical_url_is_its_own_canonical_form(url: str, encoding: str) -> None:
    once = resolve("http://h.test/d/p.html?q=1", url, encoding)
    if once is not None:
        assert canonicalize(once) == once
        assert once.isascii() and len(once) <= MAX_LENGTH and "#" not in once
        assert once.startswith(("http://", "https://"))
        assert canonicalize(origin_of(once) + "/") == origin_of(once) + "/"

"""links: what a browser would follow from a page's bytes, whatever its encoding, its damage or
its size, and what the page tells robots. (What Chromium itself finds on crafted pages, through
both crawlers: tests/test_linkcases.py. Here: the extractor's own answers, one idea a test.)"""

from __future__ import annotations

import codecs
import random
import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from minicrawl.core.links import Links, base_url, extract_links
from minicrawl.html.mime import is_html

HTML = {"Content-Type": "text/html"}


def hrefs_of(body: bytes, headers: dict[str, str] | None = None) -> list[str]:
    return extract_links(body, headers or HTML).hrefs


# --- what is a link -----------------------------------------------------------------------------

def test_link_elements_in_document_order() -> None:
    page = (b'<html><head><link href="/style.css" rel=stylesheet><script src="/s.js"></script>'
            b'<link rel="next" href="/next"><link rel="alternate stylesheet" href="/alt.css">'
            b'<link rel="Canonical" href="/canonical"><link rel=icon href="/icon"></head><body>'
            b'<a href="/a">a</a><map><area href="/area"></map><img src="/img.png">'
            b'<iframe src="/iframe"></iframe><form action="/form"></form><A HREF="/upper">u</A>'
            b'<frame src="/frame-in-body"><embed src="/embed"><object data="/object"></object>'
            b'</body></html>')
    assert hrefs_of(page) == ["/next", "/canonical", "/a", "/area", "/iframe", "/upper"]


def test_frames_only_in_a_frameset() -> None:
    page = (b'<html><frameset cols="20%,80%"><frame src="menu.html"><frame src="main.html#top">'
            b'<noframes><a href="nf.html">no frames</a></noframes></frameset></html>')
    assert hrefs_of(page) == ["menu.html", "main.html"]
    assert hrefs_of(b'<body><p>text</p><frameset><frame src="late.html"></frameset>') == []


def test_fragments_cut_repeats_dropped_hrefs_kept_as_written() -> None:
    page = (b'<a href="/b#one">b</a><a href="/a">a</a><a href="/b#two">b again</a>'
            b'<iframe src="/a"></iframe><a href="/c#">c</a><a href="  /padded\n ">p</a>'
            b'<a href="\xc2\xa0nbsp">n</a><a href="">self</a><a href="#top">top</a><a>none</a>')
    # the URL parser strips ASCII blanks; a no-break space is part of the URL
    assert hrefs_of(page, {"Content-Type": "text/html; charset=utf-8"}) == \
        ["/b", "/a", "/c", "  /padded\n ", "\xa0nbsp", ""]


def test_what_a_browser_has_no_element_for_is_no_link() -> None:
    page = (b'<html><head><title>see <a href="/title">x</a></title>'
            b'<noscript><a href="/noscript-head"></noscript>'
            b'<style>a[href="/style"] {} /* <a href="/style2"> */</style>'
            b"<script>document.write('<a href=\"/script\">s</a>'); // <iframe src=\"/s2\">"
            b'</script></head><body><!-- <a href="/comment">c</a> -->'
            b'<textarea><a href="/textarea"></a></textarea><xmp><a href="/xmp"></xmp>'
            b'<template><a href="/template"><template><a href="/nested"></template></template>'
            b'<noscript><a href="/noscript"><iframe src="/noscript-frame"></iframe></noscript>'
            b'<a href="/real">real</a><!--><a href="/after-empty-comment">'
            b'<!-- x --!><a href="/after">after</a></body></html>')
    # A <noscript>'s content is markup for a browser with scripting off, as a crawler is: its
    # links are links (the head's <a> leaves the head for the body, where a browser puts it)
    assert hrefs_of(page) == ["/noscript-head", "/noscript", "/noscript-frame", "/real",
                              "/after-empty-comment", "/after"]


def test_svg_and_mathml() -> None:
    page = (b'<svg><a xlink:href="/s1"><text>1</text></a><a href="/s2" xlink:href="/s2-old">'
            b'</a><image xlink:href="/image.png"/><foreignObject><a href="/html-in-svg">h</a>'
            b'</foreignObject></svg><math><mrow><a href="/mathml">m</a></mrow><mtext>'
            b'<a href="/html-in-mathml">h</a></mtext></math><a href="/last">l</a>')
    assert hrefs_of(page) == ["/s1", "/s2", "/html-in-svg", "/html-in-mathml", "/last"]


def test_links_after_the_end_of_html() -> None:
    """Browsers keep what follows </html> in the body; libxml2 2.14 makes it more <html>s."""
    page = b'<html><body><a href="/1">1</a></body></html>\n<a href="/2">2</a></HTML ><a href=/3>'
    assert hrefs_of(page) == ["/1", "/2", "/3"]


def test_base_the_first_with_an_href_counts() -> None:
    page = (b'<html><head><base target="_blank"><template><base href="/tpl/"></template>'
            b'<base href=" /first/ "><base href="/second/"></head><body><a href="x">x</a>'
            b'<base href="/third/"></body></html>')
    assert extract_links(page, HTML).base == " /first/ "
    assert extract_links(b'<a href="x">x</a>', HTML).base is None
    assert extract_links(b'<body><a href="x">x</a><base href="/late/">', HTML).base == "/late/"


@pytest.mark.parametrize(("base", "expected"), [
    (None, "http://h.test/dir/page"),
    ("/other/", "http://h.test/other/"),
    ("sub/?q=1#f", "http://h.test/dir/sub/?q=1"),
    ("", "http://h.test/dir/page"),
    ("http://[bad/", "about:blank"),  # Chromium: no relative link resolves
    ("ftp://ftp.test/pub/", "about:blank"),
])
def test_base_url(base: str | None, expected: str) -> None:
    assert base_url("http://h.test/dir/page", Links([], base)) == expected


# --- refresh ------------------------------------------------------------------------------------

def test_the_soonest_refresh_is_followed_the_later_of_equals() -> None:
    def refresh(*contents: str, header: str | None = None) -> list[str]:
        metas = "".join(f'<meta http-equiv="refresh" content="{c}">' for c in contents)
        return hrefs_of(metas.encode(), {**HTML, **({"Refresh": header} if header else {})})

    assert refresh("0; url=a", "0; url=b") == ["b"]
    assert refresh("0; url=a", "1; url=b") == ["a"]
    assert refresh("1; url=a", "0; url=b") == ["b"]
    assert refresh(header="0; url=h") == ["h"]
    assert refresh("0; url=m", header="0; url=h") == ["m"]  # the header comes first
    assert refresh("5; url=m", header="0; url=h") == ["h"]
    # in a <noscript>: a refresh like any for a browser with scripting off (Chromium with
    # JavaScript off follows it: the link case refresh-in-noscript)
    assert hrefs_of(b'<noscript><meta http-equiv=refresh content="0;url=x"></noscript>') == ["x"]


# --- nofollow, noindex --------------------------------------------------------------------------

def test_rel_nofollow_on_a_link() -> None:
    page = (b'<a href="a" rel="nofollow">a</a><a href="b" rel="noopener NoFollow">b</a>'
            b'<area href="c" rel=nofollow><a href="d" rel="nofollowing">d</a>'
            b'<a href="e" rel=nofollow>e</a><a href="e">e again, followed</a>')
    found = extract_links(page, HTML)
    assert found.hrefs == ["a", "b", "c", "d", "e"] and found.nofollowed == {"a", "b", "c"}
    assert found.followed() == ["d", "e"] and found.followed(ignore_nofollow=True) == found.hrefs
    assert not found.nofollow and not found.noindex


@pytest.mark.parametrize(("head", "headers", "nofollow", "noindex"), [
    ('<meta name="robots" content="nofollow">', {}, True, False),
    ('<META NAME="ROBOTS" CONTENT="None">', {}, True, True),
    ('<meta name="Robots" content="noindex, NoFollow">', {}, True, True),
    ('<meta name="robots" content="noindex">', {}, False, True),
    ('<meta name="minicrawl" content="nofollow">', {}, True, False),
    ('<meta name="googlebot" content="nofollow">', {}, False, False),
    ('<meta name="robots" content="all">', {}, False, False),
    ('<template><meta name="robots" content="nofollow"></template>', {}, False, False),
    ("", {"X-Robots-Tag": "nofollow"}, True, False),
    ("", {"x-robots-tag": "NONE"}, True, True),
    ("", {"X-Robots-Tag": "minicrawl: noindex, nofollow"}, True, True),
    ("", {"X-Robots-Tag": "googlebot: nofollow"}, False, False),
    ("", {"X-Robots-Tag": "unavailable_after: 25 Jun 2010 15:00:00 PST, nofollow"}, True, False),
    ("", {"X-Robots-Tag": "noarchive"}, False, False),
])
def test_what_a_page_tells_robots(head: str, headers: dict[str, str], nofollow: bool,
                                  noindex: bool) -> None:
    found = extract_links(f'<head>{head}</head><a href="x">x</a>'.encode(), {**HTML, **headers})
    assert (found.nofollow, found.noindex) == (nofollow, noindex)
    assert found.followed() == ([] if nofollow else ["x"])
    assert found.followed(ignore_nofollow=True) == ["x"]


def test_each_x_robots_tag_header_is_read_alone() -> None:
    """urllib3's headers give a repeated header once per value: "googlebot:" addresses its
    own header only (joined, "googlebot: noindex, nofollow" would be all googlebot's)."""
    from urllib3 import HTTPHeaderDict

    headers = HTTPHeaderDict([("Content-Type", "text/html"), ("X-Robots-Tag", "googlebot: noindex"),
                              ("X-Robots-Tag", "nofollow")])
    found = extract_links(b'<a href="x">', headers)
    assert found.nofollow and not found.noindex


def test_a_robot_of_another_name() -> None:
    page = b'<meta name="mybot" content="noindex"><meta name="minicrawl" content="nofollow">'
    found = extract_links(page, {**HTML, "X-Robots-Tag": "MyBot: nofollow"}, robot="mybot")
    assert found.noindex and found.nofollow
    found = extract_links(page, {**HTML, "X-Robots-Tag": "minicrawl: noindex"}, robot="mybot")
    assert found.noindex and not found.nofollow


# --- is it HTML ---------------------------------------------------------------------------------

@pytest.mark.parametrize(("content_type", "body", "expected"), [
    ("text/html", b"", True), ("TEXT/HTML; charset=utf-8", b"", True),
    (" text/html ;x=y", b"", True), ("application/xhtml+xml", b"", True),
    ("text/plain", b"<html>", False), ("application/pdf", b"", False),
    ("text/html-sandboxed", b"", False), ("application/xml", b"<html>", False),
    (None, b"<!DOCTYPE html><html>", True), ("", b"\n\t <HTML>", True),
    (None, b"<a href=x>", True), (None, b"<!-- c --><p>", True), (None, b"<p>", True),
    (None, b"<body>", True), (None, b"<br/>", False), (None, b"hello <a href=x>", False),
    (None, codecs.BOM_UTF8 + b"<html>", False), (None, b"\x89PNG\r\n\x1a\n", False),
    (None, b"", False), ("unknown/unknown", b"<html>", True), ("*/*", b"<p>", True),
    (None, b"<abbr>", False), (None, b"<table>", True), (None, b"<!doctype html>", True),
    # the byte after a signature is "tag-terminating": a space or ">", no other blank
    (None, b"<html\n>", False), (None, b"<a\thref=x>", False), (None, b"<!-- c -->", True),
    (None, b"<!--\nc -->", False),
])
def test_is_html(content_type: str | None, body: bytes, expected: bool) -> None:
    """A type that is HTML, or, with none, what the MIME Sniffing standard says of the bytes."""
    assert is_html(content_type, body) is expected


# --- encodings ----------------------------------------------------------------------------------

@pytest.mark.parametrize(("body", "content_type", "expected"), [
    (b"<html>", "text/html", "windows-1252"),  # no charset anywhere: the fallback
    ("<p>caf\u00e9</p>".encode(), "text/html", "windows-1252"),  # UTF-8 is not guessed
    (b"<html>", "text/html; charset=ISO-8859-1", "windows-1252"),
    (b"<html>", "text/html; charset=us-ascii", "windows-1252"),
    (b"<html>", 'text/html;charset="Shift_JIS"', "shift_jis"),
    (b"<html>", "text/html; charset=x-sjis", "shift_jis"),
    (b"<html>", "text/html; charset=gb2312", "gbk"),
    (b"<html>", "text/html; charset=utf8", "utf-8"),
    (b"<html>", "text/html; charset=utf-16", "utf-16le"),
    (b"<html>", "text/html; charset=base64", "windows-1252"),  # no encoding's label
    (b'<meta charset="koi8-r">', "text/html; charset=no-such-charset", "koi8-r"),
    (b"<meta charset='latin1'>", "", "windows-1252"),
    (b'<meta charset="utf-16">', "", "utf-8"),
    (b'<meta charset="x-user-defined">', "", "windows-1252"),
    (b'<meta charset="iso-2022-kr">', "", "replacement"),
    (b'<meta charset=" Windows-1251 ">', "", "windows-1251"),
    (b"<meta content='text/html; charset=koi8-r' http-equiv=Content-Type>", "", "koi8-r"),
    (b"<meta http-equiv=content-type content=\"text/html; charset='koi8-r'\">", "", "koi8-r"),
    (b'<meta content="text/html; charset=koi8-r">', "", "windows-1252"),  # no http-equiv
    (b'<!-- <meta charset="koi8-r"> --><meta charset="iso-8859-5">', "", "iso-8859-5"),
    (b'<p title="<meta charset=koi8-r>"><meta charset="big5">', "", "big5"),
    (b'<?xml version="1.0" encoding="windows-1251"?><html>', "", "windows-1251"),
    (b"<html>" + codecs.BOM_UTF16_LE, "", "windows-1252"),  # a BOM counts at the start only
    (codecs.BOM_UTF16_LE + "<html>".encode("utf-16-le"), "", "utf-16le"),
    (codecs.BOM_UTF16_BE + "<html>".encode("utf-16-be"), "text/html; charset=utf-8", "utf-16be"),
    (codecs.BOM_UTF8 + b'<meta charset="koi8-r">', "text/html; charset=koi8-r", "utf-8"),
])
def test_the_encoding(body: bytes, content_type: str, expected: str) -> None:
    """BOM, then the HTTP charset, then the prescan of 1024 bytes, then windows-1252; labels
    as the Encoding Standard reads them."""
    assert extract_links(body, {"Content-Type": content_type}).encoding == expected


def test_a_meta_past_the_first_1024_bytes_decodes_the_page_again() -> None:
    """The prescan stops at 1024 bytes; the tree builder still meets the <meta> in <head>."""
    page = ("<html><head><!-- " + "padding " * 140 + "--><meta charset=windows-1251></head>"
            "<body><a href='/\u043c\u0438\u0440'>x</a>").encode("cp1251")
    found = extract_links(page, HTML)
    assert (found.encoding, found.hrefs) == ("windows-1251", ["/\u043c\u0438\u0440"])
    found = extract_links(page, {"Content-Type": "text/html; charset=koi8-r"})  # certain
    assert found.encoding == "koi8-r"


@pytest.mark.parametrize(("text", "codec", "label"), [
    ("/\u65e5\u672c?q=\u8868\u30bd", "cp932", "shift_jis"),  # 0x5C trail bytes
    ("/\u4e2d?q=\u5586\u9555", "gbk", "gb2312"),  # GBK, not GB2312
    ("/caf\u00e9?\u20ac=\u201c", "cp1252", "iso-8859-1"),  # bytes 0x80, 0x93
    ("/\u043f\u0440?\u043c=1", "koi8_r", "koi8-r"),
    ("/\uc548?\uac80=1", "cp949", "euc-kr"),
])
def test_legacy_encodings_decode_as_browsers_do(text: str, codec: str, label: str) -> None:
    page = f'<meta charset="{label}"><a href="{text}">x</a>'.encode(codec)
    assert hrefs_of(page) == [text]


@pytest.mark.parametrize(("bom", "codec"), [
    (codecs.BOM_UTF16_LE, "utf-16-le"), (codecs.BOM_UTF16_BE, "utf-16-be"),
    (codecs.BOM_UTF8, "utf-8"),
])
def test_a_page_with_a_byte_order_mark(bom: bytes, codec: str) -> None:
    text = '<html><body><a href="/\u00e9t\u00e9">x</a><a href="/\u65e5\u672c">y</a></body></html>'
    assert hrefs_of(bom + text.encode(codec)) == ["/\u00e9t\u00e9", "/\u65e5\u672c"]
    declared = '<?xml version="1.0" encoding="iso-8859-2"?>' + text  # the BOM wins
    assert hrefs_of(bom + declared.encode(codec)) == ["/\u00e9t\u00e9", "/\u65e5\u672c"]


def test_invalid_bytes_become_one_replacement_character_a_sequence() -> None:
    page = b'<meta charset=utf-8><a href="a\xe2\x82b\xff\xfec">'
    assert hrefs_of(page) == ["a\ufffdb\ufffd\ufffdc"]
    assert hrefs_of(b'<meta charset=iso-2022-kr><a href="x">') == []  # all one U+FFFD


@pytest.mark.parametrize("before", [
    b"", b"<!-- \xe2\x82 -->", b"<script>'\xff'</script>",  # libxml2 says the page is invalid
    b"</x>" * 150,  # it has stopped saying anything (it logs 100 errors): Python's decoder says
])
def test_an_invalid_sequence_anywhere_is_one_replacement_character(before: bytes) -> None:
    page = b"<meta charset=utf-8>" + before + b'<a href="a\xe2\x82b">'
    assert hrefs_of(page) == ["a\ufffdb"]


# --- damage -------------------------------------------------------------------------------------

PAGE = (b'<!DOCTYPE html><html><head><title>t</title><base href="/base/"></head><body>'
        b'<a href="/1">one</a><div><p><a href="/2">two</a><table><tr><td><a href="/3">3</a>'
        b'<a href="/4">four</a></td></tr></table><iframe src="/5"></iframe><a href="/6">six</a>'
        b'</body></html>')
PAGE_LINKS = ["/1", "/2", "/3", "/4", "/5", "/6"]


def test_a_page_cut_anywhere_keeps_the_links_before_the_cut() -> None:
    ends = [m.end() for m in re.finditer(rb"<(?:a|iframe) [^>]*>", PAGE)]
    assert hrefs_of(PAGE) == PAGE_LINKS
    for cut in range(len(PAGE) + 1):
        whole = sum(end <= cut for end in ends)  # links whose tag is complete before the cut
        found = hrefs_of(PAGE[:cut])
        assert found[:whole] == PAGE_LINKS[:whole], (cut, found)
        assert len(found) <= whole + 1  # at most the one being cut, as far as it got


def test_broken_html_keeps_the_links_around_the_damage() -> None:
    page = (b'<a href="/1">1</a><<<>>></div></span></td><a href="/2" <b>x</b>'
            b'<p <a href=broken<a href="/3">3\x00</a>\xff\xfe\xc3<a href=/4>4'
            b'<a href=\'/5\'>5</p></p><table><a href="/6">6</div></div>')
    found = hrefs_of(page)
    assert found[:2] == ["/1", "/2"]
    assert {"/4", "/5", "/6"} <= set(found)


@pytest.mark.parametrize("body", [
    b"", b"   \r\n\t ", b"\x00" * 100, b"<", b"<a href", b"<a href=", b"</>", b"<!--",
    codecs.BOM_UTF8, codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE, codecs.BOM_UTF16_LE + b"\x00",
    b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" + random.Random(1).randbytes(4000),
    random.Random(2).randbytes(70_000),
    b"\x1f\x8b\x08\x00" + random.Random(3).randbytes(2000),  # gzip that was never inflated
    b'<?xml version="1.0" encoding="no-such-charset"?>\x00\xff',
])
def test_garbage_and_empty_bodies_give_no_links(body: bytes) -> None:
    for headers in (HTML, {"Content-Type": "text/html; charset=utf-8"}, {}):
        found = extract_links(body, headers)
        assert (found.hrefs, found.base) == ([], None)


@settings(max_examples=500, deadline=None)
@given(st.sampled_from([b"", codecs.BOM_UTF8, codecs.BOM_UTF16_LE, b"<?xml ", b"<html>",
                        b"<meta charset=shift_jis>", b"<svg><math><template>"]),
       st.binary(max_size=600),
       st.sampled_from(["", "text/html", "text/html; charset=utf-16", "text/html; charset=x",
                        "text/html; charset=iso-2022-jp", "text/html; charset=x-user-defined"]))
def test_any_bytes_parse_without_exception(prefix: bytes, body: bytes, content_type: str) -> None:
    found = extract_links(prefix + body, {"Content-Type": content_type})
    assert isinstance(found.hrefs, list) and all(isinstance(h, str) for h in found.hrefs)
    assert found.base is None or isinstance(found.base, str)


def test_bytes_microsoft_leaves_out_are_c1_controls() -> None:
    """The standard's windows-1252 maps 0x81, 0x8D, 0x8F, 0x90, 0x9D to U+0081…: Python's
    cp1252 has no character for them."""
    assert hrefs_of(b'<meta charset=windows-1252><a href="/a\x9d\x81\x80">') == ["/a\x9d\x81\u20ac"]

"""links: the hrefs of a page's bytes, whatever its charset, its damage or its size, and
BeautifulSoup loaded only for pages that name a charset other than UTF-8."""

from __future__ import annotations

import codecs
import random
import re
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from minicrawl.core import links
from minicrawl.core.links import STREAM_ABOVE, encoding_of, extract_links, is_html

ROOT = Path(__file__).resolve().parents[2]


def hrefs_of(body: bytes, content_type: str = "") -> list[str]:
    return extract_links(body, content_type)[0]


# --- what is a link -----------------------------------------------------------------------------

def test_link_elements() -> None:
    page = (b'<html><head><link href="/style.css"><script src="/s.js"></script></head><body>'
            b'<a href="/a">a</a><map><area href="/area"></map><img src="/img.png">'
            b'<iframe src="/iframe"></iframe><form action="/form"></form><A HREF="/upper">u</A>'
            b'<frameset><frame src="/frame"></frameset></body></html>')
    assert hrefs_of(page) == ["/a", "/area", "/iframe", "/upper", "/frame"]


def test_frames_of_a_frameset_page() -> None:
    page = (b'<html><frameset cols="20%,80%"><frame src="menu.html"><frame src="main.html#top">'
            b'<noframes><a href="nf.html">no frames</a></noframes></frameset></html>')
    assert hrefs_of(page)[:2] == ["menu.html", "main.html"]


def test_fragments_cut_repeats_dropped_document_order() -> None:
    page = (b'<a href="/b#one">b</a><a href="/a">a</a><a href="/b#two">b again</a>'
            b'<iframe src="/a"></iframe><a href="/c#">c</a><a href="/b">b</a>')
    assert hrefs_of(page) == ["/b", "/a", "/c"]


def test_blanks_empty_and_missing_hrefs() -> None:
    page = (b'<a href="  /padded\n ">p</a><a>no href</a><a name="x">anchor</a>'
            b'<a href="#top">top</a><a href="">self</a><a href="?q=1">query</a>')
    # '#top' and '' both mean the page itself: one entry, ''
    assert hrefs_of(page) == ["/padded", "", "?q=1"]


def test_comments_scripts_styles_are_no_links() -> None:
    page = (b'<html><head><title>see <a href="/title">x</a></title>'
            b'<style>a[href="/style"] { color: red } /* <a href="/style2"> */</style>'
            b'<script>document.write(\'<a href="/script">s</a>\'); // <iframe src="/s2">'
            b'</script></head><body><!-- <a href="/comment">c</a> -->'
            b'<textarea><a href="/textarea"></a></textarea>'
            b'<a href="/real">real</a><!-- unclosed <a href="/c2">'
            b'<a href="/in-comment">--> <a href="/after">after</a></body></html>')
    assert hrefs_of(page) == ["/real", "/after"]


def test_base_href_the_first_counts() -> None:
    page = (b'<html><head><base target="_blank"><base href=" /first/ "><base href="/second/">'
            b'</head><body><a href="x">x</a><base href="/third/"></body></html>')
    assert extract_links(page) == (["x"], "/first/")
    assert extract_links(b'<a href="x">x</a>')[1] is None
    assert extract_links(b'<body><a href="x">x</a><base href="/late/">')[1] == "/late/"


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


def test_a_page_naming_a_codec_of_bytes_as_its_charset() -> None:
    """'rot13' or 'base64' are Python codecs, but not of text: the page is read, not lost."""
    for page, header in ((b'<meta charset="rot13"><a href="/x">x</a>', ""),
                         (b'<a href="/x">x</a>', "text/html; charset=base64")):
        assert extract_links(page, header) == (["/x"], None)


def test_links_after_the_end_of_html() -> None:
    """Browsers follow a link after </html>; libxml2 2.14 puts it outside the root element."""
    assert hrefs_of(b'<html><body><a href="/1">1</a></body></html><a href="/2">2</a>') == \
        ["/1", "/2"]


@pytest.mark.parametrize("body", [
    b"", b"   \r\n\t ", b"\x00" * 100, b"<", b"<a href", b"<a href=", b"</>", b"<!--",
    codecs.BOM_UTF8, codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE, codecs.BOM_UTF16_LE + b"\x00",
    b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" + random.Random(1).randbytes(4000),
    random.Random(2).randbytes(70_000),
    b"\x1f\x8b\x08\x00" + random.Random(3).randbytes(2000),  # gzip that was never inflated
    b'<?xml version="1.0" encoding="no-such-charset"?>\x00\xff',
])
def test_garbage_and_empty_bodies_give_no_links(body: bytes) -> None:
    assert extract_links(body) == ([], None)
    assert extract_links(body, "text/html; charset=utf-8") == ([], None)


@settings(max_examples=500, deadline=None)
@given(st.sampled_from([b"", codecs.BOM_UTF8, codecs.BOM_UTF16_LE, b"<?xml ", b"<html>"]),
       st.binary(max_size=600),
       st.sampled_from(["", "text/html", "text/html; charset=utf-16", "text/html; charset=x"]))
def test_any_bytes_parse_without_exception(prefix: bytes, body: bytes, content_type: str) -> None:
    hrefs, base = extract_links(prefix + body, content_type)
    assert isinstance(hrefs, list) and all(isinstance(h, str) for h in hrefs)
    assert base is None or isinstance(base, str)


# --- charsets -----------------------------------------------------------------------------------

LATIN1_PAGE = ('<html><head><meta charset="iso-8859-1"><title>Caf\xe9</title></head><body>'
               '<a href="/caf\xe9">caf\xe9</a><a href="/na\xefve?\xfc=1">na\xefve</a>'
               '</body></html>').encode("latin-1")
LATIN1_LINKS = ["/caf\xe9", "/na\xefve?\xfc=1"]


def test_latin1_page_declared_by_meta_charset() -> None:
    assert encoding_of(LATIN1_PAGE) == "iso8859-1"
    assert hrefs_of(LATIN1_PAGE) == LATIN1_LINKS


def test_latin1_page_declared_by_the_header() -> None:
    assert hrefs_of(LATIN1_PAGE, "text/html; charset=ISO-8859-1") == LATIN1_LINKS
    bare = LATIN1_PAGE.replace(b'<meta charset="iso-8859-1">', b"")
    assert hrefs_of(bare, 'text/html; charset="iso-8859-1"') == LATIN1_LINKS
    assert hrefs_of(bare) != LATIN1_LINKS  # undeclared, it is read as UTF-8


def test_the_header_beats_the_page() -> None:
    lying = LATIN1_PAGE.replace(b"iso-8859-1", b"windows-1251")
    assert hrefs_of(lying, "text/html; charset=iso-8859-1") == LATIN1_LINKS
    assert hrefs_of(lying) == [href.encode("latin-1").decode("cp1251") for href in LATIN1_LINKS]


@pytest.mark.parametrize(("bom", "codec"), [
    (codecs.BOM_UTF16_LE, "utf-16-le"), (codecs.BOM_UTF16_BE, "utf-16-be"),
])
def test_utf16_page_with_byte_order_mark(bom: bytes, codec: str) -> None:
    text = '<html><body><a href="/\u00e9t\u00e9">x</a><a href="/\u65e5\u672c">y</a></body></html>'
    assert hrefs_of(bom + text.encode(codec)) == ["/\u00e9t\u00e9", "/\u65e5\u672c"]
    declared = '<?xml version="1.0" encoding="utf-16"?>' + text  # an XML declaration too
    assert hrefs_of(bom + declared.encode(codec)) == ["/\u00e9t\u00e9", "/\u65e5\u672c"]


CP1251_PAGE = ('<html><head><meta http-equiv="Content-Type" content="text/html; '
               'charset=windows-1251"></head><body><a href="/\u043f\u0440\u0438\u0432\u0435\u0442">'
               '\u043f\u0440\u0438\u0432\u0435\u0442</a></body></html>').encode("cp1251")


def test_windows_1251_page_declared_by_meta_http_equiv() -> None:
    assert encoding_of(CP1251_PAGE) == "cp1251"
    assert hrefs_of(CP1251_PAGE) == ["/\u043f\u0440\u0438\u0432\u0435\u0442"]


def test_xml_declaration_names_the_charset() -> None:
    page = ('<?xml version="1.0" encoding="iso-8859-1"?>\n<html xmlns="http://www.w3.org/1999/'
            'xhtml"><body><a href="/\xe9">x</a></body></html>').encode("latin-1")
    assert hrefs_of(page) == ["/\xe9"]


FILLER = b"<p>plain ASCII text, a lot of it</p>\n" * 200  # > 4 kB: no detector sees past it


@pytest.mark.parametrize("start", [
    b'<?xml version="1.0"?>\n<html xmlns="http://www.w3.org/1999/xhtml"><body>',
    b'<?xml version="1.0" encoding="UTF-8"?>\n<html><body>',
    b"<html><body><pre>Content-Type: text/html; charset=koi8-r</pre>",
    b'<html><head><meta charset="utf-8"></head><body>',
    b"\xef\xbb\xbf<html><body>",
])
def test_a_page_that_names_no_other_charset_is_utf8(start: bytes) -> None:
    """Non-ASCII first seen after 4 kB of ASCII: only a guesser would call that 'ascii'."""
    page = start + FILLER + "<a href=\"/caf\u00e9\">caf\u00e9</a></body></html>".encode()
    assert encoding_of(page) == "utf-8"
    assert hrefs_of(page) == ["/caf\u00e9"]


@pytest.mark.parametrize(("body", "content_type", "expected"), [
    (b"<html>", "", "utf-8"),
    (b"<html>", "text/html", "utf-8"),
    (b"<html>", "text/html; charset=ISO-8859-1", "iso8859-1"),
    (b"<html>", "text/html;charset=\"Shift_JIS\"", "shift_jis"),
    (b"<html>", "text/html; charset=utf8", "utf-8"),
    (b"<html>", "text/html; charset=base64", "utf-8"),  # a codec, but of bytes, not of text
    (b'<meta charset="koi8-r">', "text/html; charset=no-such-charset", "koi8-r"),
    (b'<meta charset="koi8-r">', "", "koi8-r"),
    (b"<meta charset='Windows-1252'>", "", "cp1252"),
    (b'<meta charset="utf-8">', "", "utf-8"),
    (b'<meta charset=" UTF-8 ">', "", "utf-8"),
    (b"<meta http-equiv=Content-Type content='text/html; charset=UTF-8'>", "", "utf-8"),
    (b"<html>" + codecs.BOM_UTF16_LE, "", "utf-8"),  # a BOM counts at the start only
    (codecs.BOM_UTF16_LE + "<html>".encode("utf-16-le"), "", "utf-16-le"),
    (codecs.BOM_UTF16_BE + "<html>".encode("utf-16-be"), "", "utf-16-be"),
    (codecs.BOM_UTF8 + b'<meta charset="koi8-r">', "", "utf-8"),  # the BOM beats the meta
])
def test_encoding_of(body: bytes, content_type: str, expected: str) -> None:
    assert encoding_of(body, content_type) == expected


@pytest.mark.parametrize(("content_type", "expected"), [
    ("text/html", True), ("TEXT/HTML; charset=utf-8", True), (" text/html ;x=y", True),
    ("application/xhtml+xml", True), ("", True),
    ("text/plain", False), ("application/pdf", False), ("image/png", False),
    ("text/html-sandboxed", False), ("application/xml", False),
])
def test_is_html(content_type: str, expected: bool) -> None:
    assert is_html(content_type) is expected


_BS4_CHECK = """
import sys
from minicrawl.core.links import extract_links
utf8 = ('<html><head><meta charset="utf-8"><title>On charset</title></head><body>'
        '<p>Which charset? The charset = UTF-8 one, \u00e9videmment.</p>'
        '<a href="/caf\u00e9">x</a></body></html>').encode()
assert extract_links(utf8, "text/html") == (["/caf\u00e9"], None)
print("bs4" in sys.modules)
assert extract_links(sys.stdin.buffer.read())[0] == ["/\u043f\u0440\u0438\u0432\u0435\u0442"]
print("bs4" in sys.modules)
"""


def test_bs4_only_for_a_page_that_names_another_charset() -> None:
    out = subprocess.run([sys.executable, "-c", _BS4_CHECK], input=CP1251_PAGE, cwd=ROOT,
                         capture_output=True, timeout=60)
    assert out.returncode == 0, out.stderr.decode()
    assert out.stdout.split() == [b"False", b"True"]


# --- big pages ----------------------------------------------------------------------------------

_TRICKY = ('<head><base href="/b1/"><title>t</title></head><body>'
           '<A HREF="/Upper#x">u</A><a href="/a#x">a</a><a href="/a#y">a</a><area href="/m">'
           '<iframe src="/if"></iframe><frame src="/fr"><!-- <a href="/comment"> -->'
           '<script>x = "<a href=/script>"</script><style>a[href="/style"]{}</style>'
           '<base href="/b2/"><a href="  /spaced  ">s</a><a>none</a><a href="">self</a>'
           '<link href="/css"><a href="/caf\u00e9">c</a>')
_TRICKY_LINKS = ["/Upper", "/a", "/m", "/if", "/fr", "/spaced", "", "/caf\u00e9"]


def _big_page(charset: str) -> tuple[bytes, list[str]]:
    filler = "".join(f'<div><a href="/n{i}">{i}</a><p>{"x" * 200}</p></div>' for i in range(3000))
    text = f'<html><meta charset="{charset}">{_TRICKY}{filler}<a href="/last">end</a></body></html>'
    return text.encode(charset), _TRICKY_LINKS + [f"/n{i}" for i in range(3000)] + ["/last"]


@pytest.mark.parametrize("charset", ["utf-8", "iso-8859-1"])
def test_a_big_page_is_streamed_with_the_same_links(charset: str, monkeypatch) -> None:
    body, expected = _big_page(charset)
    assert len(body) > STREAM_ABOVE
    targets: list[bool] = []
    real = links.etree.HTMLParser

    def spy(*args, **kwargs):
        targets.append(kwargs.get("target") is not None)
        return real(*args, **kwargs)

    monkeypatch.setattr(links.etree, "HTMLParser", spy)
    streamed = extract_links(body)
    monkeypatch.setattr(links, "STREAM_ABOVE", len(body))  # the same page, below the threshold
    built = extract_links(body)
    assert targets == [True, False]
    assert streamed == built == (expected, "/b1/")

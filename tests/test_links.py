"""Link extraction from page bytes: charsets, <base>, which tags, broken markup."""

from __future__ import annotations

from bs4.dammit import EncodingDetector
from hypothesis import given, settings
from hypothesis import strategies as st

from minicrawl.links import (
    _declared_encoding,
    _plainly_utf8,
    decode_html,
    detect_encoding,
    extract_links,
    is_html,
)

URL = "http://example.com/dir/page.html"


def test_collects_a_area_frame_iframe_in_order_without_duplicates():
    body = (b'<a href="/1">1</a><map><area href="/2"></map><frameset><frame src="/3">'
            b'</frameset><iframe src="/4"></iframe><a href="/1">again</a><img src="/no">'
            b'<link href="/no.css"><a name="x">no href</a>')
    assert extract_links(body, URL).hrefs == ["/1", "/2", "/3", "/4"]


def test_first_base_href_wins_and_is_resolved():
    body = b'<head><base href="../other/"><base href="/ignored/"></head><a href="x">'
    got = extract_links(body, URL)
    assert got.base == "http://example.com/other/" and got.hrefs == ["x"]


def test_broken_base_is_ignored():
    assert extract_links(b'<base href="http://[::1/"><a href="x">', URL).base == URL


def test_charset_from_header_beats_meta():
    body = '<meta charset="utf-8"><a href="/\u00e9">'.encode("latin-1")
    got = extract_links(body, URL, "text/html; charset=ISO-8859-1")
    assert got.hrefs == ["/\u00e9"] and got.encoding == "iso8859-1"


def test_charset_from_meta_when_header_has_none():
    body = ('<meta http-equiv="Content-Type" content="text/html; charset=koi8-r">'
            '<a href="/\u0434\u043e\u043c">').encode("koi8-r")
    assert extract_links(body, URL, "text/html").hrefs == ["/\u0434\u043e\u043c"]


def test_unknown_charset_and_invalid_utf8_do_not_crash():
    body = b'<a href="/ok">ok</a><a href="/\xff\xfe">bad bytes</a>'
    got = extract_links(body, URL, "text/html; charset=no-such-charset")
    assert got.hrefs[0] == "/ok" and len(got.hrefs) == 2


def test_truncated_and_binary_and_empty_bodies():
    assert extract_links(b'<html><a href="/a">a</a><a href="/b', URL).hrefs[0] == "/a"
    assert extract_links(bytes(range(256)) * 10, URL).hrefs == []
    assert extract_links(b"", URL).hrefs == []
    assert extract_links(b"   \n", URL).hrefs == []


def test_xml_declaration_with_encoding_is_fine():
    body = b'<?xml version="1.0" encoding="utf-8"?><html><body><a href="/x">x</a></body></html>'
    assert extract_links(body, URL, "application/xhtml+xml").hrefs == ["/x"]


def test_is_html():
    assert is_html("text/html; charset=utf-8") and is_html("application/xhtml+xml")
    assert not is_html("text/plain") and not is_html(None) and not is_html("image/png")


def test_decode_prefers_bom():
    text, encoding = decode_html("\ufeff<a href='/x'>".encode("utf-16"))
    assert "href" in text and encoding.startswith("utf-16")


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=400))
def test_any_bytes_give_a_list_of_strings(body):
    got = extract_links(body, URL)
    assert isinstance(got.hrefs, list) and all(isinstance(h, str) for h in got.hrefs)


# Pieces pages put in their first 2 KiB, declarations of every kind among them.
_HEAD_PIECES = st.sampled_from([
    b"<meta charset=\"utf-8\">", b"<META CHARSET='UTF-8'>", b"<meta charset=utf8>",
    b"<meta charset=\"koi8-r\">", b"<meta charset=\"utf-8x\">", b"<meta charset=\"latin-1\">",
    b'<meta http-equiv="Content-Type" content="text/html; charset=windows-1251">',
    b'<meta http-equiv="Content-Type" content="text/html; charset=UTF-8">',
    b"<?xml version='1.0' encoding='iso-8859-2'?>", b"charset = utf-8 ", b"charset",
    b"\xef\xbb\xbf", b"\xff\xfe", b"<p>text</p>", b" ", b"\n", b"x" * 700, b"\xd0\xb4",
    b"<?xml version='1.0'?>", b'<?xml encoding="utf-8"?>', b'<a href="encoding.html">',
    b"<title>Charset (java.nio.charset)</title>", b"CHARSET\t=\n'UTF8'>", b"charset==utf-8>",
    b"<meta content='charset=koi8-r'>", b"charset =",
])


@settings(max_examples=500, deadline=None)
@given(st.lists(_HEAD_PIECES, max_size=12))
def test_utf8_shortcut_agrees_with_beautifulsoup(pieces):
    body = b"".join(pieces)
    bom = EncodingDetector.strip_byte_order_mark(body[:4])[1]
    declared = EncodingDetector.find_declared_encoding(body[:4096], is_html=True)
    if _plainly_utf8(body):  # the shortcut may only answer where bs4 would say UTF-8 too
        assert bom is None and (declared is None or declared.replace("-", "") == "utf8")
        assert _declared_encoding(body) == "utf-8"


def test_a_page_declaring_utf8_does_not_need_beautifulsoup():
    assert _plainly_utf8(b'<!DOCTYPE html><html><head><meta charset="utf-8"><title>t</title>')
    assert _plainly_utf8(b"<p>no declaration at all</p>")
    assert not _plainly_utf8(b'<meta charset="koi8-r">')
    assert not _plainly_utf8(b'<meta charset="utf-8"><meta charset="koi8-r">')
    assert not _plainly_utf8("\ufeff<p>".encode("utf-16"))
    assert _plainly_utf8(b'<meta charset="utf-8"><a href="encoding-faq.html">')
    assert not _plainly_utf8(b' <?xml version="1.0" encoding="iso-8859-2"?><p>')
    # A page about charsets (the Java API docs' java.nio.charset pages) declares only UTF-8.
    about = b'<meta charset="utf-8"><title>Charset (java.nio.charset)</title><a href="x">'
    assert _plainly_utf8(about) and _declared_encoding(about) == "utf-8"
    assert not _plainly_utf8(b'<title>charset</title><META CONTENT="text/html; CHARSET=koi8-r">')
    assert not _plainly_utf8(b"<meta charset==utf-8>")  # not what bs4 reads as UTF-8
    assert detect_encoding(b'<meta charset="koi8-r">') == "koi8-r"


# -- what browsers keep and ignore, on pages parsed as a tree and on pages too big for one ------

PADDING = b"<p>" + b"x" * 1000 + b"</p>\n"


def big(body: bytes) -> bytes:
    """``body`` made larger than any page parsed as a tree (so it is read as a stream)."""
    from minicrawl.links import STREAM_ABOVE

    head, _, rest = body.partition(b"<body>")
    page = head + b"<body>" + PADDING * (STREAM_ABOVE // len(PADDING) + 1) + rest
    assert len(page) > STREAM_ABOVE
    return page


BROWSER_LINKS = (
    b'<html><head><base href="/b/"></head><body><a href="/1">1</a>'
    b'<template><a href="/in-template">t</a></template>'
    b'<!-- <a href="/in-comment"> --><script>document.write("<a href=/in-script>")</script>'
    b'<style>a::after { content: "<a href=/in-style>" }</style>'
    b'<a href="/2">2</a></body></html>\n<script src="/tracker.js"></script>'
    b'<a href="/after-html">late</a><iframe src="/after-html-frame"></iframe>\n')


def test_links_after_html_end_and_in_template_are_kept_comments_and_script_text_are_not():
    for body in (BROWSER_LINKS, big(BROWSER_LINKS)):
        got = extract_links(body, URL)
        assert got.hrefs == ["/1", "/in-template", "/2", "/after-html", "/after-html-frame"]
        assert got.base == "http://example.com/b/"


def test_an_html_end_tag_in_any_case_and_only_whitespace_after_it():
    assert extract_links(b'<a href="/x"></HTML ><p><a href="/y">', URL).hrefs == ["/x", "/y"]
    assert extract_links(b'<a href="/x"></html>\n\n', URL).hrefs == ["/x"]


def test_a_big_page_gives_the_links_a_tree_would_in_order_charset_and_all():
    hrefs = [f"/p{i}.html" for i in range(3000)]
    links = "".join(f'<a href="{h}">{h}</a><a href="{h}#top">again</a>' for h in hrefs)
    body = ("<html><head><meta charset='koi8-r'></head><body>" + links
            + "<a href='/\u0434\u043e\u043c'>home</a></body></html>").encode("koi8-r")
    expected = [h for h in hrefs for h in (h, h + "#top")] + ["/\u0434\u043e\u043c"]
    assert extract_links(body, URL).hrefs == expected  # a tree
    got = extract_links(big(body), URL)  # a stream
    assert got.hrefs == expected and got.encoding == "koi8-r"


def test_a_big_truncated_or_binary_page_keeps_the_links_before_the_damage():
    assert extract_links(big(b'<body><a href="/a">a</a><a href="/b'), URL).hrefs[0] == "/a"
    assert extract_links(bytes(range(256)) * 4000, URL).hrefs == []

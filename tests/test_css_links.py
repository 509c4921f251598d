"""What a stylesheet loads (minicrawl/html/css.py), read as the CSS Syntax standard reads it."""

from __future__ import annotations

from minicrawl.html.css import MAX_URLS, CssLink, css_links


def test_urls_and_imports_with_their_lines_comments_and_data_left_out() -> None:
    css = (b"/* a comment\n with url(no.png) */\n"
           b'body { background: url(  "bg.png" ) }\n'
           b'@import "other.css";\n'
           b"@import url(x.css) screen;\n"
           b".a { background-image: url(a\\29 b.png), url('q.png') }\n"
           b"@font-face { src: url(f.woff2) format('woff2') }\n"
           b".d { background: url(data:image/png;base64,AAA) }\n"
           b'.e { background: image-set("i1.png" 1x, url(i2.png) 2x) }\n'
           b"@media print { .f { background: url(print.png) } }\n")
    assert css_links(css) == [
        CssLink("bg.png", 3, "url"), CssLink("other.css", 4, "@import"),
        CssLink("x.css", 5, "@import"), CssLink("a)b.png", 6, "url"),
        CssLink("q.png", 6, "url"), CssLink("f.woff2", 7, "url"),
        CssLink("i1.png", 9, "url"), CssLink("i2.png", 9, "url"),
        CssLink("print.png", 10, "url")]


def test_the_encoding_a_bom_the_charset_header_or_rule_says() -> None:
    assert css_links(b"\xef\xbb\xbfa{b:url(\xc3\xa9.png)}") == [CssLink("é.png", 1, "url")]
    assert css_links(b'@charset "iso-8859-1"; a{b:url(\xe9.png)}') == [CssLink("é.png", 1, "url")]
    assert css_links(b"a{b:url(\xe9.png)}", "iso-8859-1") == [CssLink("é.png", 1, "url")]


def test_garbage_and_a_flood_end_cleanly() -> None:
    assert css_links(b"\x00\xff {{{ url(") == []
    assert css_links(b"}}}]]) url(") == []
    many = b"a{" + b"b:url(x.png);" * (MAX_URLS + 10) + b"}"
    assert len(css_links(many)) == MAX_URLS

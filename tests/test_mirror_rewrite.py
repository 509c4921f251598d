"""The links of a mirror's files rewritten in their bytes (minicrawl/mirror/rewrite.py): the
markup read as a browser's tokenizer reads it — what is in a comment, a raw-text element or an
attribute's value is no tag — though the scan skips most tags without a Python step each; each
URL's new value asked once per file, its fragment kept as written."""

from __future__ import annotations

import pytest

from minicrawl.mirror.rewrite import rewrite_css, rewrite_html

BASE = "http://h/d/p.html"


def convert(href: str, base: str) -> str | None:
    assert "#" not in href and base == BASE  # (the fragment is cut, written back after)
    return None if href.startswith("mailto:") else "L/" + href


@pytest.mark.parametrize(("page", "rewritten"), [
    # a "<" in an attribute's value, a comment, a script, a textarea: no tag
    (b'<div title="<a href=x.html>">t</div><a href=y.html>y</a>',
     b'<div title="<a href=x.html>">t</div><a href="L/y.html">y</a>'),
    (b'<!-- <a href="c.html"> --><p>x<a HREF="d.html#s">d</a></p>',
     b'<!-- <a href="c.html"> --><p>x<a HREF="L/d.html#s">d</a></p>'),
    (b'<script>var s = "<a href=\\"j.html\\">";</script ><a href=k.html>k</a>',
     b'<script>var s = "<a href=\\"j.html\\">";</script ><a href="L/k.html">k</a>'),
    (b'<textarea><a href="l.html"></textarea><img srcset="m.png 1x, n.png 2x" src=m.png>',
     b'<textarea><a href="l.html"></textarea><img srcset="L/m.png 1x, L/n.png 2x" '
     b'src="L/m.png">'),
    # a tag of no URL with a style (any case, after a value holding a tag): read
    (b'<span class="s" data-x=\'<img src="no.png">\' STYLE="background:url(bg.png)">s</span>',
     b'<span class="s" data-x=\'<img src="no.png">\' STYLE="background:url(L/bg.png)">s</span>'),
    (b'<span title="x StYlE y"><a href="e.html">e</a></span>',
     b'<span title="x StYlE y"><a href="L/e.html">e</a></span>'),
    # names read as the tokenizer reads them: "a" only when it is the whole name
    (b'<a"b c"d href=f.html>odd</a><abbr href="g.html">not a link tag</abbr>',
     b'<a"b c"d href="L/f.html">odd</a><abbr href="g.html">not a link tag</abbr>'),
    (b'<a href="o.html" href="p.html"><a href="mailto:x@y">m</a>< a href="q.html">'
     b'<a/href="r.html"><a class=href title="href=z.html" href=s.html>',
     b'<a href="L/o.html" href="L/p.html"><a href="mailto:x@y">m</a>< a href="q.html">'
     b'<a/href="L/r.html"><a class=href title="href=z.html" href="L/s.html">'),
    # an end tag's attributes are nothing; a fragment alone is this file: as it is
    (b'</a href="h.html"><a href=#top>top</a><a href="  i.html#k ">i</a>',
     b'</a href="h.html"><a href=#top>top</a><a href="L/i.html#k">i</a>'),
])
def test_urls_are_found_where_a_browser_finds_them(page: bytes, rewritten: bytes) -> None:
    assert rewrite_html(page, BASE, "utf-8", convert) == rewritten


def test_each_url_is_asked_once_per_file_its_fragment_kept() -> None:
    asked: list[str] = []

    def counting(href: str, base: str) -> str | None:
        asked.append(href)
        return convert(href, base)

    page = (b'<a href="s.html#1">1</a><a href="s.html#2">2</a><a href="s.html">3</a>'
            b'<a href="#top">top</a><img src="s.html"><p style="background: url(s.html#bg)">')
    assert rewrite_html(page, BASE, "utf-8", counting) == (
        b'<a href="L/s.html#1">1</a><a href="L/s.html#2">2</a><a href="L/s.html">3</a>'
        b'<a href="#top">top</a><img src="L/s.html"><p style="background: url(L/s.html#bg)">')
    assert asked == ["s.html"]
    asked.clear()
    css = b"a { background: url(i.svg#a) } b { background: url('i.svg#b') } c { x: url(#c) }"
    assert rewrite_css(css, BASE, counting) == (
        b"a { background: url(L/i.svg#a) } b { background: url('L/i.svg#b') } "
        b"c { x: url(#c) }")
    assert asked == ["i.svg"]


def test_a_page_of_many_tags_and_no_url_is_the_same_bytes() -> None:
    page = b"<!doctype html><p>" + b'<span class="k">x</span> <em>y</em>\n' * 10_000 + b"</p>"
    assert rewrite_html(page, BASE, "utf-8", convert) is page

"""The page's facts (minicrawl.html.facts): asked for, the one walk that finds a page's links
also reads its title, meta description, canonical href, language and word count — from a tree,
a streamed page (a parser target) and a pulled one (with edges) alike, exactly as defined; the
links and edges it finds are those of a walk without them."""

from __future__ import annotations

import re
from collections.abc import Iterator

import pytest
from hypothesis import given
from hypothesis import strategies as st

from minicrawl.core.links import extract_links
from minicrawl.html import walk
from minicrawl.html.edges import record_edges, recorded_edges
from minicrawl.html.facts import MAX_FACT, FactReader, Found, Words, record_facts, recorded_walk
from tests.linkcases import cases

HTML = {"Content-Type": "text/html"}
MODES = ("tree", "streamed", "pulled")


def facts(body: bytes, mode: str = "tree", headers: dict[str, str] | None = None) -> Found:
    """The facts of ``body`` walked as ``mode`` says: a tree, streamed (a parser target), or
    pulled (with edges): a page over ``walk.STREAM_ABOVE`` is streamed, pulled with edges."""
    above = walk.STREAM_ABOVE
    walk.STREAM_ABOVE = above if mode == "tree" else 0
    try:
        record_facts(edges=mode == "pulled")
        extract_links(body, headers or HTML)
        walked = recorded_walk()
    finally:
        walk.STREAM_ABOVE = above
    assert walked is not None and walked.reader is not None
    assert walked.pulling == (mode == "pulled")
    return walked.reader.facts()


@pytest.fixture(params=MODES)
def mode(request: pytest.FixtureRequest) -> Iterator[str]:
    yield request.param


CASES = {  # body → (title, description, canonical, lang, words)
    "all of them": (
        b'<!DOCTYPE html><html lang=" fr-CA "><head><title> Caf&eacute; &amp;\n  Bar </title>'
        b'<meta name="Description" content="  A  caf&eacute;\n and a bar ">'
        b'<link rel="Canonical Alternate" href="../c?x=1#top"></head>'
        b"<body><h1>Hello, world</h1>\n<p>Three more words.</p></body></html>",
        ("Café & Bar", "A café and a bar", "../c?x=1#top", "fr-CA", 5)),
    "no title, no head": (b"<p>Just some text", (None, None, None, None, 3)),
    "an empty title": (b"<title> \n </title><p>x", ("", None, None, None, 1)),
    "two titles: the first": (b"<title>First</title><title>Second</title>",
                              ("First", None, None, None, 0)),
    "a title in the body, none in the head": (
        b"<html><head></head><body><p>hi</p><title>In body</title></body></html>",
        ("In body", None, None, None, 1)),
    "a title in the head before one in the body": (
        b"<head><title>Head</title></head><body><title>Body</title>two words</body>",
        ("Head", None, None, None, 2)),
    "an SVG's title is a tooltip": (
        b"<body><svg><title>Tip</title><text>drawn</text></svg><title>Page</title></body>",
        ("Page", None, None, None, 1)),
    "a title in a template is none": (
        b"<head></head><body><template><title>T</title></template>words here</body>",
        (None, None, None, None, 2)),
    # scripting off (a crawler runs no script): a <noscript>'s content is markup — in the
    # head, a <title> leaves it for the head ("in head noscript"); in the body, it is the
    # document's first <title>
    "a title in a head's noscript is the title": (
        b"<head><noscript><title>N</title></noscript></head><body>x</body>",
        ("N", None, None, None, 1)),
    "a title in a body's noscript is the first title": (
        b"<head></head><body><noscript><title>N</title></noscript>x<title>B</title></body>",
        ("N", None, None, None, 1)),
    "a lone title in an SVG is none": (b"<svg><title>Tip</title></svg>y",
                                       (None, None, None, None, 1)),
    "tags in any case": (b"<HTML LANG=nl><HEAD><TITLE>Upper</TITLE></HEAD><BODY>one <SCRIPT>x y"
                         b"</SCRIPT><STYLE>z</STYLE><Title>T</Title>two", ("Upper", None, None,
                                                                           "nl", 2)),
    "a <title> in a script is no title": (
        b"<head><script>document.write('<title>w</title>')</script></head><body>"
        b"<p>text</p><title>Real</title></body>", ("Real", None, None, None, 1)),
    "a huge title is cut": (
        b"<title>" + b"word " * 1000 + b"</title>",
        (("word " * 1000)[:MAX_FACT - 1] + "…", None, None, None, 0)),
    "markup in a title is text": (b"<title>a <b>b</b></title>",
                                  ("a <b>b</b>", None, None, None, 0)),
    "the first description and canonical": (
        b'<meta name=description content=one><meta name=description content=two>'
        b'<link rel=canonical href=/1><link rel=canonical href=/2><link rel=canonical>',
        (None, "one", "/1", None, 0)),
    "an empty description is one": (b'<meta name=description content="">',
                                    (None, "", None, None, 0)),
    "a description without content is none": (b"<meta name=description>",
                                              (None, None, None, None, 0)),
    "no canonical without href, none in a template": (
        b"<link rel=canonical><template><link rel=canonical href=/t></template>",
        (None, None, None, None, 0)),
    "a canonical in the body": (b"<p>x<link rel=canonical href=/b>",
                                (None, None, "/b", None, 1)),
    "an empty lang is an unknown language": (b'<html lang=" "><p>x', (None, None, None, "", 1)),
    "the first <html>'s lang": (b'<html lang=de><p>x</p></html><html lang=en>',
                                (None, None, None, "de", 1)),
    # words: the body's text, hidden elements out, pieces joined as written, split on
    # ASCII whitespace and no-break spaces
    "hidden elements hold no words": (
        b"<body>one<script>a b</script> two <style>p {}</style>"
        b"<template>e f</template><iframe src=/f>g h</iframe><datalist><option>i j"
        b"</datalist><noembed>k</noembed><noframes>l</noframes><ruby>m<rp>(</rp><rt>n</rt>"
        b"<rp>)</rp></ruby> three</body>", (None, None, None, None, 4)),
    "a noscript's text is shown (scripting off)": (
        b"<body><p>one <noscript>two three</noscript></p></body>", (None, None, None, None, 3)),
    "markup adds no space": (b"<p>un<b>fold</b>ed</p><p>a</p><p>b</p>\n<td>c</td><td>d",
                             (None, None, None, None, 2)),
    "a hidden element between two halves of a word": (b"<p>half<script>x</script>way",
                                                      (None, None, None, None, 1)),
    "no-break spaces and entities": (b"<p>one&nbsp;two\xc2\xa0three&#9;four\x0c five</p>",
                                     (None, None, None, None, 5)),
    "other blanks are no space": (b"<p>a\xe2\x80\x83b\xe3\x80\x80c</p>",
                                  (None, None, None, None, 1)),
    "head text is no word": (b"<head><title>t</title></head><body></body>",
                             ("t", None, None, None, 0)),
    "alt text and attributes are no words": (b'<p><img alt="a b c"> x <a title="d e">f</a>',
                                             (None, None, None, None, 2)),
    "a frameset has no body": (b"<frameset><frame src=a></frameset>",
                               (None, None, None, None, 0)),
    "svg text is visible": (b"<svg><text>drawn words</text></svg>",
                            (None, None, None, None, 2)),
}


@pytest.mark.parametrize("name", CASES)
def test_the_facts_as_defined(name: str, mode: str) -> None:
    body, (title, description, canonical, lang, words) = CASES[name]
    assert facts(body, mode) == Found(title, description, canonical, lang, words)


@pytest.mark.parametrize(("body", "content_type", "title", "words"), [
    # the page's encoding, as the walk decodes it: from the header, a <meta>, a BOM
    ("<title>Café – Ærø</title><p>Ærø på</p>".encode("windows-1252"), "text/html",
     "Café – Ærø", 2),
    ('<meta charset="shift_jis"><title>日本語のページ</title><p>日本語 です'.encode("shift_jis"),
     "text/html", "日本語のページ", 2),
    ("<title>Ελληνικά</title>".encode("iso-8859-7"), "text/html; charset=iso-8859-7",
     "Ελληνικά", 0),
    ("\ufeff<title>Zwölf</title><p>Grüße".encode("utf-16-le"), "text/html", "Zwölf", 1),
    # a <meta> past the prescan's 1024 bytes: the page is decoded again in it
    (b"<!--" + b"x" * 1100 + b'--><meta charset="windows-1251"><title>\xcf\xf0\xe8\xe2'
     b"\xe5\xf2</title>", "text/html", "Привет", 0),
])
def test_the_title_in_the_pages_encoding(body: bytes, content_type: str, title: str,
                                         words: int, mode: str) -> None:
    found = facts(body, mode, {"Content-Type": content_type})
    assert (found.title, found.words) == (title, words)


def test_a_big_page_gives_the_facts_of_the_same_page_small(monkeypatch) -> None:
    """Over STREAM_ABOVE a page is streamed (pulled with edges) for real: the same facts, the
    text in pieces of many parser feeds."""
    monkeypatch.setattr(walk, "STREAM_CHUNK", 700)  # a word now and then cut by a feed
    # a row's text: "unfolded ce llz" (textContent: the cells' text joined as written)
    row = (b"<tr><td>un<b>fold</b>ed</td> <td>ce&nbsp;ll</td><td><script>x y</script>z</td>"
           b"</tr>\n")
    body = (b"<html lang=it><head><title>Big" + b" t" * 200 + b"</title>"
            b"<meta name=description content=d></head><body><table>" + row * 3000
            + b"</table><link rel=canonical href=/big></body></html>")
    small = facts(body, "tree")
    assert small == Found("Big" + " t" * 200, "d", "/big", "it", 3000 * 3)
    monkeypatch.setattr(walk, "STREAM_ABOVE", 1024)
    for edges in (False, True):
        record_facts(edges)
        extract_links(body, HTML)
        walked = recorded_walk()
        assert walked is not None and walked.reader is not None
        assert walked.pulling == edges
        assert walked.reader.facts() == small


def test_words_join_a_word_cut_between_pieces() -> None:
    counted = Words()
    for piece in (b"one tw", b"o", b" ", b"three\xc2\xa0", b"four ", b"", b"fi", b"ve\n"):
        counted.add(piece)
    assert counted.count == 5


@given(st.lists(st.text(alphabet="ab\t\n\f\r \u00a0é†中\u2020\x0b", max_size=30), max_size=8))
def test_words_are_the_runs_between_blanks_however_the_text_is_cut(pieces: list[str]) -> None:
    # Cut anywhere between characters (as the walk hands a page's text nodes); the blanks are
    # ASCII whitespace and the no-break space (U+2020 "†" ends in byte A0 too, and is no blank;
    # a vertical tab is no HTML whitespace).
    counted = Words()
    for piece in pieces:
        counted.add(piece.encode("utf-8"))
    words = [w for w in re.split("[\t\n\f\r \u00a0]+", "".join(pieces)) if w]
    assert counted.count == len(words)


@pytest.mark.parametrize("edges", [False, True])
@pytest.mark.parametrize("streamed", [False, True])
def test_the_links_and_edges_are_those_of_a_walk_without_facts(edges: bool, streamed: bool,
                                                                 monkeypatch) -> None:
    """On every link case page (and a page with every kind of element): the facts change
    nothing the walk finds."""
    if streamed:
        monkeypatch.setattr(walk, "STREAM_ABOVE", 0)
    pages = [(case.body, dict(case.headers)) for case in cases().values()]
    for body, headers in pages:
        if edges:
            record_edges()
        plain = extract_links(body, headers)
        plain_edges = recorded_edges() if edges else None
        record_facts(edges)
        read = extract_links(body, headers)
        walked = recorded_walk()
        assert read == plain, body[:200]
        assert walked is not None and isinstance(walked.reader, FactReader)
        if edges:
            assert walked.edges == plain_edges  # type: ignore[attr-defined]


def test_facts_are_asked_per_page_and_per_thread() -> None:
    """A walk reads facts only when asked, once: the next is plain again."""
    record_facts()
    extract_links(b"<title>t</title>", HTML)
    first = recorded_walk()
    extract_links(b"<title>t</title>", HTML)
    assert first is not None and first.reader is not None
    assert recorded_walk() is None  # the second walk was plain, kept for no one

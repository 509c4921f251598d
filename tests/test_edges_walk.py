"""The walk's edges (minicrawl.html.edges): asked for, the one walk that finds a page's links
also records each link as written — its element and attribute, its text, its line, its kind —
and the page's requisites (never followed); not asked for, the walk is the plain one. A big page
(pulled, its tree pruned as it is read) gives the tree's edges and lines."""

from __future__ import annotations

import threading

import pytest

from minicrawl.core.links import extract_links
from minicrawl.html import walk
from minicrawl.html.edges import Edge, EdgeWalk, record_edges, recorded_edges, srcset_urls
from tests.linkcases import cases

HTML = {"Content-Type": "text/html"}

PAGE = b"""<html><head><link rel=stylesheet href=/s.css><link rel="shortcut icon" href=/f.ico>
<link rel=canonical href=/c><link rel=author href=/me><link rel="alternate stylesheet" href=/a.css>
<meta http-equiv=refresh content="5; url=/r#x"><script src=/j.js></script><script>x()</script>
</head><body>
<a href="/a#top">  Hello
   <b>world</b> </a>
<a href=/b rel=nofollow><img src=/i.png srcset="/i1.png 1x, /i2.png 2x" alt="Logo"></a>
<noscript><a href=/ns>ns</a><img src=/nsi.png></noscript>
<template><a href=/t>t</a><img src=/ti.png></template>
<svg><a xlink:href=/svg>svg</a><a href=/svg2></a></svg>
<input type=image src=/btn.png alt=Go><input type=text src=/no.png>
<video src=/v.mp4 poster=/p.jpg><source src=/v.webm><track src=/t.vtt></video>
<picture><source srcset="/w.webp"><img src=/pic.png title="A picture"></picture>
<object data=/o.swf></object><embed src=/e.swf><audio src=/a.mp3></audio>
<map><area href=/area alt="An area"></map><a href="mailto:x@example.org">mail</a>
<iframe src=/if title="Frame"></iframe><a name=anchor>no href</a><a href="" title="Me"></a>
</body></html>"""

EDGES = [  # (href, tag, attr, line, kind, text, nofollow)
    ("/s.css", "link", "href", 1, "requisite", "", False),
    ("/f.ico", "link", "href", 1, "requisite", "", False),
    ("/c", "link", "href", 2, "page", "", False),
    # a hyperlink the crawl does not follow (rel=author, search…): a link of the page all the same
    ("/me", "link", "href", 2, "page", "", False),
    ("/a.css", "link", "href", 2, "requisite", "", False),
    ("/j.js", "script", "src", 3, "requisite", "", False),
    ("/a#top", "a", "href", 5, "page", "Hello world", False),
    ("/b", "a", "href", 7, "page", "Logo", True),
    ("/i.png", "img", "src", 7, "requisite", "Logo", False),
    ("/i1.png", "img", "srcset", 7, "requisite", "Logo", False),
    ("/i2.png", "img", "srcset", 7, "requisite", "Logo", False),
    # in a <noscript>: links like any (a crawler is a browser with scripting off)
    ("/ns", "a", "href", 8, "page", "ns", False),
    ("/nsi.png", "img", "src", 8, "requisite", "", False),
    ("/svg", "a", "xlink:href", 10, "page", "svg", False),
    ("/svg2", "a", "href", 10, "page", "", False),
    ("/btn.png", "input", "src", 11, "requisite", "Go", False),
    ("/v.mp4", "video", "src", 12, "requisite", "", False),
    ("/p.jpg", "video", "poster", 12, "requisite", "", False),
    ("/v.webm", "source", "src", 12, "requisite", "", False),
    ("/t.vtt", "track", "src", 12, "requisite", "", False),
    ("/w.webp", "source", "srcset", 13, "requisite", "", False),
    ("/pic.png", "img", "src", 13, "requisite", "A picture", False),
    ("/o.swf", "object", "data", 14, "requisite", "", False),
    ("/e.swf", "embed", "src", 14, "requisite", "", False),
    ("/a.mp3", "audio", "src", 14, "requisite", "", False),
    ("/area", "area", "href", 15, "page", "An area", False),
    ("mailto:x@example.org", "a", "href", 15, "page", "mail", False),
    ("/if", "iframe", "src", 16, "page", "Frame", False),
    ("", "a", "href", 16, "page", "Me", False),
    ("/r#x", "meta", "content", 3, "page", "", False),  # the refresh to follow: last
]


def edges_of(body: bytes, headers: dict[str, str] | None = None) -> list[Edge]:
    record_edges()
    extract_links(body, headers or HTML)
    edges = recorded_edges()
    assert edges is not None
    return edges


def rows(edges: list[Edge]) -> list[tuple[object, ...]]:
    return [(e.href, e.tag, e.attr, e.line, e.kind, e.text, e.nofollow) for e in edges]


def test_every_link_and_requisite_with_its_element_text_line_and_kind() -> None:
    assert rows(edges_of(PAGE)) == EDGES


def test_the_walk_s_links_are_the_same_with_edges_or_without() -> None:
    record_edges()
    recorded = extract_links(PAGE, HTML)
    assert recorded_edges() is not None
    plain = extract_links(PAGE, HTML)
    assert (recorded.hrefs, recorded.nofollowed, recorded.base) == \
        (plain.hrefs, plain.nofollowed, plain.base)
    # Requisites are never links to follow; nothing in a <template> is either; a <noscript>'s
    # are (scripting off)
    assert plain.hrefs == ["/c", "/a", "/b", "/ns", "/svg", "/svg2", "/area",
                           "mailto:x@example.org", "/if", "", "/r"]


def test_a_walk_not_asked_for_is_the_plain_one(monkeypatch) -> None:
    """The default crawl pays nothing: a plain Walk, handed only the elements that can be
    links; asked, one walk records, and the next is plain again."""
    made: list[type] = []
    real = walk.Walk.__init__

    def spy(self, *args, **kwargs):  # type: ignore[no-untyped-def]
        made.append(type(self))
        real(self, *args, **kwargs)

    monkeypatch.setattr(walk.Walk, "__init__", spy)
    extract_links(PAGE, HTML)
    assert recorded_edges() is None
    record_edges()
    extract_links(PAGE, HTML)
    assert recorded_edges() is not None
    extract_links(PAGE, HTML)
    assert made == [walk.Walk, EdgeWalk, walk.Walk]
    assert walk.Walk.tags == walk.LINK_TAGS and not walk.Walk.lines


def test_asking_in_one_thread_is_that_thread_s_only() -> None:
    record_edges()
    other: list[object] = []
    thread = threading.Thread(target=lambda: other.append(
        type(walk.walk(PAGE, "utf-8"))))
    thread.start()
    thread.join()
    assert other == [walk.Walk]
    assert recorded_edges() is None  # nothing walked here since it was asked


def test_a_page_walked_twice_gives_the_second_walk_s_edges() -> None:
    """A <meta charset> past the prescan's 1024 bytes: the page is decoded again and walked
    again; its edges are the second walk's (the page as the browser reads it)."""
    body = b"<p>" + b"x" * 1100 + b"<meta charset=windows-1251><a href='/\xe9'>\xe9</a>"
    edges = edges_of(body)
    assert [(e.href, e.text) for e in edges] == [("/\u0439", "\u0439")]


@pytest.mark.parametrize(("body", "lines"), [
    (b"<p>\n<a href=x>1</a>\n\n<a href=y>2</a>", [2, 4]),
    (b"<p>\r\n<a href=x>1</a>\r\n<a href=y>2</a>", [2, 3]),
    (b"<p>\r<a href=x>1</a>\r<a href=y>2</a>", [2, 3]),  # a lone CR ends a line too
    (b"<p>\n<a\nhref=x>1</a>", [3]),  # libxml2: the line the start tag ends on
    # invalid UTF-8: the page parsed again, decoded as browsers decode it, its lines ended alike
    (b"<meta charset=utf-8><p>\r<a href=x\xe2\x82>1</a>\r<a href=y>2</a>", [2, 3]),
])
def test_lines(body: bytes, lines: list[int]) -> None:
    assert [e.line for e in edges_of(body)] == lines


def test_past_the_lines_libxml2_counts_the_line_is_unknown() -> None:
    body = b"<a href=/first>1</a>" + b"<p>x</p>\n" * 70_000 + b"<a href=/last>2</a>"
    assert [(e.href, e.line) for e in edges_of(body)] == [("/first", 1), ("/last", None)]


@pytest.mark.parametrize(("html", "text"), [
    (b"<a href=x>  a\n\t b  <i>c</i></a>", "a b c"),
    (b"<a href=x><img src=i alt='  The  logo '></a>", "The logo"),
    (b"<a href=x><img src=i title=Titled></a>", "Titled"),
    (b"<a href=x aria-label='Close'><svg></svg></a>", "Close"),
    (b"<a href=x title='Home'></a>", "Home"),
    (b"<a href=x>\xc2\xa0</a>", ""),
    (b"<a href=x>" + b"word " * 100 + b"</a>", ("word " * 40)[:199] + "\u2026"),
])
def test_link_text(html: bytes, text: str) -> None:
    assert edges_of(b"<meta charset=utf-8>" + html)[0].text == text


def test_the_refresh_header_is_an_edge_of_its_own() -> None:
    edges = edges_of(b"<a href=/a>a</a>", {**HTML, "Refresh": "0; url=/next"})
    assert rows(edges)[-1] == ("/next", "header", "refresh", None, "page", "", False)
    # a sooner <meta> refresh wins over a later header one: the one to follow
    edges = edges_of(b"<meta http-equiv=refresh content='1;url=/m'>", {**HTML, "Refresh": "9;/h"})
    assert rows(edges) == [("/m", "meta", "content", 1, "page", "", False)]


@pytest.mark.parametrize(("value", "urls"), [
    ("a.png", ["a.png"]),
    ("a.png 1x, b.png 2x", ["a.png", "b.png"]),
    (" a.png  480w ,b.png 800w", ["a.png", "b.png"]),
    ("a.png,, b.png", ["a.png", "b.png"]),  # trailing commas end a URL
    ("a,b.png 1x", ["a,b.png"]),  # a comma inside a URL is the URL's
    ("a.png (x, y) 1x, b.png", ["a.png", "b.png"]),  # no comma in parentheses ends it
    ("", []), (" , ", []),
])
def test_srcset(value: str, urls: list[str]) -> None:
    assert srcset_urls(value) == urls


def _padded(body: bytes) -> bytes:
    filler = b"<p>" + b"filler text " * 80 + b"</p>\n"
    filler *= walk.STREAM_ABOVE // len(filler) + 1
    at = body.rfind(b"</body>")
    return body[:at] + filler + body[at:] if at >= 0 else body + filler


def _both(body: bytes, headers: dict[str, str], chunk: int,
          monkeypatch: pytest.MonkeyPatch) -> tuple[object, object]:
    """(links and edges from the tree, from the pulled page in pieces of ``chunk``)."""
    monkeypatch.setattr(walk, "STREAM_ABOVE", 1 << 40)
    record_edges()
    tree = extract_links(body, headers), recorded_edges()
    monkeypatch.setattr(walk, "STREAM_ABOVE", 0)
    monkeypatch.setattr(walk, "STREAM_CHUNK", chunk)
    record_edges()
    pulled = extract_links(body, headers), recorded_edges()
    monkeypatch.undo()
    return tree, pulled


@pytest.mark.parametrize("name", list(cases()))
def test_a_pulled_page_gives_the_tree_s_links_and_edges(name: str, monkeypatch) -> None:
    """Each link case page through both paths, in pieces small enough to cut its tags in two,
    and padded past STREAM_ABOVE; the links are those of the plain walk too."""
    case = cases()[name]
    headers = dict(case.headers)
    tree, pulled = _both(case.body, headers, 7, monkeypatch)
    assert pulled == tree
    assert tree[0] == extract_links(case.body, headers)  # type: ignore[index]
    if "utf16" not in name:
        tree, pulled = _both(_padded(case.body), headers, walk.STREAM_CHUNK, monkeypatch)
        assert pulled == tree


def test_a_big_page_is_pulled_and_pruned(monkeypatch) -> None:
    """Past STREAM_ABOVE an EdgeWalk's page is pulled: the tree behind the walk is removed
    after each piece, so what it holds stays about a piece's (a whole tree is ~10× the page),
    yet an <a>'s text that spans pieces is read whole."""
    row = b"<tr><td><a href='/p%d'>link %d</a></td><td><img src='/i%d.png' alt=i></td></tr>\n"
    long_link = b"<a href='/long'>" + b"<b>long</b> " * 30_000 + b"</a>\n"
    body = b"<html><body><table>\n" + b"".join(row % (i, i, i) for i in range(8000)) + \
        b"</table>" + long_link + b"</body></html>"
    assert len(body) > walk.STREAM_ABOVE
    held: list[int] = []
    real = walk._prune

    def spy(root, page):  # type: ignore[no-untyped-def]
        real(root, page)
        held.append(sum(1 for _ in root.iter()))

    monkeypatch.setattr(walk, "_prune", spy)
    edges = edges_of(body)
    elements = body.count(b"<") - body.count(b"</")
    assert len(held) >= 3 and max(held) < elements / 2, (held, elements)
    assert len(edges) == 8000 * 2 + 1
    assert (edges[0].href, edges[0].line, edges[0].text) == ("/p0", 2, "link 0")
    assert (edges[-2].href, edges[-2].line) == ("/i7999.png", 8001)
    assert edges[-1].href == "/long" and edges[-1].text.startswith("long long")
    assert edges[-1].line == 8002


def test_anchors_are_the_ids_and_a_names_a_fragment_may_name() -> None:
    from minicrawl.html.edges import AnchorWalk, EdgeWalk
    from minicrawl.html.facts import recorded_walk
    from minicrawl.html.walk import STREAM_ABOVE

    body = (b'<html><body><h1 id="top">T</h1><a name="n1">n</a><div id="a b">'
            b'<span id="s">q</span></div><p name="no">p</p></body></html>')
    record_edges(anchors=True)
    extract_links(body, HTML)
    walked = recorded_walk()
    assert isinstance(walked, AnchorWalk) and walked.anchors() == {"top", "n1", "a b", "s"}
    record_edges()  # --links alone: no anchors kept
    extract_links(body, HTML)
    walked = recorded_walk()
    assert isinstance(walked, EdgeWalk) and walked.anchors() is None
    record_edges(anchors=True)  # a big page is pulled and pruned: its anchors are not known
    extract_links(body.replace(b"</body>", b" " * STREAM_ABOVE + b"</body>"), HTML)
    walked = recorded_walk()
    assert isinstance(walked, AnchorWalk) and walked.anchors() is None and not walked.edges

"""Every link of a page as written, where it is and what it says — its *edges* — found by the
one walk that finds the links a crawl follows (:mod:`minicrawl.html.walk`), when asked.

A crawl that wants them (``--links``) asks before a page is parsed (:func:`record_edges`, in the
worker's thread) and takes them after (:func:`recorded_edges`); the walk of that page is then
an :class:`EdgeWalk`: the same :class:`~minicrawl.html.walk.Walk` (the same hrefs, nofollow,
``<base>``, refresh), which also notes for each link its element and attribute, its text and
its line, and the page's *requisites* — what a browser loads to show the page (images, scripts,
stylesheets, icons, media, objects) — which are recorded, never followed. A crawl that does not
ask walks as before: a plain ``Walk``, handed only the elements that can be links.

Each link is an :class:`Edge`, in document order (a refresh last), every one (a target linked
twice is two edges):

* ``a``/``href`` (an SVG ``<a>``'s ``href`` or ``xlink:href``), ``area``/``href``,
  ``iframe``/``src``, ``frame``/``src``, ``link``/``href`` with rel next, prev, alternate or
  canonical, a refresh (``meta``/``content``; ``header``/``refresh`` for the Refresh header, no
  line): the links the crawl follows, kind ``page``; ``link``/``href`` with a rel of
  ``HYPERLINK_RELS`` (search, author, index, copyright…): kind ``page`` too, not followed
  (checked with ``--check-links``);
* ``img``/``src`` and ``srcset`` (an edge per URL of a srcset), ``source``/``src`` and
  ``srcset``, ``script``/``src``, ``link``/``href`` with rel stylesheet, icon, preload, … (see
  ``REQUISITE_RELS``), ``video``/``src`` and ``poster``, ``audio``/``src``, ``track``/``src``,
  ``input``/``src`` (``type=image``), ``object``/``data``, ``embed``/``src``: kind
  ``requisite``.

What is in a ``<template>`` is no link and no requisite here either; what is in a ``<noscript>`` is,
as for the walk (scripting off). The text: an ``<a>``'s text, blanks collapsed (if it has none: the
alt, else the title, of an image in it; else its own ``aria-label`` or ``title``); an image's
(``img``, ``area``, ``input``) ``alt``, else its ``title``; another element's ``title``; at most
``MAX_TEXT`` characters. The line: the source line (of the page as decoded; a lone CR ends a line,
as in the HTML standard) on which libxml2 ends the element's start tag — for a start tag written
over several lines, its last — or None where libxml2 does not count lines: past line 65,534 (it
keeps 16 bits of a line number in an HTML tree). A big page (over ``walk.STREAM_ABOVE``) is read as
a tree pruned behind the walk (``walk._pull``), so its lines are known too in bounded memory. The
page's *anchors* — its elements' ids and its ``<a>``s' names, what a link's ``#fragment`` may name —
are kept too, for a page read as a tree (a big page's are not known). """

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from lxml import etree

from minicrawl.html import meta
from minicrawl.html.walk import (
    CONTEXT_TAGS,
    LINK_RELS,
    LINK_TAGS,
    Walk,
    _where,
    last_walk,
    walk_with,
)

REQUISITE_TAGS = ("img", "script", "video", "audio", "source", "track", "input", "object",
                  "embed")
REQUISITE_RELS = frozenset({"stylesheet", "icon", "apple-touch-icon",
                            "apple-touch-icon-precomposed", "mask-icon", "manifest", "preload",
                            "modulepreload"})
# A <link> to a page the crawl does not follow (its LINK_RELS it does), a link of the page all
# the same: the HTML standard's hyperlink rels (author, help, license, search, privacy-policy,
# terms-of-service), HTML 4's (start, contents, index, glossary, copyright, chapter, section,
# subsection, appendix) and the registry's first, last, up. Not the hints (preconnect,
# dns-prefetch, prefetch, prerender), whose href is no page of the site; not pingback.
HYPERLINK_RELS = frozenset({"author", "help", "license", "search", "privacy-policy",
                            "terms-of-service", "start", "contents", "index", "glossary",
                            "copyright", "chapter", "section", "subsection", "appendix",
                            "first", "last", "up"})
MAX_TEXT = 200  # characters of a link's text kept (then "…")
NO_LINE = 65535  # libxml2's line numbers in an HTML tree stop here: a line from it on is unknown
_BLANKS = " \t\n\r\f"
_ANCHORS = etree.XPath("descendant-or-self::*/@id | descendant-or-self::a/@name",
                       smart_strings=False)


@dataclass(slots=True)
class Edge:
    """One link of a page as the walk met it."""

    href: str  # as written (the fragment kept)
    tag: str  # the element: a, img, link… ("header": the Refresh header)
    attr: str  # its attribute: href, src, srcset… ("content" of a meta refresh)
    line: int | None  # the source line (see the module's doc), or None
    kind: str  # "page": a link the crawl follows; "requisite": loaded to show the page
    text: str = ""  # what the link says (see the module's doc)
    nofollow: bool = False  # its rel says nofollow


class EdgeWalk(Walk):
    """A :class:`Walk` that also keeps each link's :class:`Edge` (``edges``) and the page's
    requisites. It is handed elements (a tree's, or a pulled page's: ``lines``), never a
    target's attributes."""

    tags = LINK_TAGS + REQUISITE_TAGS
    lines = True

    def __init__(self, robot: str = meta.ROBOT) -> None:
        super().__init__(robot)
        self.edges: list[Edge] = []
        self.at: etree._Element | None = None  # the element being walked
        self.refreshed: Edge | None = None  # where the soonest refresh was met
        self.reading: list[tuple[Edge, etree._Element]] = []  # pulled <a>s: text at their end
        self.ids: set[str] | None = set()  # what a #fragment may name: None if not known

    def element(self, tag: str, attrib: Mapping[str, str] | etree._Element,
                within: Sequence[str]) -> None:
        assert isinstance(attrib, etree._Element), "an EdgeWalk is handed elements"
        self.at = attrib
        super().element(tag, attrib, within)  # its link, if it is one: through link()
        where = _where(within) if within else "html"
        if (tag in REQUISITE_TAGS or tag == "link") and where == "html":
            self.requisites(tag, attrib)

    def start(self, tag: str, attrib: Mapping[str, str] | etree._Element) -> None:
        if tag in CONTEXT_TAGS:  # (a pulled page's: only these and ``tags`` come)
            super().start(tag, attrib)
        else:
            self.element(tag, attrib, self.open if self.foreign or tag == "frame" else ())

    def link(self, href: str, rel: str | None = None) -> None:
        """A link the crawl follows, met at ``at`` (or the refresh to follow: :meth:`found`)."""
        element = self.at
        if element is None:
            edge = self.refreshed or Edge(href, "header", "refresh", None, "page")
            edge.href = href
        else:
            attr = "src" if element.tag in ("iframe", "frame") else \
                "href" if element.get("href") is not None else "xlink:href"
            edge = self._page_edge(href, element, attr, rel)
        self.edges.append(edge)
        super().link(href, rel)

    def _page_edge(self, href: str, element: etree._Element, attr: str,
                   rel: str | None) -> Edge:
        """The edge of kind page of ``element``'s ``attr``, its text read (an ``<a>`` pulled:
        at its end, :meth:`ended`)."""
        tag = element.tag
        edge = Edge(href, tag, attr, _line(element), "page",
                    nofollow=rel is not None and "nofollow" in rel.lower().split())
        if tag != "a":
            edge.text = _label(element)
        elif self.pulling:  # its text is read at its end (ended)
            self.reading.append((edge, element))
        else:  # a tree's: all of it is there
            edge.text = _link_text(element)
        return edge

    def ended(self, element: etree._Element) -> None:
        if self.reading and self.reading[-1][1] is element:
            edge, _ = self.reading.pop()
            edge.text = _link_text(element)

    def held(self) -> Sequence[etree._Element]:
        return [element for _, element in self.reading[:1]]  # (the others are inside it)

    def anchors(self) -> frozenset[str] | None:
        """What a ``#fragment`` of a link to this page may name, when an :class:`AnchorWalk`
        walked it and knows (not for a big page); else None."""
        return None

    def refresh(self, content: str, first: bool = False) -> None:
        before = self.soonest
        super().refresh(content, first)
        if self.soonest is not before:  # this one is now the one to follow
            self.refreshed = None if first or self.at is None else \
                Edge("", "meta", "content", _line(self.at), "page")

    def found(self) -> tuple[list[str], frozenset[str]]:
        self.at = None  # the refresh, if any, is the last link
        return super().found()

    def requisites(self, tag: str, element: etree._Element) -> None:
        """What ``element`` has the browser load to show the page: an edge each."""
        get = element.get
        if tag == "img" or tag == "source":
            self.requisite(element, "src", "srcset")
        elif tag == "video":
            self.requisite(element, "src", "poster")
        elif tag in ("script", "audio", "track", "embed"):
            self.requisite(element, "src")
        elif tag == "object":
            self.requisite(element, "data")
        elif tag == "input":
            if (get("type") or "").strip().lower() == "image":
                self.requisite(element, "src")
        elif tag == "link":
            rels = set((get("rel") or "").lower().split())
            if rels & REQUISITE_RELS and not (rels & LINK_RELS and "stylesheet" not in rels):
                self.requisite(element, "href")
            elif rels & HYPERLINK_RELS and not rels & LINK_RELS \
                    and (href := get("href")) is not None:  # (LINK_RELS: followed, an edge)
                self.edges.append(Edge(href, tag, "href", _line(element), "page",
                                       _label(element)))

    def requisite(self, element: etree._Element, *attrs: str) -> None:
        """An edge of kind requisite for each URL in each of ``element``'s ``attrs``."""
        line, text = _line(element), _label(element)
        for attr in attrs:
            value = element.get(attr)
            if value is None:
                continue
            for href in srcset_urls(value) if attr == "srcset" else (value,):
                self.edges.append(Edge(href, element.tag, attr, line, "requisite", text))


class AnchorWalk(EdgeWalk):
    """An :class:`EdgeWalk` that also keeps the page's anchors (``--check-links``)."""

    def walked(self, top: etree._Element) -> None:
        """The ids of the tree's elements and the names of its ``<a>``s: the fragments a link
        to this page may name (in libxml2's C, one call: a big page, pulled and pruned, keeps
        no tree to ask, so its are not known)."""
        if self.ids is not None:
            self.ids.update(_ANCHORS(top))

    def anchors(self) -> frozenset[str] | None:
        return None if self.pulling or self.ids is None else frozenset(self.ids)


def record_edges(anchors: bool = False) -> None:
    """The next page walked in this thread is walked by an :class:`EdgeWalk` (``anchors``: an
    :class:`AnchorWalk`): its edges are kept for :func:`recorded_edges` (a crawl asks before
    each page it wants them of)."""
    walk_with(AnchorWalk if anchors else EdgeWalk)


def recorded_edges() -> list[Edge] | None:
    """The edges of the page last walked in this thread since :func:`record_edges` (once; the
    walks are plain again), or None if none was walked."""
    page = last_walk()
    walk_with(None)
    return page.edges if isinstance(page, EdgeWalk) else None


def srcset_urls(value: str) -> list[str]:
    """The URLs of a ``srcset`` attribute, as the HTML standard splits it: each candidate's
    URL up to a blank (trailing commas cut), its descriptors up to a comma outside
    parentheses."""
    urls, at, end = [], 0, len(value)
    while True:
        while at < end and (value[at] in _BLANKS or value[at] == ","):
            at += 1
        if at >= end:
            return urls
        start = at
        while at < end and value[at] not in _BLANKS:
            at += 1
        url = value[start:at]
        if url.endswith(","):
            url = url.rstrip(",")
        else:  # its descriptors ("2x", "480w"): to the comma that ends them
            parens = False
            while at < end:
                char, at = value[at], at + 1
                if char == "(":
                    parens = True
                elif char == ")":
                    parens = False
                elif char == "," and not parens:
                    break
        if url:
            urls.append(url)


def _line(element: etree._Element) -> int | None:
    line = element.sourceline
    return line if line is not None and line < NO_LINE else None


def _collapsed(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= MAX_TEXT else text[:MAX_TEXT - 1] + "…"


def _link_text(element: etree._Element) -> str:
    """An ``<a>``'s text (see the module's doc)."""
    text = _collapsed(element.text or "" if not len(element) else  # (itertext: 10× slower)
                      etree.tostring(element, method="text", encoding=str, with_tail=False))
    if text:
        return text
    for image in element.iter("img"):
        if said := _collapsed(image.get("alt") or image.get("title") or ""):
            return said
    return _collapsed(element.get("aria-label") or element.get("title") or "")


def _label(element: etree._Element) -> str:
    """What an element that is no ``<a>`` says of itself: an image's alt, else a title."""
    if element.tag in ("img", "area", "input"):
        return _collapsed(element.get("alt") or element.get("title") or "")
    return _collapsed(element.get("title") or "")

"""What a page says of itself — its title, meta description, canonical link, language and how
many words it shows — read by the one walk that finds its links (:mod:`minicrawl.html.walk`),
when asked: no page is parsed twice.

A crawl that wants them (run.py's, for ``--out``) asks before a page is parsed
(:func:`record_facts`, in the worker's thread, with or without the edges of
:mod:`minicrawl.html.edges`) and takes the walk after (:func:`recorded_walk`): its reader's
(:class:`FactReader`) :meth:`~FactReader.facts` are the page's :class:`Found`. The walk is the
same walk (the same links, nofollow, ``<base>``, refresh, edges); its reader is handed what it
asks for besides (composed, not mixed in: ``Walk.reader``):

* **title**: the text of the page's first HTML ``<title>`` in tree order — the one in ``<head>``,
  or a ``<title>`` the page put in its body when none is in its head (the HTML standard's
  ``document.title``, as browsers show it) — never one in an SVG (a tooltip) or a ``<template>``
  (one in a ``<noscript>`` is one: scripting off, as the walk). Its character references decoded,
  in the page's encoding (the walk decodes the page as a browser does), ASCII blanks collapsed and
  trimmed (as ``document.title``), at most ``MAX_FACT`` characters (then "…"). None: the page has
  no ``<title>``; "": an empty one.
* **description**: the ``content`` of the first ``<meta name=description>`` (the name in any
  case), blanks collapsed as the title's, at most ``MAX_FACT`` characters; None without one.
* **canonical**: the ``href`` of the first ``<link rel=canonical>`` (in the head or the body),
  as written (the crawl resolves it against the page's base URL).
* **lang**: the ``lang`` of the page's ``<html>``, trimmed; None without one; "" for an empty
  one ("the language is unknown", says the HTML standard: no other source is asked then).
* **words**: the words of the page's visible text: the DOM's ``textContent`` of its ``<body>``
  without the elements a browser never shows (``HIDDEN``: ``script``, ``style``,
  ``template``, ``title``, ``iframe``'s fallback, ``datalist``,
  ``noembed``, ``noframes``, ``rp``) — its pieces of text joined as they stand in the source:
  markup adds no space (``un<b>fold</b>ed`` is one word, and so is ``<td>a</td><td>b</td>``,
  as in ``textContent``: a page written without blanks between its blocks has fewer words
  than a reader sees) — split on ``BLANKS`` (the HTML standard's ASCII whitespace and the
  no-break space), the tokens counted. No CSS is applied (what a style sheet or ``hidden``
  hides counts): the words of the page's source a reader could see.

A tree (a page up to ``walk.STREAM_ABOVE``) gives the words in one go, in C: the hidden
elements, met by the walk's own pass over the tree, taken out; the text of ``<body>``
serialized; its words counted without a string made for each (:class:`Words`). A streamed
page's text comes to the parser target's ``data`` in pieces, a pulled page's (with edges) from
each element's ``text`` and ``tail`` as the element after it starts or its parent ends: either
way in document order, counted by :class:`Words`, which joins a word cut between two pieces —
so all three count alike (tests/test_facts_walk.py).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

from lxml import etree

from minicrawl.html.edges import AnchorWalk, EdgeWalk
from minicrawl.html.walk import CONTEXT_TAGS, LINK_TAGS, Reader, Walk, _where, last_walk, walk_with

MAX_FACT = 512  # characters of a title or a description kept (then "…")
HIDDEN = ("script", "style", "template", "title", "iframe", "datalist", "noembed", "noframes",
          "rp")  # (a <noscript>'s text is shown: scripting off, as the walk reads a page)
# The hidden elements of a tree (its title among them) are met by the walk's own pass, handed
# to it with the links' elements: a pass of their own walked the tree again (0.4-0.7 ms on
# String.html's 4,600 elements), nine tags more in the walk's cost ~20 µs there (a search of
# the page's bytes for them, to hand the walk only those it has, cost 3 ms)
_TREE_TAGS = tuple(tag for tag in HIDDEN if tag != "iframe")  # (an iframe is a link's already)
BLANKS = "\t\n\f\r \u00a0"  # what separates words (see Words)
_ASCII_BLANKS = re.compile(r"[\t\n\f\r ]+")
_MARKS = bytes(0 if chr(byte) in BLANKS[:5] else 1 for byte in range(256))  # a blank 0, else 1
_WORDY = frozenset(byte for byte in range(256) if _MARKS[byte])  # no blank
_PIECES = 4096  # pieces of text kept before they are counted (a title's: before it is cut)
_HIDDEN = frozenset(HIDDEN)
_OPENS = frozenset({"html", "body", *HIDDEN})  # their start and end matter to the facts
_WALKED = frozenset({*CONTEXT_TAGS, *LINK_TAGS})  # what a plain walk's start reads


@dataclass(slots=True)
class Found:
    """What a page's walk found it says of itself (see the module's doc)."""

    title: str | None = None
    description: str | None = None
    canonical: str | None = None  # the href, as written
    lang: str | None = None  # "": the page says its language is unknown
    words: int = 0


class Words:
    """Counts the words of text given in pieces, in document order (UTF-8): a piece that
    starts where the last one ended inside a word goes on with that word. A word is a run of
    characters other than ``BLANKS`` (the HTML standard's ASCII whitespace and the no-break
    space, which a browser shows as a space): counted in C, without making a string a word
    (``str.split`` made one each: twice the time on the Java API docs' String.html)."""

    __slots__ = ("count", "inside")

    def __init__(self) -> None:
        self.count = 0
        self.inside = False  # the last piece ended inside a word

    def add(self, text: bytes) -> None:
        """Count the words of ``text``, the next piece (UTF-8)."""
        if not text:
            return
        # (no byte A0, no no-break space: the one-byte search is memchr's, the two-byte one
        # 3 µs a KB of a CPython docs page, where ~1 % of pages have one)
        if b"\xa0" in text and b"\xc2\xa0" in text:
            text = text.replace(b"\xc2\xa0", b" ")
        # A word starts at each byte that is no blank after one that is (or at the first): in
        # one integer of the bytes' 0s and 1s, the bits set whose byte below is 0. Half the
        # time of counting b" x" in the text mapped to " " and "x" (30 against 60 µs a page).
        marks = int.from_bytes(text.translate(_MARKS), "little")
        self.count += (marks & ~(marks << 8)).bit_count() - (self.inside and text[0] in _WORDY)
        self.inside = text[-1] in _WORDY


class FactReader(Reader):
    """What reads a page's facts beside its walk (a :class:`~minicrawl.html.walk.Reader`, made
    for each walk :func:`record_facts` asks for): the walk hands it the elements of a tree it
    asks for (``tags``, at ``noted``) and its ``<meta>``s; a streamed page's parser target is
    :meth:`target`'s, a pulled page's every element comes to :meth:`pulled`. :meth:`facts` is
    what it found."""

    tags = _TREE_TAGS

    def __init__(self) -> None:
        self.said = Found()
        self.streaming = False  # a streamed or pulled page: no tree to read at the end
        self.seen_html = False
        self.words = Words()
        self.hiding: list[etree._Element] = []  # a tree's hidden elements, in document order
        self.body = 0  # <body>s open: text inside counts
        self.hidden = 0  # HIDDEN elements open: text inside does not
        self.counting = False  # text met now is counted: in <body>, in no hidden element
        self.pieces: list[str] = []  # text to count, joined (a streamed page's, a pulled one's)
        self.titling: list[str] | None = None  # the title's text, while its element is open
        self.title_at: etree._Element | None = None  # a pulled page's title element

    # -- what every walk hands it ---------------------------------------------------------------

    def noted(self, tag: str, attrib: Mapping[str, str] | etree._Element,
              where: str | None) -> None:
        if tag == "link":  # a rel=canonical
            if self.said.canonical is None and where == "html" \
                    and (href := attrib.get("href")) is not None:
                self.said.canonical = href
        elif tag in _HIDDEN:
            if not self.streaming:  # a tree's: taken out after the walk (parsed)
                self.hiding.append(attrib)  # type: ignore[arg-type]
            if tag == "title" and where == "html" and self.said.title is None \
                    and self.titling is None:
                if not self.streaming:  # a tree's: whole
                    self.said.title = _fact(_element_text(attrib))  # type: ignore[arg-type]
                else:  # a streamed or pulled page's: its text comes after
                    self.titling = []
                    if isinstance(attrib, etree._Element):
                        self.title_at = attrib

    def meta(self, attrib: Mapping[str, str] | etree._Element) -> None:
        if self.said.description is None \
                and (attrib.get("name") or "").strip().lower() == "description" \
                and (content := attrib.get("content")) is not None:
            self.said.description = _fact(content)

    def html(self, attrib: Mapping[str, str] | etree._Element) -> None:
        """The page's (first) ``<html>``: its language."""
        if not self.seen_html:
            self.seen_html = True
            if (lang := attrib.get("lang")) is not None:
                self.said.lang = lang.strip("\t\n\f\r ")

    def parsed(self, root: etree._Element) -> None:
        # Its language, its body's words (the hidden elements taken out)
        self.html(root)  # (a tree's root is its first <html>)
        for element in self.hiding:
            _drop(element)
        body = next(root.iterchildren("body"), None)  # (find: ElementPath's Python, 2× it)
        if body is not None:
            self.words.add(etree.tostring(body, method="text", encoding="utf-8",
                                          with_tail=False))

    # -- a streamed page, a pulled one -------------------------------------------------------

    def target(self, walk: Walk) -> _Reading:
        self.streaming = True
        return _Reading(walk, self)

    def pulled(self, event: str, element: etree._Element, walk: Walk) -> bool:
        # The text before it (at its start) or its last piece (at its end) is complete
        tag = element.tag
        if event == "start":
            if (before := element.getprevious()) is not None:
                self.text(before.tail)
            elif (parent := element.getparent()) is not None:
                self.text(parent.text)
            if tag in _OPENS:
                self.opened(tag, element, walk)
        else:
            self.text(element[-1].tail if len(element) else element.text)
            if tag in _OPENS:
                self.closed(tag, element)
        return super().pulled(event, element, walk)

    def opened(self, tag: str, attrib: Mapping[str, str] | etree._Element, walk: Walk) -> None:
        """An element that matters to the facts starts (``<html>``, ``<body>``, a hidden one),
        before ``walk`` is told (a ``<title>``'s namespace is that of the elements open)."""
        if tag == "html":
            self.html(attrib)
        elif tag == "title":  # (a context element: the walk keeps it open, hands it no one)
            self.noted(tag, attrib, _where(walk.open) if walk.foreign else "html")
        if tag == "body":
            self.body += 1
        else:
            self.hidden += tag in _HIDDEN
        self.counting = self.body > 0 and not self.hidden

    def closed(self, tag: str, element: etree._Element | None) -> None:
        """An element that matters to the facts ends (``element``: a pulled page's)."""
        if tag == "body":
            self.body -= 1
        else:
            self.hidden -= tag in _HIDDEN
        self.counting = self.body > 0 and not self.hidden
        if tag == "title" and self.titling is not None \
                and (element is None or element is self.title_at):
            if element is not None:
                self.titling.append(_element_text(element))
            self.said.title = _fact("".join(self.titling))
            self.titling = self.title_at = None

    def data(self, text: str) -> None:
        """A streamed page's text, in pieces (the parser target's): kept, counted in bulk."""
        if self.counting:
            self.pieces.append(text)
            if len(self.pieces) >= _PIECES:
                self.count_pieces()
        elif self.titling is not None and self.title_at is None \
                and len(self.titling) < _PIECES:  # (a pulled title is read at its end)
            self.titling.append(text)

    def text(self, piece: str | None) -> None:
        """A pulled page's piece of text (an element's text or tail), in document order."""
        if piece:
            self.data(piece)

    def count_pieces(self) -> None:
        """Count the pieces of text kept."""
        self.words.add("".join(self.pieces).encode())
        self.pieces.clear()

    def facts(self) -> Found:
        """What the page says of itself (once its walk is done)."""
        if self.titling is not None:  # a title the page never closed (cut short)
            self.closed("title", self.title_at)
        self.count_pieces()
        self.said.words = self.words.count
        return self.said


class _Reading:
    """A streamed page's parser target: the walk's, with the reader's text and elements
    (lxml calls ``data`` for each piece of text: the reader's own, no call between)."""

    def __init__(self, walk: Walk, reader: FactReader) -> None:
        self.walk, self.reader = walk, reader
        self.data = reader.data
        # A plain walk's start and end do nothing for an element that is neither a link's nor
        # a context's: most of a big page's, each a call lxml makes with the GIL taken (the
        # Java API docs' 33 streamed pages: ~1 M elements)
        self.plain = type(walk).start is Walk.start and type(walk).end is Walk.end

    def start(self, tag: str, attrib: Mapping[str, str]) -> None:
        if tag in _OPENS:
            self.reader.opened(tag, attrib, self.walk)
        if tag in _WALKED or not self.plain:
            self.walk.start(tag, attrib)

    def end(self, tag: str) -> None:
        if tag in CONTEXT_TAGS or not self.plain:
            self.walk.end(tag)
        if tag in _OPENS:
            self.reader.closed(tag, None)

    def close(self) -> Walk:
        return self.walk.close()


def record_facts(edges: bool = False, anchors: bool = False) -> None:
    """The next page walked in this thread is walked with a :class:`FactReader` (and by an
    :class:`~minicrawl.html.edges.EdgeWalk`, for ``--links``, if ``edges``; an
    :class:`~minicrawl.html.edges.AnchorWalk`, for ``--check-links``, if ``anchors``): taken
    after by :func:`recorded_walk`."""
    walk_with(AnchorWalk if anchors else EdgeWalk if edges else Walk, FactReader)


def recorded_walk() -> Walk | None:
    """The walk of the page last walked in this thread since :func:`record_facts` (or
    :func:`~minicrawl.html.edges.record_edges`), once; the walks are plain again. None if
    none was walked."""
    page = last_walk()
    walk_with(None)
    return page


def _element_text(element: etree._Element) -> str:
    """An element's text (a ``<title>``'s: libxml2 reads it as text, but a tree mended
    otherwise may give it children)."""
    if not len(element):
        return element.text or ""
    return etree.tostring(element, method="text", encoding=str, with_tail=False)


def _drop(element: etree._Element) -> None:
    """Take ``element`` out of its tree, keeping the text after it (lxml's remove takes it)."""
    parent = element.getparent()
    if parent is None:
        return
    if element.tail:
        before = element.getprevious()
        if before is not None:
            before.tail = (before.tail or "") + element.tail
        else:
            parent.text = (parent.text or "") + element.tail
    parent.remove(element)


def _fact(text: str) -> str:
    """A title's or a description's text: ASCII blanks collapsed and trimmed, capped."""
    text = _ASCII_BLANKS.sub(" ", text).strip(" ")
    return text if len(text) <= MAX_FACT else text[:MAX_FACT - 1] + "…"

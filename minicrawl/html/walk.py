"""The HTML walk: the links a browser follows in a page, and what the page tells robots, found
by parsing it with lxml and walking the elements that can be links — the details behind
:func:`minicrawl.core.links.extract_links`'s "parse" and "walk" steps.

libxml2 (2.14+) reads the bytes as the HTML standard says (comments, ``<script>``,
``<textarea>``, ``&copy=`` in an attribute) and builds its tree without the GIL, so one core
parses while another crawls. :class:`Walk` mends where libxml2's tree is no browser's: nothing in
a ``<template>`` is an element; an ``<a>`` in MathML is no link, in SVG it is; a ``<frame>``
outside a ``<frameset>`` is none. A crawler runs no script: it reads a page as the HTML standard's
user agent with scripting disabled does (Chromium with JavaScript off), so a ``<noscript>``'s
content is markup like any — its links, frames and refresh are there, as libxml2 builds them.

The links: ``<a href>``, ``<area href>``, an SVG ``<a>``'s ``href`` (or ``xlink:href``),
``<iframe src>``, ``<frame src>``, ``<link href>`` with rel next, prev, alternate or canonical,
and a refresh (``<meta http-equiv=refresh>``, the Refresh header: the soonest, as Chromium).
Hrefs are kept as written, only the fragment cut: the URL parser strips what browsers strip
(ASCII blanks around, tabs and newlines inside), no more. An HTML link's ``rel=nofollow`` is
noted (an SVG ``<a>``'s rel is not read). A page over ``STREAM_ABOVE`` bytes once decoded to
UTF-8 is streamed (libxml2 hands the walk its tags and builds no tree: a tree costs ~10× its
page); the walk, and so the links, are the same.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Callable, Mapping, Sequence
from contextlib import AbstractContextManager, nullcontext

from lxml import etree

from minicrawl.html import meta
from minicrawl.html.encoding import declared, decode

LINK_RELS = frozenset({"next", "prev", "alternate", "canonical"})
STREAM_ABOVE = 512 * 1024
STREAM_CHUNK = 256 * 1024  # what a streamed page is fed to the parser in


# -- the walk ------------------------------------------------------------------------------------

# The elements a link may be, and those that decide whether one is (see _where).
LINK_TAGS = ("a", "area", "iframe", "frame", "link", "base", "meta")
CONTEXT_TAGS = frozenset({"template", "svg", "math", "foreignobject", "desc", "title",
                          "mi", "mo", "mn", "ms", "mtext", "frameset", "body"})
_INERT = ("template",)  # what is in it is no element of the page, for a browser
_FOREIGN = ("template", "svg", "math")  # none open: every element is an HTML one
_HTML_IN_SVG = ("foreignobject", "desc", "title")  # the HTML standard's integration points
_HTML_IN_MATH = ("mi", "mo", "mn", "ms", "mtext")


class Walk:
    """One page's walk: handed each start and end tag of the elements above (from a tree, or
    as lxml's parser *target* while it parses), it keeps the links in document order, and
    what the page's <meta>s tell ``robot``. ``tags``: the elements it is handed; ``lines``:
    it wants the elements themselves, with their lines, even from a big page (a walk that
    records each link's element, :class:`minicrawl.html.edges.EdgeWalk`)."""

    tags: tuple[str, ...] = LINK_TAGS
    lines = False
    pulling = False  # a big page pulled (_pull): an element's content comes after its start
    reader: Reader | None = None  # what reads more of the page, if asked (walk_with)

    def __init__(self, robot: str = meta.ROBOT) -> None:
        self.robots = ("robots", robot.lower())  # the <meta name>s that speak to us
        self.hrefs: dict[str, bool] = {}  # href → some link to it is followed (not nofollow)
        self.base: str | None = None
        self.open: list[str] = []  # the context elements open, outermost first
        self.foreign = 0  # how many of them are _FOREIGN: none, and every element is HTML
        self.declared: str | None = None  # the encoding the first <meta> declaring one names
        self.directives: set[str] = set()  # what the page tells us: nofollow, noindex…
        self.soonest: tuple[int, str] | None = None  # the refresh to follow: (delay, href)

    def start(self, tag: str, attrib: Mapping[str, str] | etree._Element) -> None:
        """An element of a streamed page starts (its attributes, or the element of a pulled
        page): the walk keeps the context elements open."""
        if tag in CONTEXT_TAGS:
            self.open.append(tag)
            self.foreign += tag in _FOREIGN
        elif tag in LINK_TAGS:
            self.element(tag, attrib, self.open if self.foreign or tag == "frame" else ())

    def end(self, tag: str) -> None:
        """An element of a streamed page ends (libxml2 ends every element it starts)."""
        if tag in CONTEXT_TAGS and tag in self.open:
            at = len(self.open) - 1 - self.open[::-1].index(tag)
            self.foreign -= self.open.pop(at) in _FOREIGN

    def close(self) -> Walk:
        """The end of a streamed page (lxml's parser calls it)."""
        return self

    def ended(self, element: etree._Element) -> None:
        """An element of a pulled page (:func:`_pull`) ends: the walk may read it whole now."""

    def walked(self, top: etree._Element) -> None:
        """The tree of a page (not streamed, not pulled) under ``top`` has been walked."""

    def held(self) -> Sequence[etree._Element]:
        """The elements of a pulled page the walk still reads (an ``<a>`` whose text it reads
        at its end): kept whole (:func:`_prune`)."""
        return ()

    def element(self, tag: str, attrib: Mapping[str, str] | etree._Element,
                within: Sequence[str]) -> None:
        """An element whose tag is one of ``tags``, ``within`` the elements it is in (their
        tags, outermost first; () where none of them can matter). ``attrib``: a dict, or the
        element of a tree, whose ``get`` is its attributes'."""
        if tag == "frame":  # a frame is one only in a frameset the HTML standard keeps
            if _framed(attrib, within) and (src := attrib.get("src")) is not None:
                self.link(src)
            return
        where = _where(within) if within else "html"
        if where == "html":
            if tag == "a" or tag == "area":
                if (href := attrib.get("href")) is not None:
                    self.link(href, attrib.get("rel"))
            elif tag == "iframe":
                if (src := attrib.get("src")) is not None:
                    self.link(src)
                if tag == "iframe" and self.reader is not None:  # (its content: hidden text)
                    self.reader.noted(tag, attrib, where)
            elif tag == "link":
                rels = set((attrib.get("rel") or "").lower().split())
                if rels & LINK_RELS and "stylesheet" not in rels \
                        and (href := attrib.get("href")) is not None:
                    self.link(href, attrib.get("rel"))
                if "canonical" in rels and self.reader is not None:
                    self.reader.noted(tag, attrib, where)
            elif tag == "base":
                if self.base is None and (href := attrib.get("href")) is not None:
                    # The HTML standard's frozen base URL: a data: or javascript: one is none,
                    # the document's own URL is the base ("": it, resolved); any other stands
                    self.base = "" if _scheme(href) in ("data", "javascript") else href
            elif tag == "meta":
                self.meta(attrib)
            elif self.reader is not None:  # an element the reader asked for
                self.reader.noted(tag, attrib, where)
        elif where == "svg" and tag == "a":  # SVG 2: href, else SVG 1's xlink:href
            if (href := attrib.get("href", attrib.get("xlink:href"))) is not None:
                self.link(href)
        elif self.reader is not None:
            self.reader.noted(tag, attrib, where)

    def link(self, href: str, rel: str | None = None) -> None:
        """One link: its href (the fragment cut), followed unless its rel says nofollow."""
        if "#" in href:
            href = href[: href.index("#")]
        if not rel or "nofollow" not in rel.lower().split():
            self.hrefs[href] = True  # (a key met before keeps its place: first-met order)
        elif href not in self.hrefs:
            self.hrefs[href] = False

    def meta(self, attrib: Mapping[str, str] | etree._Element) -> None:
        """A <meta>: a charset declaration, a word to robots, or a refresh."""
        http_equiv, content = attrib.get("http-equiv"), attrib.get("content")
        if self.declared is None:
            self.declared = declared(attrib.get("charset"), http_equiv, content)
        if content is not None and (attrib.get("name") or "").strip().lower() in self.robots:
            self.directives |= meta.directives(content)
        if content is not None and (http_equiv or "").strip().lower() == "refresh":
            self.refresh(content)
        if self.reader is not None:
            self.reader.meta(attrib)

    def refresh(self, content: str, first: bool = False) -> None:
        """A refresh's content (``5; url=…``): kept if no other is sooner (the Refresh header
        comes ``first``; a later <meta> of the same delay replaces it, as in Chromium)."""
        parsed = meta.refresh(content)
        if parsed is not None and (self.soonest is None or parsed[0] < self.soonest[0]
                                   or parsed[0] == self.soonest[0] and not first):
            self.soonest = parsed

    def heard(self, headers: Sequence[tuple[str, str]]) -> None:
        """The answer's ``headers`` (names lower-cased, repeats kept): an X-Robots-Tag speaks to
        robots as a <meta> does; a Refresh header is met before the page's <meta>s."""
        for name, value in headers:
            if name == "x-robots-tag":
                self.directives |= meta.x_robots_tag(value, self.robots[1])
            elif name == "refresh":
                self.refresh(value, first=True)

    def found(self) -> tuple[list[str], frozenset[str]]:
        """The hrefs, each once in first-met order (the refresh to follow last), and those only
        ever met with rel=nofollow."""
        if self.soonest is not None:
            self.link(self.soonest[1])
        return list(self.hrefs), frozenset(h for h, followed in self.hrefs.items() if not followed)

    def says(self, word: str) -> bool:
        """Whether the page's robots <meta>s (or X-Robots-Tag) say ``word`` to us: ``nofollow``,
        ``noindex`` (``none`` says both)."""
        return word in self.directives or "none" in self.directives


class Reader:
    """What reads more of a page than its links, beside its walk (``Walk.reader``, made for
    each walk :func:`walk_with` asks for one): :class:`minicrawl.html.facts.FactReader`, the
    page's facts. This one reads nothing."""

    tags: tuple[str, ...] = ()  # the elements of a tree the walk hands it too (noted)
    streaming = False  # the page is streamed or pulled: no tree to read (set by the walk)

    def noted(self, tag: str, attrib: Mapping[str, str] | etree._Element,
              where: str | None) -> None:
        """An element the walk met that is no link — one of its ``tags``, a canonical
        ``<link>``, an ``<iframe>`` — in the namespace ``where`` ("html", "svg", "math"; None:
        inert)."""

    def meta(self, attrib: Mapping[str, str] | etree._Element) -> None:
        """A ``<meta>`` of the page (not inert), after the walk read it."""

    def parsed(self, root: etree._Element) -> None:
        """A tree, once walked (the walk is done with it: the reader may change it)."""

    def target(self, walk: Walk) -> object:
        """The parser target of a streamed page, which tells ``walk`` what a target would
        (and this reader what it reads); the walk itself, here."""
        return walk

    def pulled(self, event: str, element: etree._Element, walk: Walk) -> bool:
        """A pulled page's element starts or ends (``event``): every element comes here.
        Whether ``walk`` is handed it too: the elements a walk of a pulled page is handed."""
        return element.tag in CONTEXT_TAGS or element.tag in walk.tags


def _where(within: Sequence[str]) -> str | None:
    """The namespace of an element ``within`` these — "html", "svg" or "math" — or None if it
    is in a <template>: where the HTML standard's tree builder puts it."""
    namespace = "html"
    for tag in within:
        if tag in _INERT:
            return None
        if namespace == "html":
            if tag == "svg" or tag == "math":
                namespace = tag
        elif tag in (_HTML_IN_SVG if namespace == "svg" else _HTML_IN_MATH):
            namespace = "html"
    return namespace


# -- parsing -------------------------------------------------------------------------------------

# Parsed in the worker's own thread (handing each page to a parser thread cost 25–40 µs), in the
# crawl's parsing slot: one page at a time (Trip.links_of), walked after it; the C heaps threads
# leave are kept few by the crawler's keep_heaps_small.
_OPTIONS = {"recover": True, "no_network": True, "remove_comments": True, "remove_pis": True,
            "collect_ids": False, "default_doctype": False, "encoding": "utf-8"}


class _Local(threading.local):
    """What a thread keeps: its tree parser, the kind of walk asked for (walk_with), what
    makes its reader, and the last such walk (a miss of a thread-local's attribute costs 1 µs:
    these are defaults)."""

    parser: etree.HTMLParser | None = None
    kind: type[Walk] | None = None
    reading: Callable[[], Reader] | None = None
    walked: Walk | None = None


_local = _Local()
_ASCII_IS_NOT_ASCII = ("iso-2022-jp", "utf-16be", "utf-16le", "replacement")  # (escapes, pairs)


def walk(body: bytes, encoding: str, robot: str = meta.ROBOT,
         parsing: AbstractContextManager[object] | None = None) -> Walk:
    """The walk of the page ``body`` in ``encoding``: parsed (as UTF-8: libxml2 is given no
    other) and walked, its <meta>s read for ``robot``. The walk is a :class:`Walk`, or the
    kind :func:`walk_with` asked for in this thread, with the reader it asked for (then kept
    for :func:`last_walk`). ``parsing`` (a slot) is held while libxml2 parses: a tree's walk
    comes after, a streamed page's is the parser's target (held throughout)."""
    kind = getattr(_local, "kind", None)
    reading = getattr(_local, "reading", None)
    page = Walk(robot) if kind is None else kind(robot)
    if kind is not None or reading is not None:
        _local.walked = page
    # A tree's UTF-8 is checked by libxml2 as it parses (a page streamed: by Python first)
    data, unsure = _utf8(body, encoding, checked=len(body) > STREAM_ABOVE)
    data = _lines(data, page)
    reader = page.reader = reading() if reading is not None else None
    slot = parsing if parsing is not None else nullcontext()
    try:
        if len(data) > STREAM_ABOVE:
            with slot:
                if page.lines:
                    _pull(data, page)
                else:
                    parser = etree.HTMLParser(
                        target=page if reader is None else reader.target(page), **_OPTIONS)
                    for at in range(0, len(data), STREAM_CHUNK):
                        parser.feed(data[at:at + STREAM_CHUNK])
                    parser.close()
            return page
        with slot:
            root = etree.fromstring(data, parser := _tree_parser())
            if unsure and not _valid_utf8(parser, data):  # decoded as browsers do, parsed again
                root = etree.fromstring(_lines(decode(body, encoding).encode(), page), parser)
        if root is not None:
            # (the reader's elements are met by the same pass: a pass of its own would walk
            # the tree again, ~0.1 µs an element)
            tags = page.tags if reader is None else (*page.tags, *reader.tags)
            # Most elements are an <a> of the page's HTML: its link is taken here, not through
            # element() (a third of the walk's Python on the Java API docs), unless the walk
            # records elements (then element() is its own).
            link, plain = page.link, type(page).element is Walk.element
            for top in (root, *root.itersiblings()):  # after </html>: more <html>s
                # Only what is in a _FOREIGN element (and a frame) needs its ancestors.
                aside = {e for f in top.iter(*_FOREIGN) for e in f.iter(*tags)}
                for element in top.iter(*tags):
                    tag = element.tag
                    if tag == "a" and plain and (not aside or element not in aside):
                        if (href := element.get("href")) is not None:
                            link(href, element.get("rel"))
                        continue
                    within = [e.tag for e in element.iterancestors()][::-1] \
                        if tag == "frame" or element in aside else ()
                    page.element(tag, element, within)
                page.walked(top)
            if reader is not None:
                reader.parsed(root)
    except (etree.LxmlError, ValueError):
        pass  # what was found before the damage stands
    return page


def walk_with(kind: type[Walk] | None, reading: Callable[[], Reader] | None = None) -> None:
    """This thread's next walks are of ``kind`` (a :class:`Walk` that records more), with a
    :class:`Reader` made by ``reading`` (``minicrawl.html.facts.FactReader``: the page's
    facts), each kept for :func:`last_walk`; None and None: plain walks again."""
    _local.kind = None if kind is Walk else kind
    _local.reading = reading
    _local.walked = None


def last_walk() -> Walk | None:
    """The last walk of a page in this thread since :func:`walk_with` asked for its kind (given
    once: then None)."""
    page, _local.walked = getattr(_local, "walked", None), None
    return page


# The start tags after which the HTML standard's "in body" mode sets frameset-ok to "not ok":
# a <frameset> after any of them (or after text) is ignored, and its frames with it.
_FRAMESET_NOT_OK = frozenset({"pre", "listing", "li", "dd", "dt", "button", "applet", "marquee",
                              "object", "table", "area", "br", "embed", "img", "image", "keygen",
                              "wbr", "hr", "textarea", "xmp", "iframe", "select"})
_BLANKS = " \t\n\f\r"  # ASCII whitespace: text of only these leaves frameset-ok as it is


def _framed(attrib: Mapping[str, str] | etree._Element, within: Sequence[str]) -> bool:
    """True if a ``<frame>`` ``within`` these is one: in a ``<frameset>`` of the page's HTML.
    In a frameset the standard ignores every start tag but frameset and frame (a
    ``<template>``, a ``<body>`` libxml2 puts there: not inert, not there). A frameset libxml2
    put in the body took the body's place for the standard if nothing before it in the body
    set frameset-ok to "not ok" (text, an image, a table…: then it was ignored); that is read
    from the tree (a streamed page's frame there is none)."""
    if "frameset" not in within:
        return False
    before = within[: within.index("frameset")]
    if "body" not in before:
        return _where(before) == "html"
    return isinstance(attrib, etree._Element) and _replaces_body(attrib)


def _replaces_body(frame: etree._Element) -> bool:
    """True if the outermost ``<frameset>`` around ``frame``, in a ``<body>``, comes before
    anything in the body that sets frameset-ok to "not ok"."""
    framesets = [e for e in frame.iterancestors("frameset")]
    bodies = [e for e in frame.iterancestors("body")]
    if not framesets or not bodies:
        return False
    frameset, body = framesets[-1], bodies[-1]
    around = set(frameset.iterancestors())
    for element in body.iter():
        if element is frameset:
            return True
        if not isinstance(element.tag, str):
            continue
        tag = element.tag.lower()
        if tag in _FRAMESET_NOT_OK or (tag == "input" and (element.get("type") or "")
                                       .strip(_BLANKS).lower() != "hidden"):
            return False
        if (element.text or "").strip(_BLANKS) or (
                element not in around and element is not body
                and (element.tail or "").strip(_BLANKS)):
            return False
    return False


_SCHEME = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*(?=:)")
_C0_SPACE = "".join(map(chr, range(0x21)))  # what the URL parser cuts from either end
_TAB_NEWLINE = str.maketrans("", "", "\t\n\r")  # what it removes anywhere


def _scheme(href: str) -> str | None:
    """The scheme of the URL ``href``, lower-cased, as the URL standard's parser reads it (its
    leading and trailing C0 controls and spaces cut, tabs and newlines removed); None if it
    has none (a relative URL)."""
    found = _SCHEME.match(href.strip(_C0_SPACE).translate(_TAB_NEWLINE))
    return found.group().lower() if found else None


def _pull(data: bytes, page: Walk) -> None:
    """A big page for a walk that wants its elements and their lines (a parser target is given
    neither): its tree built as it is read, the walk handed the start and end of the elements a
    target would be handed (the same parser: the same elements, in the same order), and after
    each piece what is done with pruned (:func:`_prune`): no more of the tree is held than a
    piece's and the elements the walk ``holds`` (an ``<a>`` whose text it reads at its end)."""
    # A reader is handed every element: a piece of text is read when the element after it
    # starts, or its parent ends (minicrawl.html.facts)
    parser = etree.HTMLPullParser(
        events=("start", "end"),
        tag=(*CONTEXT_TAGS, *page.tags) if page.reader is None else None, **_OPTIONS)
    root, page.pulling = None, True
    if page.reader is not None:
        page.reader.streaming = True
    for at in range(0, len(data), STREAM_CHUNK):
        parser.feed(data[at:at + STREAM_CHUNK])
        root = _pulled(parser, page, root)
        if root is not None:
            _prune(root, page)
    parser.close()
    _pulled(parser, page, root)


def _pulled(parser: etree.HTMLPullParser, page: Walk,
            root: etree._Element | None) -> etree._Element | None:
    """Hand the walk the elements' starts and ends read so far (and its reader, if any,
    every element's); the tree's root."""
    reader = page.reader
    for event, element in parser.read_events():
        if root is None:
            root = element.getroottree().getroot()
        if reader is not None and not reader.pulled(event, element, page):
            continue  # (an element only the reader is handed)
        if event == "start":
            page.start(element.tag, element)
        else:
            page.end(element.tag)
            page.ended(element)
    return root


def _prune(root: etree._Element, page: Walk) -> None:
    """Remove what the parser is done with: the tree builder only adds to the elements open,
    which are the last child of each other from the root down, so every child before the last
    one of each is complete, and walked. Not inside what the walk ``holds``."""
    holding = page.held()
    element: etree._Element | None = root
    while element is not None and element not in holding:
        if len(element) > 1:
            del element[:-1]
        element = element[-1] if len(element) else None


def _utf8(body: bytes, encoding: str, checked: bool = True) -> tuple[bytes, bool]:
    """The page as UTF-8, as a browser decodes it (each invalid byte sequence one U+FFFD):
    ASCII and valid UTF-8 as they are (not decoded), anything else through Python's codecs; and
    whether it is yet to be known valid: UTF-8 not ``checked`` (by Python's decoder, which makes
    a string of it: 0.12 ms a CPython docs page) is given as it came, for libxml2 to tell
    (:func:`_valid_utf8`)."""
    if body.isascii() and encoding not in _ASCII_IS_NOT_ASCII:
        return body, False
    if encoding == "utf-8":
        bare = body[3:] if body.startswith(b"\xef\xbb\xbf") else body  # libxml2 reads no BOM
        if not checked:
            return bare, True
        try:
            bare.decode("utf-8")  # valid: libxml2 reads it as it is
            return bare, False
        except UnicodeDecodeError:
            pass  # libxml2 would make each bad byte a U+FFFD: browsers make a sequence one
    return decode(body, encoding).encode("utf-8"), False


# libxml2 logs at most this many errors of a parse (XML_MAX_ERRORS), then parses on silently
_ERRORS_LOGGED = 100
_INVALID_ENCODING = etree.ErrorTypes.ERR_INVALID_ENCODING


def _valid_utf8(parser: etree.HTMLParser, data: bytes) -> bool:
    """True if ``data``, just parsed by ``parser`` as UTF-8, is valid UTF-8: libxml2 logs an
    invalid sequence wherever it is (a comment, a script, an attribute), as Python's decoder
    finds one (tests/core/test_links.py), unless its log was full before; then Python says."""
    log = parser.error_log
    if any(error.type == _INVALID_ENCODING for error in log):
        return False
    if len(log) < _ERRORS_LOGGED:
        return True
    try:
        data.decode("utf-8")
        return True
    except UnicodeDecodeError:
        return False


def _lines(data: bytes, page: Walk) -> bytes:
    """``data`` with its lines ended as the HTML standard ends them (a lone CR ends one too),
    for a walk that counts ``lines``."""
    if page.lines and b"\r" in data:
        return data.replace(b"\r\n", b"\n").replace(b"\r", b"\n")
    return data


def _tree_parser() -> etree.HTMLParser:
    """This thread's parser: a parser parses one page at a time (threads sharing one would
    take turns on its lock), and making one costs more than a small page's parse."""
    parser = getattr(_local, "parser", None)
    if parser is None:
        parser = _local.parser = etree.HTMLParser(**_OPTIONS)
    return parser


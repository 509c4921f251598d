"""Links: the URLs a browser would follow from a page, read from its bytes, and what the page
says about following them. :func:`extract_links` does it in three steps:

1. **Decode** the page as a browser does (:mod:`minicrawl.core.encoding`: a byte order mark,
   the Content-Type's charset, a ``<meta>`` early on, else windows-1252; the last two are
   tentative: a later ``<meta>`` naming another encoding has 1–3 done again in it).
2. **Parse** it with lxml: libxml2 (2.14+) reads the bytes as the HTML standard says
   (comments, ``<script>``, ``<textarea>``, ``&copy=`` in an attribute) and builds its tree
   without the GIL, so one core parses while another crawls (as many parse at once as cores).
3. **Walk** the elements that can be links (:class:`_Walk`), mending where libxml2's tree is no
   browser's: nothing in a ``<template>`` or (scripting on) a ``<noscript>`` is an element; an
   ``<a>`` in MathML is no link, in SVG it is; a ``<frame>`` outside a ``<frameset>`` is none.

The links: ``<a href>``, ``<area href>``, an SVG ``<a>``'s ``href`` (or ``xlink:href``),
``<iframe src>``, ``<frame src>``, ``<link href>`` with rel next, prev, alternate or canonical,
and a refresh (``<meta http-equiv=refresh>``, the Refresh header: the soonest, as Chromium).
Hrefs are kept as written, only the fragment cut: the URL parser strips what browsers strip
(ASCII blanks around, tabs and newlines inside), no more. A page's ``nofollow`` (robots
``<meta>``, X-Robots-Tag) and an HTML link's ``rel=nofollow`` (an SVG ``<a>``'s rel is not
read) are applied by :meth:`Links.followed`. A page over ``STREAM_ABOVE`` bytes once decoded to
UTF-8 is streamed (libxml2 hands the walk its tags and builds no tree: a tree costs ~10× its
page); the walk, and so the links, are the same.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from lxml import etree

from minicrawl.core import meta
from minicrawl.core.encoding import declared, decode, sniff
from minicrawl.core.fetch import undone
from minicrawl.core.interfaces import Page
from minicrawl.core.urls import resolve

HTML_TYPES = ("text/html", "application/xhtml+xml")
LINK_RELS = frozenset({"next", "prev", "alternate", "canonical"})
STREAM_ABOVE = 512 * 1024
STREAM_CHUNK = 256 * 1024  # what a streamed page is fed to the parser in


@dataclass(slots=True)
class Links:
    """What one page links to, and what it tells robots: the record both crawlers use."""

    hrefs: list[str]  # as written, fragment cut, each once, in first-met order (a refresh met last)
    base: str | None = None  # the first <base href>, as written
    encoding: str = "windows-1252"  # the Encoding Standard's name: a query is encoded in it
    nofollow: bool = False  # the page says: follow none of my links
    noindex: bool = False  # the page says: do not index me (it is still crawled)
    nofollowed: frozenset[str] = field(default_factory=frozenset)  # hrefs only ever rel=nofollow

    def followed(self, ignore_nofollow: bool = False) -> list[str]:
        """The hrefs a crawler follows: all, less what the page says not to follow (unless
        ``ignore_nofollow``)."""
        if ignore_nofollow or not (self.nofollow or self.nofollowed):
            return self.hrefs
        return [] if self.nofollow else [h for h in self.hrefs if h not in self.nofollowed]


def is_html(content_type: str | None, body: bytes = b"") -> bool:
    """True for a page whose links are followed: one of ``HTML_TYPES``; with no Content-Type
    (or one that names no type), as browsers sniff it: HTML if ``body`` starts, after
    blanks, with one of the MIME Sniffing standard's signatures (``<!DOCTYPE HTML``, ``<html``,
    ``<a``, ``<!--``… then a space or ``>``: a tab or newline there is no match)."""
    essence = (content_type or "").split(";", 1)[0].strip(" \t").lower()
    if essence in ("", "unknown/unknown", "application/unknown", "*/*"):  # to be sniffed
        return _HTML_SIGNATURE.match(body[:512]) is not None
    return essence in HTML_TYPES


def follows_links(page: Page) -> bool:
    """True if ``page``'s links are followed: the one rule of both crawlers. A page's links are
    followed when it answered 200, is HTML (by its Content-Type, or sniffed when it has none:
    :func:`is_html`), and its body is the page as sent with its content coding undone — whole,
    or cut short (the size cap, a slow drip, a lost connection: the links up to the cut are
    real links, as a browser shows a page cut short). A body kept as received because its
    coding is not undone (br without brotli) gives none; so does an empty one (declared over
    the cap by its Content-Length, it is not read). run.py adds, outside this rule: a page its
    state finds unchanged (recrawl) or a duplicate of one recorded gives none."""
    return page.status == 200 and bool(page.body) and is_html(page.content_type, page.body) \
        and undone(page.headers.get("content-encoding", ""))


# The MIME Sniffing standard's HTML patterns (7.1, "identifying an unknown MIME type").
_HTML_SIGNATURE = re.compile(rb"[\t\n\x0c\r ]*<(?:!doctype html|html|head|script|iframe|h1|div|"
                             rb"font|table|a|style|title|b|body|br|p|!--)[ >]", re.IGNORECASE)


def extract_links(body: bytes, headers: Mapping[str, str] | None = None,
                  robot: str = meta.ROBOT) -> Links:
    """The links of the HTML page ``body`` whose answer's headers are ``headers`` (any case;
    Content-Type, X-Robots-Tag and Refresh are read); ``robot``: our name to robots <meta>s
    and X-Robots-Tag (besides ``robots``)."""
    said = [(name.lower(), value) for name, value in (headers or {}).items()]  # repeats too
    encoding, certain = sniff(body, next((v for n, v in said if n == "content-type"), None))
    walk = _walk(body, encoding, robot)
    if not certain and walk.declared not in (None, encoding):
        # A <meta> the prescan did not see (past 1024 bytes): the browser decodes again.
        encoding = walk.declared
        walk = _walk(body, encoding, robot)
    for name, value in said:
        if name == "x-robots-tag":
            walk.directives |= meta.x_robots_tag(value, robot)
        elif name == "refresh":
            walk.refresh(value, first=True)
    return walk.links(encoding)


def base_url(page_url: str, links: Links) -> str:
    """The URL the page's relative links resolve against: its first ``<base href>`` made
    absolute, else the page's own. A ``<base>`` that is no http(s) URL leaves none
    (``about:blank``, against which only an absolute href resolves), as in Chromium."""
    if links.base is None:
        return page_url
    return resolve(page_url, links.base, links.encoding) or "about:blank"


# -- the walk ------------------------------------------------------------------------------------

# The elements a link may be, and those that decide whether one is (see _where).
LINK_TAGS = ("a", "area", "iframe", "frame", "link", "base", "meta")
CONTEXT_TAGS = frozenset({"template", "noscript", "svg", "math", "foreignobject", "desc", "title",
                          "mi", "mo", "mn", "ms", "mtext", "frameset", "body"})
_INERT = ("template", "noscript")  # what is in them is no element of the page, for a browser
_FOREIGN = ("template", "noscript", "svg", "math")  # none open: every element is an HTML one
_HTML_IN_SVG = ("foreignobject", "desc", "title")  # the HTML standard's integration points
_HTML_IN_MATH = ("mi", "mo", "mn", "ms", "mtext")


class _Walk:
    """One page's walk: handed each start and end tag of the elements above (from a tree, or
    as lxml's parser *target* while it parses), it keeps the links in document order, and
    what the page's <meta>s tell ``robot``."""

    def __init__(self, robot: str = meta.ROBOT) -> None:
        self.robots = ("robots", robot.lower())  # the <meta name>s that speak to us
        self.hrefs: dict[str, bool] = {}  # href → some link to it is followed (not nofollow)
        self.base: str | None = None
        self.open: list[str] = []  # the context elements open, outermost first
        self.foreign = 0  # how many of them are _FOREIGN: none, and every element is HTML
        self.declared: str | None = None  # the encoding the first <meta> declaring one names
        self.directives: set[str] = set()  # what the page tells us: nofollow, noindex…
        self.soonest: tuple[int, str] | None = None  # the refresh to follow: (delay, href)

    def start(self, tag: str, attrib: Mapping[str, str]) -> None:
        """An element of a streamed page starts: the walk keeps the context elements open."""
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

    def close(self) -> _Walk:
        """The end of a streamed page (lxml's parser calls it)."""
        return self

    def element(self, tag: str, attrib: Mapping[str, str] | etree._Element,
                within: Sequence[str]) -> None:
        """An element whose tag is one of LINK_TAGS, ``within`` the elements it is in (their
        tags, outermost first; () where none of them can matter). ``attrib``: a dict, or the
        element of a tree, whose ``get`` is its attributes'."""
        where = _where(within) if within else "html"
        if where == "html":
            if tag == "a" or tag == "area":
                if (href := attrib.get("href")) is not None:
                    self.link(href, attrib.get("rel"))
            elif tag == "iframe" or (tag == "frame" and "frameset" in within
                                     and "body" not in within):  # (else no frame, for a browser)
                if (src := attrib.get("src")) is not None:
                    self.link(src)
            elif tag == "link":
                rels = set((attrib.get("rel") or "").lower().split())
                if rels & LINK_RELS and "stylesheet" not in rels \
                        and (href := attrib.get("href")) is not None:
                    self.link(href, attrib.get("rel"))
            elif tag == "base":
                if self.base is None:
                    self.base = attrib.get("href")
            elif tag == "meta":
                self.meta(attrib)
        elif where == "svg" and tag == "a":  # SVG 2: href, else SVG 1's xlink:href
            if (href := attrib.get("href", attrib.get("xlink:href"))) is not None:
                self.link(href)

    def link(self, href: str, rel: str | None = None) -> None:
        """One link: its href (the fragment cut), followed unless its rel says nofollow."""
        if "#" in href:
            href = href[: href.index("#")]
        followed = not (rel and "nofollow" in rel.lower().split())
        self.hrefs[href] = self.hrefs.get(href, False) or followed

    def meta(self, attrib: Mapping[str, str] | etree._Element) -> None:
        """A <meta>: a charset declaration, a word to robots, or a refresh."""
        http_equiv, content = attrib.get("http-equiv"), attrib.get("content")
        if self.declared is None:
            self.declared = declared(attrib.get("charset"), http_equiv, content)
        if content is not None and (attrib.get("name") or "").strip().lower() in self.robots:
            self.directives |= meta.directives(content)
        if content is not None and (http_equiv or "").strip().lower() == "refresh":
            self.refresh(content)

    def refresh(self, content: str, first: bool = False) -> None:
        """A refresh's content (``5; url=…``): kept if no other is sooner (the Refresh header
        comes ``first``; a later <meta> of the same delay replaces it, as in Chromium)."""
        parsed = meta.refresh(content)
        if parsed is not None and (self.soonest is None or parsed[0] < self.soonest[0]
                                   or parsed[0] == self.soonest[0] and not first):
            self.soonest = parsed

    def links(self, encoding: str) -> Links:
        """What the walk found, as the page's :class:`Links`."""
        if self.soonest is not None:
            self.link(self.soonest[1])
        return Links(list(self.hrefs), self.base, encoding,
                     nofollow=bool(self.directives & {"nofollow", "none"}),
                     noindex=bool(self.directives & {"noindex", "none"}),
                     nofollowed=frozenset(h for h, followed in self.hrefs.items() if not followed))


def _where(within: Sequence[str]) -> str | None:
    """The namespace of an element ``within`` these — "html", "svg" or "math" — or None if it
    is in a <template> or <noscript>: where the HTML standard's tree builder puts it."""
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
# crawl's parsing slot: one page at a time (Trip.links_of); the C heaps threads leave are kept
# few by the crawler's keep_heaps_small.
_OPTIONS = {"recover": True, "no_network": True, "remove_comments": True, "remove_pis": True,
            "collect_ids": False, "default_doctype": False, "encoding": "utf-8"}
_local = threading.local()
_ASCII_IS_NOT_ASCII = ("iso-2022-jp", "utf-16be", "utf-16le", "replacement")  # (escapes, pairs)


def _walk(body: bytes, encoding: str, robot: str) -> _Walk:
    """Parse the page (as UTF-8: libxml2 is given no other) and walk it."""
    data = _utf8(body, encoding)
    walk = _Walk(robot)
    try:
        if len(data) > STREAM_ABOVE:
            parser = etree.HTMLParser(target=walk, **_OPTIONS)
            for at in range(0, len(data), STREAM_CHUNK):
                parser.feed(data[at:at + STREAM_CHUNK])
            parser.close()
        elif (root := etree.fromstring(data, _tree_parser())) is not None:
            for top in (root, *root.itersiblings()):  # after </html>: more <html>s
                # Only what is in a _FOREIGN element (and a frame) needs its ancestors.
                aside = {e for f in top.iter(*_FOREIGN) for e in f.iter(*LINK_TAGS)}
                for element in top.iter(*LINK_TAGS):
                    tag = element.tag
                    within = [e.tag for e in element.iterancestors()][::-1] \
                        if tag == "frame" or element in aside else ()
                    walk.element(tag, element, within)
    except (etree.LxmlError, ValueError):
        pass  # what was found before the damage stands
    return walk


def _utf8(body: bytes, encoding: str) -> bytes:
    """The page as UTF-8, as a browser decodes it (each invalid byte sequence one U+FFFD):
    ASCII and valid UTF-8 as they are (not decoded), anything else through Python's codecs."""
    if body.isascii() and encoding not in _ASCII_IS_NOT_ASCII:
        return body
    if encoding == "utf-8":
        try:
            body.decode("utf-8-sig")  # valid: libxml2 reads it as it is (without a BOM)
            return body[3:] if body.startswith(b"\xef\xbb\xbf") else body
        except UnicodeDecodeError:
            pass  # libxml2 would make each bad byte a U+FFFD: browsers make a sequence one
    return decode(body, encoding).encode("utf-8")


def _tree_parser() -> etree.HTMLParser:
    """This thread's parser: a parser parses one page at a time (threads sharing one would
    take turns on its lock), and making one costs more than a small page's parse."""
    parser = getattr(_local, "parser", None)
    if parser is None:
        parser = _local.parser = etree.HTMLParser(**_OPTIONS)
    return parser


"""Link extraction: the hrefs of an HTML page, read from its bytes.

The page is decoded with the charset its headers declare, else the one its ``<meta>`` declares
(found by BeautifulSoup's ``EncodingDetector``, imported only for pages that declare something
other than UTF-8), else UTF-8; undecodable bytes are replaced, never
fatal. The decoded text is parsed with lxml's forgiving HTML parser (broken and truncated markup
still yields the links before the damage). We parse with lxml directly rather than through
BeautifulSoup's tree because it is several times faster per page and libxml2 releases the GIL
while it parses, so two cores are used.
"""

from __future__ import annotations

import codecs
import os
import re
import threading
from collections.abc import Mapping
from dataclasses import dataclass

from lxml import etree

from minicrawl.core.urls import resolve
from minicrawl.speed.gate import TokenGate

HTML_TYPES = ("text/html", "application/xhtml+xml")

# Which attribute of which element is a link to crawl.
LINK_ATTRS = {"a": "href", "area": "href", "frame": "src", "iframe": "src", "base": "href"}



@dataclass
class Extracted:
    """What a page links to. ``base`` is the URL relative hrefs resolve against."""

    hrefs: list[str]
    base: str
    encoding: str


def is_html(content_type: str | None) -> bool:
    """True for the media types whose links we follow."""
    if not content_type:
        return False
    return content_type.split(";", 1)[0].strip().lower() in HTML_TYPES


def charset_from_content_type(content_type: str | None) -> str | None:
    """The ``charset=`` parameter of a Content-Type header, if it names a known codec."""
    if not content_type:
        return None
    for param in content_type.split(";")[1:]:
        name, _, value = param.partition("=")
        if name.strip().lower() == "charset":
            return known_codec(value.strip().strip("\"'"))
    return None


def known_codec(name: str | None) -> str | None:
    """``name`` as a Python codec name, or None if Python does not know it."""
    if not name:
        return None
    try:
        return codecs.lookup(name).name
    except LookupError:
        return None


# A charset declaration, and one naming UTF-8, as bs4's meta pattern reads them (on the head
# lower-cased once: a case-insensitive search of every page's head cost 9 µs).
_DECLARATION = re.compile(rb"charset\s*=")
_UTF8_DECLARED = re.compile(rb"""charset\s*=\s*["']?utf-?8[ /;'">]""")
_BOMS = (codecs.BOM_UTF8, codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE, codecs.BOM_UTF32_BE)


def detect_encoding(body: bytes, content_type: str | None = None) -> str:
    """The page's encoding: the header's charset, else a BOM, else ``<meta>``, else UTF-8."""
    encoding = charset_from_content_type(content_type)
    if encoding is None:
        encoding = "utf-8" if _plainly_utf8(body) else _declared_encoding(body)
    return encoding


def _plainly_utf8(body: bytes) -> bool:
    """True when BeautifulSoup would certainly answer UTF-8, so it need not be imported (12 MB
    and 70 ms): no BOM, no XML declaration with an ``encoding`` (bs4 looks for one at the very
    start), and every ``charset=`` in the 2 KiB it searches for a ``<meta>`` names UTF-8 (or
    there is none; the word alone, as in a page about ``java.nio.charset``, declares nothing)."""
    if body.startswith(_BOMS):
        return False
    head = body[:2048].lower()
    start = head[:1024].lstrip()
    if start.startswith(b"<?") and b"encoding" in start:
        return False
    if b"charset" not in head:
        return True
    return len(_DECLARATION.findall(head)) == len(_UTF8_DECLARED.findall(head))


def _declared_encoding(body: bytes) -> str:
    """The encoding a BOM or a declaration in the page names (BeautifulSoup's reading of it),
    else UTF-8."""
    from bs4.dammit import EncodingDetector

    bom_encoding = EncodingDetector.strip_byte_order_mark(body[:4])[1]
    declared = EncodingDetector.find_declared_encoding(body[:4096], is_html=True)
    return known_codec(bom_encoding) or known_codec(declared) or "utf-8"


def decode_html(body: bytes, content_type: str | None = None) -> tuple[str, str]:
    """The page's text and the encoding used to get it (see :func:`detect_encoding`)."""
    encoding = detect_encoding(body, content_type)
    return body.decode(encoding, errors="replace"), encoding


_local = threading.local()

_PARSER_SETTINGS = {"recover": True, "no_network": True, "remove_comments": True,
                    "remove_pis": True, "collect_ids": False, "default_doctype": False}


def _parser(encoding: str | None) -> etree.HTMLParser:
    """This thread's parser for ``encoding``: threads sharing one lxml parser take turns on its
    lock, so each worker has its own and two cores parse at once (libxml2 drops the GIL). A
    plain ``etree`` parser, not ``lxml.html``'s, whose elements cost a Python lookup each."""
    parsers = _local.__dict__.setdefault("parsers", {})
    parser = parsers.get(encoding)
    if parser is None:
        parser = parsers[encoding] = etree.HTMLParser(encoding=encoding, **_PARSER_SETTINGS)
    return parser


def _as_text(body: bytes, encoding: str) -> str:
    """``body`` decoded by Python (it knows more encodings than libxml2), without an XML
    declaration (lxml refuses str input that carries one: it is decoded already)."""
    text = body.decode(encoding, errors="replace")
    if text.lstrip().startswith("<?xml"):
        text = text.split("?>", 1)[-1]
    return text


# libxml2's tree builder drops everything after </html>; browsers ignore that end tag and keep
# what follows (injected scripts, trackers, links), so the tag is taken out when text follows.
_HTML_END = re.compile(rb"</html\s*>", re.IGNORECASE)


_TAIL = 2048


def _keep_after_html_end(body: bytes) -> bytes:
    # Most pages end with their </html>: that is seen in the last 2 KiB, without scanning the
    # page (a scan of every page is ~2.5 ms per MB). (A page closed twice, with text between the
    # two, loses that text; browsers keep it.)
    tail = body[-_TAIL:].lower()
    at = tail.rfind(b"</html")
    if at >= 0:
        close = tail.find(b">", at)
        if close < 0 or not tail[close + 1:].strip():
            return body
    elif len(body) <= _TAIL:
        return body  # no </html> at all
    return _HTML_END.sub(b"", body) if _HTML_END.search(body) else body


def parse_html(body: bytes, encoding: str) -> etree._Element | None:
    """The document tree of ``body`` (None if there is none). UTF-8 bytes go to libxml2 as they
    are (no Python copy of the page; invalid bytes are recovered from); other encodings are
    decoded by Python, which knows more of them. What follows ``</html>`` is in the tree."""
    try:
        body = _keep_after_html_end(body)
        if encoding == "utf-8":
            return etree.fromstring(body, _parser("utf-8"))
        return etree.fromstring(_as_text(body, encoding), _parser(None))
    except (etree.ParserError, ValueError, LookupError):
        return None


# A parsed tree costs ~10× its page in memory (a 6 MB page: 60 MB). A page larger than this is
# read as a stream of start tags instead, never held as a tree (a few MB whatever its size);
# smaller ones are parsed into a tree, which libxml2 builds without the GIL.
STREAM_ABOVE = 512 * 1024
STREAM_CHUNK = 256 * 1024

# More pages being parsed at once than there are cores only adds memory, never speed.
_PARSE_SLOTS = TokenGate(os.cpu_count() or 2)


def extract_links(body: bytes, url: str, content_type: str | None = None) -> Extracted:
    """The link hrefs of the page ``url`` whose bytes are ``body``, in document order.

    hrefs are returned as written (stripped), duplicates removed; resolving and canonicalizing
    them is :func:`minicrawl.core.urls.resolve`'s job. Links in comments and in script or style
    text are not links; links in ``<template>``, ``<noscript>`` and after ``</html>`` are.
    """
    encoding = detect_encoding(body, content_type)
    links = _Links()
    if body:  # an empty or blank body has none (no copy of it to check for blankness)
        with _PARSE_SLOTS:
            if len(body) > STREAM_ABOVE:
                _stream(body, encoding, links)
            else:
                root = parse_html(body, encoding)
                if root is not None:  # links.start(tag, el.attrib) inlined: 0.1 ms a page
                    hrefs = links.hrefs
                    for el in root.iter("base", "a", "area", "frame", "iframe"):
                        tag = el.tag
                        value = el.get(LINK_ATTRS[tag])
                        if tag == "base":
                            links.base(value)
                        elif value:
                            hrefs[value.strip()] = None
    base = url
    if links.base_href:  # a broken <base> is ignored, as browsers do
        base = resolve(url, links.base_href) or url
    return Extracted(list(links.hrefs), base, encoding)


class _Links:
    """The links of one page, collected tag by tag (from a tree, or as lxml's parser target)."""

    __slots__ = ("base_href", "hrefs")

    def __init__(self) -> None:
        self.base_href: str | None = None
        self.hrefs: dict[str, None] = {}  # an ordered set: pages repeat their navigation links

    def start(self, tag: str, attrib: Mapping[str, str]) -> None:
        name = LINK_ATTRS.get(tag)
        if name is None:
            return
        value = attrib.get(name)
        if tag == "base":
            self.base(value)
        elif value:
            self.hrefs[value.strip()] = None

    def base(self, href: str | None) -> None:
        if self.base_href is None:  # only the first <base href> counts
            self.base_href = (href or "").strip() or None

    def close(self) -> None:
        pass


def _stream(body: bytes, encoding: str, links: _Links) -> None:
    """Feed ``body`` to a parser whose target is ``links``: libxml2 reports each start tag and
    builds no tree. (This path also keeps what follows ``</html>``: only the tree drops it.)"""
    parser = etree.HTMLParser(target=links, encoding="utf-8" if encoding == "utf-8" else None,
                              **_PARSER_SETTINGS)
    data: bytes | str = body if encoding == "utf-8" else _as_text(body, encoding)
    try:
        for at in range(0, len(data), STREAM_CHUNK):
            parser.feed(data[at:at + STREAM_CHUNK])
        parser.close()
    except (etree.ParserError, ValueError, LookupError):
        pass  # what was found before the damage stands

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
from dataclasses import dataclass

from lxml import etree

from minicrawl.urls import BadURL, canonicalize

HTML_TYPES = ("text/html", "application/xhtml+xml")

# Which attribute of which element is a link to crawl.
LINK_ATTRS = {"a": "href", "area": "href", "frame": "src", "iframe": "src"}



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


# A charset declaration naming UTF-8, as bs4's meta pattern would read it.
_UTF8_DECLARED = re.compile(rb"""charset\s*=\s*["']?utf-?8[ /;'">]""", re.IGNORECASE)
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
    start), and every ``charset`` in the 2 KiB it searches for a ``<meta>`` names UTF-8 (or
    there is none)."""
    if body.startswith(_BOMS):
        return False
    start = body[:1024].lstrip()
    if start.startswith(b"<?") and b"encoding" in start.lower():
        return False
    head = body[:2048]
    return head.lower().count(b"charset") == len(_UTF8_DECLARED.findall(head))


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


def _parser(encoding: str | None) -> etree.HTMLParser:
    """This thread's parser for ``encoding``: threads sharing one lxml parser take turns on its
    lock, so each worker has its own and two cores parse at once (libxml2 drops the GIL). A
    plain ``etree`` parser, not ``lxml.html``'s, whose elements cost a Python lookup each."""
    parsers = _local.__dict__.setdefault("parsers", {})
    parser = parsers.get(encoding)
    if parser is None:
        parser = parsers[encoding] = etree.HTMLParser(
            recover=True, no_network=True, remove_comments=True, remove_pis=True,
            collect_ids=False, default_doctype=False, encoding=encoding)
    return parser


def parse_html(body: bytes, encoding: str) -> etree._Element | None:
    """The document tree of ``body`` (None if there is none). UTF-8 bytes go to libxml2 as they
    are (no Python copy of a 2 MB page; invalid bytes are recovered from); other encodings are
    decoded by Python, which knows more of them."""
    try:
        if encoding == "utf-8":
            return etree.fromstring(body, _parser("utf-8"))
        text = body.decode(encoding, errors="replace")
        # lxml refuses str input carrying an XML encoding declaration; it is decoded already.
        if text.lstrip().startswith("<?xml"):
            text = text.split("?>", 1)[-1]
        return etree.fromstring(text, _parser(None))
    except (etree.ParserError, ValueError, LookupError):
        return None


# A parsed tree costs ~10× its page in memory; more trees alive at once than there are cores
# to build them only adds memory (16 workers on 2 MB pages: hundreds of MB), never speed.
_PARSE_SLOTS = threading.BoundedSemaphore(os.cpu_count() or 2)


def extract_links(body: bytes, url: str, content_type: str | None = None) -> Extracted:
    """The link hrefs of the page ``url`` whose bytes are ``body``, in document order.

    hrefs are returned as written (stripped), duplicates removed; resolving and canonicalizing
    them is :func:`minicrawl.urls.canonicalize`'s job.
    """
    encoding = detect_encoding(body, content_type)
    with _PARSE_SLOTS:  # an empty or blank body parses to None (no copy of it to check that)
        return _links_of(parse_html(body, encoding) if body else None, url, encoding)


def _links_of(root: etree._Element | None, url: str, encoding: str) -> Extracted:
    if root is None:
        return Extracted([], url, encoding)
    base_href = None
    hrefs: dict[str, None] = {}  # an ordered set: pages repeat their navigation links
    for el in root.iter("base", "a", "area", "frame", "iframe"):
        tag = el.tag
        if tag == "base":
            if base_href is None:  # only the first <base href> counts
                base_href = (el.get("href") or "").strip() or None
            continue
        value = el.get(LINK_ATTRS[tag])
        if value:
            hrefs[value.strip()] = None
    base = url
    if base_href:
        try:
            base = canonicalize(base_href, url)
        except BadURL:
            pass  # a broken <base> is ignored, as browsers do
    return Extracted(list(hrefs), base, encoding)

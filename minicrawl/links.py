"""Link extraction: the hrefs of an HTML page, read from its bytes.

The page is decoded with the charset its headers declare, else the one its ``<meta>`` declares
(found by BeautifulSoup's ``EncodingDetector``), else UTF-8; undecodable bytes are replaced, never
fatal. The decoded text is parsed with lxml's forgiving HTML parser (broken and truncated markup
still yields the links before the damage). We parse with lxml directly rather than through
BeautifulSoup's tree because it is several times faster per page and libxml2 releases the GIL
while it parses, so two cores are used.
"""

from __future__ import annotations

import codecs
import os
import threading
from dataclasses import dataclass

from bs4.dammit import EncodingDetector
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


def detect_encoding(body: bytes, content_type: str | None = None) -> str:
    """The page's encoding: the header's charset, else a BOM, else ``<meta>``, else UTF-8."""
    encoding = charset_from_content_type(content_type)
    if encoding is None:
        bom_encoding = EncodingDetector.strip_byte_order_mark(body[:4])[1]
        declared = EncodingDetector.find_declared_encoding(body[:4096], is_html=True)
        encoding = known_codec(bom_encoding) or known_codec(declared) or "utf-8"
    return encoding


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
    with _PARSE_SLOTS:
        return _links_of(parse_html(body, encoding) if body.strip() else None, url, encoding)


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

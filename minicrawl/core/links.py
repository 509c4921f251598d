"""Links: the hrefs an HTML page holds, read from its bytes with lxml.

lxml's parser (libxml2) forgives what browsers forgive, and builds a tree without holding the
GIL: one core parses while another runs the crawl. A tree costs ~10× its page, so a page over
``STREAM_ABOVE`` is streamed instead (lxml hands us its start tags). BeautifulSoup is asked only
what lxml cannot tell: the charset of a page whose BOM, <meta> or XML declaration names one.
"""

import codecs
import os
import re
from concurrent.futures import ThreadPoolExecutor

from lxml import etree

HTML_TYPES = ("text/html", "application/xhtml+xml")
LINK_ATTRIBUTES = {"a": "href", "area": "href", "frame": "src", "iframe": "src", "base": "href"}
STREAM_ABOVE = 512 * 1024
# As many parser threads as cores: more trees at once would only wait for a core, and the C heap a
# tree leaves stays with these few threads (glibc: a heap per thread), not 16 workers: −30 MB.
_PARSERS = ThreadPoolExecutor(os.cpu_count() or 2, thread_name_prefix="parser")
_HREFS = etree.XPath("|".join(f"//{tag}/@{attribute}" for tag, attribute
                             in LINK_ATTRIBUTES.items() if tag != "base"), smart_strings=False)
_BASES = etree.XPath("//base/@href", smart_strings=False)
_BOMS = (codecs.BOM_UTF8, codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)
_OTHER_CHARSET = re.compile(rb"""charset\s*=\s*["']?(?![\s"']|utf-?8\b)""")  # not "utf-8", "utf8"
_CHARSET_PARAM = re.compile(r"""charset\s*=\s*["']?([\w.:-]+)""", re.IGNORECASE)


def is_html(content_type: str) -> bool:
    """True for the media types whose links are followed (and for none at all: browsers sniff
    such pages, and most are HTML)."""
    return content_type.split(";", 1)[0].strip().lower() in ("", *HTML_TYPES)


def encoding_of(body: bytes, content_type: str = "") -> str:
    """The page's charset: the Content-Type header's, else UTF-8 unless the page says (a byte
    order mark, ``<meta charset>``, an XML declaration) it is another, which BeautifulSoup's
    detector then reads."""
    if (header := _CHARSET_PARAM.search(content_type)) and (name := _known(header[1])):
        return name
    head = body[:2048].lower()
    if not (body.startswith(_BOMS) or _OTHER_CHARSET.search(head) or head.startswith(b"<?xml")):
        return "utf-8"  # most of the web, and no need to load bs4 (12 MB, 70 ms) to say so
    from bs4.dammit import EncodingDetector

    detector = EncodingDetector(body[:4096], is_html=True)
    said = detector.sniffed_encoding or detector.find_declared_encoding(detector.markup, True)
    return next(filter(None, map(_known, detector.encodings)), "utf-8") if said else "utf-8"


def _known(name: str | None) -> str | None:
    try:  # a charset of text: "".encode refuses codecs of bytes ('base64', 'rot13', 'zlib'…)
        return codecs.lookup(name).name if name and isinstance("".encode(name), bytes) else None
    except LookupError:
        return None


class _Links:
    """lxml's parser *target* for a page too big for a tree: handed the start tags one by one,
    it keeps the values of the link attributes, in document order."""

    def __init__(self) -> None:
        self.hrefs: list[str] = []
        self.bases: list[str] = []

    def start(self, tag: str, attrib: dict[str, str]) -> None:
        if (value := attrib.get(LINK_ATTRIBUTES.get(tag, ""))) is not None:
            (self.bases if tag == "base" else self.hrefs).append(value)

    def close(self) -> None:  # lxml calls it at the end of the page
        pass


def extract_links(body: bytes, content_type: str = "") -> tuple[list[str], str | None]:
    """The hrefs of an HTML page, as written, each once (``a.html#x`` and ``a.html#y`` are one
    link: fragments are cut), and its ``<base href>``."""
    if not body.strip():
        return [], None
    big = len(body) > STREAM_ABOVE
    if (encoding := encoding_of(body, content_type)) != "utf-8":
        body = body.decode(encoding, errors="replace").encode()  # libxml2 gets UTF-8 always
    return _PARSERS.submit(_parse, body, big).result()  # the worker waits for a parser thread


def _parse(body: bytes, big: bool) -> tuple[list[str], str | None]:
    links = _Links()
    options = {"recover": True, "no_network": True, "encoding": "utf-8"}
    try:
        if big:
            etree.fromstring(body, etree.HTMLParser(target=links, **options))
        elif (root := etree.fromstring(body, etree.HTMLParser(**options))) is not None:
            links.hrefs, links.bases = _HREFS(root), _BASES(root)
    except (etree.LxmlError, ValueError):
        pass  # streamed, what was found before the damage stands
    hrefs = dict.fromkeys(href.split("#", 1)[0].strip() for href in links.hrefs)
    return list(hrefs), next(filter(None, map(str.strip, links.bases)), None)  # the first counts

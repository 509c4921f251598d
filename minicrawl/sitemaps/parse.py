"""Reading one sitemap file (sitemaps.org): gzip, the limits, XML bombs, ``<lastmod>``.

* gzip is recognized by its magic bytes, whatever the headers said, and inflated a piece at a
  time; the sitemaps.org limits hold per file: 50,000 URLs and 50 MiB uncompressed. What is
  past a limit is dropped and said (:class:`Parsed` ``over_limit``, ``cut``).
* Parsed with lxml's pull parser (libxml2, already a core dependency for links) with entity
  resolution, network access and huge trees off; a document with a DTD is refused at its root
  element — no sitemap needs one, and a DTD is what entity-expansion bombs ("billion laughs")
  and external entities need. Streaming keeps memory at one ``<url>`` element, not a tree of
  50,000. Malformed XML keeps the entries read before the error.
* ``<lastmod>`` (a W3C datetime) is read as the latest instant it may name
  (:func:`parse_lastmod`), for ``--recrawl`` (:func:`not_modified_since`).

What a crawl does with the files — where it finds them, how it fetches them — is
:mod:`minicrawl.sitemaps.reader`.
"""

from __future__ import annotations

import re
import zlib
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

from lxml import etree

MAX_URLS = 50_000  # sitemaps.org: per sitemap file (and per index)
MAX_BYTES = 50 * 1024 * 1024  # sitemaps.org: 50 MiB uncompressed per file
CHUNK = 64 * 1024
GZIP_MAGIC = b"\x1f\x8b"


@dataclass
class Parsed:
    """One sitemap file's content: ``kind`` is ``urlset`` or ``sitemapindex``; ``entries``
    (loc, lastmod text) in document order."""

    kind: str = ""
    entries: list[tuple[str, str | None]] = field(default_factory=list)
    over_limit: int = 0  # entries past MAX_URLS, dropped
    cut: bool = False  # the file was longer than MAX_BYTES uncompressed
    error: str | None = None


def parse_sitemap(body: bytes) -> Parsed:
    """Parse a sitemap or sitemap index (gzipped or not); never raises for bad input. Malformed
    XML keeps the entries complete before the error."""
    result = Parsed()
    parser = etree.XMLPullParser(events=("start", "end"), resolve_entities=False,
                                 no_network=True, huge_tree=False, load_dtd=False,
                                 remove_comments=True, remove_pis=True)
    reader = _Reader(result)
    size = 0
    try:
        for chunk in _inflate(body) if body[:2] == GZIP_MAGIC else _pieces(body):
            if size + len(chunk) > MAX_BYTES:
                chunk, result.cut = chunk[: MAX_BYTES - size], True
            size += len(chunk)
            try:
                parser.feed(chunk)
            finally:  # what was parsed before an error still counts
                reader.take(parser.read_events())
            if result.cut:
                return result  # the rest is past the limit; a half element is not an error
        try:
            parser.close()
        finally:
            reader.take(parser.read_events())
        if reader.root is None:
            result.error = "empty document"
    except _Refused as e:
        result.error = str(e)
    except etree.XMLSyntaxError as e:
        result.error = f"malformed XML: {e}"
    except zlib.error as e:
        result.error = f"bad gzip data: {e}"
    return result


class _Reader:
    """Takes the pull parser's events: checks the root, notes each entry, frees it."""

    def __init__(self, result: Parsed) -> None:
        self.result = result
        self.root: etree._Element | None = None

    def take(self, events: Iterator[tuple[str, etree._Element]]) -> None:
        for event, element in events:
            if event == "start":
                if self.root is None:
                    self.root = element
                    _check_root(element, self.result)
            elif self.root is not None and element.getparent() is self.root:
                _entry(element, self.result)
                element.clear()  # keep memory flat: the entry is read
                while element.getprevious() is not None:
                    del self.root[0]


class _Refused(Exception):
    """A document this reader will not parse (a DTD, not a sitemap)."""


def _check_root(root: etree._Element, result: Parsed) -> None:
    kind = etree.QName(root).localname
    if kind not in ("urlset", "sitemapindex"):
        raise _Refused(f"not a sitemap: root element <{kind}>")
    if root.getroottree().docinfo.internalDTD is not None:
        raise _Refused("refused: the document has a DTD (a sitemap never needs one; entity "
                       "definitions are how XML bombs expand)")
    result.kind = kind


def _entry(element: etree._Element, result: Parsed) -> None:
    """Note one ``<url>`` or ``<sitemap>`` (its ``<loc>`` and ``<lastmod>``)."""
    loc = lastmod = None
    for child in element:
        if not isinstance(child.tag, str):
            continue
        name = etree.QName(child).localname
        if name == "loc":
            loc = (child.text or "").strip()
        elif name == "lastmod":
            lastmod = (child.text or "").strip()
    if not loc:
        return
    if len(result.entries) >= MAX_URLS:
        result.over_limit += 1
    else:
        result.entries.append((loc, lastmod))


def _pieces(data: bytes) -> Iterator[bytes]:
    for i in range(0, len(data), CHUNK):
        yield data[i:i + CHUNK]


def _inflate(data: bytes) -> Iterator[bytes]:
    """The gzip stream ``data`` inflated a piece at a time: a bomb is stopped by the caller's
    size limit after one piece past it, never inflated whole."""
    inflater = zlib.decompressobj(16 + zlib.MAX_WBITS)
    for piece in _pieces(data):
        while piece and not inflater.eof:
            out = inflater.decompress(piece, CHUNK)
            piece = inflater.unconsumed_tail
            if out:
                yield out
        if inflater.eof:
            return
    if not inflater.eof:
        raise zlib.error("gzip stream ends early")


# -- <lastmod> ---------------------------------------------------------------------------------

_W3C_DATETIME = re.compile(
    r"(\d{4})(?:-(\d\d)(?:-(\d\d)(?:[Tt ](\d\d):(\d\d)(?::(\d\d)(?:\.\d+)?)?"
    r"([Zz]|[+-]\d\d:?\d\d)?)?)?)?")


def parse_lastmod(text: str | None) -> datetime | None:
    """The *latest* instant a W3C datetime may mean (UTC), or None if it is not one.

    ``2024-05-01`` may be any time that day in any zone, so it means 2024-05-02 12:00 UTC (the
    day's end at UTC-12); a time without a zone is read the same way (+12 h). Erring late makes
    a page look modified rather than skip a page that changed.
    """
    match = _W3C_DATETIME.fullmatch((text or "").strip())
    if match is None:
        return None
    year, month, day, hour, minute, second, zone = match.groups()
    try:
        if hour is None:  # a year, month or day: its end, in the last time zone
            start = datetime(int(year), int(month or 1), int(day or 1), tzinfo=UTC)
            if day is not None:
                end = start + timedelta(days=1)
            elif month is not None:
                end = (start + timedelta(days=32)).replace(day=1)
            else:
                end = start.replace(year=start.year + 1)
            return end + timedelta(hours=12)
        moment = datetime(int(year), int(month), int(day), int(hour), int(minute),
                          int(second or 0), tzinfo=UTC)
    except ValueError:  # 2024-13-45
        return None
    if zone is None:
        return moment + timedelta(hours=12)
    if zone in ("Z", "z"):
        return moment
    sign = 1 if zone[0] == "+" else -1
    digits = zone[1:].replace(":", "")
    return moment - sign * timedelta(hours=int(digits[:2]), minutes=int(digits[2:]))


def not_modified_since(lastmod: datetime | None, fetched_at: str | None) -> bool:
    """True when a sitemap's ``lastmod`` is not newer than a recorded fetch (ISO 8601, as in
    the records): the page recorded then is still the page."""
    if lastmod is None or not fetched_at:
        return False
    try:
        fetched = datetime.fromisoformat(fetched_at)
    except ValueError:
        return False
    if fetched.tzinfo is None:
        fetched = fetched.replace(tzinfo=UTC)
    return lastmod <= fetched

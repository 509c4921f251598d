"""Sitemaps (``--sitemaps``): the URLs a site lists for crawlers, put in ToDo at depth 0.

:func:`read_sitemaps` runs once per crawl, in the main thread, after the seeds are in ToDo and
*before* the workers start. So the termination rule (ToDo empty and no worker busy) needs no
change: every sitemap URL is in ToDo before a worker could find it empty. The price is that
the crawl starts after the sitemaps are read (one request per sitemap file, paced like pages).

* Where: each seed origin's robots.txt ``Sitemap:`` lines (protego parsed them already:
  :meth:`minicrawl.politeness.Politeness.sitemaps`), else ``/sitemap.xml``. With
  ``--ignore-robots`` robots.txt is not read: ``/sitemap.xml`` only.
* Fetching: the crawl's :class:`~minicrawl.fetch.Fetcher` and :class:`Politeness` (robots.txt
  rules, per-host delay and in-flight limit), its retries (``--retries``, with backoff), and up
  to five redirects.
* Reading: gzip is recognized by its magic bytes, whatever the headers say, and inflated in
  pieces; the sitemaps.org limits hold per file: 50,000 URLs and 50 MiB uncompressed. What is
  past a limit is dropped and counted (``sitemap_urls_over_limit``, ``sitemaps_cut``).
* Parsing: lxml's pull parser (libxml2, already a core dependency for links) with entity
  resolution, network access and huge trees off; a document with a DTD is refused at its root
  element — no sitemap needs one, and a DTD is what entity-expansion bombs ("billion laughs")
  and external entities need. Streaming keeps memory at one ``<url>`` element, not a tree of
  50,000. Malformed XML keeps the entries read before the error and is counted.
* Indexes: ``<sitemapindex>`` entries are read in turn (breadth first); a sitemap listed again
  (an index that loops) is not read twice and is counted (``sitemap_loops``); at most
  ``MAX_FILES`` files per crawl.
* ``<lastmod>``: kept per URL for ``--recrawl`` (:func:`not_modified_since`).

Every sitemap file read becomes a record (``"sitemap": true``; its ``error`` says what went
wrong, ``links`` how many URLs it listed, ``new`` how many entered ToDo), a warning on stderr
when something went wrong, and a trace line.
"""

from __future__ import annotations

import logging
import re
import time
import zlib
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

from lxml import etree

from minicrawl.fetch import Fetcher, Response
from minicrawl.options import Options
from minicrawl.politeness import Politeness, Verdict
from minicrawl.retry import host_pause, is_retryable, wait_before_retry
from minicrawl.stats import Stats
from minicrawl.urls import BadURL, canonicalize, origin_of

log = logging.getLogger("minicrawl")

MAX_URLS = 50_000  # sitemaps.org: per sitemap file (and per index)
MAX_BYTES = 50 * 1024 * 1024  # sitemaps.org: 50 MiB uncompressed per file
MAX_FILES = 1000  # sitemap files read per crawl (indexes included)
MAX_REDIRECTS = 5
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


@dataclass
class SitemapFile:
    """What reading one sitemap file gave (its record)."""

    url: str
    referrer: str | None
    response: Response | None = None
    error: str | None = None
    urls: int = 0  # URLs (or sitemaps) it listed
    fetched_at: str = ""


@dataclass
class Found:
    """All sitemaps of a crawl: their in-scope page URLs (url, the sitemap listing it), each
    URL's newest ``<lastmod>``, and a record per sitemap file."""

    urls: list[tuple[str, str]] = field(default_factory=list)
    lastmod: dict[str, datetime] = field(default_factory=dict)
    files: list[SitemapFile] = field(default_factory=list)


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


# -- reading a crawl's sitemaps -------------------------------------------------------------------


class SitemapReader:
    """Reads the sitemaps of the seeds' hosts for one crawl (see the module doc)."""

    def __init__(self, options: Options, politeness: Politeness, stats: Stats,
                 wanted: Callable[[str], bool], now: Callable[[], str]) -> None:
        self.options = options
        self.politeness = politeness
        self.stats = stats
        self.wanted = wanted  # the crawl's scope for a canonical page URL
        self.now = now  # the crawl's timestamps for records
        self.fetcher = Fetcher(options)

    def read(self, seeds: Sequence[str]) -> Found:
        found = Found()
        try:
            queue: list[tuple[str, str | None]] = []
            for origin in dict.fromkeys(origin_of(seed) for seed in seeds):
                queue += self._listed_in_robots(origin)
            listed = {url for url, _ in queue}
            seen_urls: set[str] = set()
            while queue:
                url, referrer = queue.pop(0)
                if len(found.files) >= MAX_FILES:
                    self.stats.add(sitemaps_over_limit=len(queue) + 1)
                    log.warning("sitemaps: more than %d sitemap files; %d not read",
                                MAX_FILES, len(queue) + 1)
                    break
                record, parsed = self._read_one(url, referrer)
                found.files.append(record)
                if parsed is None:
                    continue
                if parsed.kind == "sitemapindex":
                    for loc, _ in parsed.entries:
                        child = self._canonical(loc, record.url)
                        if child is None:
                            self.stats.add(sitemap_bad_locs=1)
                        elif child in listed:
                            self.stats.add(sitemap_loops=1)
                            record.error = record.error or f"loop: lists {child} again"
                            log.warning("sitemaps: %s lists %s again (a loop): not read twice",
                                        url, child)
                        else:
                            listed.add(child)
                            queue.append((child, url))
                    continue
                self._take_urls(parsed, record.url, found, seen_urls)
        finally:
            self.fetcher.close()
        return found

    def _listed_in_robots(self, origin: str) -> list[tuple[str, str | None]]:
        """The origin's sitemaps: its robots.txt ``Sitemap:`` lines, else ``/sitemap.xml``."""
        if self.politeness.obey_robots:
            lines = self.politeness.sitemaps(origin, self.fetcher)
            robots = origin + "/robots.txt"
            urls = [u for u in (self._canonical(line, robots) for line in lines) if u]
            if urls:
                return [(url, robots) for url in dict.fromkeys(urls)]
        return [(origin + "/sitemap.xml", None)]

    def _take_urls(self, parsed: Parsed, sitemap: str, found: Found,
                   seen_urls: set[str]) -> None:
        for loc, lastmod in parsed.entries:
            url = self._canonical(loc, sitemap)
            if url is None:
                self.stats.add(sitemap_bad_locs=1)
                continue
            if not self.wanted(url):
                self.stats.add(sitemap_out_of_scope=1)
                continue
            when = parse_lastmod(lastmod)
            if when is not None and (url not in found.lastmod or when > found.lastmod[url]):
                found.lastmod[url] = when
            if url not in seen_urls:
                seen_urls.add(url)
                found.urls.append((url, sitemap))

    def _canonical(self, loc: str, base: str) -> str | None:
        try:
            return canonicalize(loc, base, sort_query=self.options.sort_query,
                                max_length=self.options.max_url_length)
        except BadURL:
            return None

    def _read_one(self, url: str, referrer: str | None) -> tuple[SitemapFile, Parsed | None]:
        """Fetch and parse one sitemap file; its record, and what it held (None: nothing)."""
        record = SitemapFile(url, referrer, fetched_at=self.now())
        response, error = self._get(url)
        record.response = response
        parsed: Parsed | None = None
        too_big = error is not None and error.startswith("body larger than max_bytes")
        if (error is None or too_big) and response is not None:
            if response.status != 200:
                error = f"HTTP {response.status}"
            else:
                parsed = parse_sitemap(response.body)
                parsed.cut = parsed.cut or too_big
                if not too_big:  # a body cut by the fetcher ends mid-element: no error
                    error = parsed.error
                record.urls = len(parsed.entries)
                if parsed.cut:
                    self.stats.add(sitemaps_cut=1)
                    error = error or f"cut at {MAX_BYTES // 2**20} MiB uncompressed"
                if parsed.over_limit:
                    self.stats.add(sitemap_urls_over_limit=parsed.over_limit)
                    error = error or (f"cut at {MAX_URLS:,} URLs ({parsed.over_limit:,} "
                                      f"more dropped)")
                if parsed.error is not None:
                    kind = ("sitemaps_refused" if parsed.error.startswith(("refused", "not a"))
                            else "sitemaps_malformed")
                    self.stats.add({kind: 1})
        record.error = error
        self.stats.add(sitemaps_read=1)
        if error is not None:
            self.stats.add(sitemap_errors=1)
            log.warning("sitemap %s: %s", url, error)
        return record, parsed

    def _get(self, url: str) -> tuple[Response | None, str | None]:
        """GET ``url`` as a worker would (robots.txt, pacing, retries, redirects): the final
        response, or None and why not."""
        opts = self.options
        attempt = hops = 0
        while True:
            admission = self.politeness.admit(url, self.fetcher)
            if admission.verdict is Verdict.WAIT:
                time.sleep(max(0.0, admission.not_before - time.monotonic()))
                continue
            if admission.verdict is Verdict.DENY:
                return None, admission.reason
            started = time.monotonic()
            response: Response | None = None
            try:
                response = self.fetcher.fetch(url, max_bytes=MAX_BYTES + 1)
            finally:
                self.politeness.done(url, time.monotonic() - started,
                                     host_pause(response, opts.max_backoff))
            self.stats.add(sitemap_requests=1)
            if is_retryable(response) and attempt < opts.retries:
                time.sleep(wait_before_retry(response, attempt, opts.retry_backoff,
                                             opts.max_backoff))
                attempt += 1
                continue
            if response.location is None or response.error is not None:
                return response, response.error
            hops += 1
            target = self._canonical(response.location, response.url)
            if target is None or hops > MAX_REDIRECTS:
                return response, "bad redirect" if target is None else "too many redirects"
            url, attempt = target, 0

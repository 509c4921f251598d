"""Sitemaps (``--sitemaps``): the URLs a site lists for crawlers, put in ToDo at depth 0.

:meth:`SitemapReader.read` runs once per crawl, in the main thread, after the seeds are in
ToDo and *before* the workers start. So the termination rule (ToDo empty and no worker busy)
needs no change: every sitemap URL is in ToDo before a worker could find it empty. The price is that
the crawl starts after the sitemaps are read (one request per sitemap file, paced like pages).

* Where: each seed origin's robots.txt ``Sitemap:`` lines (protego parsed them already:
  :meth:`minicrawl.visit.robots.RobotsGate.sitemaps`), else ``/sitemap.xml``. With
  ``--ignore-robots`` robots.txt is not read: ``/sitemap.xml`` only.
* Fetching: the crawl's :class:`~minicrawl.http.fetch.Fetcher` and :class:`RobotsGate` (robots.txt
  rules, per-host delay and in-flight limit), its retries (``--retries``, with backoff), and up
  to five redirects.
* Reading one file (gzip, the sitemaps.org limits, XML bombs, malformed XML):
  :mod:`minicrawl.sitemaps.parse`. What is past a limit is dropped and counted
  (``sitemap_urls_over_limit``, ``sitemaps_cut``); a refused or malformed file is counted too.
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
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime

from minicrawl.core.interfaces import Item, Response
from minicrawl.http.fetch import Fetcher
from minicrawl.options import Options
from minicrawl.origins import origin_of
from minicrawl.page import Page, now
from minicrawl.resolve import canonical_url
from minicrawl.sitemaps.parse import (
    MAX_BYTES,
    MAX_URLS,
    Parsed,
    not_modified_since,
    parse_lastmod,
    parse_sitemap,
)
from minicrawl.state.recrawl import UNCHANGED, Prior
from minicrawl.stats import Stats
from minicrawl.visit.retry import host_pause, is_retryable, wait_before_retry
from minicrawl.visit.robots import RobotsGate, Verdict

log = logging.getLogger("minicrawl")

MAX_FILES = 1000  # sitemap files read per crawl (indexes included)
MAX_REDIRECTS = 5


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
    """All sitemaps of a crawl: their page URLs (url, the sitemap listing it), each
    URL's newest ``<lastmod>``, and a record per sitemap file."""

    urls: list[tuple[str, str]] = field(default_factory=list)
    lastmod: dict[str, datetime] = field(default_factory=dict)
    files: list[SitemapFile] = field(default_factory=list)


def unchanged_page(item: Item, prior: Prior | None, lastmod: datetime | None,
                   worker: int) -> Page | None:
    """The record of ``item`` as ``unchanged`` without a request, if its sitemap ``lastmod``
    is not newer than the fetch ``prior`` recorded (a 200 page); else None."""
    if prior is None or prior.status != 200 or prior.forgotten \
            or not not_modified_since(lastmod, prior.fetched_at):
        return None
    return Page(item.url, item.depth, item.referrer, prior.final_url or item.url,
                status=prior.status, fetched_at=now(), worker=worker, change=UNCHANGED)


def file_records(found: Found, queued: Sequence[Item]) -> list[Page]:
    """A record per sitemap file read: ``links`` counts the entries it listed, ``new`` those
    that entered ToDo (``queued``, whose referrer is their sitemap)."""
    new = dict.fromkeys((f.url for f in found.files), 0)
    for item in queued:
        new[item.referrer or ""] = new.get(item.referrer or "", 0) + 1
    records = []
    for f in found.files:
        r = f.response
        records.append(Page(f.url, 0, f.referrer, r.url if r else f.url,
                            status=r.status if r else None, headers=r.headers if r else {},
                            body=r.body if r else b"",
                            elapsed_ms=round(r.elapsed * 1000, 1) if r else 0.0,
                            fetched_at=f.fetched_at, error=f.error, sitemap=True,
                            links=[""] * f.urls, new=new[f.url]))
    return records


# -- reading a crawl's sitemaps -------------------------------------------------------------------


class SitemapReader:
    """Reads the sitemaps of the seeds' hosts for one crawl (see the module doc)."""

    def __init__(self, options: Options, politeness: RobotsGate, stats: Stats,
                 now: Callable[[], str]) -> None:
        self.options = options
        self.politeness = politeness
        self.stats = stats
        self.now = now  # the crawl's timestamps for records
        self.fetcher = Fetcher(options)

    def read(self, seeds: Sequence[str]) -> Found:
        """The page URLs (the crawl's door judges their scope), ``<lastmod>`` dates and file
        records of the sitemaps of the seeds' origins (robots.txt's ``Sitemap:`` lines, else
        ``/sitemap.xml``; indexes followed), read with this reader's fetcher, then closed."""
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
            when = parse_lastmod(lastmod)
            if when is not None and (url not in found.lastmod or when > found.lastmod[url]):
                found.lastmod[url] = when
            if url not in seen_urls:
                seen_urls.add(url)
                found.urls.append((url, sitemap))

    def _canonical(self, loc: str, base: str) -> str | None:
        return canonical_url(loc, base, sort_query=self.options.sort_query,
                             max_length=self.options.max_url_length)[0]

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
            item = Item(url)  # holds the host's slot while it is fetched
            # not a page: a 404 sitemap must not spend the host's --max-pages-per-host
            answer = self.politeness.admit(item, self.fetcher, page=False)
            if answer.verdict is Verdict.WAIT:
                time.sleep(max(0.0, answer.not_before - time.monotonic()))
                continue
            if answer.verdict is Verdict.DENY:
                return None, answer.reason
            response: Response | None = None
            try:
                response = self.fetcher.fetch(url, max_bytes=MAX_BYTES + 1)
            finally:
                self.politeness.done(item, host_pause(response, opts.max_backoff))
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

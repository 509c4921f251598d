"""What a crawl's earlier runs recorded, read back from ``crawl.db`` for the joins a crawl
makes at its end: each page's record and redirect chain, anchors and edges for the links' join
(:mod:`minicrawl.records.links`), each page's followed links and each record's requested URLs for
``links_in`` (:mod:`minicrawl.records.linksin`). Each reading iterates its cursor (a million rows
need not fit in memory); a packed value that is damaged is skipped and counted in the run's
:class:`~minicrawl.records.edges.Damaged`, which tells them at its end.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from minicrawl.core.door import CHECK
from minicrawl.records.edges import Damaged, EdgeRow, is_edges, is_urls


class Recorded:
    """The readings of one state's records (``CrawlState.recorded``): ``db_path`` its file,
    ``damaged`` where skipped values are counted, ``reader`` the calling thread's connection
    (for the readings made before the crawl writes: its pages, its hops)."""

    def __init__(self, db_path: Path, damaged: Damaged,
                 reader: Callable[[], sqlite3.Connection]) -> None:
        self.db_path = db_path
        self.damaged = damaged
        self._reader = reader

    def pages(self) -> Iterator[tuple[str, int | None, str | None, str, int, str | None]]:
        """Each recorded page's URL, status, error, final URL, depth and referrer (a check's
        URLs as they are: the links' join knows a URL by itself), read as they are iterated —
        before the crawl writes to the state, as :meth:`CrawlState.start`'s items."""
        rows = self._reader().execute(
            "SELECT url, status, error, final_url, depth, referrer FROM pages")
        for url, status, error, final, depth, referrer in rows:
            yield url.removeprefix(CHECK), status, error, final.removeprefix(CHECK), depth, referrer

    def hops(self) -> Iterator[list[str]]:
        """Each recorded redirect chain's URLs after its first, to where it ended (a link to
        one leads there), as :meth:`pages`."""
        rows = self._reader().execute("SELECT url, hops FROM edges WHERE hops IS NOT NULL")
        for url, packed in rows:  # (none, or a damaged value: nothing to yield)
            if hops := self.damaged.read(self.db_path, "edges.hops", url, packed, is_urls):
                yield hops

    def anchors(self) -> Iterator[tuple[str, str]]:
        """Each recorded page's anchors (packed, checked), with its final URL: read through a
        connection of its own, at any time (the links' join reads them once the state closed)."""
        for url, page, packed in self._own(
                "SELECT url, page, anchors FROM edges WHERE anchors IS NOT NULL"):
            if self.damaged.read(self.db_path, "edges.anchors", url, packed, is_urls) is not None:
                yield page, packed

    def edges(self) -> Iterator[tuple[str, list[EdgeRow]]]:
        """Each recorded page's edges with the URL of the page they are on (its final URL), in
        the order the pages were recorded, as :meth:`anchors`."""
        for url, page, packed in self._own(
                "SELECT url, page, edges FROM edges WHERE edges IS NOT NULL ORDER BY id"):
            if edges := self.damaged.read(self.db_path, "edges.edges", url, packed, is_edges):
                yield page, edges

    def links(self) -> Iterator[list[str]]:
        """Each recorded page's links as ``links_in`` counts them (those it follows), as
        :meth:`anchors`; all of the crawl's if the state's ``counts_links``."""
        for url, packed in self._own(
                "SELECT url, links FROM linksin WHERE links IS NOT NULL"):
            if links := self.damaged.read(self.db_path, "linksin.links", url, packed, is_urls):
                yield links

    def urls(self) -> Iterator[tuple[str, list[str]]]:
        """Each record's URL (a check's too, as its ``--out`` line has it) and the other URLs
        its redirect chain requested (maybe none), as :meth:`anchors`."""
        for url, packed in self._own(
                "SELECT pages.url, coalesce(linksin.requested, '[]') FROM pages "
                "LEFT JOIN linksin ON linksin.url = pages.url"):  # (no row: none requested)
            requested = self.damaged.read(self.db_path, "linksin.requested", url, packed, is_urls)
            yield url.removeprefix(CHECK), requested or []

    def _own(self, query: str) -> Iterator[tuple[Any, ...]]:  # (a row: its columns)
        """The rows of ``query`` through a connection of this reading's own (the state's may
        be closed by then)."""
        db = sqlite3.connect(self.db_path)
        try:
            yield from db.execute(query)
        finally:
            db.close()

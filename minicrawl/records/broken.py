"""The broken links of a crawl, grouped by target: a reader of the links' join
(:class:`~minicrawl.records.links.LinkJoin`) for what ``--check-links`` prints and the report's
first two tables (the broken links, the warnings).

:class:`BrokenLinks` is handed every row of the join's one pass. It counts them all (links,
pages, links not checked) and keeps the broken ones — each with its target's outcome and where
it is (page, line, text, element, href) — in a scratch SQLite table of their own (the join's
scratch file is gone once its pass is over), indexed by target, page and line from the first
row: a site can have a million links, and even its broken ones can be many (a broken link in a
menu is broken on every page), so neither is ever a list in memory. :meth:`BrokenLinks.groups`
reads them back in that order, a target at a time, its referrers one by one.

The warnings are kept the same way, in a table of their own: each link whose ``#fragment`` names
nothing on its target (a 200 page, not broken: it opens at its top) under the URL it leads to
with that fragment (``http://h/a.html#gone``), for :meth:`BrokenLinks.warnings`.

What is broken is the join's ``broken``: a 4xx or 5xx, no answer, a redirect loop, too many
redirects, a redirect chain that ends in one of those; and a seed whose fetch is (a row of kind
``seed``, no page: a site that is down is a failed check, not an empty one).
"""

from __future__ import annotations

import itertools
import logging
import sqlite3
from collections.abc import Iterator
from dataclasses import dataclass
from typing import NamedTuple, TypeVar

from minicrawl.frontier.scratch import LazyScratch, scratch_directory
from minicrawl.html.fragments import fragment_of
from minicrawl.records.links import SEED, LinkReader, LinkRow
from minicrawl.redact import redact

log = logging.getLogger("minicrawl")

PREFIX = "minicrawl-broken-"
BATCH = 1_000  # broken rows kept in memory before they go to the scratch file
SCHEMA = """
CREATE TABLE broken (seq INTEGER PRIMARY KEY, url TEXT NOT NULL, status INTEGER, error TEXT,
                     final_url TEXT, page TEXT NOT NULL, line INTEGER, text TEXT NOT NULL,
                     tag TEXT NOT NULL, attr TEXT NOT NULL, href TEXT NOT NULL,
                     kind TEXT NOT NULL);
CREATE INDEX broken_order ON broken (url, page, line, seq);
CREATE TABLE warned (seq INTEGER PRIMARY KEY, url TEXT NOT NULL, warning TEXT NOT NULL,
                     page TEXT NOT NULL, line INTEGER, text TEXT NOT NULL, tag TEXT NOT NULL,
                     attr TEXT NOT NULL, href TEXT NOT NULL, kind TEXT NOT NULL);
CREATE INDEX warned_order ON warned (url, page, line, seq);
"""
# (The index is made before the rows, so they are sorted as they come, on disk: sorting them
# at the end would take memory, the scratch files' temp_store being MEMORY.)
READ = ("SELECT url, status, error, final_url, page, line, text, tag, attr, href, kind "
        "FROM broken ORDER BY url, page, line, seq")
READ_WARNED = ("SELECT url, warning, page, line, text, tag, attr, href, kind "
               "FROM warned ORDER BY url, page, line, seq")


class Referrer(NamedTuple):
    """Where a broken link is: its page ("" for a seed), line, text, element, href, kind."""

    page: str
    line: int | None
    text: str
    tag: str
    attr: str
    href: str
    kind: str


class Target(NamedTuple):
    """A broken URL: its status (of the answer its redirects ended at), where they ended, and
    its error (``HTTP 404`` for a 4xx or 5xx)."""

    url: str
    status: int | None
    error: str | None
    final_url: str | None


class Warned(NamedTuple):
    """A URL with a ``#fragment`` that names nothing on it (``http://h/a.html#gone``), and the
    warning (``fragment #gone not found``)."""

    url: str
    warning: str


_Head = TypeVar("_Head", Target, Warned)  # what a group of rows starts with


@dataclass
class Counts:
    """What the join's pass held: ``links`` (edges), on ``pages`` pages, ``unchecked`` of them
    with no outcome (never requested); ``broken`` links on ``broken_pages`` pages, to
    ``targets`` URLs (seeds among them: ``seeds``); ``warnings``: links whose ``#fragment``
    names nothing on their page, on ``warned_pages`` pages, to ``warned_targets`` URLs#fragments
    (listed after the broken ones)."""

    links: int = 0
    pages: int = 0
    unchecked: int = 0
    broken: int = 0
    broken_pages: int = 0
    targets: int = 0
    seeds: int = 0
    warnings: int = 0  # links whose #fragment names nothing on their page (not broken)
    warned_pages: int = 0
    warned_targets: int = 0

    @property
    def any(self) -> bool:
        """Anything broken: a link, or a seed."""
        return bool(self.broken or self.seeds)


class BrokenLinks(LinkReader):
    """A reader of the links' join: counts every row, keeps the broken ones
    in a scratch file under ``temp_dir`` (default ``TMPDIR``) for :meth:`groups`, until
    :meth:`close` (or the process's end). If the scratch file cannot be written it says so in
    one line and ``failed`` is set: the list then holds the rows kept before (the counts are
    all)."""

    def __init__(self, temp_dir: str | None = None) -> None:
        self.counts = Counts()
        self.complete = False  # the join handed every row (set at ``ended``)
        self.failed = False
        self._temp_dir = temp_dir
        self._scratch = LazyScratch(PREFIX, SCHEMA, temp_dir)
        self._rows: list[tuple[object, ...]] = []
        self._page: str | None = None  # the page whose rows come now (a page's come together)
        self._page_broken = False
        self._warned: list[tuple[object, ...]] = []
        self._page_warned = False

    def take(self, row: LinkRow) -> None:
        counts = self.counts
        if row.kind != SEED:
            counts.links += 1
            if row.page != self._page:
                self._page, self._page_broken, self._page_warned = row.page, False, False
                counts.pages += 1
            if row.broken is None:
                counts.unchecked += 1
            if row.warning and not row.broken:
                counts.warnings += 1
                if not self._page_warned:
                    self._page_warned = True
                    counts.warned_pages += 1
                self._warn(row)
        if not row.broken:
            return
        if row.kind == SEED:
            counts.seeds += 1
        else:
            counts.broken += 1
            if not self._page_broken:
                self._page_broken = True
                counts.broken_pages += 1
        # Redacted here: whatever reads the list (stdout, the report) never sees a password
        self._rows.append((redact(row.url or ""), row.status,
                           redact(row.error) if row.error else None,
                           redact(row.final_url) if row.final_url else None, redact(row.page),
                           row.line, redact(row.text), row.tag, row.attr, redact(row.href),
                           row.kind))
        if len(self._rows) >= BATCH:
            self._flush()

    def _warn(self, row: LinkRow) -> None:
        """Keep the warned link ``row`` under its URL and fragment (redacted, as the broken)."""
        fragment = fragment_of(row.href) or ""
        self._warned.append((redact(f"{row.url or ''}#{fragment}"), row.warning or "",
                             redact(row.page), row.line, redact(row.text), row.tag, row.attr,
                             redact(row.href), row.kind))
        if len(self._warned) >= BATCH:
            self._flush()

    def ended(self, complete: bool) -> None:
        """The rows all kept, the broken URLs counted."""
        self._flush()
        self.complete = complete and not self.failed
        if (db := self._scratch.opened) is not None:
            try:
                (self.counts.targets,) = db.execute(
                    "SELECT COUNT(*) FROM (SELECT DISTINCT url FROM broken)").fetchone()
                (self.counts.warned_targets,) = db.execute(
                    "SELECT COUNT(*) FROM (SELECT DISTINCT url FROM warned)").fetchone()
            except sqlite3.Error as e:
                self._failure(e)

    def groups(self) -> Iterator[tuple[Target, Iterator[Referrer]]]:
        """Each broken URL in order, with its referrers (by page, then line): the second of
        each pair is read as it is iterated, before the next pair is asked for."""
        return self._grouped(READ, Target)

    def warnings(self) -> Iterator[tuple[Warned, Iterator[Referrer]]]:
        """Each URL#fragment warned of in order, with its referrers (as :meth:`groups`)."""
        return self._grouped(READ_WARNED, Warned)

    def _grouped(self, query: str, head: type[_Head]
                 ) -> Iterator[tuple[_Head, Iterator[Referrer]]]:
        """The rows of ``query`` by URL: the ``head`` its first columns make, and its referrers
        (the columns after)."""
        if (db := self._scratch.opened) is None:
            return
        width = len(head._fields)
        try:
            for _, group in itertools.groupby(db.execute(query), key=lambda r: r[0]):
                first = next(group)
                yield head(*first[:width]), (Referrer(*r[width:])
                                             for r in itertools.chain([first], group))
        except sqlite3.Error as e:
            self._failure(e)

    def close(self) -> None:
        """Free the scratch file (``groups`` then has nothing)."""
        self._scratch.close()

    def _flush(self) -> None:
        rows, self._rows = self._rows, []
        warned, self._warned = self._warned, []
        if not (rows or warned) or self.failed:
            return
        try:
            db = self._scratch.db()
            db.execute("BEGIN")
            db.executemany("INSERT INTO broken (url, status, error, final_url, page, line, "
                           "text, tag, attr, href, kind) VALUES (?,?,?,?,?,?,?,?,?,?,?)", rows)
            db.executemany("INSERT INTO warned (url, warning, page, line, text, tag, attr, "
                           "href, kind) VALUES (?,?,?,?,?,?,?,?,?)", warned)
            db.execute("COMMIT")
        except (sqlite3.Error, OSError) as e:
            self._failure(e)

    def _failure(self, e: sqlite3.Error | OSError) -> None:
        """Told once; the rows kept so far stay readable if they can be."""
        if self.failed:
            return
        self.failed = True
        reason = e.strerror if isinstance(e, OSError) and e.strerror else str(e)
        log.error("--check-links: cannot keep the broken links in %s: %s; the list is "
                  "incomplete", scratch_directory(self._temp_dir), reason)
        if (db := self._scratch.opened) is not None:
            try:
                db.execute("ROLLBACK")
            except sqlite3.Error:
                pass

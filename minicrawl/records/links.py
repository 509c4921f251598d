"""The ``--links`` file: every link of every page the crawl walked, one record each, with what
became of its target — written at the end of the crawl, when the targets' statuses are known.

:class:`LinkFile` is an observer (:mod:`minicrawl.events`). It hears each page's edges
(``page_edges``: :class:`~minicrawl.records.edges.LinkEdge`, from run.py's hooks) and each
page's record (``on_page``: what its URL answered; ``refused``: a URL robots.txt or a cap kept
the crawl from fetching; ``redirected``: each hop of a redirect chain, so that a link to a hop
leads to the chain's end too), and keeps both in a scratch SQLite file
(:class:`~minicrawl.frontier.scratch.ScratchDB`: no name, gone with the process), a few thousand
rows at a time, so that a crawl's memory does not grow with its links (the Java API docs have
660,000). At ``crawl_finished`` it joins each edge with its target and writes the file, one
record per edge in the order the pages were kept, its links in document order: JSON lines, or CSV
(under a header) for a file named ``….csv``.

Each record has ``FIELDS``: the edge's (``page``, ``url``, ``href``, ``text``, ``tag``, ``attr``,
``line``, ``kind``, ``nofollow``) and its target's: ``status`` (of the answer it ended at, after
its redirects), ``final_url`` (where they ended), ``error``, and ``broken``:

* true: the target was fetched and failed — a 4xx or 5xx, no answer (a connection, DNS or TLS
  error, a time-out), a redirect chain that ended in one of those, in a loop, or past the hops
  allowed;
* false: fetched and fine (2xx, a 304; a 3xx whose chain ended at a page that is fine);
* null: never fetched — a requisite or an external link (this crawl does not request them),
  a URL robots.txt disallows, past ``--max-depth``, ``--max-pages``, nofollow, an href that is
  no http(s) URL (then ``error`` says why, and ``url`` is null).

``error``: the target's error as ``--out`` records it, else for a 4xx or 5xx ``HTTP <status>``.
The statuses are this process's: with ``--state``, of this run's pages (an earlier run's are not
asked again); in a shared crawl (``--redis``), of the pages this process fetched.
"""

from __future__ import annotations

import itertools
import json
import logging
import os
import sqlite3
import threading
from collections.abc import Callable, Iterator, Sequence
from typing import TYPE_CHECKING

from minicrawl.cli.outpaths import write_at_end
from minicrawl.events import CrawlObserver
from minicrawl.frontier.scratch import ScratchDB, scratch_directory
from minicrawl.records.csvlines import csv_line, header, is_csv
from minicrawl.redact import redact

if TYPE_CHECKING:
    from minicrawl.page import Page
    from minicrawl.records.edges import LinkEdge
    from minicrawl.stats import StatsSnapshot

log = logging.getLogger("minicrawl")

FIELDS = ("page", "url", "href", "text", "tag", "attr", "line", "kind", "status", "final_url",
          "error", "broken", "nofollow")
PREFIX = "minicrawl-links-"
BATCH = 5_000  # rows kept in memory before they go to the scratch file
MAX_HOPS = 20  # redirect records followed from a target to where its chain ended
SCHEMA = """
CREATE TABLE pages (id INTEGER PRIMARY KEY, url TEXT NOT NULL);
CREATE TABLE edges (page INTEGER NOT NULL, url TEXT, why TEXT, href TEXT NOT NULL,
                    text TEXT NOT NULL, tag TEXT NOT NULL, attr TEXT NOT NULL, line INTEGER,
                    kind TEXT NOT NULL, nofollow INTEGER NOT NULL);
CREATE TABLE targets (url TEXT PRIMARY KEY, status INTEGER, error TEXT, final_url TEXT,
                      fetched INTEGER NOT NULL) WITHOUT ROWID;
"""
JOINED = """
SELECT p.url, e.url, e.why, e.href, e.text, e.tag, e.attr, e.line, e.kind, e.nofollow,
       t.status, t.error, t.final_url, t.fetched
FROM edges e JOIN pages p ON p.id = e.page LEFT JOIN targets t ON t.url = e.url
ORDER BY e.rowid
"""
Target = tuple[int | None, str | None, str | None, int]  # status, error, final URL, fetched
# What a target's row says of its fetch: its answer (FETCHED), none (REFUSED: robots.txt, a cap),
# a redirect to its final URL whose end no row says (UNKNOWN_END), a hop of a redirect chain
# recorded under its start (HOP: where it leads is its final URL's row)
REFUSED, FETCHED, UNKNOWN_END, HOP = 0, 1, 2, 3


class LinkFile(CrawlObserver):
    """The ``--links`` file at ``path``, written when the crawl is over; its rows wait in a
    scratch file under ``temp_dir`` (default: ``TMPDIR``). Thread-safe. If the scratch file
    cannot be written (a full disk) it says so in one line and stops the crawl (``on_failure``):
    the file would miss links; ``failed`` is then set, and no file is written."""

    flag = "--links"

    def __init__(self, path: str | os.PathLike[str], temp_dir: str | None = None,
                 on_failure: Callable[[], None] | None = None) -> None:
        self.path = os.fspath(path)
        self.csv = is_csv(self.path)
        self._temp_dir = temp_dir
        self._on_failure = on_failure
        self._lock = threading.Lock()
        self._scratch: ScratchDB | None = None  # made at the first rows
        self._pages = itertools.count(1)
        self._page_rows: list[tuple[int, str]] = []
        self._edge_rows: list[tuple[object, ...]] = []
        self._target_rows: list[tuple[str, int | None, str | None, str | None, int]] = []
        self._end_rows: list[tuple[str, int | None, str | None, str | None, int]] = []
        self._refused: dict[int, str] = {}  # worker → the URL it was refused (until its page)
        self.failed = False
        self.finished = False  # the crawl is over: a straggler's page is not taken any more
        self.written = 0  # records written to the file

    # -- what the crawl tells it ----------------------------------------------------------------

    def page_edges(self, page: Page, edges: Sequence[LinkEdge]) -> None:
        if not edges:
            return
        rows = [(edge.url, edge.why, edge.href, edge.text, edge.tag, edge.attr, edge.line,
                 edge.kind, int(edge.nofollow)) for edge in edges]
        with self._lock:
            if self.finished:
                return
            number = next(self._pages)
            self._page_rows.append((number, edges[0].page))
            self._edge_rows += [(number, *row) for row in rows]
            self._flush_if_full()

    def refused(self, worker: int, url: str, reason: str, kind: str) -> None:
        self._refused[worker] = url  # its page follows, from the same worker

    def redirected(self, source: str, target: str, decision: str) -> None:
        """A hop of a redirect chain, whose record is its start's: a link to it leads there."""
        with self._lock:
            if not self.finished:
                self._end_rows.append((source, None, None, target, HOP))

    def on_page(self, page: Page) -> None:
        if page.sitemap:
            return
        refused = self._refused.pop(page.worker, None) == page.final_url and page.status is None
        fetched = REFUSED if refused else FETCHED
        row = (page.url, page.status, page.error, page.final_url, fetched)
        with self._lock:
            if self.finished:
                return
            self._target_rows.append(row)
            # The end of its redirect chain answered the same, unless the chain stopped at a
            # URL it did not fetch (seen before, out of scope: a 3xx recorded)
            if page.final_url != page.url and not (page.status is not None
                                                   and 300 <= page.status < 400):
                self._end_rows.append((page.final_url, *row[1:]))
            self._flush_if_full()

    def crawl_finished(self, stats: StatsSnapshot) -> None:
        with self._lock:
            self.finished = True
            self._flush()
            if self.failed:
                self._close()
                return
        try:
            if not write_at_end(self.flag, self.path, self._lines):
                self.failed = True
        finally:
            with self._lock:
                self._close()

    # -- the scratch file ---------------------------------------------------------------------

    def _flush_if_full(self) -> None:
        if len(self._edge_rows) + len(self._target_rows) + len(self._end_rows) >= BATCH:
            self._flush()

    def _flush(self) -> None:
        """The rows waiting in memory into the scratch file (lock held); its failure is told
        once and stops the crawl."""
        pages, edges, targets = self._page_rows, self._edge_rows, self._target_rows
        ends = self._end_rows
        self._page_rows, self._edge_rows, self._target_rows, self._end_rows = [], [], [], []
        if self.failed or not (pages or edges or targets or ends):
            return
        try:
            db = self._db()
            db.execute("BEGIN")
            db.executemany("INSERT INTO pages VALUES (?, ?)", pages)
            db.executemany("INSERT INTO edges VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)", edges)
            # A page's record says more than the hop its chain starts with (told before it);
            # a chain's end and its hops are no page's of their own (a URL is fetched once)
            db.executemany("INSERT OR REPLACE INTO targets VALUES (?, ?, ?, ?, ?)", targets)
            db.executemany("INSERT OR IGNORE INTO targets VALUES (?, ?, ?, ?, ?)", ends)
            db.execute("COMMIT")
        except (sqlite3.Error, OSError) as e:
            self.failed = True
            reason = e.strerror if isinstance(e, OSError) and e.strerror else str(e)
            log.error("--links: cannot keep the links in %s: %s; the crawl stops",
                      scratch_directory(self._temp_dir), reason)
            self._close()
            if self._on_failure is not None:
                self._on_failure()

    def _db(self) -> sqlite3.Connection:
        if self._scratch is None:
            self._scratch = ScratchDB(PREFIX, self._temp_dir, journal="MEMORY")
            assert self._scratch.db is not None
            self._scratch.db.executescript(SCHEMA)
        assert self._scratch.db is not None
        return self._scratch.db

    def _close(self) -> None:
        if self._scratch is not None:
            scratch, self._scratch = self._scratch, None
            try:
                scratch.close()
            except (sqlite3.Error, OSError):
                pass

    # -- the file -----------------------------------------------------------------------------

    def _lines(self) -> Iterator[str]:
        """The file's lines (with their newlines), each edge joined with its target."""
        if self.csv:
            yield header(FIELDS) + "\n"
        if self._scratch is None:  # no page walked
            return
        db = self._db()
        ends: dict[str, Target | None] = {}  # where redirect records lead (a few)
        try:
            for (page, url, why, href, text, tag, attr, line, kind, nofollow,
                 status, error, final_url, fetched) in db.execute(JOINED):
                target: Target | None = None if status is None and fetched is None else \
                    (status, error, final_url, fetched)
                if target is not None and (fetched == HOP or _redirected(target, url)):
                    target = _chain_end(db, target, ends)
                record = _record(page, url, why, href, text, tag, attr, line, kind,
                                 bool(nofollow), target)
                self.written += 1
                yield redact(csv_line(record.values()) if self.csv
                             else json.dumps(record, ensure_ascii=False)) + "\n"
        except sqlite3.Error as e:  # (write_at_end tells an OSError in one line)
            raise OSError(f"reading the links back: {e}") from e


def _redirected(target: Target, url: str | None) -> bool:
    """A 3xx recorded without an error: its chain stopped at a URL fetched as a page of its own
    (seen before), or not at all."""
    status, error, final_url, _ = target
    return status is not None and 300 <= status < 400 and error is None and final_url != url


def _chain_end(db: sqlite3.Connection, target: Target,
               ends: dict[str, Target | None]) -> Target:
    """Where the redirect record or hop ``target`` leads: the record of the URL its chain
    stopped at, and on (at most MAX_HOPS). A URL no row says leaves the redirect with the final
    URL (UNKNOWN_END), which is neither broken nor fine (:func:`_record`)."""
    seen: set[str] = set()
    for _ in range(MAX_HOPS):
        status, error, final_url, _fetched = target
        if final_url is None or final_url in seen:
            break
        seen.add(final_url)
        if final_url not in ends:
            row = db.execute("SELECT status, error, final_url, fetched FROM targets WHERE url = ?",
                             (final_url,)).fetchone()
            if len(ends) < 100_000:
                ends[final_url] = row
        else:
            row = ends[final_url]
        if row is None:  # never fetched: the chain's end is unknown
            return (status, error, final_url, UNKNOWN_END)
        target = row
        if target[3] != HOP and not _redirected(target, final_url):
            return target
    return target


def _record(page: str, url: str | None, why: str | None, href: str, text: str, tag: str,
            attr: str, line: int | None, kind: str, nofollow: bool,
            target: Target | None) -> dict[str, object]:
    """One record of the file (``FIELDS``): the edge, and its target's answer."""
    status = final_url = None
    error = why if url is None else None
    broken: bool | None = None
    if target is not None:
        status, error, final_url, fetched = target
        if fetched == FETCHED:
            broken = status is None or status >= 400 or (300 <= status < 400 and error is not None)
            if error is None and status is not None and status >= 400:
                error = f"HTTP {status}"
        # REFUSED: never requested (robots.txt, a cap); UNKNOWN_END, HOP: a redirect whose
        # end was not fetched. Neither broken nor fine.
    return {"page": page, "url": url, "href": href, "text": text, "tag": tag, "attr": attr,
            "line": line, "kind": kind, "status": status, "final_url": final_url,
            "error": error, "broken": broken, "nofollow": nofollow}


"""Every link of every page the crawl walked, joined with what became of its target: one pass
over a scratch file at the end of the crawl, read by every output that wants the links — the
``--links`` file, the broken links ``--check-links`` lists (:mod:`minicrawl.records.broken`),
the report's table of them.

:class:`LinkJoin` is an observer (:mod:`minicrawl.events`). It hears each page's edges
(``page_edges``: :class:`~minicrawl.records.edges.LinkEdge`, from run.py's hooks) and each
page's record (``on_page``: what its URL answered, or that a rule kept the crawl from
fetching it — robots.txt, a cap: its error says so; ``redirected``: each hop of a redirect chain,
so that a link to a hop leads to the chain's end too), and keeps both in a scratch SQLite file
(:class:`~minicrawl.frontier.scratch.ScratchDB`: no name, gone with the process), a few thousand
rows at a time, so that a crawl's memory does not grow with its links (the Java API docs have
660,000). At ``crawl_finished`` it joins each edge with its target, once: each :class:`LinkRow`
goes to its readers (:class:`LinkReader`: ``take``, then ``ended``) and, with ``--links``, to
the file, one record per edge in the order the pages were kept, its links in document order:
JSON lines, or CSV (under a header) for a file named ``….csv``. After the edges the readers
(not the file) get a row for each seed whose fetch is broken (``kind`` ``seed``, no page): a
site that is down has no link to it, and a link check of it must not pass.

Each row has ``FIELDS``: the edge's (``page``, ``url``, ``href``, ``text``, ``tag``, ``attr``,
``line``, ``kind``, ``nofollow``) and its target's: ``status`` (of the answer it ended at, after
its redirects), ``final_url`` (where they ended), ``error``, and ``broken``:

* true: the target was fetched and failed — a 4xx or 5xx, no answer (a connection, DNS or TLS
  error, a time-out; its host's robots.txt unreachable so), a redirect chain that ended in one
  of those, in a loop, or past the hops allowed;
* false: fetched and fine (2xx, a 304; a 3xx whose chain ended at a page that is fine);
* null: never fetched — without ``--check-links``, a requisite, an external link, a nofollow
  link or one past ``--max-depth`` (with it, these are checked); a URL robots.txt disallows,
  past ``--max-pages``, an href that is no http(s) URL (then ``error`` says why, and ``url`` is
  null).

``error``: the target's error as ``--out`` records it, else for a 4xx or 5xx ``HTTP <status>``.
``warning``: with ``--check-links``, for a link whose ``#fragment`` names no part of its target
(a 200 HTML page whose anchors the crawl read: :mod:`minicrawl.html.fragments`),
``fragment #x not found``; else null — the link is not broken: the page opens at its top.

With ``--state`` (:class:`~minicrawl.state.store.CrawlState`) the join covers the whole crawl,
every run of it: the state keeps each page's edges and anchors in the transaction of its record
(a ``kill -9`` loses none of a page recorded; a page fetched again has its edges replaced, one
unchanged in a recrawl keeps them), and the pass reads the edges from there, in the order their
pages were recorded. What the earlier runs recorded of the targets (their pages' records, the
hops of their redirect chains) goes into the scratch file when the crawl starts, before this
run's rows, which replace them as a page's record replaces what was known of its URL: a target's
status is the latest known. In a shared crawl (``--redis``, no state), a process's join has the
pages it fetched, with the statuses it knows.
"""

from __future__ import annotations

import json
import logging
import os
import sqlite3
import threading
from collections.abc import Callable, Iterator, Sequence
from itertools import pairwise
from typing import TYPE_CHECKING, NamedTuple

from minicrawl.cli.outpaths import write_at_end
from minicrawl.events import CrawlObserver
from minicrawl.frontier.scratch import LazyScratch, scratch_directory
from minicrawl.html.fragments import fragment_of, names_a_part
from minicrawl.page import error_of
from minicrawl.records.csvlines import csv_line, header, is_csv
from minicrawl.records.edges import (
    Damaged,
    EdgeRow,
    is_edges,
    is_urls,
    pack_anchors,
    pack_edges,
)
from minicrawl.redact import redact
from minicrawl.visit.robots import NOT_REQUESTED

if TYPE_CHECKING:
    from minicrawl.page import Page
    from minicrawl.records.edges import LinkEdge
    from minicrawl.state.store import CrawlState
    from minicrawl.stats import StatsSnapshot

log = logging.getLogger("minicrawl")


class LinkRow(NamedTuple):
    """One link of one page joined with its target's outcome (see the module's doc)."""

    page: str  # the page it is on ("" for a seed's row: no page links to it)
    url: str | None
    href: str
    text: str
    tag: str
    attr: str
    line: int | None
    kind: str  # page, requisite, external (LinkEdge's); seed (the readers' seed rows)
    status: int | None
    final_url: str | None
    error: str | None
    broken: bool | None
    nofollow: bool
    warning: str | None = None  # --check-links: "fragment #x not found" (html/fragments.py)


class LinkReader:
    """An output of the join: handed each row of the one pass, then told it ended (each does
    nothing unless overridden). ``failed``: it could not keep what it was handed."""

    failed = False

    def take(self, row: LinkRow) -> None:
        """One row (from the thread that ends the crawl)."""

    def ended(self, complete: bool) -> None:
        """The pass is over; ``complete``: every row was handed (not cut by a failure)."""


FIELDS = LinkRow._fields  # the --links file's, in this order
SEED = "seed"  # the kind of the readers' row for a seed whose fetch is broken
PREFIX = "minicrawl-links-"
BATCH = 5_000  # edges (and targets) kept in memory before they go to the scratch file
MAX_HOPS = 20  # redirect records followed from a target to where its chain ended
KNOWN = 20_000  # targets whose outcome is kept in memory while the file is written (~4 MB)
KNOWN_PAGES = 200  # pages whose anchors are kept so (a page of the Java docs has ~1,000)
# A page's edges are one row (a JSON array of arrays): a row an edge cost ~10× the CPU
SCHEMA = """
CREATE TABLE pages (id INTEGER PRIMARY KEY, url TEXT NOT NULL, edges TEXT NOT NULL);
CREATE TABLE targets (url TEXT PRIMARY KEY, status INTEGER, error TEXT, final_url TEXT,
                      fetched INTEGER NOT NULL) WITHOUT ROWID;
CREATE TABLE anchors (url TEXT PRIMARY KEY, names TEXT NOT NULL) WITHOUT ROWID;
CREATE TABLE seeds (url TEXT PRIMARY KEY) WITHOUT ROWID;
"""
TARGET = "SELECT status, error, final_url, fetched FROM targets WHERE url = ?"
Target = tuple[int | None, str | None, str | None, int]  # status, error, final URL, fetched
# What a target's row says of its fetch: its answer (FETCHED), none (REFUSED: robots.txt, a cap),
# a redirect to its final URL whose end no row says (UNKNOWN_END), a hop of a redirect chain
# recorded under its start (HOP: where it leads is its final URL's row)
REFUSED, FETCHED, UNKNOWN_END, HOP = 0, 1, 2, 3
Outcome = tuple[int | None, str | None, str | None, bool | None]  # status, final, error, broken
NOT_FETCHED: Outcome = (None, None, None, None)
_json = json.JSONEncoder(ensure_ascii=False).encode  # json.dumps's, made once: 0.6× its time
TargetRow = tuple[str, int | None, str | None, str | None, int]  # url, and a Target


def target_rows(url: str, status: int | None, error: str | None, final_url: str,
                fetched: int) -> tuple[TargetRow, TargetRow | None]:
    """The targets' rows of a page's record: its URL's, and that of the end of its redirect
    chain (the same answer), unless the chain stopped at a URL it did not fetch (seen before,
    out of scope: a 3xx recorded)."""
    row = (url, status, error, final_url, fetched)
    if final_url != url and not (status is not None and 300 <= status < 400):
        return row, (final_url, status, error, final_url, fetched)
    return row, None


def _fetched(status: int | None, error: str | None) -> int:
    """What a target's row says of its fetch, from its page's record: REFUSED if a rule kept
    the crawl from asking (the refusal travels with the page as its error, without a status: no
    event need come before it, nor from the same worker), else FETCHED. A refusal that is no
    rule's (robots.txt or the host unreachable) is a failure: a link to it is broken."""
    return REFUSED if status is None and error in NOT_REQUESTED else FETCHED


class LinkJoin(CrawlObserver):
    """The links of the crawl, joined with their targets when it is over: written to the
    ``--links`` file at ``path`` (if given) and handed to ``readers``; the rows wait in a
    scratch file under ``temp_dir`` (default: ``TMPDIR``), the edges and anchors in the
    ``state`` if given (the whole crawl's, every run of it). Thread-safe. If the scratch file
    cannot be written (a full disk) it says so in one line and stops the crawl (``on_failure``):
    the outputs would miss links; ``failed`` is then set, and no file is written. A damaged
    value, in the state or the scratch file, is skipped and counted in ``damaged`` (the
    state's, if given): the outputs go without what it held, and the crawl's owner tells it."""

    def __init__(self, path: str | os.PathLike[str] | None = None,
                 readers: Sequence[LinkReader] = (), temp_dir: str | None = None,
                 on_failure: Callable[[], None] | None = None,
                 state: CrawlState | None = None, damaged: Damaged | None = None) -> None:
        self.path = None if path is None else os.fspath(path)
        self.flag = "--links" if self.path is not None else "--check-links"
        self.csv = self.path is not None and is_csv(self.path)
        self.readers = list(readers)
        self._temp_dir = temp_dir
        self._on_failure = on_failure
        self._state = state  # --state: it keeps the edges and anchors, and the earlier runs'
        self.damaged = damaged or (state.damaged if state is not None else Damaged())
        self._lock = threading.Lock()
        self._scratch = LazyScratch(PREFIX, SCHEMA, temp_dir)  # made at the first rows
        self._page_rows: list[tuple[str, str]] = []  # (page, its edges packed)
        self._waiting = 0  # edges and targets in memory
        self._target_rows: list[TargetRow] = []
        self._end_rows: list[TargetRow] = []
        self._seed_rows: list[tuple[str]] = []
        self._anchor_rows: list[tuple[str, str]] = []  # (page, its anchors packed)
        self._read_error: sqlite3.Error | None = None
        self.failed = False
        self.finished = False  # the crawl is over: a straggler's page is not taken any more
        self.joined = False  # the one pass is done (or was given up)
        self.written = 0  # records written to the file

    # -- what the crawl tells it ----------------------------------------------------------------

    def crawl_started(self) -> None:
        if self._state is not None:
            self._recall(self._state)

    def page_edges(self, page: Page, edges: Sequence[LinkEdge]) -> None:
        if not edges or self._state is not None:  # (a state keeps them with the page's record)
            return
        packed = pack_edges(edges)
        with self._lock:
            if self.finished:
                return
            self._page_rows.append((edges[0].page, packed))
            self._waiting += len(edges)
            self._flush_if_full()

    def page_anchors(self, page: Page, anchors: frozenset[str]) -> None:
        if self._state is not None:  # (kept with the page's record, read at the end)
            return
        row = (page.final_url, pack_anchors(anchors))
        with self._lock:
            if not self.finished:
                self._anchor_rows.append(row)
                self._waiting += 1 + len(anchors) // 20  # (a row of many weighs more)
                self._flush_if_full()

    def redirected(self, source: str, target: str, decision: str) -> None:
        """A hop of a redirect chain, whose record is its start's: a link to it leads there."""
        with self._lock:
            if not self.finished:
                self._end_rows.append((source, None, None, target, HOP))
                self._waiting += 1

    def on_page(self, page: Page) -> None:
        if page.sitemap:
            return
        fetched = _fetched(page.status, page.error)
        with self._lock:
            if not self.finished:
                self._add_page(page.url, page.status, page.error, page.final_url, fetched,
                               page.referrer is None and page.depth == 0)

    def _add_page(self, url: str, status: int | None, error: str | None, final_url: str,
                  fetched: int, seed: bool) -> None:
        """A page's record among the targets (lock held)."""
        row, end = target_rows(url, status, error, final_url, fetched)
        self._target_rows.append(row)
        self._waiting += 1
        if end is not None:
            self._end_rows.append(end)
        if self.readers and seed:
            self._seed_rows.append((url,))
        self._flush_if_full()

    def _recall(self, state: CrawlState) -> None:
        """What the state's earlier runs recorded of the targets, into the scratch file before
        this run's rows: their pages (a URL refused by a rule has its reason as error and no
        status) and their redirect chains' hops."""
        with self._lock:
            try:
                for url, status, error, final_url, depth, referrer in state.recorded.pages():
                    self._add_page(url, status, error, final_url, _fetched(status, error),
                                   referrer is None and depth == 0)
                for chain in state.recorded.hops():
                    self._end_rows.extend((source, None, None, target, HOP)
                                          for source, target in pairwise(chain))
                    self._waiting += len(chain)
                    self._flush_if_full()
            except sqlite3.Error as e:
                self._failure(e, "read the state's links")
                return
            self._flush()

    def crawl_finished(self, stats: StatsSnapshot) -> None:
        self.join()

    # -- the one pass ---------------------------------------------------------------------------

    def join(self) -> None:
        """Once, when the crawl is over (later calls do nothing): every edge joined with its
        target, handed to the readers and written to the file; the scratch file closed."""
        with self._lock:
            if self.joined:
                return
            self.joined = self.finished = True
            if self._state is not None and not self.failed:
                try:
                    for row in self._state.recorded.anchors():
                        self._anchor_rows.append(row)
                        self._waiting += 1 + len(row[1]) // 200
                        self._flush_if_full()
                except sqlite3.Error as e:
                    self._failure(e, "read the state's links")
            self._flush()
            if self.failed:
                self._close()
                for reader in self.readers:
                    reader.ended(False)
                return
        passing = self._pass()
        complete = False
        try:
            if self.path is not None and not write_at_end(self.flag, self.path,
                                                          lambda: self._lines(passing)):
                self.failed = True
            for _ in passing:  # the rest, for the readers (a file that failed stopped it)
                pass
            if self._read_error is not None and self.path is None:
                log.error("%s: reading the links back: %s", self.flag, self._read_error)
            complete = self._read_error is None
            self.failed = self.failed or self._read_error is not None
        finally:
            with self._lock:
                self._close()
            for reader in self.readers:
                reader.ended(complete)
            self.failed = self.failed or any(reader.failed for reader in self.readers)

    def _pass(self) -> Iterator[LinkRow]:
        """Each edge joined with its target's outcome, handed to the readers, in the order the
        pages were kept (the outcomes of the targets met most are kept: most links of a site
        are the same few, a target a point query in the scratch file otherwise); then, for the
        readers only, the seeds that are broken. A failure to read is kept in ``_read_error``."""
        if (db := self._scratch.opened) is None:  # no page walked
            return
        known: dict[str, Outcome] = {}
        names = Anchors(db, self.damaged, self._scratch_name())
        readers = self.readers
        try:
            pages = (self._scratch_edges(db) if self._state is None
                     else self._state.recorded.edges())
            for page, edges in pages:
                for url, why, href, text, tag, attr, line, kind, nofollow in edges:
                    if url is None:  # no URL: why is said as the error
                        outcome: Outcome = (None, None, why, None)
                    elif (found := known.get(url)) is not None:
                        outcome = found
                    else:
                        outcome = _outcome(db, url)
                        if len(known) >= KNOWN:
                            known.clear()
                        known[url] = outcome
                    warning = None
                    if (fragment := fragment_of(href)) and outcome[0] == 200:
                        warning = names.missing(fragment, outcome[1] or url)
                    row = LinkRow(page, url, href, text, tag, attr, line, kind, *outcome,
                                  nofollow, warning)
                    for reader in readers:
                        reader.take(row)
                    yield row
            if readers:
                for (url,) in db.execute("SELECT url FROM seeds ORDER BY url"):
                    outcome = _outcome(db, url)
                    if outcome[3]:
                        row = LinkRow("", url, url, "", "", "", None, SEED, *outcome, False)
                        for reader in readers:
                            reader.take(row)
        except sqlite3.Error as e:
            self._read_error = e

    def _scratch_edges(self, db: sqlite3.Connection) -> Iterator[tuple[str, list[EdgeRow]]]:
        """Each page's edges from the scratch file (no state: this run's), as the state's
        ``recorded.edges``; one damaged there (this process wrote it: a disk's fault) skipped."""
        where = self._scratch_name()
        for row, page, packed in db.execute("SELECT id, url, edges FROM pages ORDER BY id"):
            if edges := self.damaged.read(where, "pages.edges", row, packed, is_edges):
                yield page, edges  # (none, or damaged: nothing to yield)

    def _scratch_name(self) -> str:
        return f"the links' scratch file in {scratch_directory(self._temp_dir)}"

    def _lines(self, rows: Iterator[LinkRow]) -> Iterator[str]:
        """The file's lines (with their newlines), a row each."""
        if self.csv:
            yield header(FIELDS) + "\n"
        for row in rows:
            self.written += 1
            yield redact(csv_line(row) if self.csv
                         else _json(dict(zip(FIELDS, row, strict=True)))) + "\n"
        if self._read_error is not None:  # (write_at_end tells an OSError in one line)
            raise OSError(f"reading the links back: {self._read_error}")

    # -- the scratch file ---------------------------------------------------------------------

    def _flush_if_full(self) -> None:
        if self._waiting >= BATCH:
            self._flush()

    def _flush(self) -> None:
        """The rows waiting in memory into the scratch file (lock held); its failure is told
        once and stops the crawl."""
        pages, targets, ends = self._page_rows, self._target_rows, self._end_rows
        anchors, self._anchor_rows = self._anchor_rows, []
        seeds = self._seed_rows
        self._page_rows, self._target_rows, self._end_rows, self._waiting = [], [], [], 0
        self._seed_rows = []
        if self.failed or not (pages or targets or ends or seeds or anchors):
            return
        try:
            db = self._scratch.db()
            db.execute("BEGIN")
            db.executemany("INSERT INTO pages (url, edges) VALUES (?, ?)", pages)
            # A page's record says more than the hop its chain starts with (told before it);
            # a chain's end and its hops are no page's of their own (a URL is fetched once)
            db.executemany("INSERT OR REPLACE INTO targets VALUES (?, ?, ?, ?, ?)", targets)
            db.executemany("INSERT OR IGNORE INTO targets VALUES (?, ?, ?, ?, ?)", ends)
            db.executemany("INSERT OR REPLACE INTO anchors VALUES (?, ?)", anchors)
            db.executemany("INSERT OR IGNORE INTO seeds VALUES (?)", seeds)
            db.execute("COMMIT")
        except (sqlite3.Error, OSError) as e:
            self._failure(e, f"keep the links in {scratch_directory(self._temp_dir)}")

    def _failure(self, e: sqlite3.Error | OSError, what: str) -> None:
        """Told once: the outputs would miss links, so none is written and the crawl stops."""
        if self.failed:
            return
        self.failed = True
        reason = e.strerror if isinstance(e, OSError) and e.strerror else str(e)
        log.error("%s: cannot %s: %s; the crawl stops", self.flag, what, reason)
        self._close()
        if self._on_failure is not None:
            self._on_failure()

    def _close(self) -> None:
        self._scratch.close()


class Anchors:
    """The anchors of the pages, from the scratch file, as the join asks (the pages linked to
    with a fragment most are kept: a site's fragments point at a few pages, its indexes). A
    page's that are damaged there (``where``) are skipped, counted in ``damaged``: not known."""

    def __init__(self, db: sqlite3.Connection, damaged: Damaged, where: str) -> None:
        self.db = db
        self.damaged = damaged
        self.where = where
        self.known: dict[str, frozenset[str] | None] = {}

    def missing(self, fragment: str, page: str) -> str | None:
        """The warning for a link to ``page#fragment`` if the page's anchors are known and the
        fragment names none of them (:func:`names_a_part`), else None."""
        if (anchors := self.known.get(page, ())) == ():
            row = self.db.execute("SELECT names FROM anchors WHERE url = ?", (page,)).fetchone()
            names = None if row is None else self.damaged.read(
                self.where, "anchors.names", page, row[0], is_urls)
            anchors = None if names is None else frozenset(names)
            if len(self.known) >= KNOWN_PAGES:
                self.known.clear()
            self.known[page] = anchors
        if anchors is None or names_a_part(fragment, anchors):
            return None
        return f"fragment #{fragment} not found"


def _outcome(db: sqlite3.Connection, url: str) -> Outcome:
    """What became of the target ``url``: (status, final URL, error, broken); its redirect
    record or hop followed to where its chain ended."""
    row = db.execute(TARGET, (url,)).fetchone()
    if row is None:
        return NOT_FETCHED
    target: Target = row
    if target[3] == HOP or _redirected(target, url):
        target = _chain_end(db, target)
    status, error, final_url, fetched = target
    broken = None
    if fetched == FETCHED:
        broken = status is None or status >= 400 or (300 <= status < 400 and error is not None)
        error = error_of(status, error)
    # REFUSED: never requested (robots.txt, a cap); UNKNOWN_END, HOP: a redirect whose end
    # was not fetched. Neither broken nor fine.
    return status, final_url, error, broken


def _redirected(target: Target, url: str | None) -> bool:
    """A 3xx recorded without an error: its chain stopped at a URL fetched as a page of its own
    (seen before), or not at all."""
    status, error, final_url, _ = target
    return status is not None and 300 <= status < 400 and error is None and final_url != url


def _chain_end(db: sqlite3.Connection, target: Target) -> Target:
    """Where the redirect record or hop ``target`` leads: the record of the URL its chain
    stopped at, and on (at most MAX_HOPS). A URL no row says leaves the redirect with the final
    URL (UNKNOWN_END), which is neither broken nor fine."""
    seen: set[str] = set()
    for _ in range(MAX_HOPS):
        status, error, final_url, _fetched = target
        if final_url is None or final_url in seen:
            break
        seen.add(final_url)
        row = db.execute(TARGET, (final_url,)).fetchone()
        if row is None:  # never fetched: the chain's end is unknown
            return (status, error, final_url, UNKNOWN_END)
        target = row
        if target[3] != HOP and not _redirected(target, final_url):
            return target
    return target

"""``links_in``: how many links lead to each page of the ``--out`` file — known only when the
crawl is over, while the file is written as it runs; so it is written then, once, and only
where it is true.

:class:`LinksIn` is an observer (:mod:`minicrawl.events`). It hears each page (``on_page``): its
links — ``links``, the distinct canonical URLs it links to and the crawl follows — are counted,
one per page and URL, and the URLs its record stands for are noted: its ``url``, and every
URL its redirect chain requested (a link to a hop, or to the chain's end, leads to this record;
``CrawledPage.requested``). Counts and URLs wait in a scratch SQLite file
(:class:`~minicrawl.frontier.scratch.ScratchDB`: no name, gone with the process), ``BATCH``
rows at a time, so a million-page crawl holds no more of them in memory than a small one. At
``crawl_finished`` it rewrites the ``--out`` file with each record's ``links_in`` (the sum of
its URLs' counts), line for line in the same order, through a temporary file renamed over it
(the old file or the new one, never a part; ``keys_at_end`` still finds a state's last lines):
one pass over the file, ~35 µs a line (a million-line file ≈ 35 s; twice its size on disk
while it is written).

With ``--state``, a state that keeps each page's links (``kept``: one whose first page was
recorded by a run with ``--links`` or ``--check-links``, after which every run keeps them,
:attr:`CrawlState.counts_links`) has the same two things of every page of every run of the
crawl, kept in the transaction of the page's record (its ``linksin`` row, ``links`` and
``requested``: :mod:`minicrawl.state.db`), those of the page's last fetch that read its links
(a page unchanged in a recrawl keeps those). The counts and URLs are then read from there when
the crawl ends, not heard page by page (this run's pages are there too): the same rule over
the whole crawl, so a crawl killed and resumed has the counts of one never stopped.

While the crawl runs, and wherever the count would not be true, ``links_in`` is null: the
count must be of every page of the crawl, for every record of the file. So it is written only
when the crawl ended by itself (its ToDo empty, or a cap: not a Ctrl-C) into a regular file
this run made, and: not in a shared crawl (``--redis``: each process sees its own pages' links
only); with a ``--state`` that does not keep each page's links, only in a first run that
finished the crawl (a resumed run, a recrawl, never had the links of the pages of the runs
before; a run that stops early leaves them to a run that will not have these). With one that
keeps them, a run that ends at a cap writes the counts of the crawl so far, and the run that
goes on writes its file again (the same ``--out``: every line). Each time it is not written
the crawl says why in one line. A page whose links are not read (not a 200 HTML page, a
duplicate, a URL only checked) gives none; ``rel=nofollow`` links are not counted
(they are not in ``links``: the sum of ``links_in`` over a crawl's records is that of
``links``, less those to no page of it), nor are the links a page has that the crawl does
not follow (requisites, a ``<link rel=author>``: the ``--links`` file's edges hold them).
"""

from __future__ import annotations

import json
import logging
import os
import sqlite3
import stat
import threading
from collections import Counter
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING

from minicrawl.cli.outpaths import write_text
from minicrawl.events import CrawlObserver
from minicrawl.frontier.scratch import LazyScratch, scratch_directory
from minicrawl.page import CrawledPage
from minicrawl.records.csvlines import csv_fields, csv_line, header
from minicrawl.records.output import COLUMNS
from minicrawl.redact import redact

if TYPE_CHECKING:
    from minicrawl.page import Page
    from minicrawl.records.output import Output
    from minicrawl.state.store import CrawlState
    from minicrawl.stats import StatsSnapshot

log = logging.getLogger("minicrawl")

PREFIX = "minicrawl-links-in-"
BATCH = 20_000  # counts and URLs kept in memory before they go to the scratch file (~4 MB)
SCHEMA = """
CREATE TABLE counts (url TEXT PRIMARY KEY, n INTEGER NOT NULL) WITHOUT ROWID;
CREATE TABLE records (key TEXT NOT NULL, url TEXT NOT NULL, PRIMARY KEY (key, url))
    WITHOUT ROWID;
"""
ADD = ("INSERT INTO counts (url, n) VALUES (?, ?) "
       "ON CONFLICT (url) DO UPDATE SET n = n + excluded.n")
COUNT = ("SELECT coalesce(sum(counts.n), 0) FROM records JOIN counts ON counts.url = records.url "
         "WHERE records.key = ?")
LINKS_IN = COLUMNS.index("links_in")
_json = json.JSONEncoder(ensure_ascii=False).encode  # (json.dumps's, made once)


class LinksIn(CrawlObserver):
    """The ``links_in`` of the records of ``output`` (see the module's doc); ``state``: the
    crawl keeps a state (it may go on in a later run); ``kept``: that state, if it keeps each
    page's links (then they are read from it at the end, not counted as pages come);
    ``untrue``: why no count of this crawl can be true (a shared crawl, a resumed one), known
    from the start: then nothing is counted, and that is said at the end. The scratch file goes
    under ``temp_dir`` (default: ``TMPDIR``). Thread-safe."""

    def __init__(self, output: Output, *, state: bool = False, untrue: str | None = None,
                 temp_dir: str | None = None, kept: CrawlState | None = None) -> None:
        self.output = output
        self.state = state
        self.kept = kept
        self.untrue = untrue
        self._temp_dir = temp_dir
        self._lock = threading.Lock()
        self._scratch = LazyScratch(PREFIX, SCHEMA, temp_dir)  # made at the first flush
        self._counts: Counter[str] = Counter()  # URL → links to it, since the last flush
        self._records: set[tuple[str, str]] = set()  # (record's URL as written, a URL of it)
        # The scratch file failed: no count (said once; not "failed": --out itself is fine)
        self.count_failed = False
        self.finished = False
        self.written = False  # the file was rewritten with the counts

    def on_page(self, page: Page) -> None:
        if self.untrue is not None:
            return
        key = redact(page.url)  # as the line shows it
        urls = {page.url, *page.requested} if isinstance(page, CrawledPage) else {page.url}
        with self._lock:
            if self.finished or self.count_failed:
                return
            # (a sitemap's URLs are no links of a page; a state's kept links are read at the
            # end: this page's are among them)
            if not page.sitemap and self.kept is None:
                self._counts.update(page.links)  # (distinct: one per page and URL)
            self._records.update((key, url) for url in urls)
            if len(self._counts) + len(self._records) >= BATCH:
                self._flush()

    def crawl_finished(self, stats: StatsSnapshot) -> None:
        with self._lock:
            self.finished = True
            self._flush()
        try:
            why = self._not_true(stats)
            if why is None and self.kept is not None:
                why = self._read_kept(self.kept)
            if why is None:
                try:
                    write_text(self.output.real_path, self._lines())
                    self.written = True
                except OSError as e:  # (the file as it was: written atomically)
                    why = f"the file could not be written again: {e.strerror or e}"
            if why is not None and not self.output.failed:  # (--out's failure was said)
                log.warning("--out: links_in left null: %s", why)
        finally:
            self._close()

    def _not_true(self, stats: StatsSnapshot) -> str | None:
        """Why the counts would not be true of every record of the file, or None."""
        if self.untrue is not None:
            return self.untrue
        if self.count_failed:
            return "its count could not be kept"  # (said when it failed)
        if self.output.failed:
            return "the file could not be written"
        if stats.get("interrupted"):
            return "the crawl was interrupted"
        if self.state and self.kept is None and stats.get("todo_left"):
            return ("the crawl is not over (a later run would not have this run's links); "
                    "links_in is given by a crawl that ends in its first run, or by one with "
                    "--links or --check-links from its first run (its state keeps the links)")
        try:
            if not stat.S_ISREG(os.stat(self.output.real_path).st_mode):
                return "the file is not a regular file"
        except OSError as e:
            return f"the file is gone ({e.strerror})"
        return None

    def _read_kept(self, state: CrawlState) -> str | None:
        """Every page's links and every record's URLs from the ``state`` that keeps them, into
        the scratch file as this run's would go (see the module's doc); why not, or None."""
        try:
            with self._lock:
                for links in state.recorded.links():
                    self._counts.update(links)
                    if len(self._counts) >= BATCH:
                        self._flush()
                for url, requested in state.recorded.urls():
                    key = redact(url)  # as the line shows it
                    self._records.add((key, url))
                    self._records.update((key, hop) for hop in requested)
                    if len(self._records) >= BATCH:
                        self._flush()
                self._flush()
        except sqlite3.Error as e:
            return f"the state's links could not be read: {e}"
        # A page's links or a chain's URLs skipped (damaged: the state counted them, and the
        # run says how many): the counts would miss theirs, so none is written
        if state.damaged.count("linksin.links", "linksin.requested"):
            return "some of the links the state keeps are damaged (see the line that counts them)"
        return "its count could not be kept" if self.count_failed else None

    # -- the scratch file ---------------------------------------------------------------------

    def _flush(self) -> None:
        """The counts and URLs in memory into the scratch file (lock held)."""
        counts, records = self._counts, self._records
        self._counts, self._records = Counter(), set()
        if self.count_failed or not (counts or records):
            return
        try:
            db = self._scratch.db()
            db.execute("BEGIN")
            db.executemany(ADD, counts.items())
            db.executemany("INSERT OR IGNORE INTO records VALUES (?, ?)", records)
            db.execute("COMMIT")
        except (sqlite3.Error, OSError) as e:
            self.count_failed = True
            reason = e.strerror if isinstance(e, OSError) and e.strerror else str(e)
            if not self.output.failed:  # (--out's own failure was said: the same disk)
                log.warning("--out: cannot count the links in %s: %s; links_in will be null",
                            scratch_directory(self._temp_dir), reason)
            self._close()

    def _close(self) -> None:
        self._scratch.close()

    # -- the file -----------------------------------------------------------------------------

    def _lines(self) -> Iterator[str]:
        """The ``--out`` file's lines again, each record's ``links_in`` filled (a line of no
        record of ours as it was)."""
        db = self._scratch.db()
        count = db.cursor()

        def links_in(key: str) -> int:
            return int(count.execute(COUNT, (key,)).fetchone()[0])

        try:
            with open(self.output.real_path, encoding="utf-8", newline="") as f:
                if self.output.csv:
                    first = f.readline()
                    yield first
                    if first.rstrip("\r\n") != header(COLUMNS):  # not our columns: as it was
                        yield from f
                        return
                for line in f:
                    yield self._filled(line, links_in)
        except sqlite3.Error as e:  # (write_at_end tells an OSError in one line)
            raise OSError(f"reading the counts back: {e}") from e

    def _filled(self, line: str, links_in: Callable[[str], int]) -> str:
        """``line`` with its record's ``links_in`` (as it was if it is no record of ours)."""
        if not line.endswith("\n"):  # (a torn line: cut by the next run, not ours to mend)
            return line
        if self.output.csv:
            fields = csv_fields(line)
            if len(fields) != len(COLUMNS):
                return line
            fields[LINKS_IN] = str(links_in(fields[0]))
            return csv_line(fields) + "\n"
        try:
            record = json.loads(line)
            record["links_in"] = links_in(record["url"])
        except (ValueError, KeyError, TypeError):
            return line
        return _json(record) + "\n"

"""Crawl state on disk (``--state DIR``): resume after any stop, and the records a recrawl uses.

Files in DIR:

``crawl.db``
    SQLite in WAL mode: ``meta`` (format version, the crawl's configuration, the checkpoint's
    position), ``pages`` (one record per fetched URL: status, ETag, Last-Modified, MD5 and size of
    the body, fetched_at, depth, change, saved file) and ``todo``, the ToDo journal (one row per
    URL put in ToDo and not yet recorded — queued *or* in flight).
``visited.bloom``
    A checkpoint of the Visited Bloom filter (:meth:`BloomFilter.save`, an atomic rename).
``lock``
    Held (``flock``) while a crawl uses the directory; the OS drops it if the process dies.

Why a ``kill -9`` at any moment loses nothing and re-fetches at most the pages in flight:

1. A page's record, the deletion of its own journal row and the journal rows of the links it
   added to ToDo are **one transaction** (:meth:`CrawlState.commit`), and the crawler puts those
   links in ToDo only *after* it committed. So every URL that ever entered ToDo is, in the
   database, journaled (still to do) or recorded (done) — never neither — and a worker can never
   record a link's page before the page that found it journaled the link.
2. On resume every journaled row goes back into ToDo: the URLs that were queued, and the ≤
   ``threads`` that were in flight (the only pages fetched twice). A redirect hop replaces the
   URL it came from in the journal (:meth:`CrawlState.hop`), so a chain waiting in ToDo — which
   holds no thread — resumes at its last hop instead of adding to the re-fetches.
3. Visited must come back holding every journaled and recorded URL (or they would be found again
   and fetched twice) and **nothing else** that matters: a URL in the filter but in neither table
   would be dropped as seen when its page is re-fetched, and never crawled. The live filter does
   hold such URLs — links of pages still in flight, not yet committed — so it is never saved.
   What is saved is a *shadow* filter that receives URLs only after their transaction committed
   (same lock, same order). Its file is therefore never newer than the database; it can be older,
   which is harmless because loading re-adds every row written after it (``seq`` >
   ``filter_seq``): Bloom-filter adds are idempotent. Before the file is written the WAL is
   checkpointed, so even after a power cut the database is not older than the file.

Writes go through one writer thread that commits whatever is waiting in one transaction (group
commit): with sixteen workers a page costs a fraction of a commit, and no worker holds a lock
while SQLite works. Workers read earlier records (:meth:`CrawlState.prior`) through their own
connections, which WAL never blocks.

Gone pages (``--forget-gone``): see :mod:`minicrawl.state.forgetting`. Opening and checking the
directory: :mod:`minicrawl.state.opening`; the tables: :mod:`minicrawl.state.db`.
"""

from __future__ import annotations

import logging
import os
import queue
import sqlite3
import threading
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from minicrawl.events import CrawlObserver
from minicrawl.options import Options
from minicrawl.state.db import StateError, Transaction, open_db, record_page
from minicrawl.state.forgetting import ForgettingVisited
from minicrawl.state.opening import (
    DB_NAME,
    FILTER_NAME,
    check_meta,
    claim_directory,
    load_checkpoint,
)
from minicrawl.state.recrawl import GONE, Prior, note_change
from minicrawl.todo import Item
from minicrawl.visited import Visited

if TYPE_CHECKING:
    from collections.abc import Sequence

    from minicrawl.page import Page

log = logging.getLogger("minicrawl")
CHECKPOINT_SECONDS = 2.0


def crawl_config(options: Options, seeds: Iterable[str]) -> dict[str, Any]:
    """The settings a state directory is bound to: those that decide which URLs exist for the
    crawl (seeds, scope, canonicalization) and how Visited is built. Resuming with different
    ones would mix two crawls; per-run settings (threads, max_pages, timeouts) may change."""
    return {
        "seeds": sorted(set(seeds)), "allow_domain": sorted(options.allow_domain),
        # compiled patterns (the library accepts them) are bound by their source text
        "include": [getattr(p, "pattern", p) for p in options.include],
        "exclude": [getattr(p, "pattern", p) for p in options.exclude],
        "max_depth": options.max_depth, "sort_query": options.sort_query,
        "visited": options.visited, "expected_urls": options.expected_urls,
        "error_rate": options.error_rate,
    }


def open_state(options: Options, seeds: Iterable[str]) -> CrawlState | NoState:
    """The state the options ask for (:class:`NoState` without ``--state``); raises
    :class:`StateError` if it is unusable."""
    if not options.state:
        if options.recrawl or options.forget_gone:
            raise StateError("--recrawl and --forget-gone need --state DIR (the earlier crawl)")
        return NoState()
    if options.redis:
        raise StateError("--state keeps the crawl of one process; a shared crawl (--redis) "
                         "keeps its ToDo and Visited in Redis — give one or the other")
    return CrawlState(options.state, options, crawl_config(options, seeds))


class NoState(CrawlObserver):
    """The state of a crawl without ``--state``: it remembers nothing, so the crawler asks the
    same questions either way (``prior``, ``journal``, ``hop``) and gets empty answers."""

    on_disk = False
    visited: Visited | None = None

    def start(self, recrawl: bool) -> tuple[list[Item], dict[str, int]]:
        return [], {}

    def journal(self, items: list[Item]) -> None:
        pass

    def hop(self, done: str, hop: Item, chain: str) -> None:
        pass

    def prior(self, url: str) -> Prior | None:
        return None

    def note_change(self, page: Page, prior: Prior | None, counts: dict[str, int]) -> None:
        pass  # no earlier crawl to compare with: page.change stays None


class CrawlState(CrawlObserver):
    """The crawl state in ``directory``: created, or checked and loaded (see the module doc).

    The crawler calls :meth:`start` once, :meth:`journal` for the seeds, :meth:`prior` before and
    :meth:`commit` after each page, and :meth:`close` at the end. One SQLite connection serves
    all threads under one lock: a page costs one short transaction, far below a fetch.
    """

    checkpoint_seconds = CHECKPOINT_SECONDS
    on_disk = True

    def __init__(self, directory: str | os.PathLike[str], options: Options,
                 config: dict[str, Any]) -> None:
        self.dir = Path(directory)
        self.db_path = self.dir / DB_NAME
        self.filter_path = self.dir / FILTER_NAME
        self.forget_gone = options.forget_gone
        self._lock = threading.Lock()  # the write connection: writer thread vs start/close
        self._lock_fd: int | None = None
        self._db: sqlite3.Connection | None = None
        self._local = threading.local()  # each worker's read connection
        self._readers: list[sqlite3.Connection] = []
        self._queue: queue.SimpleQueue[_Write | None] = queue.SimpleQueue()
        self._writer: threading.Thread | None = None
        self._failure: StateError | None = None  # once the database refused a write
        self._next_checkpoint = time.monotonic() + self.checkpoint_seconds
        try:
            self._lock_fd = claim_directory(self.dir, self.db_path)
            self._db = open_db(self.db_path)
            self._filter_seq, self._seq = check_meta(self._conn, self.dir, config)
            self.visited, self._shadow = self._load_visited(options)
            self._had_pages = self._conn.execute(
                "SELECT EXISTS (SELECT 1 FROM pages)").fetchone()[0] == 1
        except BaseException:
            self.close(checkpoint=False)
            raise
        self._writer = threading.Thread(target=self._write_loop, name="state-writer",
                                        daemon=True)
        self._writer.start()

    # -- opening ---------------------------------------------------------------------------

    def _load_visited(self, options: Options) -> tuple[Visited, Visited | None]:
        """Visited as the database says (see the module doc), and the shadow to checkpoint."""
        live, shadow = load_checkpoint(options, self.filter_path, self._filter_seq)
        since = self._filter_seq if self.filter_path.exists() else 0
        replay = self._conn.execute(
            "SELECT url FROM todo WHERE seq > ?1 UNION ALL "
            "SELECT chain FROM todo WHERE seq > ?1 AND chain IS NOT NULL UNION ALL "
            "SELECT url FROM pages WHERE seq > ?1 AND forgotten = 0 UNION ALL "
            "SELECT final_url FROM pages WHERE seq > ?1 AND forgotten = 0 AND final_url != url",
            (since,))
        while batch := [row[0] for row in replay.fetchmany(50_000)]:
            live.add_many(batch)
            if shadow is not None:
                shadow.add_many(batch)
        forgotten = {row[0] for row in self._conn.execute(
            "SELECT url FROM pages WHERE forgotten = 1 AND url NOT IN (SELECT url FROM todo)")}
        if forgotten or self.forget_gone:
            live = ForgettingVisited(live, forgotten)
        return live, shadow

    # -- the crawl's calls -----------------------------------------------------------------

    def start(self, recrawl: bool) -> tuple[list[Item], dict[str, int]]:
        """What goes into ToDo before the seeds, with counters for the stats.

        The journal of an interrupted run if there is one (resume); else, with ``recrawl``,
        every recorded page not forgotten (journaled first, so a recrawl resumes too).
        """
        db = self._conn
        with self._lock:
            items = self._journaled()
            if items:
                log.warning("resuming the crawl in %s: %d URLs still to do", self.dir, len(items))
                return items, {"state_resumed": len(items)}
            recorded = db.execute("SELECT count(*) FROM pages").fetchone()[0]
            if not recrawl:
                if recorded:
                    log.warning("the crawl in %s is complete (%d pages); nothing to do — "
                                "--recrawl revisits its pages", self.dir, recorded)
                return [], {}
            self._seq += 1
            with self._transaction():
                db.execute("INSERT INTO todo (url, depth, referrer, attempt, seq) "
                           "SELECT url, depth, referrer, 0, ? FROM pages WHERE forgotten = 0 "
                           "ORDER BY depth, seq", (self._seq,))
                # Pages known only as the end of a redirect chain: the chain's start is seen
                # now, so its redirect stops there; they are revisited under their own URL.
                db.execute("INSERT OR IGNORE INTO todo (url, depth, referrer, attempt, seq) "
                           "SELECT final_url, depth, url, 0, ? FROM pages WHERE forgotten = 0 "
                           "AND final_url != url AND status NOT BETWEEN 300 AND 399 "
                           "AND final_url NOT IN (SELECT url FROM pages)", (self._seq,))
            items = self._journaled()
            return items, {"recrawl_queued": len(items)}

    def _journaled(self) -> list[Item]:
        return [Item(url, depth, referrer, attempt) for url, depth, referrer, attempt in
                self._conn.execute("SELECT url, depth, referrer, attempt FROM todo "
                                   "ORDER BY seq, rowid")]

    def journal(self, items: list[Item]) -> None:
        """Journal items about to enter ToDo outside a page (the seeds); returns once durable."""
        if items:
            self._submit(_Write(None, items, [i.url for i in items]))

    def hop(self, done: str, hop: Item, chain: str) -> None:
        """A redirect: ``hop`` replaces ``done`` (the URL just fetched) in the journal, for the
        chain whose record will be ``chain``'s; returns once durable, before ``hop`` enters ToDo.

        After a crash the chain thus resumes at its last hop (recorded under that URL) instead
        of starting again from ``chain``: a chain waiting in ToDo holds no thread, so re-fetching
        its start would add duplicates beyond the pages in flight.
        """
        self._submit(_Write(None, [hop], [hop.url, done, chain], replaces=done,
                            chain=chain))

    def prior(self, url: str) -> Prior | None:
        """The record of ``url`` from an earlier fetch, or None.

        Each worker thread reads through its own connection: WAL readers never wait for the
        writer, and see only committed records.
        """
        if not self._had_pages:  # a first crawl: no page can have an earlier record
            return None
        try:
            # Its own record; else that of a redirect chain that ended at it (the content the
            # chain's record describes is this URL's), the best earlier knowledge there is.
            row = self._reader().execute(
                "SELECT status, etag, last_modified, md5, size, saved, forgotten, final_url "
                "FROM pages WHERE url = ?1 UNION ALL "
                "SELECT status, NULL, NULL, md5, size, saved, 0, final_url FROM pages "
                "WHERE final_url = ?1 AND url != ?1 LIMIT 1", (url,)).fetchone()
        except sqlite3.Error as e:
            raise StateError(f"cannot read {self.db_path}: {e}") from e
        if row is None:
            return None
        return Prior(row[0], row[1], row[2], row[3], row[4], row[5], bool(row[6]), row[7])

    def commit(self, page: Page, items: list[Item]) -> None:
        """Record ``page``, drop its journal row and journal ``items``: all in one transaction.

        Returns once committed — call it *before* putting ``items`` in ToDo. Raises
        :class:`StateError` if the database refuses.
        """
        self._submit(_Write(page, items, [page.url, page.final_url] + [i.url for i in items],
                            forget=self.forget_gone and page.change == GONE))

    def note_change(self, page: Page, prior: Prior | None, counts: dict[str, int]) -> None:
        """Set ``page.change`` (new, changed, unchanged, gone) against ``prior``, counted."""
        note_change(page, prior, counts)

    def page_kept(self, page: Page, new: Sequence[Item]) -> None:
        self.commit(page, list(new))

    def crawl_finished(self, stats: dict[str, Any]) -> None:
        self.close()

    def close(self, checkpoint: bool = True) -> None:
        """Stop the writer, save the Visited checkpoint, close the database, free the dir."""
        if self._writer is not None:
            self._queue.put(None)
            self._writer.join()
            self._writer = None
        with self._lock:
            for reader in self._readers:
                reader.close()
            self._readers.clear()
            if self._db is not None:
                try:
                    if checkpoint and self._failure is None:
                        self._checkpoint()
                finally:
                    self._db.close()
                    self._db = None
            if self._lock_fd is not None:
                os.close(self._lock_fd)  # releases the flock
                self._lock_fd = None

    # -- the writer ----------------------------------------------------------------------------

    def _submit(self, write: _Write) -> None:
        """Hand ``write`` to the writer thread and wait until it is committed."""
        if self._writer is None:
            raise StateError(f"state {self.dir} is closed")
        self._queue.put(write)
        while not write.done.wait(1.0):
            if not self._writer.is_alive():  # pragma: no cover - a bug, but never hang on it
                raise StateError(f"the state writer of {self.dir} stopped")
        if write.error is not None:
            raise write.error

    def _write_loop(self) -> None:
        """The only thread that writes: each round commits every waiting write in one
        transaction (group commit), so sixteen workers cost one commit, not sixteen."""
        while (first := self._queue.get()) is not None:
            batch = [first]
            stop = False
            while len(batch) < 1024:
                try:
                    write = self._queue.get_nowait()
                except queue.Empty:
                    break
                if write is None:
                    stop = True
                    break
                batch.append(write)
            error: StateError | None = self._failure
            if error is None:
                try:
                    with self._lock:
                        self._commit_batch(batch)
                        if time.monotonic() >= self._next_checkpoint:
                            self._checkpoint()
                except StateError as e:
                    error = self._failure = e
            for write in batch:
                write.error = error
                write.done.set()
            if stop:
                break

    def _commit_batch(self, batch: list[_Write]) -> None:
        seq = self._seq + 1
        db = self._conn
        try:
            with self._transaction():
                for write in batch:
                    if write.page is not None:
                        record_page(db, write.page, write.forget, seq)
                    if write.replaces is not None:
                        db.execute("DELETE FROM todo WHERE url = ?", (write.replaces,))
                db.executemany(
                    "INSERT OR REPLACE INTO todo (url, depth, referrer, attempt, seq, chain) "
                    "VALUES (?, ?, ?, ?, ?, ?)",
                    [(i.url, i.depth, i.referrer, i.attempt, seq, write.chain)
                     for write in batch for i in write.items])
        except sqlite3.Error as e:
            raise StateError(f"cannot write {self.db_path}: {e}") from e
        self._seq = seq
        # Only now, after the commit: the shadow never holds an uncommitted URL.
        if self._shadow is not None:
            self._shadow.add_many([url for write in batch for url in write.urls])

    def _reader(self) -> sqlite3.Connection:
        reader = getattr(self._local, "db", None)
        if reader is None:
            reader = sqlite3.connect(self.db_path, check_same_thread=False)
            with self._lock:
                self._readers.append(reader)
            self._local.db = reader
        return reader

    # -- internals ---------------------------------------------------------------------------

    @property
    def _conn(self) -> sqlite3.Connection:
        if self._db is None:
            raise StateError(f"state {self.dir} is closed")
        return self._db

    def _transaction(self) -> Transaction:
        return Transaction(self._conn)

    def _checkpoint(self) -> None:
        """Save the shadow filter and remember up to which ``seq`` it holds (lock held)."""
        self._next_checkpoint = time.monotonic() + self.checkpoint_seconds
        if self._shadow is None:
            return
        db = self._conn
        try:
            # The WAL reaches the disk before a file that depends on it (see the module doc).
            db.execute("PRAGMA wal_checkpoint(PASSIVE)")
            self._shadow.save(self.filter_path)  # type: ignore[attr-defined]
            with self._transaction():
                db.execute("UPDATE meta SET value = ? WHERE key = 'filter_seq'",
                           (str(self._seq),))
        except (sqlite3.Error, OSError) as e:
            raise StateError(f"cannot checkpoint {self.filter_path}: {e}") from e
        self._filter_seq = self._seq


@dataclass
class _Write:
    """One unit for the writer: a page to record (None for the seeds) and items to journal."""

    page: Page | None
    items: list[Item]
    urls: list[str]  # for the shadow filter once committed
    forget: bool = False
    replaces: str | None = None  # a journal row this write removes (a redirect hop's source)
    chain: str | None = None  # the items are hops of the chain recorded under this URL
    done: threading.Event = field(default_factory=threading.Event)
    error: StateError | None = None

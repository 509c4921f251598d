"""Crawl state on disk (``--state DIR``): resume after any stop, and the records a recrawl uses.

Files in DIR:

``crawl.db``
    SQLite in WAL mode: ``meta`` (format version, the crawl's configuration, the checkpoint's
    position; for a crawl of the demo site, ``--demo``, its mark: ``demo``, the port),
    ``pages`` (one record per fetched URL: status, ETag, Last-Modified, MD5 and size of the
    body, fetched_at, depth, change, saved file), ``todo``, the ToDo journal (one row per
    URL put in ToDo and not yet recorded — queued *or* in flight) and ``outbox`` (the ``--out``
    lines of records committed but not yet known to be in a file, point 4).
    ``digests`` maps each 200 HTML body's MD5 to the URL first recorded with it (duplicate
    content, :mod:`minicrawl.records.digests`), written in the transaction of the page that
    claimed it. ``edges``: with ``--links`` or ``--check-links``, each page's links (its edges,
    anchors, redirect hops: :mod:`minicrawl.records.links` joins them with their targets at the
    end), written in the transaction of the page's record, replacing those of its last fetch;
    ``linksin`` beside it, in a crawl that recorded links from its first page on (meta
    ``links_in``): what ``links_in`` counts of each page (:mod:`minicrawl.records.linksin`).
    ``hops``: the URLs redirect chains requested that neither a record nor the journal names
    (point 2), in every state (one made before the table gains, when first opened, those its
    ``edges`` know: :func:`~minicrawl.state.opening.backfill_hops`).
``visited.bloom``
    A checkpoint of the Visited Bloom filter (:meth:`BloomFilter.save`, an atomic rename). The
    file of an older minicrawl (format 1, other positions) is not read but rebuilt from the
    database, which holds every URL it held (point 3).
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
   holds no thread — resumes at its last hop instead of adding to the re-fetches. The URL it
   replaces, unless it is the chain's start, goes to ``hops`` in the same transaction: the
   chain's record names only its start and its end, so a middle hop would otherwise be in no
   table once its chain is recorded. The chain's last redirect, when its target was not followed
   (seen before, out of scope, an error), replaced no row: it goes to ``hops`` with the chain's
   record (:meth:`CrawlState.commit`). A chain resumed at its hop goes on as a page of its own
   (recorded under the hop's URL): its start, which only the hop's row names, goes to ``hops``
   as the resume begins.
3. Visited must come back holding every journaled, recorded and hop URL (or they would be found
   again and fetched twice: so a crawl never stopped finds them, in Visited since they entered
   ToDo) and **nothing else** that matters: a URL in the filter but in none of those tables
   would be dropped as seen when its page is re-fetched, and never crawled. The live filter does
   hold such URLs — links of pages still in flight, not yet committed — so it is never saved.
   What is saved is a *shadow* filter that receives URLs only after their transaction committed
   (same lock, same order). Its file is therefore never newer than the database; it can be older,
   which is harmless because loading re-adds every row written after it (``seq`` >
   ``filter_seq``): Bloom-filter adds are idempotent. Before the file is written the WAL is
   checkpointed, so even after a power cut the database is not older than the file. A recrawl
   drops the crawl before's ``hops`` (it follows each chain again), which the file still holds:
   as it starts, the filter is rebuilt from the database instead, and saved before the
   recrawl's first row, so neither the recrawl nor its resume takes an old hop for seen.
4. The ``--out`` files together hold exactly one line per record, whatever the kill points
   (:mod:`minicrawl.records.output`). The writer thread, not the workers, writes the lines: the
   transaction that records a batch of pages also stores their lines, each carrying the batch's
   ``seq``, in ``outbox``; after the COMMIT the writer appends them to the file and flushes them
   to the OS, and a later transaction deletes the outbox rows up to that ``seq``. So a record's
   line is always in the outbox or complete in a file (never neither), and it leaves the outbox
   only once it is in the file. One thread appends whole batches in commit order, so the lines
   of outbox rows that did reach the file are its *last* lines (a torn one apart); meta
   ``out_path`` names that file. A run with ``--out`` first (:meth:`CrawlState.start`):
   reads ``out_path`` backwards, cutting a torn last line, while its lines are outbox rows, and
   deletes those rows (written already); only then sets ``out_path`` to its own file — which
   therefore holds no outbox line yet — appends the remaining rows' lines, flushes, deletes
   them. A kill between any two of these steps leaves the same invariant, so the next run
   finishes the job: no line lost, none twice, whether it gives the same ``--out`` or another
   (the union of the files is the output; a deleted file's lines are gone). Once a crawl has
   had an ``--out``, a run without one leaves its records' lines in the outbox for the next
   run with one; so a recrawl's file starts with what the runs before it left unwritten.

Writes go through one writer thread that commits whatever is waiting in one transaction (group
commit): with sixteen workers a page costs a fraction of a commit, and no worker holds a lock
while SQLite works. Workers read earlier records (:meth:`CrawlState.prior`) through their own
connections, which WAL never blocks.

Gone pages (``--forget-gone``): see :mod:`minicrawl.visited.forgetting`. Opening and checking the
directory: :mod:`minicrawl.state.opening`; the tables: :mod:`minicrawl.state.db`.
"""

from __future__ import annotations

import logging
import os
import sqlite3
import threading
import time
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING

from minicrawl.core.door import CHECK, visited_key
from minicrawl.core.interfaces import Item
from minicrawl.events import CrawlObserver
from minicrawl.jsontypes import JSON
from minicrawl.options import Options
from minicrawl.page import CrawledPage, Page
from minicrawl.records.edges import Damaged, pack_anchors, pack_edges, pack_urls
from minicrawl.records.output import Outbox, Output
from minicrawl.state.db import (
    LINKS_IN_KEY,
    PageLinks,
    StateError,
    Transaction,
    open_db,
    record_links,
    record_page,
)
from minicrawl.state.nostate import NoState
from minicrawl.state.opening import (
    DB_NAME,
    FILTER_NAME,
    check_meta,
    claim_directory,
    crawl_config,
    load_checkpoint,
)
from minicrawl.state.recorded import Recorded
from minicrawl.state.recrawl import GONE, Prior, note_change
from minicrawl.state.writer import GroupCommit, Write
from minicrawl.stats import StatsSnapshot
from minicrawl.visited.forgetting import ForgettingVisited
from minicrawl.visited.make import Visited

if TYPE_CHECKING:
    from collections.abc import Sequence

log = logging.getLogger("minicrawl")
CHECKPOINT_SECONDS = 2.0


def open_state(options: Options, seeds: Iterable[str], demo: int | None = None,
               damaged: Damaged | None = None) -> CrawlState | NoState:
    """The state the options ask for (:class:`NoState` without ``--state``); raises
    :class:`StateError` if it is unusable. ``demo``: the crawl is of the demo site served on
    this port (``--demo``): its state is marked so (see :func:`~.opening.check_demo`).
    ``damaged``: where its damaged values are counted (the run tells them)."""
    if not options.state:
        if options.recrawl or options.forget_gone:
            raise StateError("--recrawl and --forget-gone need --state DIR (the earlier crawl)")
        return NoState()
    if options.redis:
        raise StateError("--state keeps the crawl of one process; a shared crawl (--redis) "
                         "keeps its ToDo and Visited in Redis — give one or the other")
    return CrawlState(options.state, options, crawl_config(options, seeds), demo=demo,
                      damaged=damaged)


class CrawlState(CrawlObserver):
    """The crawl state in ``directory``: created, or checked and loaded (see the module doc).

    The crawler calls :meth:`start` once, :meth:`journal` for the seeds, :meth:`prior` before
    and :meth:`commit` after each page, and :meth:`close` at the end. Its :attr:`recorded`
    readings skip a damaged value, counted in :attr:`damaged` (the run's: it tells them at its
    end).
    """

    checkpoint_seconds = CHECKPOINT_SECONDS
    critical = True  # a record it cannot keep stops the crawl (the journal keeps the rest)
    existed = False  # True when the directory held a crawl already (a resume, a recrawl)

    def __init__(self, directory: str | os.PathLike[str], options: Options,
                 config: JSON, demo: int | None = None, damaged: Damaged | None = None) -> None:
        self.dir = Path(directory)
        self.db_path = self.dir / DB_NAME
        self.damaged = damaged = damaged or Damaged()  # (the run's, else one of its own)
        # What earlier runs recorded, read back for the joins at the crawl's end
        self.recorded = Recorded(self.db_path, damaged, self._reader)
        self.filter_path = self.dir / FILTER_NAME
        self.forget_gone = options.forget_gone
        self.records_links = options.records_links  # each page's edges kept with its record
        self._keeps_links = self.records_links  # or those of earlier runs replaced (below)
        self._lock = threading.Lock()  # the write connection: writer thread vs start/close
        self._lock_fd: int | None = None
        self._db: sqlite3.Connection | None = None
        self._local = threading.local()  # each worker's read connection
        self._readers: list[sqlite3.Connection] = []
        self._writer: GroupCommit | None = None
        self._output: Output | None = None  # --out, once attached (point 4)
        self._next_checkpoint = time.monotonic() + self.checkpoint_seconds
        try:
            self._lock_fd = claim_directory(self.dir, self.db_path)
            self.existed = self.db_path.exists()
            self._db = open_db(self.db_path)
            self._filter_seq, self._seq = check_meta(self._conn, self.dir, config, demo, damaged)
            self._outbox = Outbox(self._conn, self._transaction)
            self.visited, self._shadow = self._load_visited(options)
            self._had_pages = self._conn.execute(
                "SELECT EXISTS (SELECT 1 FROM pages)").fetchone()[0] == 1
            self.counts_links = self._counts_links()
            # A run that does not record links still drops those of a page fetched again:
            # they would be another fetch's
            self._keeps_links = self.records_links or self.counts_links or self._conn.execute(
                "SELECT EXISTS (SELECT 1 FROM edges)").fetchone()[0] == 1
        except BaseException:
            self.close(checkpoint=False)
            raise
        self._writer = GroupCommit(str(self.dir), self._commit)

    # -- opening ---------------------------------------------------------------------------

    def _load_visited(self, options: Options) -> tuple[Visited, Visited | None]:
        """Visited as the database says (see the module doc), and the shadow to checkpoint."""
        db = self._conn
        # A recrawl about to start (start(): nothing journaled) follows each redirect chain
        # again, as one never stopped does: the hops of the crawl before are not its own
        # (start() deletes them), so they are not in its Visited — not in a Bloom filter's
        # checkpoint either, which holds them: it is rebuilt from the database as every other
        # kind is (else its recrawl would stop a chain at its old middle hop, "seen"). Any other
        # run goes on with the crawl whose hops they are.
        recrawl = options.recrawl and db.execute(
            "SELECT NOT EXISTS (SELECT 1 FROM todo)").fetchone()[0] == 1
        live, shadow, since = load_checkpoint(options, self.filter_path, self._filter_seq,
                                              rebuild=recrawl)
        replay = db.execute(
            "SELECT url FROM todo WHERE seq > ?1 UNION ALL "
            "SELECT chain FROM todo WHERE seq > ?1 AND chain IS NOT NULL UNION ALL "
            "SELECT url FROM pages WHERE seq > ?1 AND forgotten = 0 UNION ALL "
            "SELECT final_url FROM pages WHERE seq > ?1 AND forgotten = 0 AND final_url != url"
            + ("" if recrawl else " UNION ALL SELECT url FROM hops WHERE seq > ?1"),
            (since,))
        while batch := [row[0] for row in replay.fetchmany(50_000)]:
            live.add_many(batch)
            if shadow is not None:
                shadow.add_many(batch)
        # (a page forgotten, then requested as a hop of this crawl: seen, as it was then)
        forgotten = {row[0] for row in db.execute(
            "SELECT url FROM pages WHERE forgotten = 1 AND url NOT IN (SELECT url FROM todo)"
            + ("" if recrawl else " AND url NOT IN (SELECT url FROM hops)"))}
        if forgotten or self.forget_gone:
            live = ForgettingVisited(live, forgotten)
        return live, shadow

    def _counts_links(self) -> bool:
        """Whether every page this state records has what ``links_in`` counts kept with it
        (its ``linksin`` row): a state marked so (LINKS_IN_KEY), or one with no page yet opened
        by a run that records links, marked now. A state whose earlier runs kept no links is
        never marked: its pages' links are not known."""
        db = self._conn
        if db.execute("SELECT 1 FROM meta WHERE key = ?", (LINKS_IN_KEY,)).fetchone():
            return True
        if not self.records_links or self._had_pages:
            return False
        with self._transaction():
            db.execute("INSERT INTO meta VALUES (?, '1')", (LINKS_IN_KEY,))
        return True

    # -- the crawl's calls -----------------------------------------------------------------

    def start(self, recrawl: bool) -> tuple[Iterator[Item], dict[str, int]]:
        """What goes into ToDo before the seeds, with counters for the stats.

        The journal of an interrupted run if there is one (resume, said in a warning: with
        ``recrawl``, that the interrupted crawl is finished first, unless it was a recrawl);
        else, with ``recrawl``, every recorded page not forgotten (journaled first, so a
        recrawl resumes too). The items are read as they are iterated (a journal of millions
        need not fit in memory: ToDo spills what does not), before anything else writes to the
        state.
        """
        db = self._conn
        with self._lock:
            if self._output is not None:
                self._write_unwritten(self._output)
            waiting = db.execute("SELECT count(*) FROM todo").fetchone()[0]
            recrawling = db.execute("SELECT 1 FROM meta WHERE key = 'recrawling'").fetchone()
            if waiting:  # an interrupted run: resumed, and --recrawl says it waits for it
                if recrawl and not recrawling:
                    log.warning("--recrawl: the crawl in %s was interrupted with %d URLs still "
                                "to do; resuming it first, not recrawling — run --recrawl again "
                                "once it is complete", self.dir, waiting)
                else:
                    log.warning("resuming the %s in %s: %d URLs still to do",
                                "recrawl" if recrawling else "crawl", self.dir, waiting)
                # A chain's start named by its hop's row alone: the hop goes on as a page of its
                # own, and once recorded its row is gone (point 2 above)
                with self._transaction():
                    db.execute("INSERT OR IGNORE INTO hops SELECT chain, seq FROM todo "
                               "WHERE chain IS NOT NULL AND chain != url")
                return self._journaled(), {"state_resumed": waiting}
            if recrawling:  # the recrawl that left it ended: its queue is done
                with self._transaction():
                    db.execute("DELETE FROM meta WHERE key = 'recrawling'")
            recorded = db.execute("SELECT count(*) FROM pages").fetchone()[0]
            if not recrawl:
                if recorded:
                    log.warning("the crawl in %s is complete (%d pages); nothing to do — "
                                "--recrawl revisits its pages", self.dir, recorded)
                return iter(()), {}
            # The filter rebuilt without the crawl before's hops (_load_visited) is the
            # checkpoint before the recrawl's first row: a kill before the next checkpoint must
            # not resume it with the old file, which holds them
            self._checkpoint()
            self._seq += 1
            with self._transaction():  # its queue, and that it is a recrawl's (a resume says)
                db.execute("INSERT OR REPLACE INTO meta VALUES ('recrawling', '1')")
                db.execute("DELETE FROM hops")  # the crawl before's (see _load_visited)
                db.execute("INSERT INTO todo (url, depth, referrer, attempt, seq) "
                           "SELECT url, depth, referrer, 0, ? FROM pages WHERE forgotten = 0 "
                           "ORDER BY depth, seq", (self._seq,))
                # Pages known only as the end of a redirect chain: the chain's start is seen
                # now, so its redirect stops there; they are revisited under their own URL.
                db.execute("INSERT OR IGNORE INTO todo (url, depth, referrer, attempt, seq) "
                           "SELECT final_url, depth, url, 0, ? FROM pages WHERE forgotten = 0 "
                           "AND final_url != url AND status NOT BETWEEN 300 AND 399 "
                           "AND final_url NOT IN (SELECT url FROM pages)", (self._seq,))
            queued = db.execute("SELECT count(*) FROM todo").fetchone()[0]
            return self._journaled(), {"recrawl_queued": queued}

    def _write_unwritten(self, output: Output) -> None:
        """Before anything else: the lines of records earlier runs committed but did not write
        (or did not know they had written) go to ``output`` (point 4 above); lock held."""
        try:
            written = self._outbox.attach(output)
        except sqlite3.Error as e:
            raise StateError(f"cannot write {self.db_path}: {e}") from e
        except OSError as e:
            raise StateError(f"cannot write --out {output.path}: {e}") from e
        if written:
            log.warning("wrote %d records to %s that the last run had recorded but not written",
                        written, output.path)

    def _journaled(self) -> Iterator[Item]:
        # A reader of its own (WAL: a snapshot), the lock not held meanwhile. A cursor is read as
        # it is iterated, so no table of millions (the journal, the pages, their links) is ever
        # in memory whole: the readers below iterate theirs too.
        rows = self._reader().execute("SELECT url, depth, referrer, attempt FROM todo "
                                      "ORDER BY seq, rowid")
        for url, depth, referrer, attempt in rows:  # (a check's row: its Visited name)
            yield Item(url.removeprefix(CHECK), depth, referrer and referrer.removeprefix(CHECK),
                       attempt, check=url.startswith(CHECK))

    def journal(self, items: list[Item]) -> None:
        """Journal items about to enter ToDo outside a page (the seeds); returns once durable."""
        if items:
            self._submit(Write(None, items, [i.url for i in items]))

    def hop(self, done: str, hop: Item, chain: str) -> None:
        """A redirect: ``hop`` replaces ``done`` (the URL just fetched) in the journal, for the
        chain whose record will be ``chain``'s; returns once durable, before ``hop`` enters ToDo.

        After a crash the chain thus resumes at its last hop (recorded under that URL) instead
        of starting again from ``chain``: a chain waiting in ToDo holds no thread, so re-fetching
        its start would add duplicates beyond the pages in flight. A ``done`` that is not
        ``chain`` is kept in ``hops`` (point 2 of the module doc): requested, it stays in
        Visited across runs.
        """
        done, chain = visited_key(done, hop.check), visited_key(chain, hop.check)
        self._submit(Write(None, [hop], [visited_key(hop.url, hop.check), done, chain],
                           replaces=done, chain=chain))

    def digests(self) -> Iterator[tuple[str, str]]:
        """Every recorded content digest and the URL first recorded with it, in the digests'
        order, read as they are iterated (a million need not fit in memory) — before the crawl
        writes to the state, as :meth:`start`'s items."""
        yield from self._conn.execute("SELECT digest, url FROM digests")

    def prior(self, url: str, check: bool = False) -> Prior | None:
        """The record of ``url`` (a URL to ``check``: its own) from an earlier fetch, or None.

        Each worker thread reads through its own connection: WAL readers never wait for the
        writer, and see only committed records.
        """
        if not self._had_pages:  # a first crawl: no page can have an earlier record
            return None
        url = visited_key(url, check)
        try:
            # Its own record; else that of a redirect chain that ended at it (the content the
            # chain's record describes is this URL's), the best earlier knowledge there is.
            row = self._reader().execute(
                "SELECT status, etag, last_modified, md5, size, saved, forgotten, final_url, "
                "fetched_at FROM pages WHERE url = ?1 UNION ALL "
                "SELECT status, NULL, NULL, md5, size, saved, 0, final_url, fetched_at FROM pages "
                "WHERE final_url = ?1 AND url != ?1 LIMIT 1", (url,)).fetchone()
        except sqlite3.Error as e:
            raise StateError(f"cannot read {self.db_path}: {e}") from e
        if row is None:
            return None
        return Prior(row[0], row[1], row[2], row[3], row[4], row[5], bool(row[6]), row[7],
                     row[8])

    def commit(self, page: Page, items: list[Item]) -> None:
        """Record ``page``, drop its journal row and journal ``items``: all in one transaction.
        With links recorded, the page's edges and anchors (``CrawledPage.edges``, ``.anchors``)
        go with its record.

        Returns once committed — call it *before* putting ``items`` in ToDo. Raises
        :class:`StateError` if the database refuses.
        """
        urls = [visited_key(url, page.check) for url in (page.url, page.final_url)]
        # What its chain requested besides those two: the middle hops (in ``hops`` since their
        # hop's commit: ignored) and the last redirect, when its target was not followed (seen
        # before, out of scope, an error) — which replaced no journal row, so only this row
        # keeps it in a resumed crawl's Visited (point 2 of the module doc)
        hops = [visited_key(url, page.check) for url in getattr(page, "requested", ())
                if url not in (page.url, page.final_url)]
        self._submit(Write(page, items,
                           urls + hops + [visited_key(i.url, i.check) for i in items],
                           forget=self.forget_gone and page.change == GONE, hops=hops,
                           links=self._links_of(page) if self._keeps_links else None))

    def _links_of(self, page: Page) -> PageLinks:
        """``page``'s links as the state keeps them, packed here, on the committing worker's
        thread (not the writer's, which every worker waits on): if links are recorded, the
        edges and anchors the page carries (its own, whatever thread commits it and whatever
        was told before); if the state counts links, those ``links_in`` counts."""
        crawled = page if isinstance(page, CrawledPage) else None
        edges = anchors = links = requested = None
        if self.records_links and crawled is not None:
            edges = pack_edges(crawled.edges) if crawled.edges else None
            anchors = pack_anchors(crawled.anchors) if crawled.anchors is not None else None
        if self.counts_links:
            links = pack_urls(page.links) if page.links else None
            others = [url for url in (crawled.requested if crawled else ()) if url != page.url]
            requested = pack_urls(others) if others else None
        return PageLinks(edges, anchors, self.counts_links, links, requested)

    def attach_output(self, output: Output) -> None:
        """Have the writer write each record's ``--out`` line to ``output`` after its commit,
        from :meth:`start` on (point 4 above)."""
        output.by_state = True
        self._output = output

    def note_change(self, page: Page, prior: Prior | None, counts: dict[str, int]) -> None:
        """Set ``page.change`` (new, changed, unchanged, gone) against ``prior``, counted."""
        note_change(page, prior, counts)

    def page_kept(self, page: Page, new: Sequence[Item]) -> None:
        if not page.sitemap:  # a sitemap file is no page: read again by each run
            self.commit(page, list(new))

    def crawl_finished(self, stats: StatsSnapshot) -> None:
        """The crawl is over: close (see :meth:`close`); ``stats`` are left as they are."""
        self.close()

    def close(self, checkpoint: bool = True) -> None:
        """Stop the writer, save the Visited checkpoint, close the database, free the dir."""
        failure = None
        if self._writer is not None:
            self._writer.close()
            failure, self._writer = self._writer.failure, None
        with self._lock:
            for reader in self._readers:
                reader.close()
            self._readers.clear()
            if self._db is not None:
                try:
                    if checkpoint and failure is None:
                        self._outbox.settle()
                        self._checkpoint()
                finally:
                    self._db.close()
                    self._db = None
            if self._lock_fd is not None:
                os.close(self._lock_fd)  # releases the flock
                self._lock_fd = None

    # -- the writer ----------------------------------------------------------------------------

    def _submit(self, write: Write) -> None:
        if self._writer is None:
            raise StateError(f"state {self.dir} is closed")
        self._writer.submit(write)

    def _commit(self, batch: list[Write]) -> None:
        """The writer's work for one batch (see minicrawl.state.writer)."""
        with self._lock:
            self._commit_batch(batch)
            if time.monotonic() >= self._next_checkpoint:
                self._checkpoint()

    def _commit_batch(self, batch: list[Write]) -> None:
        seq = self._seq + 1
        db = self._conn
        try:
            with self._transaction():
                for write in batch:
                    if write.page is not None:
                        record_page(db, write.page, write.forget, seq)
                        if write.links is not None:
                            record_links(db, write.page, write.links)
                    if write.replaces is not None:
                        db.execute("DELETE FROM todo WHERE url = ?", (write.replaces,))
                    if write.replaces not in (None, write.chain):  # a middle hop (point 2)
                        db.execute("INSERT OR IGNORE INTO hops VALUES (?, ?)",
                                   (write.replaces, seq))
                    db.executemany("INSERT OR IGNORE INTO hops VALUES (?, ?)",
                                   [(url, seq) for url in write.hops])
                db.executemany(
                    "INSERT OR REPLACE INTO todo (url, depth, referrer, attempt, seq, chain) "
                    "VALUES (?, ?, ?, ?, ?, ?)",
                    [(visited_key(i.url, i.check), i.depth, i.referrer, i.attempt, seq,
                      write.chain)
                     for write in batch for i in write.items])
                lines = self._outbox.stage(seq, [w.page for w in batch if w.page is not None])
        except sqlite3.Error as e:
            raise StateError(f"cannot write {self.db_path}: {e}") from e
        self._seq = seq
        # Only now, after the commit: the shadow never holds an uncommitted URL.
        if self._shadow is not None:
            self._shadow.add_many([url for write in batch for url in write.urls])
        try:  # and the lines (point 4 above)
            self._outbox.written(seq, lines)
        except OSError as e:
            raise StateError(f"cannot write --out {self._outbox.output_path}: {e}; its "
                             f"records are kept for the next run") from e

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


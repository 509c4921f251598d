"""Crawl state on disk (``--state DIR``): resume after any stop, and the records a recrawl uses.

Files in DIR:

``crawl.db``
    SQLite in WAL mode: ``meta`` (format version, the crawl's configuration, the checkpoint's
    position), ``pages`` (one record per fetched URL: status, ETag, Last-Modified, MD5 and size of
    the body, fetched_at, depth, change, saved file) and ``todo``, the ToDo journal (one row per
    URL put in ToDo and not yet recorded — queued *or* in flight).
    ``digests`` maps each 200 HTML body's MD5 to the URL first recorded with it (duplicate
    content, :mod:`minicrawl.digests`), written in the transaction of the page that claimed it.
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

Gone pages (``--forget-gone``) are not removed from the Bloom filter: the state keeps their exact
URLs (:class:`ForgettingVisited`) and reports each unseen once. A
:class:`~minicrawl.bloom.CountingBloomFilter` as Visited would cost 8x the memory for the whole
crawl, and it counts every offer of a URL (each page linking it), so one ``remove`` would not
forget a page linked from several; its replay after a checkpoint would count twice too. The
exact set forgets exactly the gone pages, costs memory per gone page only, and keeps the
checkpoint add-only (so the replay above stays idempotent).
"""

from __future__ import annotations

import json
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

from minicrawl.bloom import BloomFileError
from minicrawl.frontier import Item
from minicrawl.options import Options
from minicrawl.recrawl import GONE, UNCHANGED, Prior, body_md5
from minicrawl.visited import Visited, make_visited

if TYPE_CHECKING:
    from minicrawl.crawler import Page

try:
    import fcntl
except ImportError:  # pragma: no cover - not on Windows: no lock against a second crawl
    fcntl = None  # type: ignore[assignment]

log = logging.getLogger("minicrawl")

FORMAT = 1  # bump when the tables or the filter checkpoint change incompatibly
DB_NAME, FILTER_NAME, LOCK_NAME = "crawl.db", "visited.bloom", "lock"
CHECKPOINT_SECONDS = 2.0
_OURS = {DB_NAME, DB_NAME + "-wal", DB_NAME + "-shm", FILTER_NAME, LOCK_NAME}

_SCHEMA = """
CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE pages (
    url TEXT PRIMARY KEY, final_url TEXT NOT NULL, status INTEGER, etag TEXT,
    last_modified TEXT, md5 TEXT, size INTEGER NOT NULL, fetched_at TEXT NOT NULL,
    depth INTEGER NOT NULL, referrer TEXT, change TEXT NOT NULL, saved TEXT, error TEXT,
    forgotten INTEGER NOT NULL DEFAULT 0, seq INTEGER NOT NULL);
CREATE INDEX pages_seq ON pages (seq);
CREATE TABLE todo (
    url TEXT PRIMARY KEY, depth INTEGER NOT NULL, referrer TEXT,
    attempt INTEGER NOT NULL DEFAULT 0, seq INTEGER NOT NULL,
    chain TEXT);  -- a redirect hop: the URL whose record the chain will end in
CREATE INDEX todo_seq ON todo (seq);
CREATE INDEX todo_chain ON todo (chain);
"""
# Added after format 1 first shipped: created on opening when missing, so older dirs gain it.
_DIGESTS_TABLE = ("CREATE TABLE IF NOT EXISTS digests ("
                  "digest TEXT PRIMARY KEY, url TEXT NOT NULL) WITHOUT ROWID")

_UPSERT_PAGE = """
INSERT INTO pages (url, final_url, status, etag, last_modified, md5, size, fetched_at, depth,
                   referrer, change, saved, error, forgotten, seq)
VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
ON CONFLICT (url) DO UPDATE SET
    final_url = excluded.final_url, status = excluded.status, etag = excluded.etag,
    last_modified = excluded.last_modified, md5 = excluded.md5, size = excluded.size,
    fetched_at = excluded.fetched_at, depth = excluded.depth, referrer = excluded.referrer,
    change = excluded.change, saved = coalesce(excluded.saved, pages.saved),
    error = excluded.error, forgotten = excluded.forgotten, seq = excluded.seq
"""

# An unchanged page (a 304, the same body, a redirect to the same target) confirms its record:
# keep its status, signature and file — what a redirect's target is compared with — and refresh
# the rest.
_CONFIRM_PAGE = """
UPDATE pages SET etag = coalesce(?, etag), last_modified = coalesce(?, last_modified),
    fetched_at = ?, change = ?, error = NULL, forgotten = 0, seq = ?
WHERE url = ?
"""


class StateError(Exception):
    """A state directory that cannot be used as asked; the message says why and what to do."""


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


def open_state(options: Options, seeds: Iterable[str]) -> CrawlState | None:
    """The state the options ask for (None without ``--state``); :class:`StateError` if unusable."""
    if not options.state:
        if options.recrawl or options.forget_gone:
            raise StateError("--recrawl and --forget-gone need --state DIR (the earlier crawl)")
        return None
    if options.redis:
        raise StateError("--state keeps the crawl of one process; a shared crawl (--redis) "
                         "keeps its ToDo and Visited in Redis — give one or the other")
    return CrawlState(options.state, options, crawl_config(options, seeds))


class ForgettingVisited:
    """A Visited filter plus the exact URLs of pages forgotten (found gone) by earlier runs.

    A forgotten URL is reported unseen the first time it is offered again, so a page that comes
    back is rediscovered; every other answer is the filter's. A page found gone in *this* run is
    forgotten in the state (for the next run) but stays seen here: the run has its answer, and a
    second link to it must not fetch it, and record it gone, twice.
    """

    def __init__(self, inner: Visited, forgotten: set[str]) -> None:
        self.inner = inner
        self._forgotten = forgotten
        self._lock = threading.Lock()

    def _revive(self, url: str) -> bool:
        with self._lock:
            if url in self._forgotten:
                self._forgotten.discard(url)
                return True
            return False

    def add(self, url: str) -> bool:
        return self.inner.add(url) or (bool(self._forgotten) and self._revive(url))

    def add_many(self, urls: Iterable[str]) -> list[bool]:
        urls = list(urls)
        fresh = self.inner.add_many(urls)
        if self._forgotten:
            fresh = [new or self._revive(url) for url, new in zip(urls, fresh, strict=True)]
        return fresh

    def __contains__(self, url: object) -> bool:
        return url in self.inner and url not in self._forgotten

    def __len__(self) -> int:
        return len(self.inner)

    def __getattr__(self, name: str) -> Any:  # fill ratio, bits, ... for the stats
        return getattr(self.inner, name)


class CrawlState:
    """The crawl state in ``directory``: created, or checked and loaded (see the module doc).

    The crawler calls :meth:`start` once, :meth:`journal` for the seeds, :meth:`prior` before and
    :meth:`commit` after each page, and :meth:`close` at the end. One SQLite connection serves
    all threads under one lock: a page costs one short transaction, far below a fetch.
    """

    checkpoint_seconds = CHECKPOINT_SECONDS

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
            self._claim_directory()
            self._db = self._open_db()
            self._check_meta(config)
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

    def _claim_directory(self) -> None:
        self.dir.mkdir(parents=True, exist_ok=True)
        if not self.db_path.exists():
            strangers = sorted(p.name for p in self.dir.iterdir() if p.name != LOCK_NAME)
            if strangers:
                what = ("has visited.bloom but no crawl.db: the database was removed"
                        if FILTER_NAME in strangers else
                        f"is not empty ({', '.join(strangers[:5])}) and has no {DB_NAME}")
                raise StateError(f"state dir {self.dir} {what}; refusing to use it "
                                 f"(give an empty or new directory for a new crawl)")
        if fcntl is None:
            return
        fd = os.open(self.dir / LOCK_NAME, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            other = os.read(fd, 32).decode(errors="replace").strip() or "?"
            os.close(fd)
            raise StateError(f"state dir {self.dir} is in use by another crawl "
                             f"(pid {other})") from None
        os.ftruncate(fd, 0)
        os.write(fd, str(os.getpid()).encode())
        self._lock_fd = fd

    def _open_db(self) -> sqlite3.Connection:
        # isolation_level=None: transactions are the explicit BEGIN ... COMMIT below.
        db = sqlite3.connect(self.db_path, isolation_level=None, check_same_thread=False)
        try:
            db.execute("PRAGMA busy_timeout = 5000")
            db.execute("PRAGMA journal_mode = WAL")
            # NORMAL in WAL mode: a commit survives the process dying (kill -9) at once and a
            # power cut once checkpointed; FULL would fsync every page.
            db.execute("PRAGMA synchronous = NORMAL")
            problems = [row[0] for row in db.execute("PRAGMA quick_check")]
            if problems != ["ok"]:
                raise sqlite3.DatabaseError("; ".join(problems[:3]))
            tables = {row[0] for row in db.execute(
                "SELECT name FROM sqlite_master WHERE type = 'table'")}
        except sqlite3.DatabaseError as e:
            db.close()
            raise StateError(f"{self.db_path} is corrupt or not a minicrawl state database "
                             f"({e}); left untouched — move the state dir away to start "
                             f"afresh") from None
        if not tables:  # new (or created by a run killed before its first commit)
            return db
        if not {"meta", "pages", "todo"} <= tables:
            db.close()
            raise StateError(f"{self.db_path} is not a minicrawl state database "
                             f"(tables: {', '.join(sorted(tables))})")
        return db

    def _check_meta(self, config: dict[str, Any]) -> None:
        db = self._conn
        tables = {row[0] for row in db.execute("SELECT name FROM sqlite_master")}
        if "meta" not in tables:
            with self._transaction():  # not executescript: it would commit on its own
                for statement in _SCHEMA.split(";"):
                    if statement.strip():
                        db.execute(statement)
                db.executemany("INSERT INTO meta VALUES (?, ?)", [
                    ("format", str(FORMAT)), ("config", json.dumps(config, sort_keys=True)),
                    ("filter_seq", "0")])
        meta = dict(db.execute("SELECT key, value FROM meta").fetchall())
        if meta.get("format") != str(FORMAT):
            raise StateError(f"state dir {self.dir} has format {meta.get('format')!r}; this "
                             f"minicrawl reads format {FORMAT} — use a new state dir")
        try:
            saved = json.loads(meta["config"])
            self._filter_seq = int(meta["filter_seq"])
        except (KeyError, ValueError) as e:
            raise StateError(f"{self.db_path}: corrupt meta table ({e!r})") from None
        if saved != config:
            diffs = "; ".join(f"{key}: {saved.get(key)!r} then, {config.get(key)!r} now"
                              for key in sorted(set(saved) | set(config))
                              if saved.get(key) != config.get(key))
            raise StateError(f"state dir {self.dir} belongs to a crawl with another "
                             f"configuration ({diffs}); rerun with the same seeds and options, "
                             f"or use another --state dir")
        if "digests" not in tables:
            with self._transaction():
                db.execute(_DIGESTS_TABLE)
        self._seq = max(self._filter_seq, *(db.execute(
            f"SELECT coalesce(max(seq), 0) FROM {table}").fetchone()[0]  # noqa: S608
            for table in ("pages", "todo")))

    def _load_visited(self, options: Options) -> tuple[Visited, Visited | None]:
        """Visited as the database says (see the module doc), and the shadow to checkpoint."""
        live = make_visited(options)
        shadow: Visited | None = None
        since = 0
        if callable(getattr(live, "save", None)) and callable(getattr(type(live), "load", None)):
            if self.filter_path.exists():
                live, shadow = self._load_filter(live), self._load_filter(live)
                since = self._filter_seq
            elif self._filter_seq:
                raise StateError(f"{self.filter_path} is missing although {DB_NAME} says it "
                                 f"was saved; the state dir was damaged — not resetting it")
            else:
                shadow = make_visited(options)
        # else (an exact set): nothing to checkpoint, rebuilt from the database on each load
        db = self._conn
        replay = db.execute(
            "SELECT url FROM todo WHERE seq > ?1 UNION ALL "
            "SELECT chain FROM todo WHERE seq > ?1 AND chain IS NOT NULL UNION ALL "
            "SELECT url FROM pages WHERE seq > ?1 AND forgotten = 0 UNION ALL "
            "SELECT final_url FROM pages WHERE seq > ?1 AND forgotten = 0 AND final_url != url",
            (since,))
        while batch := [row[0] for row in replay.fetchmany(50_000)]:
            live.add_many(batch)
            if shadow is not None:
                shadow.add_many(batch)
        forgotten = {row[0] for row in db.execute(
            "SELECT url FROM pages WHERE forgotten = 1 AND url NOT IN (SELECT url FROM todo)")}
        if forgotten or self.forget_gone:
            live = ForgettingVisited(live, forgotten)
        return live, shadow

    def _load_filter(self, like: Visited) -> Visited:
        try:
            loaded = type(like).load(self.filter_path)  # type: ignore[attr-defined]
        except (BloomFileError, OSError) as e:
            raise StateError(f"Visited checkpoint is unusable: {e}; not resetting it — move "
                             f"the state dir away to start afresh") from None
        for name in ("bits", "hashes", "hash_family"):
            if getattr(loaded, name, None) != getattr(like, name, None):
                raise StateError(f"{self.filter_path} has {name}={getattr(loaded, name, None)}"
                                 f" but this crawl's Visited has {getattr(like, name, None)}: "
                                 f"not this crawl's filter")
        return loaded

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

    def digests(self) -> dict[str, str]:
        """Every recorded content digest → the URL first recorded with it."""
        return dict(self._conn.execute("SELECT digest, url FROM digests").fetchall())

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

        Returns once committed — call it *before* putting ``items`` in ToDo. Raises
        :class:`StateError` if the database refuses.
        """
        self._submit(_Write(page, items, [page.url, page.final_url] + [i.url for i in items],
                            forget=self.forget_gone and page.change == GONE))

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
                        self._record(write.page, write.forget, seq)
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

    def _record(self, page: Page, forget: bool, seq: int) -> None:
        db = self._conn
        if page.digest is not None:  # its holder too, so a replay of the holder knows it
            db.execute("INSERT OR IGNORE INTO digests VALUES (?, ?)",
                       (page.digest, page.duplicate_of or page.url))
        # Its own journal row, and those of the redirect hops it ended (see hop()).
        db.execute("DELETE FROM todo WHERE url = ?1 OR chain = ?1", (page.url,))
        # Validators only describe the URL asked for if no redirect intervened.
        same = page.final_url == page.url
        etag = page.headers.get("etag") if same else None
        modified = page.headers.get("last-modified") if same else None
        if page.change == UNCHANGED and db.execute(
                _CONFIRM_PAGE, (etag, modified, page.fetched_at, page.change, seq,
                                page.url)).rowcount:
            return
        md5 = (page.digest or body_md5(page.body)) if page.status is not None else None
        db.execute(_UPSERT_PAGE, (
            page.url, page.final_url, page.status, etag, modified, md5, len(page.body),
            page.fetched_at, page.depth, page.referrer, page.change or "new", page.saved,
            page.error, int(forget), seq))

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

    def _transaction(self) -> _Transaction:
        return _Transaction(self._conn)

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


class _Transaction:
    """``with``: BEGIN IMMEDIATE … COMMIT, or ROLLBACK on any exception."""

    def __init__(self, db: sqlite3.Connection) -> None:
        self.db = db

    def __enter__(self) -> sqlite3.Connection:
        self.db.execute("BEGIN IMMEDIATE")
        return self.db

    def __exit__(self, kind: object, *exc: object) -> None:
        if kind is None:
            self.db.execute("COMMIT")
        else:
            self.db.execute("ROLLBACK")

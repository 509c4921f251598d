"""Duplicate content: the same page served under two URLs is recorded, not crawled, twice.

Visited stops the same *URL* from being fetched twice; it cannot see that ``/a`` and
``/a?ref=nav``, ``/`` and ``/index.php``, or a page and its mirror serve the same bytes. Here
each 200 HTML body's MD5 (the signature ``--recrawl`` compares anyway) is offered to a
**first-wins map** digest → URL. The first page recorded with a body holds the digest; every
later one is recorded with ``duplicate_of`` naming it, its links are not extracted again and
``--save-pages`` does not write it again.

The map's ``claim`` is one atomic step, like Visited's test-and-insert: two workers recording
the same body at the same moment get one holder. Three variants:

* in one process, a table in a scratch SQLite file under a lock (:class:`LocalDigests`): its
  memory stays flat however many pages are recorded, and the file, which has no name, goes
  with the process however it ends;
* with ``--state``, the same table filled from the ``digests`` table of ``crawl.db`` when the
  crawl opens; a page's row is written in the transaction that records the page
  (:meth:`minicrawl.state.store.CrawlState.commit`), so a resumed crawl or a recrawl knows
  every digest recorded before;
* in a shared crawl (``--redis``), a Redis hash claimed with ``HSETNX`` (:class:`RedisDigests`):
  exact and atomic across processes. Not a Bloom filter: a Bloom filter answers "seen", but the
  record must name *which* URL holds the content, and a false positive would silently drop a
  new page's links.

**Replays.** A page fetched again after a crash (``--state`` resume, a reclaimed Redis entry)
claims its digest again and may find *itself* as the holder — its first claim survived, its
record did not. Its own URL is never a duplicate of itself, so it gets the same answer as the
first time; a page recorded as a duplicate of it stays consistent too (the holder's row is
written with the duplicate's record as well, see :meth:`CrawlState.commit`).

**Recrawls.** The holder of a digest stays its holder (first wins, for good), even if its page
later changes: ``duplicate_of`` names the URL first recorded with those bytes, as an archive's
revisit record names the first capture.
"""

from __future__ import annotations

import contextlib
import itertools
import logging
import sqlite3
import threading
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar

from minicrawl.core.links import is_html  # the core's rule of what is HTML
from minicrawl.frontier.scratch import ScratchDB, scratch_directory
from minicrawl.options import Options
from minicrawl.state.recrawl import UNCHANGED, Prior, body_md5
from minicrawl.visited.bloom import BloomFilter

if TYPE_CHECKING:
    from minicrawl.page import Page
    from minicrawl.redis.conn import SharedRedis
    from minicrawl.state.store import CrawlState, NoState

log = logging.getLogger("minicrawl")
T = TypeVar("T")

PREFIX = "minicrawl-digests-"  # the scratch file's name, for the moment it has one
SCHEMA = "CREATE TABLE digests (digest BLOB PRIMARY KEY, url TEXT NOT NULL) WITHOUT ROWID"
INSERT = "INSERT OR IGNORE INTO digests VALUES (?, ?)"
SELECT = "SELECT url FROM digests WHERE digest = ?"
CACHE_KB = 2048  # SQLite's page cache: the map's memory, whatever the crawl's size
# Claims held in memory before they go to the file together (one executemany), and the rate of
# the digests' filter (a false positive costs one SELECT, never a wrong answer)
FLUSH = 512
SEEN_RATE = 0.01


class LocalDigests:
    """The digests of one process, in a scratch SQLite file (memory flat).

    A dict would take ~200 bytes a page (the 32-character hex, the URL's string, the slot): 200
    MB of a million-page crawl. Here a row is the MD5's 16 raw bytes and the URL, in a
    ``WITHOUT ROWID`` table keyed on the bytes (one B-tree, ~65 bytes a row on disk), and the
    memory is SQLite's page cache (``CACHE_KB``) whatever the pages. The file is a scratch file,
    like the spilling ToDo's (:class:`~minicrawl.frontier.scratch.ScratchDB`: no journal, no fsync,
    unlinked as soon as it is open), made under ``TMPDIR`` at the first claim (or fill) and freed
    when :meth:`close` closes it at the crawl's end, or when the process ends however it ends
    (a ``kill -9`` too). With ``--state`` it is
    filled from the state's ``digests`` table (``known``, streamed) when the crawl opens, and the
    state keeps writing that table: the durable copy is the state's, this one a working copy.

    A claim is ``INSERT OR IGNORE`` and, only if the digest was held already, a ``SELECT`` of
    its holder, on one connection under a lock (the 16 workers share it). Measured (2 cores
    shared with other jobs, load 5; 16-byte keys of MD5s, ~35-character URLs): **6-8 µs of CPU
    a claim**, new or repeated, at 200,000 as at 1,000,000 rows (the dict: 0.4 µs) — under 1 %
    of the ~1 ms of CPU a crawl spends on a page; +2.1 MB of SQLite's memory however many rows,
    and the file 64.4 MB for a million (65 bytes a row). Filling it from a state of a million
    digests takes 2.4 s of CPU and +8 MB of peak RSS (the dict: 0.9 s and +300 MB). The whole
    crawl (``bench/tree.py --levels 5``, 111,111 pages, 2026-11-26, interleaved runs): peak RSS
    121-123 → 114-115 MB, wall and CPU within the load's noise (98-115 s against 103-105 s).

    A claim asks the file nothing when the digest is new for sure: a Bloom filter of the
    digests claimed (the core's, ``expected`` of them at ``SEEN_RATE``; 1.2 MB for a million)
    says so, and the last ``FLUSH`` claims wait in a dict, to be written together. The
    ``sqlite3`` module lets go of the GIL around each of SQLite's steps (~5 a claim), and the
    worker holding the map's lock then waits to get it back while the other workers' claims
    queue behind it: the Java API docs' crawl ×16 took 0.986 of the time without them (8 pairs
    A/B; the whole map, with its MD5s, is 6 % of that crawl: ``--keep-duplicates``, 0.938).

    If its disk fails (full, unwritable), the map is given up with one warning and the crawl
    goes on as with ``--keep-duplicates``: pages are never lost for it, and the memory stays
    flat (a map kept in memory instead would be the dict again). ``failure`` says why.
    After :meth:`close` (a straggler's page, the crawl over) a claim finds no holder.
    """

    def __init__(self, known: Iterable[tuple[str, str]] = (), temp_dir: str | None = None,
                 expected: int = 1_000_000) -> None:
        self._lock = threading.Lock()
        self._temp_dir = temp_dir
        self._scratch: ScratchDB | None = None  # made at the first use
        self._db: sqlite3.Connection | None = None
        self._closed = False
        self._count = 0
        self._seen = BloomFilter(capacity=expected, error_rate=SEEN_RATE)  # a "new" is sure
        self._held: dict[bytes, str] = {}  # the last claims, not yet in the file
        self.failure: str | None = None  # why the map was given up (its disk failed), if it was
        rows = iter(known)
        if (first := next(rows, None)) is not None:  # (no file for an empty state)
            def seen(rows: Iterable[tuple[str, str]]) -> Iterator[tuple[bytes, str]]:
                for digest, url in rows:
                    self._seen.add(digest)
                    yield bytes.fromhex(digest), url

            with self._lock:
                # In the state's key order, which is the bytes' order: appended, not scattered.
                self._count = self._write(lambda db: db.executemany(INSERT, seen(
                    itertools.chain([first], rows))).rowcount, 0)

    def claim(self, digest: str, url: str) -> str:
        """The URL holding ``digest``: ``url`` if it claims it first (one atomic step)."""
        key = bytes.fromhex(digest)
        with self._lock:
            if self._write(lambda db: db, None) is None:  # closed or given up: no holder
                return url
            if (held := self._held.get(key)) is not None:
                return held
            if not self._seen.add(digest):  # claimed before, or a false positive: the file says
                row = self._write(lambda db: db.execute(SELECT, (key,)).fetchone(), None)
                if row is not None:
                    return str(row[0])
                if self._db is None:  # given up as it was read
                    return url
            self._held[key] = url
            self._count += 1
            if len(self._held) >= FLUSH:
                self._flush()
            return url

    def holder(self, digest: str) -> str | None:
        """The URL holding ``digest``, or None if no page claimed it."""
        key = bytes.fromhex(digest)
        with self._lock:
            if self._db is None:  # nothing claimed yet, closed or given up
                return None
            if (held := self._held.get(key)) is not None:
                return held
            if digest not in self._seen:
                return None
            row = self._write(lambda db: db.execute(SELECT, (key,)).fetchone(), None)
        return None if row is None else str(row[0])

    def _flush(self) -> None:
        """Write the claims held to the file (lock held)."""
        held, self._held = self._held, {}
        self._write(lambda db: db.executemany(INSERT, held.items()), None)

    def __len__(self) -> int:
        return self._count

    @property
    def directory(self) -> Path | None:
        """The directory the map's file (which has no name) is in: None before the first claim,
        after :meth:`close` and once given up."""
        return self._scratch.directory if self._scratch is not None else None

    def size(self) -> int:
        """Bytes the map's file takes on disk now (0 before the first claim, and after
        :meth:`close`)."""
        with self._lock:
            if self._held and self._db is not None:  # (the claims held are the file's too)
                self._flush()
            return self._scratch.size() if self._scratch is not None else 0

    def close(self) -> None:
        """Close the file (the kernel frees it: it has no name); later claims find no holder."""
        with self._lock:
            self._close()

    def _write(self, step: Callable[[sqlite3.Connection], T], otherwise: T) -> T:
        """``step`` on the map (lock held); ``otherwise`` if it is closed or given up. A disk
        that fails (full, unwritable) gives the map up, said once: the crawl goes on as with
        ``--keep-duplicates`` (no page is lost, a duplicate is crawled) in flat memory."""
        try:
            db = self._open()
            return otherwise if db is None else step(db)
        except (sqlite3.Error, OSError) as e:
            where = scratch_directory(self._temp_dir)
            reason = e.strerror if isinstance(e, OSError) and e.strerror else str(e)
            self.failure = f"cannot keep the duplicate-content map in {where}: {reason}"
            log.warning("%s; duplicate content is no longer looked for", self.failure)
            self._close()
            return otherwise

    def _open(self) -> sqlite3.Connection | None:
        """The connection, opened with its file at the first use (lock held; None once
        closed or given up)."""
        if self._db is None and self.failure is None and not self._closed:
            self._scratch = ScratchDB(PREFIX, self._temp_dir, cache_kb=CACHE_KB)
            assert self._scratch.db is not None
            self._db = db = self._scratch.db
            # One transaction, never committed: pages reach the file only when the cache is full
            # and SQLite spills them, so a crawl of a few thousand pages writes nothing.
            db.execute("BEGIN")
            db.execute(SCHEMA)
        return self._db

    def _close(self) -> None:
        self._closed = True
        self._db = None
        self._held = {}
        if self._scratch is not None:
            scratch, self._scratch = self._scratch, None
            with contextlib.suppress(sqlite3.Error, OSError):  # (nothing in it to save)
                scratch.close()  # (the transaction is dropped with the file)


CLAIM_SCRIPT = """
-- KEYS: the digests hash; ARGV: digest, url.  The holder after the claim (first wins).
redis.call('HSETNX', KEYS[1], ARGV[1], ARGV[2])
return redis.call('HGET', KEYS[1], ARGV[1])
"""


class RedisDigests:
    """The digests of a shared crawl: the hash ``mc:{NAME}:digests`` (one round trip a page).

    ``HSETNX`` never overwrites, so a claim is idempotent: a retried call or a replay after a
    reclaim returns the same holder (no replay token needed).
    """

    def __init__(self, shared: SharedRedis) -> None:
        self.shared = shared
        self.key = shared.key("digests")

    def claim(self, digest: str, url: str) -> str:
        """The URL holding ``digest`` in the shared hash: ``url`` if it claims it first
        (``HSETNX``, atomic across processes)."""
        return str(self.shared.eval("claiming a content digest", CLAIM_SCRIPT, [self.key],
                                    [digest, url]))

    def holder(self, digest: str) -> str | None:
        """The URL holding ``digest`` in the shared hash, or None if no page claimed it."""
        return self.shared.call("reading a content digest",
                                lambda: self.shared.client.hget(self.key, digest))

    def __len__(self) -> int:
        return int(self.shared.call("counting content digests",
                                    lambda: self.shared.client.hlen(self.key)))


class Duplicates:
    """Decides, for each recorded page, whether it duplicates an earlier page's content, from a
    first-wins map digest → URL: ``claim(digest, url)`` the URL holding it (``url`` if first),
    ``holder(digest)`` the URL holding it or None."""

    def __init__(self, digests: LocalDigests | RedisDigests) -> None:
        self.digests = digests

    def check(self, page: Page, prior: Prior | None) -> str | None:
        """The URL first recorded with ``page``'s content if it is not ``page`` itself, else
        None. A complete 200 HTML body claims its digest (kept in ``page.digest`` for the
        state); an unchanged page without a body (a 304, a sitemap <lastmod>) is the body
        recorded last time, so its recorded digest is looked up (not claimed: it was then)."""
        if page.status == 200 and page.error is None and page.body \
                and is_html(page.content_type, page.body):
            page.digest = body_md5(page.body)
            holder: str | None = self.digests.claim(page.digest, page.url)
        elif not page.body and page.change == UNCHANGED and prior is not None and prior.md5:
            holder = self.digests.holder(prior.md5)
        else:
            return None
        return holder if holder != page.url else None

    def close(self) -> None:
        """Free this process's map (its scratch file goes); a shared crawl's hash stays."""
        if isinstance(self.digests, LocalDigests):
            self.digests.close()


def open_duplicates(options: Options, state: CrawlState | NoState,
                    shared: SharedRedis | None) -> Duplicates | None:
    """The duplicate check the options ask for (None with ``--keep-duplicates``)."""
    if options.keep_duplicates:
        return None
    if shared is not None:
        return Duplicates(RedisDigests(shared))
    return Duplicates(LocalDigests(state.digests(), expected=options.expected_urls))

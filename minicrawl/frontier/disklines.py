"""The cold end of a spilling ToDo: items on disk, one line per host, in the order they came.

One SQLite scratch file (:class:`minicrawl.frontier.scratch.ScratchDB`: unlinked as soon as it is
open, so nothing of it outlives the process). A row per item: its turn (``seq``, the primary key:
the order items were spilled in), its host's number, and the item. The index on
``(host, seq)`` lets :class:`minicrawl.frontier.disk.SpillingToDo` pull the oldest items of one
host (so every host with URLs on disk keeps one in memory, where politeness sees it) as cheaply
as the oldest items of all (the refill).

Why SQLite and not a disk-queue library (``queuelib``, Scrapy's ``JOBDIR``): a queuelib queue is
one FIFO (a file, or a chunk directory); per-host lines would be a queue per host — thousands of
files for a crawl of thousands of hosts — and its FIFO cannot hand out the oldest of all hosts.
SQLite keeps both orders in one file with one index, ships with Python, and is already how
``--state`` keeps the ToDo journal. Its throughput here is in :mod:`minicrawl.frontier.disk`.

Nothing here has to survive the process (no fsync); a crawl that must survive a
``kill -9`` has ``--state``, whose journal holds every URL in ToDo wherever it waits. If the disk
fails, :meth:`DiskLines.rest` reads back what it still can: the rows of the appends that
succeeded, not yet taken. A statement that fails is undone (the journal in memory), so a failed
append stored none of its rows (its caller still has them all) and a failed take took none.
"""

from __future__ import annotations

import itertools
import os
from collections.abc import Iterator, Sequence

from minicrawl.core.interfaces import Item
from minicrawl.frontier.scratch import ScratchDB

PREFIX = "minicrawl-todo-"  # the scratch file's name, for the moment it has one

SCHEMA = """
CREATE TABLE IF NOT EXISTS spill (
    seq INTEGER PRIMARY KEY, host INTEGER NOT NULL, url TEXT NOT NULL, depth INTEGER NOT NULL,
    referrer TEXT, attempt INTEGER NOT NULL, checked INTEGER NOT NULL);
CREATE INDEX IF NOT EXISTS spill_host ON spill (host, seq);
"""


class DiskLines:
    """Items in a scratch SQLite file under ``temp_dir`` (default: ``TMPDIR``): appended in
    order, taken oldest first, of all hosts or of one. Not thread-safe: the spilling ToDo calls
    it under its lock. Every method may raise ``OSError`` or ``sqlite3.Error`` (the disk)."""

    def __init__(self, temp_dir: str | os.PathLike[str] | None = None) -> None:
        # A 2 MB page cache: rows are appended at the tail and taken at the head, a small
        # working set (16 MB measured no faster, within the noise). The journal in memory: a
        # write that fails is undone, so the rows stored can still be read back (scratch.py).
        self._scratch = ScratchDB(PREFIX, temp_dir, cache_kb=2048, journal="MEMORY")
        self.directory = self._scratch.directory
        assert self._scratch.db is not None
        self._db = self._scratch.db
        try:
            self._db.executescript(SCHEMA)
        except BaseException:
            self._scratch.close()
            raise
        self._seq = itertools.count(1)
        self._stored = 0  # the last turn of an append that succeeded

    def append(self, rows: Sequence[tuple[int, Item]]) -> None:
        """Add ``(host number, item)`` rows at the tail, in their order."""
        numbered = [(next(self._seq), host, i.url, i.depth, i.referrer, i.attempt, i.check)
                    for host, i in rows]
        self._db.executemany("INSERT INTO spill VALUES (?, ?, ?, ?, ?, ?, ?)", numbered)
        if numbered:
            self._stored = numbered[-1][0]

    def oldest(self, n: int, host: int | None = None) -> list[tuple[int, Item]]:
        """Take the ``n`` oldest ``(host number, item)`` rows (of ``host`` only, if given) off
        the disk, oldest first."""
        columns = "SELECT seq, host, url, depth, referrer, attempt, checked FROM spill"
        rows = (self._db.execute(f"{columns} ORDER BY seq LIMIT ?", (n,)) if host is None else
                self._db.execute(f"{columns} WHERE host = ? ORDER BY seq LIMIT ?", (host, n))
                ).fetchall()
        if not rows:
            return []
        # The rows taken are exactly those (of the host) up to the last one's turn.
        if host is None:
            self._db.execute("DELETE FROM spill WHERE seq <= ?", (rows[-1][0],))
        else:
            self._db.execute("DELETE FROM spill WHERE host = ? AND seq <= ?",
                             (host, rows[-1][0]))
        return [(h, Item(url, depth, referrer, attempt, bool(checked)))
                for _, h, url, depth, referrer, attempt, checked in rows]

    def rest(self) -> Iterator[tuple[int, Item]]:
        """Every ``(host number, item)`` row still stored, oldest first, read in chunks (after a
        failure: a row of an append that failed half-way is not one, its items are still the
        caller's). Raises, part-way perhaps, if the file cannot be read."""
        rows = self._db.execute("SELECT host, url, depth, referrer, attempt, checked FROM spill "
                                "WHERE seq <= ? ORDER BY seq", (self._stored,))
        while chunk := rows.fetchmany(4096):
            for host, url, depth, referrer, attempt, checked in chunk:
                yield host, Item(url, depth, referrer, attempt, bool(checked))

    def size(self) -> int:
        """Bytes the file takes on disk now (0 once closed)."""
        return self._scratch.size()

    def close(self) -> None:
        """Close the database; the kernel frees the file (it has no name)."""
        self._scratch.close()

"""The cold end of a spilling ToDo: items on disk, one line per host, in the order they came.

One SQLite file in a directory of its own. A row per item: its turn (``seq``, the primary key:
the order items were spilled in), its host's number, and the item. The index on
``(host, seq)`` lets :class:`minicrawl.spill.todo.SpillingToDo` pull the oldest items of one
host (so every host with URLs on disk keeps one in memory, where politeness sees it) as cheaply
as the oldest items of all (the refill).

Why SQLite and not a disk-queue library (``queuelib``, Scrapy's ``JOBDIR``): a queuelib queue is
one FIFO (a file, or a chunk directory); per-host lines would be a queue per host — thousands of
files for a crawl of thousands of hosts — and its FIFO cannot hand out the oldest of all hosts.
SQLite keeps both orders in one file with one index, ships with Python, and is already how
``--state`` keeps the ToDo journal. Its throughput here is in :mod:`minicrawl.spill.todo`.

Nothing here has to survive the process: the file is a scratch file (no journal, no fsync),
removed with its directory at the end; a crawl that must survive a ``kill -9`` has ``--state``,
whose journal holds every URL in ToDo wherever it waits.
"""

from __future__ import annotations

import itertools
import os
import sqlite3
from collections.abc import Sequence
from pathlib import Path

from minicrawl.core.interfaces import Item

FILE_NAME = "todo-spill.db"

SCHEMA = """
CREATE TABLE IF NOT EXISTS spill (
    seq INTEGER PRIMARY KEY, host INTEGER NOT NULL, url TEXT NOT NULL, depth INTEGER NOT NULL,
    referrer TEXT, attempt INTEGER NOT NULL);
CREATE INDEX IF NOT EXISTS spill_host ON spill (host, seq);
"""


class DiskLines:
    """Items in a SQLite file under ``directory``: appended in order, taken oldest first, of
    all hosts or of one. Not thread-safe: the spilling ToDo calls it under its lock."""

    def __init__(self, directory: str | os.PathLike[str]) -> None:
        self.path = Path(directory) / FILE_NAME
        self._db = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False)
        # A scratch file: no rollback journal, no fsync (a crash loses it, and nothing needs
        # it then). A 2 MB page cache: rows are appended at the tail and taken at the head, a
        # small working set (16 MB measured no faster, within the noise).
        for pragma in ("journal_mode = OFF", "synchronous = OFF", "locking_mode = EXCLUSIVE",
                       "cache_size = -2048", "temp_store = MEMORY"):
            self._db.execute("PRAGMA " + pragma)
        self._db.executescript(SCHEMA)
        self._seq = itertools.count(1)

    def append(self, rows: Sequence[tuple[int, Item]]) -> None:
        """Add ``(host number, item)`` rows at the tail, in their order."""
        self._db.executemany(
            "INSERT INTO spill VALUES (?, ?, ?, ?, ?, ?)",
            [(next(self._seq), host, i.url, i.depth, i.referrer, i.attempt) for host, i in rows])

    def oldest(self, n: int, host: int | None = None) -> list[tuple[int, Item]]:
        """Take the ``n`` oldest ``(host number, item)`` rows (of ``host`` only, if given) off
        the disk, oldest first."""
        columns = "SELECT seq, host, url, depth, referrer, attempt FROM spill"
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
        return [(h, Item(url, depth, referrer, attempt))
                for _, h, url, depth, referrer, attempt in rows]

    def size(self) -> int:
        """Bytes the file takes on disk now."""
        try:
            return self.path.stat().st_size
        except OSError:
            return 0

    def close(self) -> None:
        """Close the database (the file stays: its owner removes the directory)."""
        self._db.close()

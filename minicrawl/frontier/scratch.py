"""Scratch files: where a crawl keeps on disk what it need not keep in memory.

One mechanism for every scratch file of a crawl — the spilling ToDo's cold end
(:mod:`minicrawl.frontier.disklines`) and the duplicate-content map
(:mod:`minicrawl.records.digests`): a SQLite database in a file made under ``temp_dir`` (default:
``TMPDIR``), opened, and **unlinked at once**. POSIX keeps an unlinked file while a descriptor of it
is open, so the database works as before, no directory lists it, and the kernel frees its blocks
when the last descriptor closes: at :meth:`ScratchDB.close`, or when the process ends however it
ends — a ``kill -9`` included. Nothing is left in ``TMPDIR`` to delete by hand: the endless tree of
``bench/tree.py`` crawled by
``run.py --max-pages 20000`` and killed after 25 s used to leave two directories and 9.95 MB (the
ToDo's file; a spilled crawl of a million pages, hundreds of MB per kill); now nothing. A
scratch file holds nothing that must outlive its process: a crawl that must survive a ``kill -9``
has ``--state``, whose journal holds every URL waiting in ToDo.

Why this works with SQLite: it opens the database file when it connects and never again by name;
with the rollback journal ``OFF`` or in ``MEMORY``, ``temp_store = MEMORY`` (temporary tables
and statement journals in memory) and ``locking_mode = EXCLUSIVE`` it opens no other file — no
``-journal``, ``-wal`` or ``-shm`` that would need the name. Checked during a spilled crawl:
``/proc/<pid>/fd`` lists exactly two descriptors of each scratch file, SQLite's and the one kept
here, both ``… (deleted)``, and no other file of the crawl (``tests/test_spill_crawl.py``).

Why not SQLite's own nameless temporary database (``sqlite3.connect("")``, also on disk and
unlinked by SQLite): measured the same (1,000,000 items of the spill's rows: 4.8-4.9 µs an item
put and 0.9-1.1 µs taken, against 5.7-6.3 and 0.9-1.0 µs here, at load 16-23), but SQLite picks
its directory itself: ``SQLITE_TMPDIR`` or ``TMPDIR`` read once per process, else ``/var/tmp``
before ``/tmp``, and when the one named is missing or unwritable it silently takes the next. Here
the file goes where the user said (``TMPDIR``, or the owner's ``temp_dir``), and if it cannot,
the owner says so in one line; and the descriptor kept gives the file's size (``fstat``) for the
disk used that ``--stats`` reports.

The journal: ``OFF`` writes least, but a write that fails half-way (a full disk) leaves the file
unreadable — SQLite cannot undo the pages it wrote ("database disk image is malformed" at the next
read, measured with a file size limit). ``MEMORY`` keeps each transaction's original pages in
memory and writes them back when it fails, so the file stays whole and readable (``integrity_check``
ok, every committed row there); it costs ~1 µs an item put in the spilling ToDo (5.7-5.9 → 6.7-6.8
µs, load 24), which reads its items back when the disk fails. The duplicate-content map keeps one
transaction open for the whole crawl (a memory journal would grow with it) and gives up when its
disk fails: ``OFF``.

The name is ``prefix…`` + ``.db`` (``mkstemp``: created exclusively, mode 0600); between its
creation and its unlinking only SQLite's ``connect`` and five pragmas run, microseconds.
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
import tempfile
import weakref
from pathlib import Path

# A scratch file: no fsync (nothing needs the file after the process), no other file opened
# (see above), and the lock held from the first statement to the close.
PRAGMAS = ("synchronous = OFF", "locking_mode = EXCLUSIVE", "temp_store = MEMORY")


def scratch_directory(temp_dir: str | os.PathLike[str] | None = None) -> Path:
    """Where scratch files go: ``temp_dir`` if given, else ``TMPDIR`` as set (even if it is
    unusable: the user named it, and is told — ``tempfile`` would silently take ``/tmp``), else
    the system's temporary directory."""
    chosen = temp_dir or os.environ.get("TMPDIR")
    if not chosen:
        try:
            chosen = tempfile.gettempdir()
        except OSError:  # none usable: the file's creation fails there, and says so
            chosen = os.path.join(os.sep, "tmp")
    return Path(os.path.abspath(chosen))


class ScratchDB:
    """A SQLite connection (``db``) to a file under ``temp_dir`` that no directory lists: made,
    opened and unlinked here, freed when :meth:`close` (or the process's end) closes it.
    ``journal`` is the rollback journal's mode, ``OFF`` or ``MEMORY`` (see above).

    Raises ``OSError`` or ``sqlite3.Error`` if the file cannot be made or opened (the directory
    missing, not a directory, unwritable, the disk full): its owner says so and does without.
    Not thread-safe: its owner calls it under its own lock.
    """

    def __init__(self, prefix: str, temp_dir: str | os.PathLike[str] | None = None,
                 cache_kb: int = 2048, journal: str = "OFF") -> None:
        if journal not in ("OFF", "MEMORY"):  # (any other opens a file by the name)
            raise ValueError(f"a scratch file's journal is OFF or MEMORY, not {journal!r}")
        self.directory = scratch_directory(temp_dir)
        fd, path = tempfile.mkstemp(prefix=prefix, suffix=".db", dir=self.directory)
        try:
            db = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
            try:
                for pragma in (f"journal_mode = {journal}", *PRAGMAS,
                               f"cache_size = -{cache_kb}"):
                    db.execute("PRAGMA " + pragma)
                os.unlink(path)  # SQLite holds the file open: from now on it has no name
            except BaseException:
                db.close()
                raise
        except BaseException:
            os.close(fd)  # (after SQLite's: closing a descriptor drops the file's locks)
            with contextlib.suppress(OSError):
                os.unlink(path)
            raise
        self.db: sqlite3.Connection | None = db
        self._fd: int | None = fd  # the same file: its size, whatever SQLite has written
        # Closed when its owner forgets to (collected), or at the interpreter's exit: a library
        # user's unclosed ToDo does not hold the file's disk for the process's life.
        self._closing = weakref.finalize(self, _close, db, fd)

    def size(self) -> int:
        """Bytes the file takes now (0 once closed)."""
        if self._fd is None:
            return 0
        try:
            return os.fstat(self._fd).st_size
        except OSError:
            return 0

    def close(self) -> None:
        """Close the database and the file, whose blocks the kernel then frees (once)."""
        self.db = self._fd = None
        self._closing()


class LazyScratch:
    """A :class:`ScratchDB` with the tables of ``schema``, made when first asked for (an
    observer that is told nothing makes no file), closed once, whatever closing it raises (its
    end only frees its disk). The scratch file of the ``--links`` join, its broken links, and
    ``links_in``'s counts. Not thread-safe, as ``ScratchDB``: its owner holds its own lock."""

    def __init__(self, prefix: str, schema: str,
                 temp_dir: str | os.PathLike[str] | None = None) -> None:
        self.prefix, self.schema, self.temp_dir = prefix, schema, temp_dir
        self._scratch: ScratchDB | None = None

    @property
    def opened(self) -> sqlite3.Connection | None:
        """The connection if the file was made and is not closed yet, else None."""
        return None if self._scratch is None else self._scratch.db

    def db(self) -> sqlite3.Connection:
        """The connection, the file made (with its tables) at the first call. Raises as
        :class:`ScratchDB` does if it cannot be made."""
        if self._scratch is None:
            self._scratch = ScratchDB(self.prefix, self.temp_dir, journal="MEMORY")
            assert self._scratch.db is not None
            self._scratch.db.executescript(self.schema)
        assert self._scratch.db is not None
        return self._scratch.db

    def close(self) -> None:
        """Close the file, if made (again: nothing); a failure to close is no failure of its
        owner's (the kernel frees the file's blocks with the process at the latest)."""
        if self._scratch is not None:
            scratch, self._scratch = self._scratch, None
            with contextlib.suppress(sqlite3.Error, OSError):
                scratch.close()


def _close(db: sqlite3.Connection, fd: int) -> None:
    try:
        db.close()
    finally:
        os.close(fd)  # (after SQLite's: closing a descriptor drops the file's locks)

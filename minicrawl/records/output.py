"""The ``--out`` file: one JSON line per page record (a CSV line, under a header, for a file
named ``….csv``: :mod:`minicrawl.records.csvlines`), and how it stays complete under ``kill -9``.

:class:`Output` is the file, a :class:`~minicrawl.events.CrawlObserver` (it hears each recorded
page and closes the file when the crawl is over). How its lines get there depends on the crawl:

* **one process, no state**: the crawler writes each record, buffered; the buffer is flushed at
  the end (a ``kill -9`` loses it, but then nothing can be resumed either);
* **shared crawl** (``--redis``): each line is flushed to the OS before :meth:`Output.write`
  returns, so before the worker acknowledges the page in Redis. A process killed before the
  flush has not acknowledged the page: another process reclaims it and writes it. A process
  joining a crawl already under way continues its file (a restarted process keeps its lines);
* **with a state** (``--state``): the state's writer thread writes the lines, after each commit,
  through :class:`Outbox` — see the argument in :mod:`minicrawl.state.store` (point 4).

Each line carries ``seq``: with a state, the sequence number of the commit that recorded the page
(also in the database's ``pages.seq``); else null. The state's outbox keeps JSON lines, which a
CSV file is given as CSV lines (:meth:`Output.write_lines`); reading a file's last lines back
(:func:`keys_at_end`) knows both.
"""

from __future__ import annotations

import csv
import json
import logging
import os
import stat
import threading
from collections.abc import Callable, Iterable, Mapping
from contextlib import AbstractContextManager
from typing import IO, TYPE_CHECKING

from minicrawl.cli.outpaths import cannot_write, is_stdout, open_output, silence_stdout
from minicrawl.events import CrawlObserver
from minicrawl.page import PageRecord, record
from minicrawl.records.csvlines import csv_fields, csv_line, header, is_csv
from minicrawl.redact import redact

if TYPE_CHECKING:
    import sqlite3

    from minicrawl.page import Page
    from minicrawl.stats import StatsSnapshot

log = logging.getLogger("minicrawl")

Key = tuple[str, int]  # (url, seq): one record of the state, one line of --out

OUTBOX_SCHEMA = """
CREATE TABLE IF NOT EXISTS outbox (
    seq INTEGER NOT NULL, url TEXT NOT NULL, line TEXT NOT NULL, PRIMARY KEY (seq, url))
"""


# A CSV --out file's columns: every field a record may have (sitemap, noindex, check false when
# absent), then seq.
COLUMNS = (*PageRecord.__annotations__, "seq")
_ABSENT = {"sitemap": False, "noindex": False, "check": False}


def record_line(record: PageRecord, seq: int | None = None) -> str:
    """The ``--out`` line (without its newline) for a page's ``record``: a URL's password
    shown as ``***`` (a seed's are taken out when the crawl starts; a page's links may hold one)."""
    return redact(json.dumps({**record, "seq": seq}, ensure_ascii=False))


def csv_record_line(fields: Mapping[str, object],
                    columns: tuple[str, ...] = COLUMNS) -> str:
    """The CSV ``--out`` line for a record's ``fields`` (with its ``seq``), in ``columns``."""
    return redact(csv_line(fields.get(name, _ABSENT.get(name)) for name in columns))


def file_columns(path: str) -> tuple[str, ...]:
    """The columns of the CSV ``--out`` file at ``path``: its header's, if it is one of ours
    (a file an earlier version began, before a column was added, goes on in its own: one width
    a file), else ``COLUMNS``."""
    try:
        with open(path, encoding="utf-8", newline="") as f:
            names = tuple(csv_fields(f.readline().rstrip("\r\n")))
    except (OSError, UnicodeDecodeError, csv.Error):
        return COLUMNS
    if names and names[0] == "url" and names[-1] == "seq" and set(names) <= set(COLUMNS):
        return names
    return COLUMNS


class Output(CrawlObserver):
    """The ``--out`` file at ``path``: new, or ``continued`` after its last complete line.

    ``flush_each``: every :meth:`write` reaches the OS before it returns (a shared crawl).
    Thread-safe; writes after :meth:`close` are dropped (a worker outliving a Ctrl-C's grace).
    ``by_state``: a state's writer writes the lines (:meth:`CrawlState.attach_output`), not
    :meth:`on_page`.
    """

    flag = "--out"

    def __init__(self, path: str | os.PathLike[str], *, continued: bool = False,
                 flush_each: bool = False, on_failure: Callable[[], None] | None = None) -> None:
        self.path = os.fspath(path)
        self.real_path = os.path.realpath(path)  # the same file under any name (the outbox's)
        self.to_stdout = is_stdout(self.path)  # "-", /dev/stdout: never cut, never truncated
        if continued and not self.to_stdout:
            cut_torn_line(self.path)
        self._file = open_output(self.path, "a" if continued else "w")
        self.csv = is_csv(self.path)
        self.regular = not self.to_stdout and _regular(self.real_path)  # (not a device, a pipe)
        self.columns = file_columns(self.path) if self.csv and continued \
            and not self.to_stdout else COLUMNS
        if self.csv and not _has_lines(self._file):  # a new file (or an empty one): its header
            self._file.write(header(COLUMNS) + "\n")
        self._flush_each = flush_each
        self._lock = threading.Lock()
        self.by_state = False
        self._on_failure = on_failure  # the crawl's stop: further pages would be lost
        self.failed = False  # a write failed (a full disk): told in one line, the crawl stopped

    def on_page(self, page: Page) -> None:
        # With a state its writer writes the pages' lines; a sitemap file is no page of the
        # state (read again by each run), so its record is written here.
        if not self.by_state or page.sitemap:
            self.write(record(page))

    def crawl_finished(self, stats: StatsSnapshot) -> None:
        self.close()  # after the state's crawl_finished: its writer is done with the file

    def write(self, record: PageRecord) -> None:
        """Write one page's record (no ``seq``: without a state)."""
        line = csv_record_line({**record, "seq": None}, self.columns) if self.csv \
            else record_line(record)
        with self._lock:
            if self._file.closed:
                return
            try:
                self._file.write(line + "\n")
                if self._flush_each:
                    self._file.flush()
            except OSError as e:
                self._fail(e)

    def write_lines(self, lines: Iterable[str]) -> None:
        """Write complete lines (JSON lines: the state's outbox keeps them so; a CSV file gets
        them as CSV lines) and flush them to the OS before returning."""
        if self.csv:
            lines = [csv_record_line(json.loads(line), self.columns) for line in lines]
        with self._lock:
            if self._file.closed:
                raise OSError(f"{self.path} is closed")
            self._file.write("".join(line + "\n" for line in lines))
            self._file.flush()

    def close(self) -> None:
        """Close the file, flushing its last lines; a failure (a full disk) is told once
        and stops the crawl."""
        with self._lock:
            try:
                self._file.close()  # flushes the last lines: may meet a full disk
            except OSError as e:
                self._fail(e)

    def _fail(self, error: OSError) -> None:
        """Say once that the file cannot be written and stop the crawl (with ``--state`` a
        rerun resumes it). Holds ``_lock``."""
        if self.to_stdout and isinstance(error, BrokenPipeError):  # `| head`: the reader has
            silence_stdout()  # all it wanted; the crawl stops as a Unix filter would, no error
        elif not self.failed:
            log.error("%s; the crawl stops", cannot_write(self.flag, self.path, error))
            self.failed = True
            if self.to_stdout:  # > /dev/full: the summary would fail the same way
                silence_stdout()
        try:
            self._file.close()
        except OSError:  # the same error again, on the buffer it could not flush
            pass
        if self._on_failure is not None:
            self._on_failure()


def cut_torn_line(path: str) -> None:
    """Remove a torn last line (a process killed mid-write) from the file at ``path``, if any.

    The page of a torn line is always written again elsewhere: with a state it is still in the
    outbox; in a shared crawl it was not acknowledged.
    """
    if not os.path.isfile(path):
        return  # none yet, or not a file (a pipe: nothing to cut, nothing to read back)
    with open(path, "r+b") as f:
        end = f.seek(0, os.SEEK_END)
        start = end
        while start > 0:  # back to the last newline
            start = max(0, start - 65536)
            f.seek(start)
            chunk = f.read(min(65536, end - start))
            if start + len(chunk) == end and chunk.endswith(b"\n"):
                return  # ends with a complete line
            cut = chunk.rfind(b"\n")
            if cut >= 0:
                f.truncate(start + cut + 1)
                return
        f.truncate(0)  # one torn line and nothing else


def keys_at_end(path: str, keys: set[Key]) -> set[Key]:
    """The records among ``keys`` whose lines are the last lines of ``path``: read backwards
    until a line that is not one of them (or the start). Cuts a torn last line first."""
    found: set[Key] = set()
    if not keys:
        return found
    cut_torn_line(path)
    if not os.path.isfile(path):
        return found
    width = len(file_columns(path))  # (a CSV file's lines: of its header's width)
    with open(path, "rb") as f:
        pos = f.seek(0, os.SEEK_END)
        head = b""  # bytes before the lines already read; its first line may be incomplete
        while pos > 0 and len(found) < len(keys):
            step = min(65536, pos)
            pos -= step
            f.seek(pos)
            lines = (f.read(step) + head).split(b"\n")
            head = lines.pop(0) if pos > 0 else b""
            for raw in reversed(lines):
                if not raw:
                    continue
                key = _key(raw, width)
                if key not in keys:
                    return found
                found.add(key)
    return found


def _key(raw: bytes, width: int = len(COLUMNS)) -> Key | None:
    try:
        if raw.startswith(b"{"):
            record = json.loads(raw)
            return record["url"], record["seq"]
        fields = csv_fields(raw.decode("utf-8"))  # a CSV --out file's line, ``width`` fields
        return (fields[0], int(fields[-1])) if len(fields) == width else None
    except (ValueError, KeyError, TypeError, IndexError):
        return None  # not a line of ours: the records before it are not the outbox's


def _regular(path: str) -> bool:
    try:
        return stat.S_ISREG(os.stat(path).st_mode)
    except OSError:
        return False


def _has_lines(file: IO[str]) -> bool:
    """The file just opened (for writing, or appending: at its end) has something in it."""
    try:
        return file.tell() > 0
    except OSError:  # a pipe: nothing was written to it by us
        return False


class Outbox:
    """The state's side of ``--out``: the ``outbox`` table of records committed but not yet known
    to be in a file, and the meta ``out_path`` naming the file their lines may have reached.

    :class:`minicrawl.state.store.CrawlState` calls :meth:`attach` as the crawl starts (the resume),
    :meth:`stage` inside each commit, :meth:`written` after it and :meth:`settle` at the end,
    all under its write lock. ``transaction`` opens one transaction on ``db`` (``with`` it
    gives ``db``).
    """

    def __init__(
            self, db: sqlite3.Connection,
            transaction: Callable[[], AbstractContextManager[sqlite3.Connection]]) -> None:
        self._db = db
        self._transaction = transaction
        db.execute(OUTBOX_SCHEMA)  # states made before the outbox existed get it now
        self.output: Output | None = None
        # Once a crawl has had an --out, a run without one keeps its records for the next.
        self._keep = db.execute("SELECT 1 FROM meta WHERE key = 'out_path'").fetchone() is not None
        self._flushed = 0  # every outbox row with seq <= this has its line in the file
        self._settled = 0  # ...and the rows up to this one are deleted

    def attach(self, output: Output) -> int:
        """Write the lines of the records earlier runs committed but did not write (or whose
        writing was not known to be done) to ``output``; from now on :meth:`stage` fills it.
        Returns how many lines were written."""
        db = self._db
        pending = {(url, seq): line for seq, url, line in db.execute(
            "SELECT seq, url, line FROM outbox ORDER BY seq, rowid")}
        row = db.execute("SELECT value FROM meta WHERE key = 'out_path'").fetchone()
        # The lines that reached the last run's file are its last lines: they are written.
        # (A line shows its URL redacted: the file's keys are the redacted ones.)
        shown = {(redact(url), seq): (url, seq) for url, seq in pending}
        done = {shown[key] for key in keys_at_end(row[0], set(shown))} \
            if row and pending else set()
        with self._transaction():
            db.executemany("DELETE FROM outbox WHERE url = ? AND seq = ?", done)
            db.execute("INSERT OR REPLACE INTO meta VALUES ('out_path', ?)",
                       (output.real_path,))
        # Only now: until out_path names this file, no outbox line may be in it.
        todo = [(key, line) for key, line in pending.items() if key not in done]
        if todo:
            output.write_lines(line for _, line in todo)
            with self._transaction():
                db.executemany("DELETE FROM outbox WHERE url = ? AND seq = ?",
                               [key for key, _ in todo])
        self.output = output
        return len(todo)

    @property
    def output_path(self) -> str | None:
        """The path of the attached ``--out`` file, or None before ``attach``."""
        return self.output.path if self.output is not None else None

    def stage(self, seq: int, pages: list[Page]) -> list[str]:
        """Inside the commit ``seq``: store the lines of its ``pages`` (returned, for
        :meth:`written`) and drop the rows whose lines are in the file."""
        if self.output is None and not self._keep:
            return []
        db = self._db
        if self._flushed > self._settled:
            db.execute("DELETE FROM outbox WHERE seq <= ?", (self._flushed,))
            self._settled = self._flushed
        lines = [record_line(record(page), seq) for page in pages]
        db.executemany("INSERT OR REPLACE INTO outbox (seq, url, line) VALUES (?, ?, ?)",
                       [(seq, page.url, line) for page, line in zip(pages, lines, strict=True)])
        return lines

    def written(self, seq: int, lines: list[str]) -> None:
        """After the commit ``seq``: its lines to the file, flushed to the OS."""
        if self.output is None:
            return  # kept in the outbox for the next run with an --out
        if lines:
            self.output.write_lines(lines)
        self._flushed = seq

    def settle(self) -> None:
        """At the end: drop the rows whose lines are in the file."""
        if self.output is not None and self._flushed > self._settled:
            with self._transaction():
                self._db.execute("DELETE FROM outbox WHERE seq <= ?", (self._flushed,))
            self._settled = self._flushed

"""The WARC archive of a crawl (``--warc FILE.warc.gz``): every fetch, robots.txt included.

:class:`WarcArchive` hears each finished fetch from the workers' fetchers
(``Fetcher(on_exchange=archive.exchange)``) and each recorded page (:meth:`WarcArchive.page`),
and hands the records to ONE writer thread through a queue: workers never touch the file, and
wait only when more than ``QUEUE_BYTES`` of bodies are waiting to be written (a disk slower than
the crawl). The writer writes each record pair with one ``write`` call straight to the file (no
user-space buffer), so a crawl killed with ``kill -9`` leaves a file of complete gzip members,
bar the one being written; with ``--state`` the next run cuts that partial last member
(:func:`cut_partial_record`) and goes on in the same file.

Files roll over at ``--warc-max-size``: ``crawl.warc.gz`` is written as ``crawl-00000.warc.gz``,
``crawl-00001.warc.gz``, … each starting with its own ``warcinfo`` record and never larger than
the limit unless one fetch alone is. ``--warc-max-size 0`` writes the one file named.

A 200 answer is held back (one per worker, until that worker's page is recorded or it fetches
again), so that a page the crawl records as a duplicate of another (``page.duplicate_of``) is
archived as a ``revisit`` of the first, not as a second copy. A fetch that got no status line
(connection refused, timeout before the answer) has nothing to archive and is counted in
``warc_no_response``.
"""

from __future__ import annotations

import io
import logging
import os
import queue
import re
import threading
import time
import zlib
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, BinaryIO

from minicrawl.core.interfaces import Response
from minicrawl.core.links import is_html  # the core's rule of what is HTML
from minicrawl.events import CrawlObserver
from minicrawl.http.fetch import Wire
from minicrawl.options import Options
from minicrawl.records.warcrecords import Exchange, RecordMaker, record_id, warc_date
from minicrawl.redact import wire_url
from minicrawl.stats import StatsSnapshot

if TYPE_CHECKING:
    from minicrawl.core.interfaces import Item
    from minicrawl.page import Page

log = logging.getLogger("minicrawl")

QUEUE_BYTES = 32 * 1024 * 1024  # bodies waiting for the writer before workers wait for it
FIRST_COPIES = 100_000  # HTML pages remembered for the revisit records of their duplicates
SUFFIX = ".warc.gz"
TAIL_BLOCK = 1 << 20  # the resume cut reads the file backwards this much at a time
_GZIP_MAGIC = b"\x1f\x8b\x08"


class WarcArchive(CrawlObserver):
    """Archives a crawl's fetches into ``options.warc`` (see the module docstring).

    ``resume``: continue the last file of an earlier run (cutting a partial last record) instead
    of starting over. The file is opened here (``ValueError`` naming ``--warc`` if it cannot
    be); ``start()`` starts the writer; ``close()`` writes what is left and returns the
    ``warc_*`` stats. As an observer of the crawl it starts at ``crawl_started``, hears each
    page at ``page_kept`` and closes at ``crawl_finished``, adding its ``warc_*`` counters to
    the final stats (the dict ``run()`` returns and ``--stats`` writes).
    """

    def __init__(self, options: Options, seeds: list[str], resume: bool = False) -> None:
        self.path = os.fspath(options.warc or "")
        self.max_size = options.warc_max_size
        self._info = {
            "robots": "ignore" if options.ignore_robots else "classic",
            "http-header-user-agent": options.user_agent,
            "description": f"minicrawl crawl of {len(seeds)} seed(s): "  # as requested
                           + " ".join(map(wire_url, seeds[:3]))
                           + (" …" if len(seeds) > 3 else ""),
        }
        self._maker = RecordMaker()
        self._queue: queue.SimpleQueue[tuple[Exchange, int] | None] = queue.SimpleQueue()
        self._room = threading.Condition()
        self._queued = 0  # body bytes in the queue
        self._held: dict[int, Exchange] = {}  # worker thread → its 200 answer held back
        # HTML pages archived, by page URL: (URI of the response record, its date, its ID)
        self._firsts: OrderedDict[str, tuple[str, str, str]] = OrderedDict()
        self._firsts_lock = threading.Lock()
        self._closed = False
        self.failure: str | None = None  # the writer's error: the archive stopped
        self.stats: dict[str, int] = {}
        self._stats_lock = threading.Lock()
        self._file: io.FileIO  # the file being written: opened by _open_first, below
        self._index, self._size, self._warcinfo_id = 0, 0, ""
        try:
            self._open_first(resume)
        except OSError as e:
            raise ValueError(f"--warc {self.path}: cannot write it ({e.strerror or e})") from None
        self._thread = threading.Thread(target=self._write_all, name="warc-writer", daemon=True)

    def start(self) -> WarcArchive:
        """Start the writer thread."""
        self._thread.start()
        return self

    # -- the crawl's points (minicrawl.events) --------------------------------------------------

    def crawl_started(self) -> None:
        self.start()

    def page_kept(self, page: Page, new: Sequence[Item]) -> None:
        self.page(page)

    def crawl_finished(self, stats: StatsSnapshot) -> None:
        """The crawl is over: write the rest and close (:meth:`close`), adding the ``warc_*``
        counters to the crawl's final ``stats``."""
        for name, n in self.close().items():
            before = stats.get(name, 0)
            if not isinstance(before, int):
                raise TypeError(f"stats[{name!r}] is {before!r}, not a count")
            stats[name] = before + n

    # -- called by workers ---------------------------------------------------------------------

    def exchange(self, response: Response, wire: Wire | None) -> None:
        """A fetch has ended (the ``Fetcher`` hook: the answer, and its request and status line
        as on the wire): archive it, or hold a 200 answer back until its page is recorded."""
        if response.status is None:
            self._count(warc_no_response=1)
            return
        if self._closed:  # a worker still fetching after the crawl gave up waiting for it
            self._count(warc_dropped_after_close=1)
            return
        started = time.time() - response.elapsed
        exchange = Exchange(response, wire, warc_date(started), record_id())
        me = threading.get_ident()
        held = self._held.pop(me, None)
        if held is not None:  # this worker fetched again without recording a page
            self._put(held)
        if response.status == 200 and not response.error:
            self._held[me] = exchange
            content_type = response.headers.get("content-type")
            if is_html(content_type, response.body):  # maybe a duplicate's first copy
                self._remember(response.url, exchange)
        else:
            self._put(exchange)

    def page(self, page: Page) -> None:
        """A page is recorded: archive the answer held back for it, as a ``revisit`` if the
        page is a duplicate (``page.duplicate_of``) of one recorded earlier."""
        held = self._held.pop(threading.get_ident(), None)
        if held is None:
            return
        first = getattr(page, "duplicate_of", None)
        if first and held.response.url == page.final_url:
            with self._firsts_lock:
                refers_to = self._firsts.get(first, (first, None, None))
            held = replace(held, refers_to=refers_to)
        elif page.url != held.response.url \
                and is_html(held.response.headers.get("content-type"), held.response.body):
            self._remember(page.url, held)  # a duplicate names the URL its chain started at
        self._put(held)

    def _remember(self, url: str, exchange: Exchange) -> None:
        with self._firsts_lock:
            self._firsts[url] = (exchange.response.url, exchange.date, exchange.response_id)
            if len(self._firsts) > FIRST_COPIES:
                self._firsts.popitem(last=False)

    def close(self) -> dict[str, int]:
        """Write what is held and queued, close the file; the ``warc_*`` counters."""
        if not self._closed:
            self._closed = True
            for held in list(self._held.values()):
                self._put(held, force=True)
            self._held.clear()
            self._queue.put(None)
            # Never started (the crawl never ran). Not is_alive(): a writer that already took
            # the None above and ended is not alive either, and starting it again would raise.
            if self._thread.ident is None:
                self._thread.start()
            self._thread.join()
        return dict(self.stats)

    # -- the writer thread ---------------------------------------------------------------------

    def _put(self, exchange: Exchange, force: bool = False) -> None:
        if self._closed and not force:
            self._count(warc_dropped_after_close=1)
            return
        size = len(exchange.response.body)
        with self._room:  # wait only while the writer is far behind
            if self._queued and self._queued + size > QUEUE_BYTES:
                self._count(warc_writer_waits=1)  # the disk (or the compression) is slower
            while self._queued and self._queued + size > QUEUE_BYTES and self.failure is None:
                self._room.wait(1.0)
            self._queued += size
        self._queue.put((exchange, size))

    def _write_all(self) -> None:
        try:
            self._write_warcinfo()
        except OSError as e:
            self._fail(e)
        while (item := self._queue.get()) is not None:
            exchange, size = item
            try:
                if self.failure is None:
                    self._write(exchange)
            except Exception as e:  # disk full, file removed: the crawl goes on, unarchived
                self._fail(e)
            finally:
                with self._room:
                    self._queued -= size
                    self._room.notify_all()
        self._file.close()

    def _fail(self, e: Exception) -> None:
        self.failure = f"{type(e).__name__}: {e}"
        log.error("WARC archive stopped: %s (the crawl goes on without it)", self.failure)
        self._count(warc_errors=1)

    def _write(self, exchange: Exchange) -> None:
        data = self._maker.exchange(exchange, self._warcinfo_id)
        if (self.max_size and self._size > self._info_size
                and self._size + len(data) > self.max_size):
            self._roll()
            data = self._maker.exchange(exchange, self._warcinfo_id)  # names the new warcinfo
        self._append(data)
        revisit = exchange.response.status == 304 or exchange.refers_to is not None
        self._count(warc_records=2, **{"warc_revisits" if revisit else "warc_responses": 1})

    # -- files ---------------------------------------------------------------------------------

    def file_name(self, index: int) -> str:
        """The path of file number ``index`` (the path as given with ``--warc-max-size 0``)."""
        return rolled_name(self.path, index) if self.max_size else self.path

    def _open_first(self, resume: bool) -> None:
        if resume:  # go on in the newest file, after its last complete record
            while self.max_size and os.path.exists(self.file_name(self._index + 1)):
                self._index += 1
            if os.path.exists(self.file_name(self._index)):
                cut = cut_partial_record(self.file_name(self._index))
                if cut:
                    log.warning("%s: cut a partial last record (%d bytes) left by the "
                                "previous run", self.file_name(self._index), cut)
                    self._count(warc_partial_cut=1)
        else:  # a new archive: files of an earlier one with this name would mix in
            index = 1
            while self.max_size and os.path.exists(self.file_name(index)):
                os.remove(self.file_name(index))
                index += 1
            if os.path.exists(self.file_name(0)):
                os.remove(self.file_name(0))
        self._open_file()

    def _roll(self) -> None:
        self._file.close()
        self._index += 1
        self._open_file()
        self._write_warcinfo()

    def _open_file(self) -> None:
        self._file = open(self.file_name(self._index), "ab", buffering=0)  # noqa: SIM115
        self._size = self._file.seek(0, os.SEEK_END)

    def _write_warcinfo(self) -> None:
        name = os.path.basename(self.file_name(self._index))
        self._warcinfo_id, data = self._maker.warcinfo(name, self._info)
        # A file holding no more than this holds no fetch: it takes the next one, however large
        # (a file continued after a resume holds the earlier run's: it may roll over at once).
        self._info_size = self._size + len(data) if self._size == 0 else 0
        self._append(data)
        self._count(warc_files=1, warc_records=1)

    def _append(self, data: bytes) -> None:
        view = memoryview(data)
        try:
            while view:  # an unbuffered write may be partial
                view = view[self._file.write(view):]
        except OSError:  # disk full: leave the file ending with a complete record
            try:
                self._file.truncate(self._size)
            except OSError:
                pass  # the resume cut will do it
            raise
        self._size += len(data)
        self._count(warc_bytes=len(data))

    def _count(self, **counts: int) -> None:
        with self._stats_lock:  # workers count too (warc_no_response)
            for name, n in counts.items():
                self.stats[name] = self.stats.get(name, 0) + n


def rolled_name(path: str, index: int) -> str:
    """The name of file number ``index`` of ``--warc path`` when it rolls over:
    ``crawl.warc.gz`` → ``crawl-00003.warc.gz``."""
    return f"{path[: -len(SUFFIX)]}-{index:05d}{SUFFIX}"


def cut_partial_record(path: str) -> int:
    """Truncate ``path`` after its last complete gzip member holding a WARC record; return how
    many bytes were cut (0: the file ended with a complete record).

    Reads backwards from the end for gzip headers and inflates from each candidate, so it costs
    the last record or two, not the whole file. A candidate counts only if it inflates to data
    starting ``WARC/``: the header bytes may also occur inside compressed data.
    """
    with open(path, "r+b") as f:
        size = f.seek(0, os.SEEK_END)
        end = size
        while end > 0:
            start = max(0, end - TAIL_BLOCK)
            f.seek(start)
            block = f.read(end - start + len(_GZIP_MAGIC) - 1)  # a header across the seam
            for match in reversed(list(re.finditer(re.escape(_GZIP_MAGIC), block))):
                offset = start + match.start()
                if offset >= end:
                    continue  # in the seam: tried with the block after this one
                member_end = _member_end(f, offset, size)
                if member_end is None:
                    continue  # not a record's start (or a record cut short: look further back)
                f.truncate(member_end)
                return size - member_end
            end = start
        f.truncate(0)  # not one complete record
        return size


def _member_end(f: BinaryIO, offset: int, size: int) -> int | None:
    """Where the gzip member at ``offset`` ends, if it is complete and holds a WARC record."""
    inflater = zlib.decompressobj(16 + zlib.MAX_WBITS)
    f.seek(offset)
    position, head = offset, b""
    try:
        while not inflater.eof:
            data = f.read(64 * 1024)
            if not data:
                return None  # the file ends inside this member
            position += len(data)
            while data and not inflater.eof:  # bounded output per step; only its head is kept
                out = inflater.decompress(data, 1 << 16)
                if len(head) < 5:
                    head += out[: 5 - len(head)]
                    if len(head) == 5 and head != b"WARC/":
                        return None
                data = inflater.unconsumed_tail
    except zlib.error:
        return None
    if head != b"WARC/":
        return None
    return position - len(inflater.unused_data)

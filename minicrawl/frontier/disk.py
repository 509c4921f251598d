"""A ToDo that keeps at most ``--frontier-memory`` MB in memory and the rest on disk.

:class:`SpillingToDo` is the polite ToDo (:mod:`minicrawl.frontier.todo`) with a cold end
added around it — composition: every item handed out, put back, delayed or finished goes through
the polite ToDo, unchanged; this module only decides *when* an item enters it. An item that would
take the memory past its budget waits on disk instead
(:class:`minicrawl.frontier.disklines.DiskLines`), and comes back into the polite ToDo, oldest
first, as the memory end drains (the refill).

The order, per host: an item goes to disk if its host already has items there, so on each host's
line every item in memory is older than every item on disk, and items come back from disk in
their order: each host's line stays first in, first out, across the spill and the refill.

Politeness must still see every host. Say memory holds only host A's URLs and host B's are all
on disk: the polite ToDo would hand out A at A's pace and leave the workers idle while B could
be fetched. So a host's first item always stays in memory (past the budget if need be), and when
the last item of a host in memory is handed out, the next ones of that host come back from disk
at once. Every host with URLs waiting therefore has at least one in the polite ToDo, where the
pace sees it; the budget is exceeded by at most an item per host, as the pace's table of hosts
(:class:`minicrawl.frontier.hosts.Hosts`) is anyway. (Heritrix does the same: its per-host
queues are on disk, the queue heads in memory.) It is also why the crawl's end is still the polite
ToDo's rule: while any item waits on disk, one of its host is in memory, so ToDo is never empty
while the disk is not.

Memory is counted in bytes estimated per item: ``ITEM_BYTES`` + the URL's length. Measured with
``tracemalloc``: 200,000 items of the 10-ary tree (~29-character URLs, a page's ten links sharing
its URL as their referrer) waiting in the polite ToDo take 234.6 bytes each, 156 for the
``Item``, its ``(seq, item)`` tuple and the deque's slot, 49 + len(url) for the URL's string.
``--frontier-memory 16`` (the default) thus keeps about 68,000 such URLs in memory.

The disk part is a scratch file (:class:`minicrawl.frontier.scratch.ScratchDB`, under ``TMPDIR``)
made at the first spill and unlinked as soon as SQLite has it open: the kernel frees it when
:meth:`SpillingToDo.close` closes it at the end of the crawl, or when the process ends however it
ends — Ctrl-C, SIGTERM, a ``kill -9``: nothing is left behind. With ``--state`` it is the same
scratch file: the state's journal already holds every URL in ToDo, in memory or on
disk, durably, so after a ``kill -9`` the resume puts them all back (through this ToDo, which
spills them again) and nothing is lost or fetched twice beyond the pages in flight, as without
spilling. (The journal is not read as the disk part itself: it is keyed by URL and ordered by
commit batch, so reading it per host in order would need a second index and a "where is it" mark
written at every spill and refill — a second write all the same, and one in the state's durable,
group-committed database instead of a scratch file.)

If the disk fails — at the first spill (``TMPDIR`` missing, not a directory, unwritable) or later
(full, a file size limit, an I/O error) — the crawl goes on with everything in memory: one
warning names the directory and the reason, what waited on disk is read back into memory in its
order (the file is usually still readable: a full disk refuses writes, not reads), and from then
on every URL stays in memory, past the budget, rather than be lost. URLs that cannot be read back
are lost to this run, said in that line and counted (``todo_disk_lost``; with ``--state`` the
journal still holds them, and running the crawl again fetches them); ``todo_disk_failed`` is 1.

SQLite throughput measured here (1,000,000 items of ~35-character URLs; puts in batches of ten
as a page's links come, refills in chunks of 4,096): 4.5 µs an item put, 4.2 µs an item taken
on a quiet machine (9-12 and 6-10 µs with the load at 10), 92 bytes an item on disk; a host's
next item pulled alone: 8.8 µs. A crawl spends ~1,000-1,500 µs of CPU a page, so spilling its ~9
links and taking one back costs a few percent — and saves about as much again in the garbage
collector, which no longer walks ~900,000 waiting items.

Measured (2026-11-26, 2 cores shared with other jobs, load average 10-30; nginx serving an
endless 10-ary tree from memory; ``run.py --max-pages 100000 --threads 16 --delay 0 --per-host
16 --ignore-robots``, ~892,000 URLs left waiting at the end, 680,000 of them on disk):

====================  ===========  ============  ===============  ===========
--frontier-memory     peak RSS     wall          CPU (user+sys)   disk (peak)
====================  ===========  ============  ===============  ===========
4096 (all in memory)  473, 455,    131, 168,     131, 120,        —
                      500 MB       196 s         108 s
64 (the default)      329, 294,    134, 196,     128, 108,        67 MB
                      380 MB       162 s         101 s
====================  ===========  ============  ===============  ===========

(The third pair on the Visited default of issue 38's point 3, an 11.4 MB filter instead of 1.8;
RSS varies by tens of MB from run to run with the same settings; ``MALLOC_ARENA_MAX=2`` changed
nothing: 368 MB.) The wall time is the load's more than the crawl's at these loads; the CPU time
is no higher spilled.

The frontier's part is ~0.8 MB of RSS per MB of budget (16 → 64 MB: +39 MB). What remains is
mostly the link resolver's two memories (:mod:`minicrawl.resolve`, then 200,000 entries each; on
this site, where every href is new, they held ~170 MB at 100,000 pages; now 16 MB): with them at
20,000 entries
the same crawl peaks at 158 MB with ``--frontier-memory 64``, 144 MB with 48 and 119 MB with 16
(issue 38's target for this crawl: 150 MB).

Hence the default of 16 MB (was 64): with the resolver's memories bounded by bytes (16 MB) and
the Visited default of issue 38, the same crawl (``bench/tree.py --caps 100000``, two
interleaved runs each, load 14-30) peaks at 151/151 MB with 16, 166 with 32, 192/192 with 64 and
351/351 with 4096, walls 165/177, 180, 161/180 and 175/171 s: spilling more costs no time.
A medium site (the Java docs' 10,248 pages) never spills at 16 MB.
"""

from __future__ import annotations

import contextlib
import logging
import sqlite3
import threading
from collections.abc import Sequence
from pathlib import Path

from minicrawl.core.interfaces import Item
from minicrawl.core.urls import host_of
from minicrawl.frontier.disklines import DiskLines
from minicrawl.frontier.hosts import Hosts
from minicrawl.frontier.scratch import scratch_directory
from minicrawl.frontier.todo import ToDo

log = logging.getLogger("minicrawl")

ITEM_BYTES = 205  # an item waiting in the polite ToDo, its URL's characters apart (see above)
ROW_BYTES = 25  # a row on disk and its index entry, the URL's and referrer's characters apart
REFILL_MAX = 8192  # items brought back from disk in one go at the most (the lock is held)
MB = 1024 * 1024


def item_bytes(item: Item) -> int:
    """The memory ``item`` is estimated to take while it waits in the polite ToDo."""
    return ITEM_BYTES + len(item.url)


def row_bytes(item: Item) -> int:
    """The disk ``item`` is estimated to take while it waits there (92 bytes measured for a
    35-character URL with a 32-character referrer)."""
    return ROW_BYTES + len(item.url) + len(item.referrer or "")


class SpillingToDo:
    """The polite ``todo`` keeping about ``memory_bytes`` of items; the rest waits on disk in a
    scratch file under ``temp_dir`` (default: ``TMPDIR``), made at the first spill (if the disk
    fails: in memory, said once, ``failure`` says why).

    It is the polite ToDo's interface, a ``PoliteFrontier`` (:mod:`minicrawl.seams`). Call
    :meth:`close` at the end.
    """

    def __init__(self, todo: ToDo | None = None, memory_bytes: float = 64 * MB,
                 temp_dir: str | None = None) -> None:
        self.todo = todo if todo is not None else ToDo()
        self.budget = memory_bytes
        self._lock = threading.Lock()  # taken before the polite ToDo's, never after
        self._in_memory: dict[str, int] = {}  # host → its items in the polite ToDo (waiting)
        self._on_disk: dict[str, int] = {}  # host → its items on disk
        self._host_ids: dict[str, int] = {}  # host → its number on disk (while it has items)
        self._host_names: dict[int, str] = {}
        self._next_id = 0
        self._memory_bytes = 0  # estimated, of the items waiting in the polite ToDo
        self._memory_items = 0
        self._disk_items = 0
        self._disk_bytes = 0  # estimated, what the items on disk would take in memory
        self._disk_row_bytes = 0  # estimated, what they take on disk
        self._disk_peak = 0  # the most bytes the disk file took
        self._spilled = 0  # items that went to disk, ever
        self._lost = 0  # items on disk that could not be read back when the disk failed
        self._disk: DiskLines | None = None  # made at the first spill
        self._temp_dir = temp_dir
        self._closed = False
        self.failure: str | None = None  # why the disk was given up, if it was

    @property
    def hosts(self) -> Hosts:
        """The hosts' pace the polite ToDo asks."""
        return self.todo.hosts

    # -- putting ---------------------------------------------------------------------------

    def put(self, item: Item) -> None:
        """Add ``item`` (to memory or disk: see :meth:`put_many`)."""
        self.put_many([item])

    def put_many(self, items: Sequence[Item]) -> int:
        """Add several items (a page's new links) under one lock; how many (all of them). One
        with a ``not_before`` (a retry) is held in memory until then: few, and the polite ToDo
        keeps its time (the disk keeps none)."""
        if not items:
            return 0
        to_memory: list[Item] = []
        to_disk: list[tuple[str, Item]] = []
        with self._lock:
            spilling: set[str] = set()  # hosts of this batch going to disk
            for item in items:
                host = host_of(item.url)
                if not item.not_before and not self._closed and self.failure is None and (
                        host in spilling or self._on_disk.get(host)  # after its host's on disk
                        or self._memory_bytes + item_bytes(item) > self.budget  # memory full
                        and self._in_memory.get(host)  # (but a host's first item stays)
                        and not self.todo.stopped):
                    to_disk.append((host, item))
                    spilling.add(host)
                else:
                    self._count_in(host, item)
                    to_memory.append(item)
            if to_disk and not self._spill(to_disk):
                # The disk failed: what waited there came back into the polite ToDo first;
                # these follow this batch's others (a host's items of the batch that went to
                # memory came before its first one that went to disk: the order they came in).
                for host, item in to_disk:
                    self._count_in(host, item)
                to_memory += [item for _, item in to_disk]
            self.todo.put_many(to_memory)
        return len(items)

    def put_back(self, item: Item, not_before: float | None = None) -> None:
        """Give back ``item`` (handed out by ``take``) unfetched: it returns to the head of its
        host's line in memory (see the polite ToDo)."""
        with self._lock:
            self._count_in(host_of(item.url), item)
            self.todo.put_back(item, not_before)

    # -- taking ----------------------------------------------------------------------------

    def take(self) -> Item | None:
        """The polite ToDo's next item (None once the crawl is over); then, if its host has no
        more in memory, the next ones of its host come back from disk, and if memory is below
        three quarters of its budget, the oldest items on disk."""
        item = self.todo.take()
        if item is None:
            return None
        host = host_of(item.url)
        with self._lock:
            left = self._in_memory[host] - 1
            if left:
                self._in_memory[host] = left
            else:
                del self._in_memory[host]
            self._memory_items -= 1
            self._memory_bytes -= item_bytes(item)
            if self._disk_items and self._disk is not None:  # (not once closed)
                self._refill(host, left)
        return item

    def done(self, item: Item) -> None:
        """Mark ``item`` finished (after its links were put)."""
        self.todo.done(item)

    def stop(self) -> None:
        """Stop handing out items: every ``take`` now returns ``None``."""
        self.todo.stop()

    def __len__(self) -> int:
        """Items waiting (in memory, delayed or on disk), not counting those being fetched."""
        return len(self.todo) + self._disk_items

    @property
    def unfinished(self) -> int:
        """Items put and not yet marked done (waiting, on disk too, plus in flight)."""
        return self.todo.unfinished + self._disk_items

    @property
    def stopped(self) -> bool:
        """True once :meth:`stop` was called."""
        return self.todo.stopped

    # -- figures ---------------------------------------------------------------------------

    def figures(self) -> dict[str, int]:
        """ToDo's memory and disk now: URLs and estimated bytes in memory and on disk, the
        disk file's size now and at its largest, how many URLs went to disk in all, whether
        the disk failed (1) and how many URLs waiting there were lost then."""
        with self._lock:
            used = self._disk.size() if self._disk is not None else 0
            self._disk_peak = max(self._disk_peak, used)
            return {"todo_in_memory": self._memory_items,
                    "todo_memory_bytes": self._memory_bytes,
                    "todo_on_disk": self._disk_items,
                    "todo_disk_bytes": self._disk_row_bytes,
                    "todo_disk_used_bytes": used,
                    "todo_disk_peak_bytes": self._disk_peak,
                    "todo_spilled": self._spilled,
                    "todo_disk_failed": int(self.failure is not None),
                    "todo_disk_lost": self._lost}

    @property
    def directory(self) -> Path | None:
        """The directory the disk part's file (which has no name) is in: None before the first
        spill, after :meth:`close` and once the disk failed."""
        return self._disk.directory if self._disk is not None else None

    def close(self) -> None:
        """Close the disk part, whose file the kernel then frees (what waited there is dropped:
        with ``--state`` the journal keeps it). After it a straggler's links stay in memory."""
        with self._lock:
            self._closed = True
            if self._disk is not None:
                self._disk_peak = max(self._disk_peak, self._disk.size())
                with contextlib.suppress(OSError, sqlite3.Error):  # (nothing left to save)
                    self._disk.close()
                self._disk = None

    # -- internals (lock held) -------------------------------------------------------------

    def _count_in(self, host: str, item: Item) -> None:
        self._in_memory[host] = self._in_memory.get(host, 0) + 1
        self._memory_items += 1
        self._memory_bytes += item_bytes(item)

    def _spill(self, rows: list[tuple[str, Item]]) -> bool:
        """Put ``rows`` on disk (True); False if the disk failed (then nothing waits there any
        more, see :meth:`_give_up`, and ``rows`` are still the caller's)."""
        numbered = []
        for host, item in rows:
            number = self._host_ids.get(host)
            if number is None:
                number = self._host_ids[host] = self._next_id
                self._host_names[number] = host
                self._next_id += 1
            numbered.append((number, item))
        try:
            if self._disk is None:
                self._disk = DiskLines(self._temp_dir)
            self._disk.append(numbered)
        except (OSError, sqlite3.Error) as e:
            self._give_up(e)
            return False
        for host, item in rows:
            self._on_disk[host] = self._on_disk.get(host, 0) + 1
            self._disk_bytes += item_bytes(item)
            self._disk_row_bytes += row_bytes(item)
        self._disk_items += len(rows)
        self._spilled += len(rows)
        return True

    def _refill(self, host: str, left: int) -> None:
        """Bring items back from disk: ``host``'s next ones if it has ``left`` none in memory
        (so politeness still sees it), and the oldest of all while memory is under ¾ of the
        budget."""
        assert self._disk is not None
        each = max(1, self._disk_bytes // self._disk_items)  # an item on disk, on average
        room = int((self.budget - self._memory_bytes) // each)
        try:
            if not left and self._on_disk.get(host):
                self._bring_back(self._disk.oldest(max(1, min(room, REFILL_MAX)),
                                                   self._host_ids[host]))
                room = int((self.budget - self._memory_bytes) // each)
            if self._disk_items and room > 0 and self._memory_bytes < self.budget * 0.75:
                self._bring_back(self._disk.oldest(min(room, REFILL_MAX)))
        except (OSError, sqlite3.Error) as e:  # (a take that failed took nothing)
            self._give_up(e)

    def _bring_back(self, rows: list[tuple[int, Item]]) -> None:
        items = []
        for number, item in rows:
            host = self._host_names[number]
            left = self._on_disk[host] - 1
            if left:
                self._on_disk[host] = left
            else:  # its last: the host's number is forgotten
                del self._on_disk[host], self._host_ids[host], self._host_names[number]
            self._disk_bytes -= item_bytes(item)
            self._disk_row_bytes -= row_bytes(item)
            self._count_in(host, item)
            items.append(item)
        self._disk_items -= len(items)
        self.todo.put_many(items)

    def _give_up(self, error: OSError | sqlite3.Error) -> None:
        """The disk failed: what waits there comes back into the polite ToDo, in its order (as
        much as can be read: the rest is lost, counted), the file is closed and nothing spills
        any more; said in one warning."""
        disk, self._disk = self._disk, None
        where = disk.directory if disk is not None else scratch_directory(self._temp_dir)
        back: list[Item] = []
        if disk is not None:
            self._disk_peak = max(self._disk_peak, disk.size())
            with contextlib.suppress(OSError, sqlite3.Error):  # what cannot be read is lost
                for _, item in disk.rest():  # (one by one: those read before a failure stay)
                    back.append(item)
            with contextlib.suppress(OSError, sqlite3.Error):
                disk.close()
        lost = max(0, self._disk_items - len(back))
        # Every host's items on disk were younger than its items in memory: at the tail of the
        # polite ToDo they keep each host's line first in, first out.
        for item in back:
            self._count_in(host_of(item.url), item)
        self._on_disk.clear()
        self._host_ids.clear()
        self._host_names.clear()
        self._disk_items = self._disk_bytes = self._disk_row_bytes = 0
        self._lost += lost
        reason = error.strerror if isinstance(error, OSError) and error.strerror else str(error)
        self.failure = f"ToDo cannot keep URLs on disk in {where}: {reason}"
        said = [self.failure]
        if back:
            said.append(f"the {len(back):,} waiting there came back into memory")
        if lost:
            said.append(f"{lost:,} waiting there could not be read back and are lost to this "
                        "run (with --state its journal keeps them: run it again to fetch them)")
        said.append("every waiting URL stays in memory from now on, past --frontier-memory")
        log.warning("; ".join(said))
        self.todo.put_many(back)

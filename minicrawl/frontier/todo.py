"""The polite ToDo: URLs waiting to be fetched, a line per host, and how the crawl knows it is over.

It is run.py's ``PoliteFrontier`` (:mod:`minicrawl.seams`: the core's ``Frontier`` and more; its
contract suite is ``tests/core/test_todo.py``) with what a polite crawler needs
(the Mercator design: one FIFO line per host, and hosts ordered by the time they may next be
asked). When a host may be asked is not its business: it asks the hosts' pace
(:class:`minicrawl.frontier.hosts.Hosts`, each host READY, RESTING or BUSY), which tells it
when a host it was waiting for may have become READY.

* ``take()`` hands out only a URL whose host is READY, and books the host's slot for it. Among
  READY hosts the oldest URL comes first, so with no pacing the order is the order of ``put``:
  breadth-first. Within a host it always is.
* ``put_back(item)``: the URL could not be fetched yet (politeness said WAIT: its robots.txt is
  being fetched, or its host's gap runs): the slot it was given is handed back unused (a URL
  that made no request costs its host no gap), and when its worker calls ``done`` it goes back
  to the *head* of its host's line, in its old turn.
* An item put with a ``not_before`` time ahead (a retry with backoff: ``Item.not_before``) is
  held back until then without any worker sleeping on it; it then joins the tail of its host's
  line, its ``not_before`` reset to 0.0: the item handed out is the one ``done`` is told of,
  equal and hashed as any other.
* ``take()`` returns ``None`` when the crawl is over: nothing is queued *and* no worker is busy
  (every item handed out has been marked ``done``), or ``stop()`` was called.

That last rule is the whole termination argument: a busy worker may still put new links, so
an empty queue alone does not mean the crawl is done.
"""

from __future__ import annotations

import heapq
import itertools
import threading
import time
from collections import deque
from dataclasses import dataclass, field, replace

from minicrawl.core.interfaces import Item
from minicrawl.core.urls import host_of
from minicrawl.frontier.hosts import Hosts, HostState


@dataclass(eq=False)
class _Line:
    """One host's URLs, in their turns."""

    queue: deque[tuple[int, Item]] = field(default_factory=deque)  # (seq, item), FIFO
    back: list[tuple[int, Item]] = field(default_factory=list)  # put back: heap by old seq
    epoch: int = 0  # heap entries with another epoch are stale

    def waiting(self) -> int:
        return len(self.queue) + len(self.back)

    def head_seq(self) -> int:
        if self.back and (not self.queue or self.back[0][0] < self.queue[0][0]):
            return self.back[0][0]
        return self.queue[0][0]


class ToDo:
    """Per-host FIFO lines of :class:`Item`, paced by ``hosts``, delayed items and termination.

    ``ToDo()`` is a plain breadth-first queue (hosts with no gap and no limit).
    """

    def __init__(self, hosts: Hosts | None = None) -> None:
        self.hosts = hosts if hosts is not None else Hosts()
        self.hosts.on_change = self._host_changed
        self._lines: dict[str, _Line] = {}  # hosts with URLs waiting
        self._due: list[tuple[int, int, str]] = []  # (head seq, epoch, host): READY
        self._timed: list[tuple[float, int, str]] = []  # (next_start, epoch, host): RESTING
        self._later: list[tuple[float, int, Item]] = []  # retries held: (due, seq, item)
        self._taken: dict[Item, int] = {}  # handed out, not yet done: its turn (seq)
        self._returning: dict[Item, int] = {}  # put back, back in line when done
        self._seq = itertools.count()
        self._epochs = itertools.count(1)
        self._waiting = 0  # items in host lines
        self._unfinished = 0  # queued + delayed + handed out and not yet done
        self._closed = False
        # One lock with the hosts' pace: choosing an item and booking its host are one step.
        self._cond = threading.Condition(self.hosts.lock)

    # -- putting -----------------------------------------------------------------------------

    def put(self, item: Item) -> None:
        """Add ``item`` (one with a ``not_before`` ahead is held until then)."""
        self.put_many([item])

    def put_many(self, items: list[Item]) -> int:
        """Add several items under one lock acquisition (all the new links of a page); one with
        a ``not_before`` ahead (a retry) is held until then. How many (all of them, here)."""
        if not items:
            return 0
        with self._cond:
            self._unfinished += len(items)
            for item in items:
                if item.not_before:  # a retry: held in ``_later`` by its time, queued as 0.0
                    due, item = item.not_before, replace(item, not_before=0.0)
                    if due > time.monotonic():
                        heapq.heappush(self._later, (due, next(self._seq), item))
                        continue
                self._enqueue(next(self._seq), item)
            # (one held too: a taker waiting for an earlier time must see the new one)
            self._cond.notify(len(items))
        return len(items)

    def put_back(self, item: Item, not_before: float | None = None) -> None:
        """Give back ``item`` (handed out by ``take``) unfetched: when its worker is done with
        it, it returns to the head of its host's line in its old turn (not sooner: another
        worker taking it meanwhile would be told of this one's ``done``); with ``not_before``
        the host rests until then."""
        with self._cond:
            self._unfinished += 1
            self.hosts.give_back(item)
            if not_before is not None:
                self.hosts.rest(host_of(item.url), not_before)
            seq = self._taken.pop(item, None)  # its old turn
            if seq is not None:
                self._returning[item] = seq
            else:  # not handed out here, so no done will come for it: in line at once
                self._enqueue(next(self._seq), item, back=True)
                self._cond.notify()

    def _enqueue(self, seq: int, item: Item, back: bool = False) -> None:
        name = host_of(item.url)
        line = self._lines.get(name)
        if line is None:
            line = self._lines[name] = _Line()
        if back:
            heapq.heappush(line.back, (seq, item))
        else:
            line.queue.append((seq, item))
        self._waiting += 1
        if line.waiting() == 1 or back:  # a new head: its place in the heaps changes
            self._schedule(name, line)

    # -- taking --------------------------------------------------------------------------------

    def take(self) -> Item | None:
        """The next item whose host is READY, waiting if need be (the host's slot is booked
        for it); ``None`` once the crawl is over."""
        with self._cond:
            while True:
                if self._closed:
                    return None
                now = time.monotonic()
                self._promote(now)
                while self._due:
                    _, epoch, name = heapq.heappop(self._due)
                    line = self._lines.get(name)
                    if line is None or line.epoch != epoch:
                        continue
                    if self.hosts.state(name, now) is not HostState.READY:
                        self._schedule(name, line, now)  # (the same now: no ping-pong)
                        continue
                    return self._take(name, line, now)
                if self._unfinished == 0:
                    self._cond.notify_all()  # wake the other idle workers: we are done
                    return None
                wake = min(self._later[0][0] if self._later else float("inf"),
                           self._timed[0][0] if self._timed else float("inf"))
                self._cond.wait(None if wake == float("inf") else max(0.0, wake - now))

    def _promote(self, now: float) -> None:
        """Delayed items that are due join their hosts; RESTING hosts whose time has come are
        asked again."""
        while self._later and self._later[0][0] <= now:
            self._enqueue(next(self._seq), heapq.heappop(self._later)[2])  # at the tail
        while self._timed and self._timed[0][0] <= now:
            _, epoch, name = heapq.heappop(self._timed)
            line = self._lines.get(name)
            if line is not None and line.epoch == epoch:
                self._schedule(name, line, now)

    def _take(self, name: str, line: _Line, now: float) -> Item:
        seq, item = heapq.heappop(line.back) if line.back and line.head_seq() == line.back[0][0] \
            else line.queue.popleft()
        self._waiting -= 1
        self._taken[item] = seq
        self.hosts.hand_out(item, name, now)
        self._schedule(name, line, now)
        return item

    def done(self, item: Item) -> None:
        """Mark ``item`` finished (after its links were put); a slot it still holds is freed."""
        with self._cond:
            if self._unfinished <= 0:
                raise ValueError("done() called more times than items were put")
            self._taken.pop(item, None)
            self.hosts.give_back(item)
            if (seq := self._returning.pop(item, None)) is not None:
                self._enqueue(seq, item, back=True)
                self._cond.notify()
            self._unfinished -= 1
            if self._unfinished == 0:
                self._cond.notify_all()

    # -- hosts ---------------------------------------------------------------------------------

    def _host_changed(self, name: str) -> None:
        """The pace says ``name`` may be READY now (called with the shared lock held)."""
        line = self._lines.get(name)
        if line is not None:
            self._schedule(name, line)
            self._cond.notify()

    def _schedule(self, name: str, line: _Line, now: float | None = None) -> None:
        """Put the host in the heap its state says (lock held); older entries go stale. A BUSY
        host is in neither: the pace says when one of its requests ends."""
        line.epoch = next(self._epochs)
        if not line.waiting():
            del self._lines[name]
            return
        now = time.monotonic() if now is None else now
        state = self.hosts.state(name, now)
        if state is HostState.READY:
            heapq.heappush(self._due, (line.head_seq(), line.epoch, name))
        elif state is HostState.RESTING:
            heapq.heappush(self._timed, (self.hosts.next_start(name), line.epoch, name))

    # -- stopping ------------------------------------------------------------------------------

    def stop(self) -> None:
        """Stop handing out items: every ``take`` now returns ``None`` (Ctrl-C, page cap)."""
        with self._cond:
            self._closed = True
            self._cond.notify_all()

    def __len__(self) -> int:
        """Items waiting (queued or delayed), not counting those being fetched."""
        with self._cond:
            return self._waiting + len(self._later)

    @property
    def unfinished(self) -> int:
        """Items put and not yet marked done (waiting plus in flight)."""
        return self._unfinished

    @property
    def stopped(self) -> bool:
        """True once :meth:`stop` was called (every ``take`` answers None)."""
        return self._closed

    def figures(self) -> dict[str, int]:
        """Where the waiting items are: all in memory."""
        return {"todo_in_memory": len(self)}

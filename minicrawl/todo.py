"""The ToDo queue: URLs waiting to be fetched, and how the crawl knows it is over.

It behaves like :class:`queue.Queue` — ``put``, ``get``, ``task_done`` and an unfinished-task
count — with two additions a crawler needs:

* ``put(item, not_before=t)`` holds an item back until time ``t`` (a retry with backoff, a host
  that must not be hit again yet) without any worker sleeping on it;
* ``get()`` returns ``None`` when the crawl is over: nothing is queued *and* no worker is busy
  (every item handed out has been marked ``task_done``), or ``close()`` was called.

That second rule is the whole termination argument: a busy worker may still put new links, so
an empty queue alone does not mean the crawl is done.
"""

from __future__ import annotations

import heapq
import itertools
import threading
import time
from collections import deque
from typing import NamedTuple


class Item(NamedTuple):
    """One ToDo entry: a canonical URL, its distance from a seed, and the page linking to it."""

    url: str
    depth: int
    referrer: str | None = None
    attempt: int = 0


class ToDo:
    """FIFO (hence breadth-first) queue of :class:`Item` with delayed items and termination."""

    def __init__(self) -> None:
        self._ready: deque[Item] = deque()
        self._later: list[tuple[float, int, Item]] = []  # heap of (not_before, seq, item)
        self._seq = itertools.count()
        self._unfinished = 0  # queued + delayed + handed out and not yet task_done
        self._closed = False
        self._cond = threading.Condition()

    def put(self, item: Item, not_before: float | None = None) -> None:
        """Add ``item``; with ``not_before`` (a ``time.monotonic()`` value) hold it until then."""
        with self._cond:
            self._unfinished += 1
            if not_before is None or not_before <= time.monotonic():
                self._ready.append(item)
            else:
                heapq.heappush(self._later, (not_before, next(self._seq), item))
            self._cond.notify()

    def put_many(self, items: list[Item]) -> None:
        """Add several ready items under one lock acquisition (all the new links of a page)."""
        if not items:
            return
        with self._cond:
            self._unfinished += len(items)
            self._ready.extend(items)
            self._cond.notify(len(items))

    def get(self) -> Item | None:
        """The next item to fetch, waiting if needed; ``None`` once the crawl is over."""
        with self._cond:
            while True:
                if self._closed:
                    return None
                if self._later and self._later[0][0] <= time.monotonic():
                    self._ready.append(heapq.heappop(self._later)[2])
                if self._ready:
                    return self._ready.popleft()
                if self._unfinished == 0:
                    self._cond.notify_all()  # wake the other idle workers: we are done
                    return None
                timeout = self._later[0][0] - time.monotonic() if self._later else None
                self._cond.wait(timeout)

    def task_done(self) -> None:
        """Mark one item from ``get`` as finished (after its links were put)."""
        with self._cond:
            if self._unfinished <= 0:
                raise ValueError("task_done() called more times than items were put")
            self._unfinished -= 1
            if self._unfinished == 0:
                self._cond.notify_all()

    def close(self) -> None:
        """Stop handing out items: every ``get`` now returns ``None`` (Ctrl-C, page cap)."""
        with self._cond:
            self._closed = True
            self._cond.notify_all()

    def drain(self) -> list[Item]:
        """Remove and return everything not yet handed out (ready and delayed)."""
        with self._cond:
            items = list(self._ready) + [entry[2] for entry in sorted(self._later)]
            self._unfinished -= len(items)
            self._ready.clear()
            self._later.clear()
            self._cond.notify_all()
            return items

    def __len__(self) -> int:
        """Items waiting (ready or delayed), not counting those being fetched."""
        with self._cond:
            return len(self._ready) + len(self._later)

    @property
    def unfinished(self) -> int:
        """Items put and not yet marked done (waiting plus in flight)."""
        return self._unfinished

    @property
    def closed(self) -> bool:
        return self._closed

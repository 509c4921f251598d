"""A gate that lets at most N threads through at once, for the steps that need a core.

Sixteen workers fetching at once is the point of threads: they wait on the network. Sixteen
workers parsing at once is not: on two cores they only wait for each other, and each holds a
page's tree (~10× the page) meanwhile. (Parsing has its own limit, the crawl's parsing slot:
libxml2 parses one page at a time, ``minicrawl.core.crawler.Crawler.parsing``. A gate as wide
as the cores around the whole of parsing + link handling was measured, on the Java API docs at
16 threads, against none, in turn: 1.11× the CPU and 1.26× the wall time, median of 3 pairs.)

:class:`TokenGate` is a queue of N tokens: passing takes one, leaving puts it back. Both are one
call into C (``queue.SimpleQueue``); ``threading.Semaphore`` is Python code on a Condition, and
with many threads waiting, its release was 12 % of the GIL's time in a 16-thread crawl.
Its width may change while threads pass (:meth:`TokenGate.widen`, :meth:`TokenGate.narrow`): the
worker pool uses one to let only as many workers work at once as keep the CPU busy.
"""

from __future__ import annotations

import os
import queue
import threading
from types import TracebackType


class TokenGate:
    """``with gate:`` runs its block in at most ``width`` threads at once (FIFO: first come,
    first through). Waiting costs no CPU and holds no lock anyone else needs."""

    def __init__(self, width: int | None = None) -> None:
        self.width = max(1, width or os.cpu_count() or 2)
        self._tokens: queue.SimpleQueue[None] = queue.SimpleQueue()
        for _ in range(self.width):
            self._tokens.put(None)
        self._owed = 0  # tokens to keep back as they come in (narrowed while in use)
        self._lock = threading.Lock()  # only for changing the width

    def widen(self, by: int = 1) -> None:
        """Let ``by`` more threads through at once."""
        with self._lock:
            self.width += by
            kept = min(by, self._owed)  # a token still owed is simply not taken
            self._owed -= kept
            for _ in range(by - kept):
                self._tokens.put(None)

    def narrow(self, by: int = 1) -> None:
        """Let ``by`` fewer threads through at once (never fewer than one): free tokens go at
        once; threads inside finish their block, and their tokens are kept back as they leave."""
        with self._lock:
            by = min(by, self.width - 1)
            self.width -= by
            for _ in range(by):
                try:
                    self._tokens.get_nowait()  # a free token: gone at once
                except queue.Empty:
                    self._owed += 1  # in use: kept back when it comes in

    @property
    def narrowing(self) -> bool:
        """True while the gate waits for threads inside to leave (it was narrowed): a thread
        that passes again and again should leave now and then to let it happen."""
        return self._owed > 0

    @property
    def free(self) -> int:
        """How many more threads could pass now."""
        return max(0, self._tokens.qsize() - self._owed)

    def enter(self) -> None:
        """Pass in: wait for a token (first come, first through)."""
        self._tokens.get()

    def leave(self) -> None:
        """Leave: the token goes to the next thread waiting (or is kept back if narrowed)."""
        if self._owed:  # read without the lock: the common case costs nothing
            with self._lock:
                if self._owed:
                    self._owed -= 1
                    return
        self._tokens.put(None)

    def __enter__(self) -> TokenGate:
        self.enter()
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.leave()

"""A gate that lets at most N threads through at once, for the steps that need a core.

Sixteen workers fetching at once is the point of threads: they wait on the network. Sixteen
workers parsing at once is not: on two cores they only wait for each other, and each holds a
page's tree (~10× the page) meanwhile. Link extraction passes parsing through a gate as wide as
the machine has cores. (A gate around the whole of parsing + link handling was measured too, on
the Java API docs at 16 threads, against none, in turn: 1.11× the CPU and 1.26× the wall time,
median of 3 pairs — the GIL already serializes the Python part; the gate only added hand-offs.)

:class:`TokenGate` is a queue of N tokens: passing takes one, leaving puts it back. Both are one
call into C (``queue.SimpleQueue``); ``threading.Semaphore`` is Python code on a Condition, and
with many threads waiting, its release was 12 % of the GIL's time in a 16-thread crawl.
"""

from __future__ import annotations

import os
import queue
from types import TracebackType


class TokenGate:
    """``with gate:`` runs its block in at most ``width`` threads at once (FIFO: first come,
    first through). Waiting costs no CPU and holds no lock anyone else needs."""

    def __init__(self, width: int | None = None) -> None:
        self.width = max(1, width or os.cpu_count() or 2)
        self._tokens: queue.SimpleQueue[None] = queue.SimpleQueue()
        for _ in range(self.width):
            self._tokens.put(None)

    def __enter__(self) -> TokenGate:
        self._tokens.get()
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None,
                 tb: TracebackType | None) -> None:
        self._tokens.put(None)

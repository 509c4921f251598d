"""A gate that lets at most N threads through at once, for the steps that need a core.

Sixteen workers fetching at once is the point of threads: they wait on the network. Sixteen
workers parsing and handling links at once is not: on two cores they only take the GIL from
each other, and each holds a page's tree and link lists meanwhile. The crawler passes its
CPU-heavy step (parse + link handling) through a gate as wide as the machine has cores.

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

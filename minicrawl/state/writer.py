"""The state's one writer thread: whatever writes are waiting are committed in one transaction.

Group commit: with sixteen workers a page costs a fraction of a commit, and no worker holds a
lock while SQLite works. A worker hands its :class:`Write` to :meth:`GroupCommit.submit` and gets
control back once the write is committed (or with the error that refused it). After the first
error every later write gets the same error: the state stops recording, and what it journaled
before stays for the next run.
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from minicrawl.state.db import StateError

if TYPE_CHECKING:
    from minicrawl.core.interfaces import Item
    from minicrawl.page import Page
    from minicrawl.state.db import PageLinks

BATCH = 1024  # writes in one transaction at the most


@dataclass
class Write:
    """One unit for the writer: a page to record (None for the seeds) and items to journal."""

    page: Page | None
    items: list[Item]
    urls: list[str]  # for the shadow filter once committed
    forget: bool = False
    replaces: str | None = None  # a journal row this write removes (a redirect hop's source)
    chain: str | None = None  # the items are hops of the chain recorded under this URL
    hops: list[str] = field(default_factory=list)  # URLs the page's chain requested that its
    # record does not name, for the ``hops`` table
    links: PageLinks | None = None  # the page's links, packed; None: its recorded links are
    # left as they are
    done: threading.Event = field(default_factory=threading.Event)
    error: StateError | None = None


class GroupCommit:
    """A thread running ``commit(batch)`` for each batch of waiting writes, in order."""

    def __init__(self, name: str, commit: Callable[[list[Write]], None]) -> None:
        self.name = name
        self.failure: StateError | None = None  # once the database refused a write
        self._commit = commit
        self._queue: queue.SimpleQueue[Write | None] = queue.SimpleQueue()
        self._thread: threading.Thread | None = threading.Thread(
            target=self._loop, name="state-writer", daemon=True)
        self._thread.start()

    def submit(self, write: Write) -> None:
        """Hand ``write`` to the writer and wait until it is committed; its error if refused."""
        thread = self._thread
        if thread is None:
            raise StateError(f"state {self.name} is closed")
        self._queue.put(write)
        while not write.done.wait(1.0):
            if not thread.is_alive():  # pragma: no cover - a bug, but never hang on it
                raise StateError(f"the state writer of {self.name} stopped")
        if write.error is not None:
            raise write.error

    def close(self) -> None:
        """Commit what is waiting, then stop the thread."""
        if self._thread is not None:
            self._queue.put(None)
            self._thread.join()
            self._thread = None

    def _loop(self) -> None:
        while (first := self._queue.get()) is not None:
            batch = [first]
            stop = False
            while len(batch) < BATCH:
                try:
                    write = self._queue.get_nowait()
                except queue.Empty:
                    break
                if write is None:
                    stop = True
                    break
                batch.append(write)
            error = self.failure
            if error is None:
                try:
                    self._commit(batch)
                except StateError as e:
                    error = self.failure = e
            for write in batch:
                write.error = error
                write.done.set()
            if stop:
                break

"""The ``--out`` file: one JSON line per recorded page.

A :class:`~minicrawl.events.CrawlObserver`: it writes each page as it is recorded and closes the
file when the crawl is over. With ``--state`` a resumed crawl continues the same file after its
last complete line (a process killed mid-write leaves a partial one; the state has that page).
"""

from __future__ import annotations

import json
import logging
import os
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from minicrawl.events import CrawlObserver
from minicrawl.outpaths import cannot_write

log = logging.getLogger("minicrawl")

if TYPE_CHECKING:
    from minicrawl.page import Page


class Output(CrawlObserver):
    """Writes page records to ``path`` as JSON lines, from any worker thread."""

    flag = "--out"

    def __init__(self, path: str, resume: bool = False,
                 on_failure: Callable[[], None] | None = None) -> None:
        self.path = path
        self._file = _open(path, resume)
        self._lock = threading.Lock()
        self._on_failure = on_failure  # the crawl's stop: further pages would be lost
        self.failed = False  # a write failed (a full disk): told in one line, the crawl stopped

    def page_recorded(self, page: Page) -> None:
        line = json.dumps(page.record(), ensure_ascii=False)
        with self._lock:
            if self._file is not None:  # a worker past the grace period finds it closed
                try:
                    self._file.write(line + "\n")
                except OSError as e:
                    self._fail(e)

    def crawl_finished(self, stats: dict[str, Any]) -> None:
        with self._lock:
            if self._file is not None:
                try:
                    self._file.close()  # flushes the last lines: may meet a full disk
                except OSError as e:
                    self._fail(e)
                self._file = None

    def _fail(self, error: OSError) -> None:
        """Say once that the file cannot be written and stop the crawl (with ``--state`` a
        rerun resumes it). Holds ``_lock``."""
        log.error("%s; the crawl stops", cannot_write(self.flag, self.path, error))
        self.failed = True
        file, self._file = self._file, None
        try:
            file.close()
        except OSError:  # the same error again, on the buffer it could not flush
            pass
        if self._on_failure is not None:
            self._on_failure()


def _open(path: str, resume: bool) -> Any:
    """The file, new; or with ``resume`` continued after its last complete line."""
    if not resume:
        return open(path, "w", encoding="utf-8")  # noqa: SIM115 - closed at crawl_finished
    with open(path, "a+b") as f:
        f.seek(0, os.SEEK_END)
        end = f.tell()
        f.seek(max(0, end - 65536))
        tail = f.read()
        if tail and not tail.endswith(b"\n"):
            cut = tail.rfind(b"\n")
            if cut >= 0 or len(tail) == end:
                f.truncate(end - len(tail) + cut + 1)
            else:  # a partial line longer than the tail read: isolate it
                f.write(b"\n")
    return open(path, "a", encoding="utf-8")  # noqa: SIM115 - closed at crawl_finished

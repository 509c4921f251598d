"""The ``--out`` file: one JSON line per recorded page.

A :class:`~minicrawl.events.CrawlObserver`: it writes each page as it is recorded and closes the
file when the crawl is over. With ``--state`` a resumed crawl continues the same file after its
last complete line (a process killed mid-write leaves a partial one; the state has that page).
"""

from __future__ import annotations

import json
import os
import threading
from typing import TYPE_CHECKING, Any

from minicrawl.events import CrawlObserver

if TYPE_CHECKING:
    from minicrawl.page import Page


class Output(CrawlObserver):
    """Writes page records to ``path`` as JSON lines, from any worker thread."""

    def __init__(self, path: str, resume: bool = False) -> None:
        self._file = _open(path, resume)
        self._lock = threading.Lock()

    def page_recorded(self, page: Page) -> None:
        line = json.dumps(page.record(), ensure_ascii=False)
        with self._lock:
            if self._file is not None:  # a worker past the grace period finds it closed
                self._file.write(line + "\n")

    def crawl_finished(self, stats: dict[str, Any]) -> None:
        with self._lock:
            if self._file is not None:
                self._file.close()
                self._file = None


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

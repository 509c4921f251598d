"""Crawl counters, shared by all workers.

Workers call :meth:`Stats.add` with everything one step changed — a page recorded, a retry, a
wait, a redirect followed — so the lock is taken once per step, never once per link.

What ``pages``, ``errors`` and ``problems`` count (a URL never requested is no page; an error
is a fetch with no usable answer; a problem, a 4xx or 5xx answer or an error, each page once) is
said in :mod:`minicrawl.watch.summary`, which tells them.
"""

from __future__ import annotations

import threading
import time
from collections import Counter

from minicrawl.seams import Grant

StatValue = int | float | str | bool | None
"""One value of a stats snapshot: a counter, a time or a rate, ``visited_kind``, Visited's
``over_capacity``, or None for a figure that does not apply (an exact set's fill ratio). Each is a
JSON scalar: ``--stats`` writes the snapshot as it is, and no value is a list or a dict."""

StatsSnapshot = dict[str, StatValue]
"""The crawl's stats by name (:meth:`Stats.snapshot`). The names are open (each counter a page
adds is one), so this is no TypedDict."""


class PageCount:
    """This process's fetches against ``--max-pages`` (a shared crawl counts in Redis)."""

    def __init__(self) -> None:
        self._count = 0
        self._lock = threading.Lock()

    def take(self, cap: int) -> Grant:
        """Count one fetch against ``cap``: GO, LAST (the ``cap``-th), or NONE once it was
        reached (a :class:`~minicrawl.seams.PageCap`)."""
        with self._lock:
            if self._count >= cap:
                return Grant.NONE
            self._count += 1
            return Grant.LAST if self._count == cap else Grant.GO


class Stats:
    """Thread-safe named counters plus the crawl's start time."""

    def __init__(self) -> None:
        self._counts: Counter[str] = Counter()
        self._lock = threading.Lock()
        self.started = time.monotonic()
        self.finished: float | None = None

    def add(self, counts: dict[str, int] | None = None, **more: int) -> None:
        """Add to several counters in one step."""
        with self._lock:
            if counts:
                self._counts.update(counts)
            if more:
                self._counts.update(more)

    def __getitem__(self, name: str) -> int:
        return self._counts[name]

    def counts(self) -> dict[str, int]:
        """A consistent copy of all counters."""
        with self._lock:
            return dict(self._counts)

    @property
    def elapsed(self) -> float:
        """Seconds from the crawl's start to ``finished`` (to now while it runs)."""
        return (self.finished or time.monotonic()) - self.started

    def snapshot(self, **extra: StatValue) -> StatsSnapshot:
        """All counters plus elapsed seconds and pages per second, as a JSON-ready dict; the
        ``extra`` values (``todo_left``, Visited's figures) come last."""
        counts = self.counts()
        elapsed = self.elapsed
        pages = counts.get("pages", 0)
        return {
            **dict(sorted(counts.items())),
            "elapsed_s": round(elapsed, 3),
            "pages_per_s": round(pages / elapsed, 2) if elapsed > 0 else 0.0,
            **extra,
        }

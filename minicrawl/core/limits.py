"""Limits, shared by all workers of a crawl: where it may go (the seeds' hosts: an ``Admission``
rule, as run.py's traps and host caps are; robots.txt: run.py's hooks), how fast hosts are asked."""

import threading
import time
from collections.abc import Iterable

from minicrawl.core.interfaces import Item
from minicrawl.core.urls import canonicalize, host_of


class SameHost:
    """Admits a URL on a seed's host (and its port, if one is given), by http or https."""

    def __init__(self, seeds: Iterable[str]) -> None:
        self.hosts = {host_of(url) for url in map(canonicalize, seeds) if url}

    def refuses(self, url: str, depth: int) -> str | None:
        """None if ``url`` (canonical) is on a seed's host, else "out_of_scope"."""
        return None if host_of(url) in self.hosts else "out_of_scope"


class Politeness:
    """The core's :class:`Pace`: request starts on one host at least ``delay`` apart."""

    def __init__(self, delay: float) -> None:
        self.delay = delay
        self._next_start: dict[str, float] = {}
        self._lock = threading.Lock()

    def take(self, item: Item, host: str, gap: float = 0.0) -> float:
        """0.0 if ``host``'s gap is over (its next start is then booked), else the seconds left."""
        with self._lock:
            now = time.monotonic()
            if (wait := self._next_start.get(host, 0.0) - now) > 0:
                return wait
            self._next_start[host] = now + max(gap, self.delay)
            return 0.0

    def release(self, item: Item, host: str, gap: float = 0.0, pause: float = 0.0) -> None:
        with self._lock:
            rest = time.monotonic() + pause
            self._next_start[host] = max(self._next_start.get(host, 0.0), rest)

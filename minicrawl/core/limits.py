"""Limits: how fast one host is asked (a fixed gap between requests) and how many pages a
crawl fetches at most (the page cap). Both are shared by all workers of a crawl."""

from __future__ import annotations

import threading
import time

from minicrawl.core.urls import origin


class Politeness:
    """A fixed gap between the starts of requests to one host (one origin). Workers wait
    their turn here: each books the host's next free slot, then sleeps until it comes."""

    def __init__(self, delay: float) -> None:
        self.delay = delay
        self._next_slot: dict[str, float] = {}
        self._lock = threading.Lock()

    def wait_turn(self, url: str) -> None:
        host = origin(url)
        with self._lock:
            now = time.monotonic()
            slot = max(now, self._next_slot.get(host, now))
            self._next_slot[host] = slot + self.delay
        time.sleep(slot - now)


class Budget:
    """The page cap: ``spend()`` is True for the first ``pages`` calls, from any thread."""

    def __init__(self, pages: int) -> None:
        self.left = pages
        self._lock = threading.Lock()

    def spend(self) -> bool:
        with self._lock:
            self.left -= 1
            return self.left >= 0

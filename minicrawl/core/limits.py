"""Limits, shared by all workers of a crawl: where it may go (the seeds' hosts: an ``Admission``
rule, as robots.txt or traps would be) and how fast a host is asked."""

import threading
import time
from collections.abc import Iterable

from minicrawl.core.urls import canonicalize, origin


class SameHost:
    """Admits a URL on a seed's host (and its port, if one is given), by http or https."""

    def __init__(self, seeds: Iterable[str]) -> None:
        origins = {origin(url) for url in map(canonicalize, seeds) if url}
        # Canonical URLs spell an origin one way, so a prefix test is the whole check.
        self.prefixes = tuple(s + o[o.index(":"):] for o in origins for s in ("http", "https"))

    def admits(self, url: str, depth: int) -> bool:
        """True if ``url`` (canonical) is on a seed's host."""
        return url.startswith(self.prefixes)


class Politeness:
    """A fixed gap between requests to one host: a worker books the next slot, sleeps till it."""

    def __init__(self, delay: float) -> None:
        self.delay = delay
        self._next_slot: dict[str, float] = {}
        self._lock = threading.Lock()

    def wait_turn(self, url: str) -> None:
        host = origin(url).partition(":")[2]  # "//host:port/": http and https take turns
        with self._lock:
            now = time.monotonic()
            slot = max(now, self._next_slot.get(host, now))
            self._next_slot[host] = slot + self.delay
        time.sleep(slot - now)


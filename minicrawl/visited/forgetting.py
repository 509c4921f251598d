"""Visited for a recrawl that forgets gone pages (``--forget-gone``).

Gone pages are not removed from the Bloom filter: the state keeps their exact URLs
(:class:`ForgettingVisited`) and reports each unseen once. A
:class:`~minicrawl.visited.CountingBloomFilter` as Visited would cost 8x the memory for the whole
crawl, and it counts every offer of a URL (each page linking it), so one ``remove`` would not
forget a page linked from several; its replay after a checkpoint would count twice too. The
exact set forgets exactly the gone pages, costs memory per gone page only, and keeps the
checkpoint add-only (so the replay in :mod:`minicrawl.state.store` stays idempotent).
"""

from __future__ import annotations

import threading
from collections.abc import Iterable

from minicrawl.visited.bloom import new_urls
from minicrawl.visited.exact import LocalVisited


class ForgettingVisited:
    """A Visited filter plus the exact URLs of pages forgotten (found gone) by earlier runs.

    A forgotten URL is reported unseen the first time it is offered again, so a page that comes
    back is rediscovered; every other answer is the filter's. A page found gone in *this* run is
    forgotten in the state (for the next run) but stays seen here: the run has its answer, and a
    second link to it must not fetch it, and record it gone, twice.
    """

    def __init__(self, inner: LocalVisited, forgotten: set[str]) -> None:
        self.inner = inner
        self._forgotten = forgotten
        self._lock = threading.Lock()

    def _revive(self, url: str) -> bool:
        with self._lock:
            if url in self._forgotten:
                self._forgotten.discard(url)
                return True
            return False

    def add(self, url: str) -> bool:
        """Insert ``url``; True if the filter had not seen it, or once if it was forgotten."""
        new = self.inner.add(url)
        # revived even when the filter says new (one rebuilt from the database, which leaves
        # forgotten pages out): else the next offer, seen by the filter, would revive it again
        return (bool(self._forgotten) and self._revive(url)) or new

    def add_new(self, urls: list[str]) -> list[str]:
        """Visited as the core sees it (``SeenSet``): the URLs of ``urls`` not seen before (or
        forgotten: then seen anew, once)."""
        return new_urls(urls, self.add_many(urls))

    def add_many(self, urls: Iterable[str]) -> list[bool]:
        """``add`` for each of ``urls`` in order: True for the new, and once for the forgotten."""
        urls = list(urls)
        fresh = self.inner.add_many(urls)
        if self._forgotten:  # revived even when new to the filter: see add
            fresh = [self._revive(url) or new for url, new in zip(urls, fresh, strict=True)]
        return fresh

    def __contains__(self, url: object) -> bool:
        return url in self.inner and url not in self._forgotten

    def __len__(self) -> int:
        return len(self.inner)

    def __getattr__(self, name: str) -> object:
        """The inner filter's attribute ``name`` (fill ratio, bits, ...): for the stats, which
        read such figures by name (``getattr``), whichever kind of Visited they describe."""
        return getattr(self.inner, name)

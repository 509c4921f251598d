"""The exact Visited — a ``set`` of the URL strings — and the Visited kinds one process holds.

:class:`ExactVisited` has no false positive and costs memory for every URL: for teaching, small
crawls and tests that compare it with the Bloom filters. :data:`LocalVisited` names the kinds
:func:`minicrawl.visited.make.make_visited` builds; a recrawl's
:class:`~minicrawl.visited.forgetting.ForgettingVisited` wraps one of them, so it imports this
module and not :mod:`minicrawl.visited.make` (which lists it among every Visited run.py may have).
"""

from __future__ import annotations

import threading
from collections.abc import Iterable
from typing import TypeAlias

from minicrawl.visited.batch import not_a_url, url_list
from minicrawl.visited.bloom import BloomFilter, new_urls
from minicrawl.visited.scalable import ScalableBloomFilter


class ExactVisited:
    """A lock-guarded ``set`` of URLs with the Bloom filter's interface."""

    def __init__(self) -> None:
        self._seen: set[str] = set()
        self._lock = threading.Lock()

    def add(self, url: str) -> bool:
        """Insert ``url``; True if it was not there before."""
        if not isinstance(url, str):  # like the Bloom filters: a URL is a str
            raise TypeError(not_a_url(url))
        with self._lock:
            if url in self._seen:
                return False
            self._seen.add(url)
            return True

    def add_new(self, urls: list[str]) -> list[str]:
        """Visited as the core sees it (``SeenSet``): the URLs of ``urls`` not seen before."""
        return new_urls(urls, self.add_many(urls))

    def add_many(self, urls: Iterable[str]) -> list[bool]:
        """``add`` for each URL in order, under one lock acquisition."""
        seen = self._seen
        out = []
        urls = url_list(urls)
        for url in urls:
            if not isinstance(url, str):
                raise TypeError(not_a_url(url))
        with self._lock:
            for url in urls:
                if url in seen:
                    out.append(False)
                else:
                    seen.add(url)
                    out.append(True)
        return out

    def __contains__(self, url: object) -> bool:
        return url in self._seen

    def __len__(self) -> int:
        return len(self._seen)

    @property
    def count(self) -> int:
        """Distinct URLs added: exact, no false positive (the same as ``len``)."""
        return len(self._seen)


# A Visited held in this process: what make_visited builds from the options.
LocalVisited: TypeAlias = BloomFilter | ScalableBloomFilter | ExactVisited

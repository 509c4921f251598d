"""Bounded memories of work already done on links: resolved hrefs, canonical URLs.

A crawl meets the same links again and again (a site's navigation is on every page), so the
crawler remembers what it worked out for each. Those memories hold URL strings, and a crawler
that keeps Visited as a Bloom filter does so *not* to hold one string per URL: so each memory
here may hold at most a share of what an exact Visited set would (``share`` of the URLs in
Visited, with a small floor so a crawl's first pages are served too), and never more than a
fixed limit. When full, a memory forgets its older half: what stays is what the last pages
used, and memory follows the size of Visited, not the number of pages crawled.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable
from typing import Generic, TypeVar

FLOOR = 1024  # entries a memory may always hold
K = TypeVar("K", bound=Hashable)
V = TypeVar("V")


class Memo(Generic[K, V]):
    """A dict (``data``: read it directly on hot paths) whose size follows a budget."""

    __slots__ = ("budget", "data", "limit", "room", "share")

    def __init__(self, limit: int, budget: Callable[[], int] | None = None,
                 share: float = 1 / 3) -> None:
        self.data: dict[K, V] = {}
        self.limit = limit
        self.budget = budget  # how many URLs Visited holds; None: only ``limit`` bounds
        self.share = share
        self.room = 0  # capacity() when last asked: asked again only once this is reached

    def capacity(self) -> int:
        """How many entries may be held now."""
        if self.budget is None:
            return self.limit
        return min(self.limit, max(FLOOR, int(self.budget() * self.share)))

    def put(self, key: K, value: V) -> V:
        """Remember ``value`` for ``key`` (forgetting the older half first if full); return it."""
        if len(self.data) >= self.room and len(self.data) >= self._recount():
            self.data = _newer_half(self.data)
        self.data[key] = value
        return value

    def _recount(self) -> int:
        self.room = self.capacity()
        return self.room

    def __len__(self) -> int:
        return len(self.data)


def _newer_half(data: dict[K, V]) -> dict[K, V]:
    # Other threads may write to ``data`` meanwhile (no lock: a lock on every write made
    # 16 workers queue behind one that lost the GIL mid-copy). Copying is not one step under
    # the GIL (a garbage collection in the middle may run another thread), so a write during
    # it raises RuntimeError: copy again. What they added meanwhile is at worst forgotten.
    while True:
        try:
            items = list(data.items())
        except RuntimeError:
            continue
        return dict(items[len(items) // 2:])

"""Bounded memories of work already done on links: resolved hrefs, canonical URLs.

A crawl meets the same links again and again (a site's navigation is on every page), so the
crawler remembers what it worked out for each. Those memories hold URL strings, and a crawler
that keeps Visited as a Bloom filter does so *not* to hold one string per URL. So each memory
has two bounds:

* its memory: at most ``max_bytes``, as ``size(key, value)`` estimates each entry (the lengths
  of its strings and a measured overhead: :mod:`minicrawl.resolve`), so what it holds does not
  grow with the crawl whatever its URLs look like;
* a share of what an exact Visited set would hold (``share`` of the URLs in Visited), above a
  floor of ``FLOOR`` entries: a small crawl holds less.

The floor is what a small crawl's links need: bench/manyhosts.py's 8 sites × 400 pages, each
page linking 40 of its site's spelled three ways (relative, root-relative, absolute), have 9,600
(folder, href) and 3,200 URLs. At 1,024 entries (a third of Visited's 3,200 is less) the href
memory forgot and worked out again 2 of 3 hrefs (84,681 of 126,064) and cost more than asking
the core for every link: replayed page by page, 1.36 s; 0.53 s at 8,192 (5,659 kept at the
end); 0.18 s at 16,384, which keeps them all, 1.3 MB by tracemalloc (2.9 + 0.5 MB as the
memories estimate themselves). Its worst, 16,384 long hrefs, is what ``max_bytes`` allows a
large crawl anyway. Past 49,152 URLs in Visited the share bounds them again.

When either is reached, a memory forgets its older half: what stays is what the last pages used.
An entry larger than a sixteenth of ``max_bytes`` (a megabyte-long href) is not remembered.

Not the model's: take the memories away and the crawl does the same, slower (Java API docs, 16
threads: about 1.4× the time; ``bench/README.md``).
"""

from __future__ import annotations

from collections.abc import Callable, Hashable
from itertools import islice
from typing import Generic, TypeVar

FLOOR = 16384  # entries a memory may always hold (within its bytes): see the module's doc
K = TypeVar("K", bound=Hashable)
V = TypeVar("V")


class Memo(Generic[K, V]):
    """A dict (``data``: read it directly on hot paths) whose size follows two budgets."""

    __slots__ = ("budget", "data", "held", "max_bytes", "room", "share", "size")

    def __init__(self, max_bytes: int, size: Callable[[K, V], int],
                 budget: Callable[[], int] | None = None, share: float = 1 / 3) -> None:
        """``max_bytes``: what the entries may take, as ``size`` estimates each; ``budget``: how
        many URLs Visited holds (None: only ``max_bytes`` bounds), of which ``share`` may be
        held."""
        self.data: dict[K, V] = {}
        self.max_bytes = max_bytes
        self.size = size
        self.held = 0  # bytes of the entries in ``data``, as ``size`` estimates them
        self.budget = budget
        self.share = share
        self.room = 0  # capacity() when last asked: asked again only once this is reached

    def capacity(self) -> int | None:
        """How many entries Visited's share allows now (None: no bound but the bytes)."""
        if self.budget is None:
            return None
        return max(FLOOR, int(self.budget() * self.share))

    def put(self, key: K, value: V) -> V:
        """Remember ``value`` for ``key`` (forgetting the older half first if full); return it."""
        n = self.size(key, value)
        if n > self.max_bytes >> 4:
            return value
        data = self.data
        if self.budget is not None and len(data) >= self.room and len(data) >= self._recount():
            data = self._forget_older_half(data)
        while self.held + n > self.max_bytes and data:  # the newer half may be the bigger
            data = self._forget_older_half(data)
        data[key] = value
        # Not atomic: two threads adding at once may count one entry. Recounted at each
        # forgetting, so the error never accumulates past one generation.
        self.held += n
        return value

    def _recount(self) -> int:
        self.room = self.capacity() or 0
        return self.room

    def _forget_older_half(self, data: dict[K, V]) -> dict[K, V]:
        # Other threads may write to ``data`` meanwhile (no lock: a lock on every write made
        # 16 workers queue behind one that lost the GIL mid-copy). Copying is not one step under
        # the GIL (a garbage collection in the middle may run another thread), so a write during
        # it raises RuntimeError: copy again. What they added meanwhile is at worst forgotten.
        # islice, not a list of the items: the copy's peak is the newer half, not all of them.
        while True:
            try:
                newer = dict(islice(data.items(), (len(data) + 1) // 2, None))
            except RuntimeError:
                continue
            break
        self.held = sum(self.size(k, v) for k, v in newer.items())  # not yet seen by others
        self.data = newer
        return newer

    def __len__(self) -> int:
        return len(self.data)

"""A counting Bloom filter: a counter per position instead of a bit, so items can be removed.

Its positions are the core's (:func:`minicrawl.core.visited.positions`, k = 8) and so is its
size, as for :class:`~minicrawl.visited.BloomFilter`. Not a Visited of run.py (see
:mod:`minicrawl.visited.forgetting` for why a recrawl does not forget with it)."""

from __future__ import annotations

from collections.abc import Iterable
from functools import cached_property
from typing import TYPE_CHECKING

from minicrawl.core.visited import HASHES
from minicrawl.visited.batch import _plan_batch, positions_many, url_list
from minicrawl.visited.bloom import positions_of
from minicrawl.visited.sizing import SizedFilter

if TYPE_CHECKING:
    import numpy as np


class CountingBloomFilter(SizedFilter):
    """A Bloom filter with an 8-bit counter per position instead of a bit, so items can be removed.

    Same constructor and numbers as :class:`BloomFilter` (``bits`` is the number of counters;
    memory is one byte per counter, 8x a plain filter). Every ``add`` increments the 8 counters
    of the item — also when it was already present — and ``remove`` undoes one ``add``: a
    multiset, which is what makes removing an added item always safe.

    * Never a false negative for an item added and not removed (as many times as it was added).
    * Counters saturate at 255 and then stay there: the true count is unknown, so decrementing
      one could create false negatives for other items.
    * ``remove`` of an item that is certainly absent (a counter is 0, or lower than the number
      of times the item uses that counter) raises KeyError. An item that was never added but is
      a false positive cannot be told apart; removing it would decrement other items' counters
      and could make *them* disappear — only remove what you added.
    """

    MAX_COUNT = 255

    def __init__(self, capacity: int | None = None, error_rate: float | None = None, *,
                 bits: int | None = None) -> None:
        super().__init__(capacity, error_rate, bits)
        # bytearray: fast single-counter access from Python; the NumPy view serves batches.
        self._counters = self._storage(self._m, lambda: bytearray(self._m), "counters")

    @cached_property
    def _view(self) -> np.ndarray:
        import numpy as np
        return np.frombuffer(self._counters, dtype=np.uint8)

    def add(self, url: str) -> bool:
        """Count one more ``url``; True if it was not (reported) present before."""
        ix = positions_of(url, self._m)
        c = self._counters
        top = self.MAX_COUNT
        with self._lock:
            present = all(c[i] for i in ix)
            for i in ix:
                if c[i] < top:
                    c[i] += 1
            self._count += 1
        return not present

    def add_many(self, urls: Iterable[str]) -> list[bool]:
        """``add`` for each URL in order (one lock acquisition); same results as sequential adds."""
        urls = url_list(urls)
        n = len(urls)
        if n == 0:
            return []
        import numpy as np
        k = HASHES
        flat = np.ascontiguousarray(positions_many(urls, self._m).T).ravel()
        earlier, _, _ = _plan_batch(flat, n, self._m)
        where, times = np.unique(flat.astype(np.intp), return_counts=True)
        view = self._view
        with self._lock:
            have = (view[flat.astype(np.intp)] > 0) | earlier
            new = ~np.logical_and.reduce(have.reshape(k, n), axis=0)
            bumped = view[where].astype(np.int64) + times
            view[where] = np.minimum(bumped, self.MAX_COUNT).astype(np.uint8)
            self._count += n
        return new.tolist()

    def remove(self, url: str) -> None:
        """Undo one ``add(url)``. KeyError if ``url`` is certainly not in the filter."""
        ix = positions_of(url, self._m)
        c = self._counters
        top = self.MAX_COUNT
        with self._lock:
            if len(set(ix)) == len(ix):
                if not all(c[i] for i in ix):
                    raise KeyError(url)
            else:
                # An item using one counter twice added 2 to it; it must hold at least that.
                need: dict[int, int] = {}
                for i in ix:
                    need[i] = need.get(i, 0) + 1
                if any(c[i] < times and c[i] < top for i, times in need.items()):
                    raise KeyError(url)
            for i in ix:
                if c[i] < top:
                    c[i] -= 1
            self._count -= 1

    def discard(self, url: str) -> bool:
        """Remove ``url`` if it is (reported) present; True if something was removed."""
        try:
            self.remove(url)
        except KeyError:
            return False
        return True

    def __contains__(self, url: object) -> bool:
        """True if all 8 counters of ``url`` are non-zero."""
        if not isinstance(url, str):
            return False
        ix = positions_of(url, self._m)
        c = self._counters
        with self._lock:  # counters also go down, so read them consistently
            return all(c[i] for i in ix)

    @property
    def fill_ratio(self) -> float:
        """Fraction of counters that are non-zero."""
        return (self._m - self._counters.count(0)) / self._m

    @property
    def saturated(self) -> int:
        """Number of counters stuck at the maximum."""
        return self._counters.count(self.MAX_COUNT)

    @property
    def nbytes(self) -> int:
        """Bytes of counter storage: m (one byte per counter)."""
        return self._m

    def __repr__(self) -> str:
        return (f"CountingBloomFilter(bits={self._m}, capacity={self._capacity}, "
                f"error_rate={self._error_rate:.3g}, count={self._count})")

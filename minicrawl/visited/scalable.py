"""A scalable Bloom filter: more, larger, stricter slices as items arrive (Almeida et al. 2007)."""

from __future__ import annotations

import threading
from collections.abc import Iterable

from minicrawl.checks import check_number
from minicrawl.visited.batch import FAMILY, url_list
from minicrawl.visited.bloom import BloomFilter, new_urls
from minicrawl.visited.sizing import check_np, false_positive_rate, offered_for


class ScalableBloomFilter:
    """A Bloom filter that grows: once a slice is full, a bigger and stricter one is added.

    Almeida, Baquero, Preguiça & Hutchison, "Scalable Bloom Filters" (2007). Slice i holds
    ``initial_capacity·growth^i`` items at error rate ``error_rate·(1 − tightening)·tightening^i``
    (each a :class:`BloomFilter`: the core's positions, k = 8, sized by the core's formula for
    its capacity and rate). An item is present if any slice has it, so the total false-positive
    rate is at most the sum of the slices' rates, ``error_rate·(1 − r)·(1 + r + r² + …) <
    error_rate`` — however many items arrive. New items always go into the newest slice.
    """

    def __init__(self, initial_capacity: int = 100_000, error_rate: float = 0.001, *,
                 growth: int = 2, tightening: float = 0.9) -> None:
        check_np(initial_capacity, error_rate)
        check_number("growth", growth, low=1)
        check_number("tightening", tightening, above=0, below=1)
        self._initial_capacity = int(initial_capacity)
        self._error_rate = float(error_rate)
        self._growth = growth
        self._tightening = tightening
        self._lock = threading.Lock()
        self._filters: list[BloomFilter] = []
        self._grow()

    def _grow(self) -> BloomFilter:
        i = len(self._filters)
        p = self._error_rate * (1 - self._tightening) * self._tightening ** i
        f = BloomFilter(capacity=self._initial_capacity * self._growth ** i, error_rate=p)
        self._filters.append(f)
        return f

    def add(self, url: str) -> bool:
        """Insert ``url``; True if no slice had it (test and set in one locked step)."""
        with self._lock:
            if any(url in f for f in self._filters):
                return False
            cur = self._filters[-1]
            if cur.count >= cur.capacity:
                cur = self._grow()
            cur.add(url)
            return True

    def add_new(self, urls: list[str]) -> list[str]:
        """Visited as the core sees it (``SeenSet``): the URLs of ``urls`` not seen before."""
        return new_urls(urls, self.add_many(urls))

    def add_many(self, urls: Iterable[str]) -> list[bool]:
        """``add`` for each URL in order, under one lock acquisition."""
        urls = url_list(urls)
        with self._lock:
            cur = self._filters[-1]
            if len(self._filters) == 1 and cur.capacity - cur.count >= len(urls):
                return cur.add_many(urls)  # one slice with room: all of it is its (a page's)
            out = [False] * len(urls)
            pending = list(range(len(urls)))
            # Full slices never change again: one batch lookup each.
            for f in self._filters[:-1]:
                if not pending:
                    break
                hits = f.contains_many([urls[i] for i in pending])
                pending = [i for i, hit in zip(pending, hits, strict=True) if not hit]
            while pending:
                cur = self._filters[-1]
                room = cur.capacity - cur.count
                if room <= 0:
                    # The full slice joins the old ones: what is pending must miss it too.
                    hits = cur.contains_many([urls[i] for i in pending])
                    pending = [i for i, hit in zip(pending, hits, strict=True) if not hit]
                    if pending:  # grow only for a new item, as add() does
                        self._grow()
                    continue
                chunk, rest = pending[:room], pending[room:]
                news = cur.add_many([urls[i] for i in chunk])
                for i, new in zip(chunk, news, strict=True):
                    out[i] = new
                if rest:
                    # What is left must also miss what this chunk just put in (repeats).
                    hits = cur.contains_many([urls[i] for i in rest])
                    rest = [i for i, hit in zip(rest, hits, strict=True) if not hit]
                pending = rest
        return out

    def contains_many(self, urls: Iterable[str]) -> list[bool]:
        """``url in self`` for many URLs at once."""
        urls = url_list(urls)
        hit = [False] * len(urls)
        for f in list(self._filters):
            for i, h in enumerate(f.contains_many(urls)):
                hit[i] = hit[i] or h
        return hit

    def __contains__(self, url: object) -> bool:
        """True if any slice reports ``url``."""
        return any(url in f for f in list(self._filters))

    def __len__(self) -> int:
        """Number of items added as new."""
        return self.count

    @property
    def count(self) -> int:
        """Number of items added as new, over all slices."""
        return sum(f.count for f in self._filters)

    @property
    def slices(self) -> list[BloomFilter]:
        """The slices, oldest first (a copy of the list; the filters themselves are live)."""
        return list(self._filters)

    @property
    def capacity(self) -> int:
        """Items the current slices hold before the next one is added (grows)."""
        return sum(f.capacity for f in self._filters)

    @property
    def error_rate(self) -> float:
        """The bound on the total false-positive rate."""
        return self._error_rate

    @property
    def over_capacity(self) -> bool:
        """Always False: a scalable filter grows instead."""
        return False

    @property
    def bits(self) -> int:
        """Total bits over all slices."""
        return sum(f.bits for f in self._filters)

    @property
    def hashes(self) -> int:
        """k, the positions per item in every slice: the core's 8."""
        return self._filters[0].hashes

    @property
    def hash_family(self) -> str:
        """Name of the positions every slice uses: the core's."""
        return FAMILY

    @property
    def fill_ratio(self) -> float:
        """Set bits over total bits, all slices together."""
        return sum(f.bits_set for f in self._filters) / self.bits

    @property
    def current_fp_rate(self) -> float:
        """Chance now that a new item is reported present: 1 − Π(1 − fill_i^8)."""
        miss = 1.0
        for f in self._filters:
            miss *= 1.0 - f.current_fp_rate
        return 1.0 - miss

    @property
    def expected_withheld(self) -> float:
        """New items expected to have been taken for seen so far: in each slice, those it took
        for seen of the ones offered to it (:func:`~minicrawl.visited.sizing.offered_for`), and
        those the older slices, full by then, took for seen before it was asked."""
        total, older_miss = 0.0, 1.0  # older_miss: chance a new item passes every older slice
        for f in self._filters:
            offered = offered_for(f.bits, f.count, f.hashes)  # the items that reached it
            total += offered - f.count + offered * (1.0 / older_miss - 1.0)
            older_miss *= 1.0 - false_positive_rate(f.bits, offered, f.hashes)
        return total

    @property
    def expected_fp_rate(self) -> float:
        """Total rate once every current slice is at capacity (< ``error_rate``)."""
        miss = 1.0
        for f in self._filters:
            miss *= 1.0 - f.expected_fp_rate
        return 1.0 - miss

    @property
    def nbytes(self) -> int:
        """Bytes of bit storage over all slices."""
        return sum(f.nbytes for f in self._filters)

    def __repr__(self) -> str:
        return (f"ScalableBloomFilter(initial_capacity={self._initial_capacity}, "
                f"error_rate={self._error_rate:.3g}, growth={self._growth}, "
                f"tightening={self._tightening}, slices={len(self._filters)}, "
                f"count={self.count})")
